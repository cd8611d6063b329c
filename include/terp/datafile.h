/* datafile: what a data file was when it was staged, and whether it is
 * still that file. The fingerprint lets a resumed session say "your data
 * changed" instead of silently computing on other numbers. Reads the
 * file (no other I/O). */
#ifndef TERP_DATAFILE_H
#define TERP_DATAFILE_H

#include <stdint.h>

/* A data file as it was when it was staged. */
struct datafile {
	char		*path;		/* absolute host path */
	uint64_t	 size;
	int64_t		 mtime;		/* unix seconds */
	char		*fingerprint;	/* "sha256:HEX", "sampled-sha256:HEX", "tree-sha256:HEX" */
	/* Where the code sees it in the running sandbox (e.g.
	 * "/workspace/data/my_sales-2.csv"); NULL when not staged there. */
	char		*sandbox;
	/* Where the code saw it in the sandbox of the session a journal
	 * recorded (loaded from the journal, unlike sandbox): what an
	 * export maps back to path. NULL when none was recorded. */
	char		*recorded;
};

/* Fingerprints a data file: sha256 of the contents up to 64 MiB, and
 * of its size and sampled 1 MiB pieces beyond that; a folder: of every
 * entry's path, size, mtime and mode (dirsum.h; size: its files' sum). Fills f (strings
 * new; free with datafile_free). Returns 0 or -1 with *err. */
int datafile_fingerprint(const char *path, struct datafile *f, char **err);
/* A copy of f's strings in *to. */
void datafile_copy(struct datafile *to, const struct datafile *f);
/* Frees what f holds (not f itself) and zeroes it. */
void datafile_free(struct datafile *f);
/* Compares a recorded data file with what is on disk now: 0 unchanged,
 * 1 changed, 2 gone (or unreadable). *why (may be NULL) gets a new
 * one-line explanation when not 0. */
int datafile_check(const struct datafile *f, char **why);

#endif
