/* sandbox_start: one sandbox started as a whole, for a backend that runs
 * sandboxes one after another in a session's workspace: the session's
 * cgroup (made at the first start, kept for the next ones), the data
 * files bound by descriptor (workspace.h), the disk baseline, and the
 * launch (sandbox.h). What its end means is said here too. */
#ifndef TERP_SANDBOX_START_H
#define TERP_SANDBOX_START_H

#include <sys/types.h>

#include "terp/loop.h"
#include "terp/sandbox.h"
#include "terp/sandbox_cgroup.h"
#include "terp/workspace.h"

/* The session's side of its sandboxes; zeroed to begin with. */
struct sandbox_run {
	struct sandbox_cgroup	*cg;		/* NULL: rlimits only (owned) */
	int			 cg_tried;
	long			 oom_at_launch;	/* the cgroup's OOM kills then */
	/* The disk bound (sandbox_run_disk) */
	struct loop		*loop;
	struct workspace	*ws;
	const struct sandbox_disk_cbs *cbs;
	void			*arg;
	int			 disk_limited, disk_on;
	uint64_t		 disk_timer;
	int64_t			 disk_last;	/* now_ms() at the last check's end */
	int64_t			 disk_every;	/* the interval it chose, ms */
	struct disk_walk	*walk;		/* a measure in flight (owned) */
};

/* The disk bound's callbacks: the sandbox's first process (its
 * deleted-but-open files count; <= 0: none known yet), and the
 * workspace over its limits, for why (taken): the caller ends the
 * sandbox (from a loop callback, never from inside a disk call). */
struct sandbox_disk_cbs {
	pid_t	(*root)(void *arg);
	void	(*over)(void *arg, char *why);
};

/* The workspace is a folder of the host's disk: its size is bounded by
 * measuring (workspace.h) on a timer while the sandbox lives and at
 * each cell's end (unless one ran less than an interval before: the
 * timer's next one keeps the bound), each measure on a thread of its
 * own (the loop goes on meanwhile; stopping waits for it). The
 * overshoot is what the sandbox writes between two checks: at most
 * write speed x the interval (100 ms, up to 1 s when a check is
 * costly: 50 times its cost), and each file stays under
 * --max-file-size. limited 0: no bound, no checks.
 * ws and cbs are borrowed. */
void sandbox_run_disk(struct sandbox_run *r, struct loop *l, struct workspace *ws,
    int limited, const struct sandbox_disk_cbs *cbs, void *arg);

/* Checks from now on (a sandbox was launched), at a cell's end (soon:
 * from the loop), and no more (it is gone). */
void sandbox_run_disk_arm(struct sandbox_run *r);
void sandbox_run_disk_soon(struct sandbox_run *r);
void sandbox_run_disk_stop(struct sandbox_run *r);

/* Starts a sandbox from s (its settings; the binds and the cgroup are
 * filled here) in ws, whose data files are bound by descriptor. The
 * cgroup is tried once per run, named after tag (the session's id),
 * with s->memory and s->nproc; none with s->no_sandbox. The disk
 * baseline is taken before the launch. Fills *p; -1 with a one-line
 * *err (caller frees). */
int sandbox_start(struct sandbox_run *r, struct sandbox_spec *s, struct workspace *ws,
    const char *tag, struct sandbox_proc *p, char **err);

/* Whether the cgroup's OOM killer struck since the last start. */
int sandbox_run_oom_killed(const struct sandbox_run *r);

/* Kills whatever runs in the cgroup (there is one). */
void sandbox_run_kill(struct sandbox_run *r);

/* Removes the cgroup; r is zeroed. */
void sandbox_run_free(struct sandbox_run *r);

/* What a sandbox's end says, from its exit code (bwrap's status: the
 * code or 128 + a signal; -1 unknown) or else its wait status (-1
 * none): "the Python process exited with code 3", "...crashed
 * (segmentation fault)". Caller frees. */
char *sandbox_exit_reason(int code, int wstatus);

#endif
