/* kernel_procs: the processes of one local sandbox as the host knows
 * them (private to src/kernel/local): bwrap's init (from its
 * --json-status-fd lines), the driver's Python under it, the egress
 * forwarder the driver started, and the strays a cell leaves behind.
 * Everything here is read from /proc or from bwrap; what the sandbox
 * says of its own pids is never used. kernel_local.c owns one per
 * session and resets it at each launch. */
#ifndef TERP_KERNEL_PROCS_H
#define TERP_KERNEL_PROCS_H

#include <sys/types.h>

#include "terp/buf.h"
#include "terp/sandbox_tree.h"

struct kprocs {
	pid_t			 init_pid;	/* bwrap's init in the host ns:
						 * 0 not known yet, -1 none */
	pid_t			 py_pid;	/* the driver's Python, -1 unknown */
	int			 exit_code;	/* from --json-status-fd, -1 unknown */
	struct buf		 status;	/* a status line being read */
	struct sandbox_pinned	 fwd;		/* spared at a cell's end */
	struct sandbox_tree_known known;	/* held for the cells' ends */
};

void kprocs_init(struct kprocs *p);
void kprocs_free(struct kprocs *p);

/* A launch: nothing of the last sandbox's is known. no_sandbox: there
 * is no init (the launched process is Python itself, kprocs_set_python). */
void kprocs_reset(struct kprocs *p, int no_sandbox);
void kprocs_set_python(struct kprocs *p, pid_t pid);

/* The sandbox is gone: the /proc handles held for it are closed. */
void kprocs_forget(struct kprocs *p);

/* Reads bwrap's JSON status lines from fd ({"child-pid": N} then
 * {"exit-code": N}) as far as they came. Returns 1 at EOF, else 0. */
int kprocs_status(struct kprocs *p, int fd);

/* The driver said "ready": its Python is init's only child, and (when
 * with_fwd) the forwarder the driver's only child. */
void kprocs_ready(struct kprocs *p, int with_fwd);

/* Sends sig to the driver's Python through a pidfd (no signal to a
 * recycled pid); status_fd (or -1) is read first if init is not known. */
void kprocs_signal(struct kprocs *p, int status_fd, int sig);

/* The sandbox's first process (its deleted-but-open files count for
 * the disk bound); <= 0 when none is known. */
pid_t kprocs_root(const struct kprocs *p);

/* At a cell's end: the processes it left behind are killed and waited
 * for (at most wait_ms); Python and the forwarder stay. A quiet
 * sandbox costs a few reads (sandbox_tree_quiet), not a walk. */
void kprocs_cell_end(struct kprocs *p, int wait_ms);

#endif
