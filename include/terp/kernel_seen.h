/* kernel_seen: what a remote backend saw in its output folder last time
 * (a Jupyter server's out/, a pool's /mnt/data), so that after a cell
 * only the files new or changed since are fetched. A file is the same
 * when its name, size and modification time (the server's text) all
 * are; an unknown size or time is never the same. One diff for every
 * remote backend. */
#ifndef TERP_KERNEL_SEEN_H
#define TERP_KERNEL_SEEN_H

#include <stdint.h>

#define KERNEL_SEEN_SIZE_UNKNOWN	UINT64_MAX
#define KERNEL_SEEN_MTIME_MAX		64	/* bytes of a time kept */

struct kernel_seen_file {
	char		*name;
	uint64_t	 size;		/* KERNEL_SEEN_SIZE_UNKNOWN: not said */
	char		*mtime;		/* NULL: not said */
	int		 listed;	/* in the listing since kernel_seen_start */
};

/* Zeroed is empty. */
struct kernel_seen {
	struct kernel_seen_file	*f;
	int			 n;
};

/* Forgets every file (a new session: nothing there is known). */
void kernel_seen_clear(struct kernel_seen *s);
/* Whether nothing is known. */
int kernel_seen_empty(const struct kernel_seen *s);
/* A listing starts: no file is listed yet. */
void kernel_seen_start(struct kernel_seen *s);
/* One entry of the listing: recorded (name, size and mtime copied), and
 * 1 when it is new or changed since the last listing, 0 when the same. */
int kernel_seen_changed(struct kernel_seen *s, const char *name, uint64_t size,
    const char *mtime);
/* The listing ended: files not in it are forgotten (one deleted, then
 * written again alike, is new). */
void kernel_seen_prune(struct kernel_seen *s);

#endif
