/* sandbox_start: a sandbox started as a whole (sandbox_start.h). */
#include "terp/sandbox_start.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/util.h"

/* The session's cgroup, tried once: without one, rlimits only, the
 * common case on many machines. */
static void
cgroup_once(struct sandbox_run *r, const struct sandbox_spec *s, const char *tag)
{
	char *why = NULL, name[64];

	if (r->cg_tried || s->no_sandbox)
		return;
	r->cg_tried = 1;
	snprintf(name, sizeof name, "terp-%.40s-%d", tag && *tag ? tag : "session", (int)getpid());
	r->cg = sandbox_cgroup_create(name, s->memory, s->nproc, &why);
	free(why);
}

int
sandbox_start(struct sandbox_run *r, struct sandbox_spec *s, struct workspace *ws,
    const char *tag, struct sandbox_proc *p, char **err)
{
	int bind_fds[SANDBOX_MAX_BINDS], mount_fds[SANDBOX_MAX_BINDS], rc;
	const char *bind_names[SANDBOX_MAX_BINDS], *mount_paths[SANDBOX_MAX_BINDS];

	s->nbinds = workspace_binds(ws, bind_fds, bind_names, SANDBOX_MAX_BINDS, err);
	if (s->nbinds < 0)
		return -1;
	s->bind_fds = bind_fds;
	s->bind_names = bind_names;
	s->nmounts = 0;
	cgroup_once(r, s, tag);
	s->cgroup_procs_fd = sandbox_cgroup_procs_fd(r->cg);
	r->oom_at_launch = sandbox_cgroup_oom_kills(r->cg);
	/* no process of this sandbox yet: what the workspace holds now */
	if (workspace_disk_baseline(ws, -1, err) < 0)
		return -1;
	/* last: each launch gets fresh mounts, closed once it has them */
	s->nmounts = workspace_mounts(ws, mount_fds, mount_paths,
	    SANDBOX_MAX_BINDS - s->nbinds, err);
	if (s->nmounts < 0)
		return -1;
	s->mount_fds = mount_fds;
	s->mount_paths = mount_paths;
	rc = sandbox_launch(s, p, err);
	for (int i = 0; i < s->nmounts; i++)
		close(mount_fds[i]);
	s->nmounts = 0;
	return rc;
}

int
sandbox_run_oom_killed(const struct sandbox_run *r)
{
	return r->cg != NULL && sandbox_cgroup_oom_kills(r->cg) > r->oom_at_launch;
}

void
sandbox_run_kill(struct sandbox_run *r)
{
	sandbox_cgroup_kill(r->cg);
}

#define DISK_EVERY_MS	100	/* disk check interval, at least... */
#define DISK_EVERY_MAX	1000	/* ...and at most; 50 times a check's cost between */
#define DISK_COST_X	50	/* (a walk of 10,000 files: 2 % of a core, not 5) */

static void on_disk_timer(struct loop *l, void *arg);
static void disk_judged(struct sandbox_run *r, char *why, int64_t cost);

/* One measure of the workspace on a thread of its own: a walk of
 * 10,000 files takes 10-20 ms here, and on the loop's thread every
 * cell, key and frame waited for it (a trivial cell's round trip +11 %
 * with 10,000 files in out/). The thread has copies of what it needs
 * and touches nothing else; its end is read back on the loop. */
struct disk_walk {
	pthread_t		 th;
	int			 efd;		/* eventfd: the walk is done */
	char			*dir;
	pid_t			 root;
	uint64_t		 max_bytes, max_files;
	struct workspace_usage	 u;
	int64_t			 cost;		/* us */
};

static void *
walk_main(void *arg)
{
	struct disk_walk *w = arg;
	uint64_t one = 1;

	w->cost = workspace_disk_measure(w->dir, w->root, w->max_bytes,
	    w->max_files, &w->u);
	while (write(w->efd, &one, sizeof one) < 0 && errno == EINTR)
		;
	return NULL;
}

static void
walk_free(struct disk_walk *w)
{
	if (w->efd >= 0)
		close(w->efd);
	free(w->dir);
	free(w);
}

/* Waits for the walk in flight (it is bounded by the limits) and frees
 * it; its measure is in r->walk->u until then. */
static void
walk_end(struct sandbox_run *r)
{
	struct disk_walk *w = r->walk;

	r->walk = NULL;
	pthread_join(w->th, NULL);
	loop_unwatch(r->loop, w->efd);
	walk_free(w);
}

static void
on_walk_done(struct loop *l, int fd, int revents, void *arg)
{
	struct sandbox_run *r = arg;
	struct workspace_usage u = r->walk->u;
	int64_t cost = r->walk->cost;

	walk_end(r);
	if (r->disk_on)
		disk_judged(r, workspace_disk_verdict(r->ws, &u), cost);
}

/* Starts a walk; 0, or -1 when no thread could be had (the caller
 * measures on this one). Signals stay with the loop's thread. */
static int
walk_start(struct sandbox_run *r)
{
	struct disk_walk *w = xcalloc(1, sizeof *w);
	sigset_t all, old;
	int rc;

	w->dir = workspace_disk_params(r->ws, &w->max_bytes, &w->max_files);
	w->root = r->cbs->root(r->arg);
	if ((w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		walk_free(w);
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&w->th, NULL, walk_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		walk_free(w);
		return -1;
	}
	r->walk = w;
	loop_watch(r->loop, w->efd, POLLIN, on_walk_done, r);
	return 0;
}

void
sandbox_run_disk(struct sandbox_run *r, struct loop *l, struct workspace *ws,
    int limited, const struct sandbox_disk_cbs *cbs, void *arg)
{
	r->disk_limited = limited;
	r->loop = l;
	r->ws = ws;
	r->cbs = cbs;
	r->arg = arg;
}

static void
disk_schedule(struct sandbox_run *r, int64_t ms)
{
	loop_timer_cancel(r->loop, r->disk_timer);
	r->disk_timer = 0;
	if (!r->disk_on)
		return;
	if (ms < DISK_EVERY_MS)
		ms = DISK_EVERY_MS;
	if (ms > DISK_EVERY_MAX)
		ms = DISK_EVERY_MAX;
	r->disk_every = ms;
	r->disk_timer = loop_timer_add(r->loop, ms, on_disk_timer, r);
}

static void
on_disk_timer(struct loop *l, void *arg)
{
	struct sandbox_run *r = arg;
	char *why;
	int64_t cost;

	r->disk_timer = 0;
	if (!r->disk_on || r->walk != NULL)
		return;		/* a walk's end schedules the next */
	if (walk_start(r) == 0)
		return;
	why = workspace_disk_check(r->ws, r->cbs->root(r->arg), &cost);
	disk_judged(r, why, cost);
}

/* A measure's end (why: its verdict, taken; cost in us): the next one
 * spaced by its cost, or the sandbox stopped. */
static void
disk_judged(struct sandbox_run *r, char *why, int64_t cost)
{
	r->disk_last = now_ms();	/* its end: a walk may take longer than
					 * the interval, cells are not to pay
					 * one each */
	if (why == NULL) {
		disk_schedule(r, cost * DISK_COST_X / 1000);
		return;
	}
	sandbox_run_disk_stop(r);
	r->cbs->over(r->arg, why);
}

void
sandbox_run_disk_arm(struct sandbox_run *r)
{
	r->disk_on = r->loop != NULL && r->disk_limited;
	disk_schedule(r, DISK_EVERY_MS);
}

void
sandbox_run_disk_soon(struct sandbox_run *r)
{
	if (!r->disk_on || r->walk != NULL)
		return;
	/* A check less than an interval ago (the one its cost chose): the
	 * timer's next one keeps the bound (what the sandbox writes between
	 * two checks, whatever its cells), and cells ending every
	 * millisecond do not each pay a walk of the workspace. */
	if (r->disk_timer != 0 && now_ms() - r->disk_last < r->disk_every)
		return;
	loop_timer_cancel(r->loop, r->disk_timer);
	r->disk_timer = loop_timer_add(r->loop, 0, on_disk_timer, r);
}

void
sandbox_run_disk_stop(struct sandbox_run *r)
{
	r->disk_on = 0;
	if (r->loop != NULL)
		loop_timer_cancel(r->loop, r->disk_timer);
	r->disk_timer = 0;
	if (r->walk != NULL)
		walk_end(r);
}

void
sandbox_run_free(struct sandbox_run *r)
{
	sandbox_run_disk_stop(r);	/* the loop outlives the run */
	sandbox_cgroup_destroy(r->cg);
	memset(r, 0, sizeof *r);
}

char *
sandbox_exit_reason(int code, int wstatus)
{
	int sig = 0;

	if (code < 0 && wstatus >= 0) {
		if (WIFEXITED(wstatus))
			code = WEXITSTATUS(wstatus);
		else if (WIFSIGNALED(wstatus))
			code = 128 + WTERMSIG(wstatus);
	}
	if (code > 128 && code < 160)
		sig = code - 128;
	switch (sig) {
	case 0:
		if (code < 0)
			return xstrdup("the Python process died");
		return xasprintf("the Python process exited with code %d", code);
	case SIGKILL:
		/* RLIMIT_DATA turns most memory bombs into MemoryError; a
		 * SIGKILL terp did not send is the OOM killer or a kill(). */
		return xasprintf("the Python process was killed (SIGKILL: out of memory or killed)");
	case SIGSEGV:
		return xstrdup("the Python process crashed (segmentation fault)");
	case SIGABRT:
		return xstrdup("the Python process aborted (SIGABRT)");
	case SIGBUS:
		return xstrdup("the Python process crashed (bus error)");
	case SIGSYS:
		return xstrdup("the Python process was killed by the sandbox's system-call policy (SIGSYS)");
	case SIGXCPU:
		return xstrdup("the Python process used up its CPU time budget (SIGXCPU)");
	case SIGXFSZ:
		return xstrdup("the Python process wrote a file past the size limit (SIGXFSZ)");
	default:
		return xasprintf("the Python process was killed by signal %d", sig);
	}
}
