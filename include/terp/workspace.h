/* workspace: the host folders a session's sandbox sees, and what goes
 * into them. It makes the session's folders with their permissions
 * (as root: hands the workspace to the session's own uid, taken from
 * the uid pool), stages data files (bound read-only by fd where bwrap
 * can, as root else given as read-only mounts, else hard-linked or
 * copied) and measures the workspace's disk
 * use against the session's limits. It launches nothing and watches
 * nothing: kernel.c decides when to measure and what to do when the
 * workspace is over its limits. */
#ifndef TERP_WORKSPACE_H
#define TERP_WORKSPACE_H

#include <stdint.h>
#include <sys/types.h>

#include "terp/workspace_usage.h"

struct workspace;

/* A workspace for the session folder session_dir (borrowed: it must
 * outlive the workspace). no_sandbox: Python runs without bwrap and sees
 * the host's paths. disk: bytes the workspace may hold (0: no limit);
 * disk_files: entries it may hold (0: one per 32 KiB of disk, at least
 * 4096 and at most 200000). Creates nothing yet. */
struct workspace *workspace_new(const char *session_dir, int no_sandbox,
    uint64_t disk, uint64_t disk_files);
/* Closes the data files' fds, gives the uid back (no sandbox may run
 * any more) and frees. The folders stay. NULL is fine. */
void workspace_free(struct workspace *w);

/* Creates the folders (once; later calls do nothing): as root, first
 * takes a uid for the session's sandboxes. Clears the data folder of
 * what an earlier run staged. Returns 0, or -1 with a one-line *err
 * (caller frees). */
int workspace_prepare(struct workspace *w, char **err);

/* The host folder seen as /workspace, the one seen as /workspace/data,
 * and the uid the sandbox runs as (0: terp's own). Valid after
 * workspace_prepare; owned by w. */
const char *workspace_dir(const struct workspace *w);
/* The folder that holds workspace/ and data/: terp's, the sandbox's uid
 * may pass through but not write (root:uid 0710 as root; the session
 * folder, 0700, otherwise). Sockets the sandbox gets go there. */
const char *workspace_base(const struct workspace *w);
const char *workspace_datadir(const struct workspace *w);
uid_t workspace_uid(const struct workspace *w);

/* Checks that path can be a data file: it opens without blocking (a
 * FIFO would block) and is, after symlinks, a regular file, or a folder
 * within DIRSUM_ENTRIES entries and DIRSUM_DEPTH levels (dirsum.h; its
 * size is checked against the disk limit when staged). Returns 0, or -1
 * with a one-line *err (caller frees). */
int workspace_check_data(const char *path, char **err);

/* The name a data file named base gets in the data folder, when that
 * name is free (letters, digits, '.', '-', '_'; no leading dot; at most
 * 100 bytes). New string. */
char *workspace_safe_name(const char *base);

/* Puts host_path (a file or a folder) into the data folder under a
 * free, safe name and returns the path the code sees (new string), or
 * NULL with *err (a folder whose files hold more than the disk limit).
 * running: a sandbox runs already, which cannot get a new mount, so the
 * file is linked or copied instead of bound. Prepares w when needed. */
char *workspace_stage(struct workspace *w, const char *host_path, int running,
    char **err);

/* The data files to bind at the next launch: fds (owned by w) and
 * names in the data folder, at most max. A file deleted since it was
 * staged becomes a copy first (bwrap could not resolve its path).
 * Returns the count, or -1 with *err. */
int workspace_binds(struct workspace *w, int *fds, const char **names, int max,
    char **err);

/* The data files given as mounts at the next launch (as root: ones
 * bwrap could not bind; workspace_mount.h): a fresh detached mount each
 * (fds, the caller closes them after the launch) and the placeholder it
 * goes over (paths, owned by w), at most max. Call after
 * workspace_binds. Returns the count, or -1 with *err. */
int workspace_mounts(struct workspace *w, int *fds, const char **paths, int max,
    char **err);

/* Sets this launch's disk limits: the session's, or what the workspace
 * holds already when that is more (a session stopped for its disk use
 * restarts and may delete, but not grow). root: the sandbox's first
 * process (its deleted-but-open files count too), or <= 0. Returns 0,
 * or -1 with *err when the workspace grew again after a sandbox was
 * stopped for its size: no sandbox starts until files go (on the host,
 * in the folder *err names) or the limit is raised. */
int workspace_disk_baseline(struct workspace *w, pid_t root, char **err);

/* Measures the workspace against this launch's limits. Returns NULL
 * when it is within them, else why the sandbox must stop (a new
 * sentence). *cost_us: what the measure cost, to space the next one. */
char *workspace_disk_check(struct workspace *w, pid_t root, int64_t *cost_us);

/* workspace_disk_check in parts, for a measure on another thread. */
/* The measure's inputs: the folder (a new string; NULL when w has
 * none) and this launch's limits in *max_bytes, *max_files. */
char *workspace_disk_params(const struct workspace *w, uint64_t *max_bytes,
    uint64_t *max_files);
/* Measures dir and the deleted files root's processes (<= 0: none)
 * hold open, stopping past the limits (0: none); touches no workspace,
 * so it may run on any thread. Returns the cost in us. */
int64_t workspace_disk_measure(const char *dir, pid_t root, uint64_t max_bytes,
    uint64_t max_files, struct workspace_usage *u);
/* A measure against this launch's limits: NULL within them, else why
 * the sandbox must stop (a new sentence). */
char *workspace_disk_verdict(const struct workspace *w, const struct workspace_usage *u);

#endif
