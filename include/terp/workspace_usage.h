/* workspace_usage: how much disk a session's workspace holds, measured
 * from the host. The sandbox writes to a plain folder of the host's file
 * system (a size-capped file system would need root or a memory-backed
 * tmpfs), so terp bounds it by accounting: workspace.c measures when
 * kernel.c asks (on a timer and after every cell), and kernel.c stops
 * the sandbox when it is over --disk. Counts
 * allocated blocks (a sparse file costs what it holds), every entry as
 * an inode, and files the sandbox deleted but still holds open, which a
 * walk of the folder cannot see. */
#ifndef TERP_WORKSPACE_USAGE_H
#define TERP_WORKSPACE_USAGE_H

#include <stdint.h>
#include <sys/types.h>

struct workspace_usage {
	uint64_t	bytes;		/* allocated blocks, in bytes */
	uint64_t	inodes;		/* entries, the folder itself included */
	int		stopped;	/* a limit was passed: the walk stopped early */
	int		too_deep;	/* folders nest deeper than the walk goes (256) */
};

/* Walks the tree under dir (a path terp owns; nothing in it is
 * followed: no symlink, no other file system) and adds to u. Stops as
 * soon as u passes max_bytes or max_inodes (0: no limit), so a flood of
 * files costs at most max_inodes steps. Folders nested 256 deep set
 * too_deep and stop the walk: treat that as over the limit. Returns 0,
 * or -1 when dir cannot be opened (errno set). */
int workspace_usage_tree(const char *dir, uint64_t max_bytes, uint64_t max_inodes,
    struct workspace_usage *u);

/* Adds the regular files on device dev that pid holds open but that are
 * no longer linked anywhere (st_nlink == 0): space a walk cannot see.
 * Silently adds nothing for a process that is gone. */
void workspace_usage_deleted_open(pid_t pid, dev_t dev, struct workspace_usage *u);

#endif
