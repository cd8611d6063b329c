/* dirsum: a bounded look at a folder given as data (a partitioned
 * Parquet dataset, a folder of monthly CSVs): how many regular files and
 * bytes it holds, how deep it goes, and the first few file names. The
 * walk never follows a symlink (they are counted, not entered), never
 * leaves the folder's file system, and stops at DIRSUM_ENTRIES entries
 * or DIRSUM_DEPTH levels, so its cost is bounded whatever the folder.
 * Reads the folder (no other I/O). */
#ifndef TERP_DIRSUM_H
#define TERP_DIRSUM_H

#include <stdint.h>
#include <sys/stat.h>

#define DIRSUM_ENTRIES	10000	/* entries below the folder, at most */
#define DIRSUM_DEPTH	16	/* levels of folders below it, at most */
#define DIRSUM_NAMES	4	/* file names kept, the first in order */
#define DIRSUM_NAME_MAX	256

struct dirsum {
	uint64_t	bytes;		/* the regular files' sizes, summed */
	uint64_t	files;		/* regular files */
	uint64_t	entries;	/* every entry below the folder */
	uint64_t	links;		/* symlinks (not followed) */
	int64_t		mtime;		/* the newest entry's, unix seconds */
	int		too_many;	/* over DIRSUM_ENTRIES: the walk stopped */
	int		too_deep;	/* over DIRSUM_DEPTH: the walk stopped */
	int		nnames;
	/* the first regular files' paths below the folder, in byte order */
	char		names[DIRSUM_NAMES][DIRSUM_NAME_MAX];
};

/* Called for every entry (its path below the folder, its lstat), in
 * byte order of the names within each folder; NULL: none. */
typedef void (*dirsum_each_fn)(void *arg, const char *rel, const struct stat *st);

/* Walks the open folder dirfd (not consumed). Fills s. Returns 0 (see
 * too_many and too_deep), or -1 with errno when the folder cannot be
 * read. */
int dirsum_walk(int dirfd, struct dirsum *s, dirsum_each_fn each, void *arg);

/* One line for s: "3 files, 2.1 KB in all" (a new string). */
char *dirsum_line(const struct dirsum *s);

#endif
