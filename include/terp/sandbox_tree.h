/* sandbox_tree: a sandbox's processes as the host sees them, read from
 * /proc: the children of a process (of all its threads), the whole tree
 * under the sandbox's init, the driver's Python, and the processes a
 * cell left behind, killed through pidfds so that no signal reaches a
 * pid recycled meanwhile. Reads /proc; starts nothing. */
#ifndef TERP_SANDBOX_TREE_H
#define TERP_SANDBOX_TREE_H

#include <sys/types.h>

/* The children of pid, of all its threads, into out (at most max).
 * Returns the count. Allocates nothing: a forked launcher calls it. */
int sandbox_tree_children(pid_t pid, pid_t *out, int max);

/* Host pids of root and all its descendants (every thread's children),
 * root first, at most max. Returns the count. */
int sandbox_tree_list(pid_t root, pid_t *out, int max);

/* The host pid of the Python process: the only child of bwrap's init
 * (whose host pid is init, from --json-status-fd). -1 if not found. */
pid_t sandbox_tree_python(pid_t init);

/* A process pinned by its pidfd, so that a recycled pid is never taken
 * for it: pid 0 and pidfd -1 when none. */
struct sandbox_pinned {
	pid_t	pid;
	int	pidfd;
};

/* Pins the only child of parent (none pinned when it has none or more
 * than one); whether the pinned one still runs (its pidfd turns
 * readable when it exits); and unpins (closes the pidfd). */
void sandbox_tree_pin_only_child(struct sandbox_pinned *p, pid_t parent);
int sandbox_tree_pinned_alive(const struct sandbox_pinned *p);
void sandbox_tree_unpin(struct sandbox_pinned *p);

/* Kills every process under the sandbox's init except init itself and
 * the nkeep pids in keep (the driver's Python, the egress forwarder):
 * children a cell left running, daemons that double-forked (they were
 * reparented to init). Repeats until a pass finds nothing, then waits
 * for them to exit (at most wait_ms). Returns how many it killed. */
int sandbox_tree_kill_strays(pid_t init, const pid_t *keep, int nkeep, int wait_ms);

/* The /proc handles of the processes a sandbox is known to run (its
 * init, the driver's Python, the forwarder), held from one cell's end
 * to the next so that a quiet sandbox costs two reads a process instead
 * of a walk of /proc (14 system calls a cell, a third of the host's).
 * The handles name the process they were opened for: once it is gone
 * they read as dead, never as a process that got its pid. Zeroed (or
 * sandbox_tree_known_init) to begin with; _reset closes them. */
#define SANDBOX_TREE_KNOWN	4
struct sandbox_tree_known {
	int	 n;
	pid_t	 pid[SANDBOX_TREE_KNOWN];
	int	 task_fd[SANDBOX_TREE_KNOWN];	/* /proc/P/task: 2 + threads links */
	int	 kids_fd[SANDBOX_TREE_KNOWN];	/* /proc/P/task/P/children */
};

void sandbox_tree_known_init(struct sandbox_tree_known *q);
void sandbox_tree_known_reset(struct sandbox_tree_known *q);

/* 1 when root and the nkeep pids in keep (0s skipped) are all there is
 * under root: each of them runs one thread only, and their children
 * are exactly the others. Then sandbox_tree_kill_strays would find
 * nothing to kill. 0 (anything else: a stray, a thread, a process gone,
 * a read that failed): the caller walks with sandbox_tree_kill_strays.
 * The handles are (re)opened when the set of pids changes. */
int sandbox_tree_quiet(struct sandbox_tree_known *q, pid_t root, const pid_t *keep,
    int nkeep);

#endif
