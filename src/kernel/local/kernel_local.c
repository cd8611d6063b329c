/* kernel_local: the local backend (kernel_local.h). The host side of a
 * sandboxed Python session, its lifecycle:
 * start, run cells, the interrupt ladder, death, restart, stop. It
 * launches the sandbox (sandbox.c) in the session's folders
 * (workspace.c), reads the driver's frames (kernel_frame.c) and hands
 * artifacts to kernel_artifact.c, writes commands through kernel_chan.c,
 * streams output (its pipes: kernel_pipes.c), keeps track of the
 * sandbox's processes (kernel_procs.c), and reports everything through
 * the callbacks. Every
 * byte from the sandbox is hostile: a frame out of order is ignored,
 * garbage on the channel ends the sandbox. */
#include "terp/kernel_local.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/egress.h"
#include "terp/kernel_artifact.h"
#include "terp/kernel_chan.h"
#include "terp/kernel_code.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_net.h"
#include "terp/pipindex.h"
#include "terp/sandbox.h"
#include "terp/sandbox_start.h"
#include "terp/util.h"
#include "terp/workspace.h"

#include "driver_py.h"
#include "kernel_input.h"
#include "kernel_pipes.h"
#include "kernel_procs.h"
#include "kernel_pyinfo.h"
#include "egress_fwd_py.h"

#define CODE_MAX	(64u << 20)	/* a cell's code */
#define DEATH_WAIT_MS	2000	/* after the channel closed, before the kill */
#define DEATH_POLL_MS	5	/* without pidfds only: how often to look */
#define STRAY_WAIT_MS	2000	/* for processes killed at a cell's end to go */
#define INSTALLED_MAX	256	/* packages one "installed" frame may name */

struct pending {
	int		 n;
	int		 input;		/* may ask for input (kernel_set_input) */
	char		*code;
	struct pending	*next;
};

enum stop_cause { STOP_NONE, STOP_USER, STOP_TIMEOUT };

struct klocal {
	struct loop		*loop;
	const struct kernel_opts *o;
	struct kernel_cbs	 cb;
	void			*arg;

	enum kernel_state	 state;
	int			 loaded;	/* preload finished */
	struct sandbox_proc	 p;
	struct kprocs		 procs;		/* init, Python, forwarder, strays */
	int			 we_killed;
	/* SIGINTs sent to this sandbox's Python: each exec command says how
	 * many came before it, so the driver tells an interrupt meant for
	 * the cell from a stale one when it lands before the code runs */
	unsigned		 nints;
	int			 dying;
	uint64_t		 death_timer;
	int64_t			 death_since;

	struct workspace	*ws;		/* the session's folders */
	char			*kill_why;	/* why terp itself killed the sandbox */
	struct sandbox_run	 run;		/* its cgroup, across sandboxes */

	struct kframe_reader	 evr;		/* the driver's events */
	struct kernel_chan	 chan;		/* terp's commands to the driver */
	struct kpipes		 pipes;		/* its stdout and stderr */

	/* the running cell */
	int			 cur;		/* 0: none */
	int			 last;		/* gets output between cells */
	int64_t			 cur_start;	/* now_us() when the cell was sent */
	uint64_t		 timeout_timer, grace_timer;
	enum stop_cause		 stop;
	struct pending		*queue;
	int			 input_allow;	/* cells queued now may ask */
	struct kinput		 input;		/* the running cell's requests */
	int			 width;		/* the user's pane (klocal_set_width), or 0 */
	unsigned long long	 exec_end;	/* kernel_chan_queued after its exec */

	struct kernel_artifacts	*art;		/* the artifacts cells save */

	char			*stopped_why;	/* kernel_stop's reason until relaunch */

	struct kpyinfo		 py;		/* its packages, the driver's code */

	/* Egress: the proxy (NULL without allowed hosts); the forwarder
	 * the driver started is spared when a cell's strays die (procs). */
	struct kernel_net	*net;

};

static void kernel_on_ev(struct loop *l, int fd, int revents, void *arg);
static void kernel_on_out(struct loop *l, int fd, int revents, void *arg);
static void pipes_emit(void *arg, int stream, const char *p, size_t n);
static void kernel_on_status(struct loop *l, int fd, int revents, void *arg);
static void kernel_begin_death(struct klocal *k);
static const struct sandbox_disk_cbs disk_cbs;
static void kernel_next(struct klocal *k);
static void artifact_note(void *arg, const char *line);
static void artifact_copied(void *arg, int cell, const char *name,
    const char *host_path, uint64_t bytes);

/* What holds between calls: a cell runs exactly while the state says
 * so (kernel_next sets both, finish_cell clears both). */
static void
check(const struct klocal *k)
{
	assert((k->state == KERNEL_BUSY) == (k->cur != 0));
}

/* After kernel_next had its chance: a queued cell waits only behind a
 * running one, for a sandbox that is not ready, or for one dying. */
static void
check_queue(const struct klocal *k)
{
	assert(k->queue == NULL || k->cur != 0 || k->dying ||
	    (k->state != KERNEL_READY && k->state != KERNEL_LOADING));
}

static void
chan_broken(void *arg)
{
	kernel_begin_death(arg);
}

/* Whether the running cell's command is still (partly) in the queue:
 * the driver has not taken it. The exec command is the last one queued
 * while a cell runs (reset needs no cell running), so what is pending
 * is part of it. */
static int
cell_unsent(const struct klocal *k)
{
	/* by the exec command's own end: answers to input requests may
	 * wait behind it (kernel_chan_out) */
	return k->cur != 0 && !kernel_chan_out(&k->chan, k->exec_end);
}

/* Ends the whole sandbox: closing the launcher's life pipe makes it kill
 * everything under it (a SIGKILL of the launcher alone could leave
 * bwrap's child behind during its start-up). */
static void
end_sandbox(struct klocal *k)
{
	if (k->p.life_fd >= 0) {
		close(k->p.life_fd);
		k->p.life_fd = -1;
	} else if (k->p.pid > 0) {
		kill(k->p.pid, SIGKILL);
	}
}



static void
set_status(struct klocal *k, enum kernel_state st, const char *msg,
    int restarted, int state_lost)
{
	struct kernel_status ks = { .state = st, .restarted = restarted,
	    .state_lost = state_lost, .msg = msg ? msg : kernel_state_name(st) };

	k->state = st;
	if (k->cb.state)
		k->cb.state(k->arg, &ks);
}

static void
set_state(struct klocal *k, enum kernel_state st, const char *msg)
{
	set_status(k, st, msg, 0, 0);
}

/* ------------------------------------------------------------ python */

const char *
klocal_python_info(const struct klocal *k)
{
	return kpyinfo_line(&k->py);
}

int
klocal_python_charts(const struct klocal *k)
{
	return kpyinfo_charts(&k->py);
}

char *
klocal_python_label(const struct klocal *k)
{
	return kpyinfo_label(&k->py, k->o);
}

/* ------------------------------------------------------------ egress */

static void emit_output(struct klocal *k, int stream, const char *p, size_t n);
static void drain_all(struct klocal *k);

static void
net_event(void *arg, int cell, const struct egress_event *ev)
{
	struct klocal *k = arg;

	if (k->cb.net)
		k->cb.net(k->arg, cell, ev);
}

/* terp's line about a refused attempt, after what the cell printed so
 * far, like the artifact notes. */
static void
net_note(void *arg, int cell, const char *line)
{
	struct klocal *k = arg;

	drain_all(k);
	emit_output(k, 1, line, strlen(line));
}

static int
has_allow(const struct kernel_opts *o)
{
	return o->allow_hosts != NULL && o->allow_hosts[0] != NULL;
}

/* A resumed session's runtime changes ("allow SPEC", "deny SPEC" from
 * its journal), in order, over the rules of the command line. They
 * were valid when made; one that is not any more is skipped. */
static int
has_ops_allow(const struct kernel_opts *o)
{
	for (int i = 0; o->egress_ops != NULL && o->egress_ops[i] != NULL; i++)
		if (strncmp(o->egress_ops[i], "allow ", 6) == 0)
			return 1;
	return 0;
}

static void
net_apply_ops(struct klocal *k)
{
	for (int i = 0; k->o->egress_ops != NULL && k->o->egress_ops[i] != NULL; i++) {
		const char *op = k->o->egress_ops[i];
		char *err = NULL;
		if (strncmp(op, "allow ", 6) == 0)
			(void)kernel_net_allow(k->net, op + 6, &err);
		else if (strncmp(op, "deny ", 5) == 0)
			(void)kernel_net_deny(k->net, op + 5, &err);
		free(err);
	}
}

static int
net_new(struct klocal *k, const char *const *allow, char **err)
{
	static const struct kernel_net_cbs cbs = { .event = net_event, .note = net_note };

	if (k->o->no_sandbox || k->o->network) {
		*err = xstrdup("--allow-host and /allow need the sandbox's own network: they "
		    "have no meaning with --network or --no-sandbox");
		return -1;
	}
	k->net = kernel_net_new(k->loop, allow, k->o->egress_max, k->o->egress_sent,
	    &cbs, k, err);
	return k->net != NULL ? 0 : -1;
}

/* The session's proxy, once: its socket goes beside the workspace. A
 * proxy made by /allow before the start is started here too. */
static int
net_start(struct klocal *k, char **err)
{
	if (k->net == NULL) {
		if (!has_allow(k->o) && !has_ops_allow(k->o))
			return 0;
		if (net_new(k, k->o->allow_hosts, err) < 0)
			return -1;
		net_apply_ops(k);
	}
	return kernel_net_start(k->net, workspace_base(k->ws), workspace_uid(k->ws), err);
}

int
klocal_egress_allow(struct klocal *k, const char *spec, char **err)
{
	const char *one[] = { spec, NULL };

	if (egress_rule_check(spec, err) < 0)
		return -1;
	if (k->net != NULL)
		return kernel_net_allow(k->net, spec, err);
	/* A session started without egress: its sandbox has neither the
	 * proxy's socket nor the forwarder nor the proxy variables, which
	 * exist only from a start. So: the proxy now, and a restart. */
	if (k->cur != 0) {
		*err = xstrdup("a cell is running, and allowing the first host restarts the "
		    "Python session; try again when it ends (or interrupt it)");
		return -1;
	}
	if (net_new(k, one, err) < 0)
		return -1;
	if (k->state == KERNEL_STOPPED || k->state == KERNEL_DEAD)
		return 0;	/* kernel_start starts the proxy */
	if (net_start(k, err) < 0 || klocal_restart(k, err) < 0)
		return -1;
	return 1;
}

int
klocal_egress_deny(struct klocal *k, const char *spec, char **err)
{
	if (egress_rule_check(spec, err) < 0)
		return -1;
	if (k->net == NULL)
		return 0;	/* nothing gets out anyway */
	return kernel_net_deny(k->net, spec, err);
}

/* ------------------------------------------------------------ new */

struct klocal *
klocal_new(struct loop *l, const struct kernel_opts *o, const struct kernel_cbs *cb,
    void *arg)
{
	struct klocal *k = xcalloc(1, sizeof *k);

	k->o = o;
	k->loop = l;
	k->o = o;
	k->cb = *cb;
	k->arg = arg;
	k->p.pid = -1;
	k->p.cmd_fd = k->p.ev_fd = k->p.out_fd = k->p.err_fd = k->p.status_fd = -1;
	k->p.life_fd = k->p.pid_fd = -1;
	kprocs_init(&k->procs);
	kpyinfo_cached(&k->py, o, driver_py_sha256);
	k->ws = workspace_new(o->session_dir, o->no_sandbox, o->disk, o->disk_files);
	sandbox_run_disk(&k->run, l, k->ws, o->disk != 0, &disk_cbs, k);
	kframe_reader_init(&k->evr, KFRAME_MAX);
	kernel_chan_init(&k->chan, l, chan_broken, k);
	{
		struct kframe_caps caps = {
			.size_max = o->artifact_max,
			.per_cell = o->artifacts_per_cell,
			.per_session = o->artifacts_per_session,
			.session_bytes = o->artifact_bytes,
		};
		k->art = kernel_artifact_new(o->out_dir, &caps, artifact_copied,
		    artifact_note, k);
		for (int i = 0; i < o->nown; i++)
			kernel_artifact_adopt(k->art, o->own_files[i].name,
			    o->own_files[i].bytes);
	}
	kpipes_init(&k->pipes, pipes_emit, k);
	return k;
}








enum kernel_state
klocal_state(const struct klocal *k)
{
	return k->state;
}

int
klocal_busy(const struct klocal *k)
{
	return k->cur != 0 || k->queue != NULL;
}


char *
klocal_stage(struct klocal *k, const char *host_path, char **err)
{
	return workspace_stage(k->ws, host_path, k->p.pid > 0, err);
}

/* ------------------------------------------------------------ disk */

/* The sandbox's first process: its deleted-but-open files count. */
static pid_t
disk_root(void *arg)
{
	const struct klocal *k = arg;

	return kprocs_root(&k->procs);
}

/* The workspace over its limits (sandbox_run_disk, from its timer). */
static void
disk_over(void *arg, char *why)
{
	struct klocal *k = arg;

	if (k->p.pid <= 0 || k->dying) {
		free(why);
		return;
	}
	free(k->kill_why);
	k->kill_why = why;
	/* The launcher kills the whole sandbox when its life pipe closes. */
	end_sandbox(k);
	kernel_begin_death(k);
}

static const struct sandbox_disk_cbs disk_cbs = { .root = disk_root, .over = disk_over };

/* At a cell's end: the processes it left behind go (they are not
 * bounded by the cell's time limit otherwise), and the disk is
 * checked. The driver's Python stays. */
static void
cell_cleanup(struct klocal *k)
{
	if (k->p.pid <= 0 || k->dying)
		return;
	kprocs_cell_end(&k->procs, STRAY_WAIT_MS);
	sandbox_run_disk_soon(&k->run);	/* from the loop: a kill now would
					 * finish this very cell twice */
}

/* ------------------------------------------------------------ launch */

/* A new channel: nothing of the last sandbox's is pending on it. */
static void
watch_all(struct klocal *k)
{
	kernel_chan_attach(&k->chan, k->p.cmd_fd);
	loop_watch(k->loop, k->p.ev_fd, POLLIN, kernel_on_ev, k);
	loop_watch(k->loop, k->p.out_fd, POLLIN, kernel_on_out, k);
	loop_watch(k->loop, k->p.err_fd, POLLIN, kernel_on_out, k);
	if (k->p.status_fd >= 0)
		loop_watch(k->loop, k->p.status_fd, POLLIN, kernel_on_status, k);
}

static void
unwatch_all(struct klocal *k)
{
	kernel_chan_detach(&k->chan);
	if (k->p.ev_fd >= 0)
		loop_unwatch(k->loop, k->p.ev_fd);
	if (k->p.out_fd >= 0)
		loop_unwatch(k->loop, k->p.out_fd);
	if (k->p.err_fd >= 0)
		loop_unwatch(k->loop, k->p.err_fd);
	if (k->p.status_fd >= 0)
		loop_unwatch(k->loop, k->p.status_fd);
	if (k->p.pid_fd >= 0)
		loop_unwatch(k->loop, k->p.pid_fd);
}

/* When the driver imports the libraries: at its first idle gap, on the
 * first cell that names one (terp exec without data), or never. */
static int
preload_mode(const struct klocal *k)
{
	if (getenv("TERP_NO_PRELOAD") != NULL)
		return SANDBOX_PRELOAD_OFF;
	return k->o->preload_on_need ? SANDBOX_PRELOAD_NEED : SANDBOX_PRELOAD_IDLE;
}

/* The sandbox's settings from the options; binds and cgroup apart. */
static void
spec_fill(const struct klocal *k, struct sandbox_spec *s)
{
	memset(s, 0, sizeof *s);
	s->python = k->o->python ? k->o->python : "/usr/bin/python3";
	s->workspace = workspace_dir(k->ws);
	s->datadir = workspace_datadir(k->ws);
	s->driver = (const char *)driver_py;
	s->driver_len = sizeof driver_py;
	s->uid = workspace_uid(k->ws);
	s->memory = k->o->memory;
	s->nproc = k->o->nproc;
	s->fsize = k->o->fsize;
	s->nofile = k->o->nofile;
	s->artifact_max = k->o->artifact_max;
	s->no_sandbox = k->o->no_sandbox;
	s->network = k->o->network;
	s->preload = preload_mode(k);
	s->cgroup_procs_fd = -1;
	s->pyenv = k->o->pyenv;
	/* sandbox_env (the user's pip index) goes with each exec command,
	 * not on bwrap's command line, which any local user can read */
	s->setenv = NULL;
	s->probe = !k->py.have_probe;
	s->code = k->py.code;
	s->code_len = k->py.code_len;
	s->loader = kcode_loader;
	s->code_want = kpyinfo_code_wanted(&k->py);
	if (k->net != NULL) {
		s->egress_sock = kernel_net_socket(k->net);
		s->fwd = (const char *)egress_fwd_py;
		s->fwd_len = sizeof egress_fwd_py;
	}
}

/* Nothing of the last sandbox's is left in what a launch starts with. */
static void
launch_reset(struct klocal *k)
{
	kframe_reader_reset(&k->evr);
	kpipes_reset(&k->pipes);
	k->we_killed = 0;
	k->dying = 0;
	/* Only an idle-time preload is worth saying "loading" for: one on
	 * need comes with the cell that asked for it. */
	k->loaded = preload_mode(k) != SANDBOX_PRELOAD_IDLE;
	kprocs_reset(&k->procs, k->o->no_sandbox);
	free(k->kill_why);
	k->kill_why = NULL;
}

static int
launch(struct klocal *k, char **err)
{
	struct sandbox_spec s;
	const char *id = strrchr(k->o->session_dir, '/');
	/* a sandbox ran before this one: its Python state is gone */
	int lost = k->state != KERNEL_STOPPED || k->stopped_why != NULL;

	/* One sandbox at a time: the last one is reaped. */
	assert(k->p.pid <= 0 && !k->dying);
	k->nints = 0;	/* a new driver counts from 0 */
	spec_fill(k, &s);
	launch_reset(k);
	if (sandbox_start(&k->run, &s, k->ws, id ? id + 1 : NULL, &k->p, err) < 0)
		return -1;
	if (k->o->no_sandbox)
		kprocs_set_python(&k->procs, k->p.pid);
	watch_all(k);
	sandbox_run_disk_arm(&k->run);
	if (k->stopped_why != NULL) {
		char *msg = xasprintf("restarted the sandbox, which was stopped (%s)",
		    k->stopped_why);
		free(k->stopped_why);
		k->stopped_why = NULL;
		set_status(k, KERNEL_STARTING, msg, 1, 1);
		free(msg);
	} else {
		set_status(k, KERNEL_STARTING, "starting the sandbox", 0, lost);
	}
	return 0;
}

int
klocal_start(struct klocal *k, char **err)
{
	if (k->state != KERNEL_STOPPED && k->state != KERNEL_DEAD) {
		*err = xstrdup("the Python session is running already");
		return -1;
	}
	if (workspace_prepare(k->ws, err) < 0)
		return -1;
	if (net_start(k, err) < 0)
		return -1;
	if (kernel_artifact_open(k->art, err) < 0)
		return -1;
	for (int i = 0; i < k->o->ndata; i++) {
		char *p = workspace_stage(k->ws, k->o->data_files[i], k->p.pid > 0, err);
		if (p == NULL)
			return -1;
		free(p);
	}
	return launch(k, err);
}

/* ------------------------------------------------------------ output */

/* What the pipes read (kernel_pipes.c), to the running cell, or
 * between cells to the last one. */
static void
pipes_emit(void *arg, int stream, const char *p, size_t n)
{
	struct klocal *k = arg;

	if (k->cb.output)
		k->cb.output(k->arg, k->cur ? k->cur : k->last, stream, p, n);
}

/* terp's own lines (notes), after what the cell printed. */
static void
emit_output(struct klocal *k, int stream, const char *p, size_t n)
{
	kpipes_bytes(&k->pipes, stream, p, n, 0);
}

static void
kernel_on_out(struct loop *l, int fd, int revents, void *arg)
{
	struct klocal *k = arg;

	if (kpipes_read(&k->pipes, fd, fd == k->p.err_fd, k->state == KERNEL_STARTING) < 0)
		loop_unwatch(l, fd);
}

static void
drain_all(struct klocal *k)
{
	kpipes_drain(&k->pipes, k->p.out_fd, k->p.err_fd, k->state == KERNEL_STARTING);
}

/* A line about the cell's artifacts, after what the cell printed. */
static void
artifact_note(void *arg, const char *line)
{
	struct klocal *k = arg;

	drain_all(k);
	emit_output(k, 1, line, strlen(line));
}

static void
artifact_copied(void *arg, int cell, const char *name, const char *host_path,
    uint64_t bytes)
{
	struct klocal *k = arg;

	if (k->cb.artifact)
		k->cb.artifact(k->arg, cell, name, host_path, bytes);
}

/* ------------------------------------------------------------ cells */

static void
cancel_timers(struct klocal *k)
{
	loop_timer_cancel(k->loop, k->timeout_timer);
	loop_timer_cancel(k->loop, k->grace_timer);
	k->timeout_timer = k->grace_timer = 0;
}

static void
finish_cell(struct klocal *k, struct kernel_result *r)
{
	int n = k->cur;

	check(k);
	assert(n != 0);
	cell_cleanup(k);
	cancel_timers(k);
	kernel_artifact_cell_end(k->art);
	kpipes_flush(&k->pipes);
	r->duration_us = now_us() - k->cur_start;
	r->duration_ms = r->duration_us / 1000;
	k->last = n;
	k->cur = 0;
	k->stop = STOP_NONE;
	if (k->state == KERNEL_BUSY)
		set_state(k, k->loaded ? KERNEL_READY : KERNEL_LOADING, NULL);
	if (k->cb.result)
		k->cb.result(k->arg, n, r);
}

static char *
memory_reason(const struct klocal *k)
{
	char b[32];
	fmt_bytes(b, sizeof b, k->o->memory);
	return xasprintf("out of memory (limit %s)", b);
}

/* Python and the driver need about 10 MiB to start (measured: 10M starts
 * print(1), not always; 8M fails with MemoryError, 1M before the
 * interpreter runs, as "exited with code 127" or a segfault). Under this
 * floor any death says the limit is the cause. */
#define MEMORY_START_FLOOR	(16ULL << 20)

/* reason (consumed), with why the limit is the cause when it is small. */
static char *
small_memory(const struct klocal *k, char *reason)
{
	char b[32], *s;

	if (k->o->memory == 0 || k->o->memory >= MEMORY_START_FLOOR)
		return reason;
	fmt_bytes(b, sizeof b, k->o->memory);
	s = xasprintf("%s; the memory limit of %s is too small to start Python "
	    "(16M is the smallest that works)", reason, b);
	free(reason);
	return s;
}

static void
on_result(struct klocal *k, const struct kframe *f)
{
	struct kernel_result r;
	char *reason = NULL, *own[5] = { NULL, NULL, NULL, NULL, NULL };

	check(k);
	/* Only the running cell's, once (cur is 0 after), and only once
	 * the driver has the cell: anything else is stale or forged. */
	if (!f->has_id || k->cur == 0 || f->id != k->cur || cell_unsent(k))
		return;
	drain_all(k);
	memset(&r, 0, sizeof r);
	/* the driver cuts its texts at 64 KiB, a forged frame need not */
	r.value = own[0] = kframe_text_cap(f->value);
	r.ename = own[1] = kframe_text_cap(f->ename);
	r.evalue = own[2] = kframe_text_cap(f->evalue);
	r.traceback = own[3] = kframe_text_cap(f->traceback);
	if (r.value != NULL)	/* a wide form of no value is forged */
		r.value_wide = own[4] = kframe_text_cap(f->value_wide);
	r.status = f->ok ? CELL_OK : CELL_ERROR;
	if (r.ename && strcmp(r.ename, "KeyboardInterrupt") == 0 && k->stop != STOP_NONE) {
		if (k->stop == STOP_TIMEOUT) {
			r.status = CELL_TIMEOUT;
			reason = xasprintf("the cell ran past its time limit of %g s and was interrupted; the session kept its state",
			    (double)k->o->timeout_ms / 1000);
		} else {
			r.status = CELL_INTERRUPTED;
			reason = xstrdup("interrupted; the session kept its state");
		}
	} else if (r.ename && strcmp(r.ename, "MemoryError") == 0) {
		reason = memory_reason(k);
	}
	r.reason = reason;
	finish_cell(k, &r);
	free(reason);
	for (int i = 0; i < 5; i++)
		free(own[i]);
	kernel_next(k);
	check_queue(k);
}

/* terp ends the sandbox itself, for why (taken). as_stop: the running
 * cell ends as timed out or interrupted (k->stop), else as crashed. */
static void
kill_sandbox(struct klocal *k, char *why, int as_stop)
{
	if (k->dying) {
		free(why);
		return;
	}
	free(k->kill_why);
	k->kill_why = why;
	k->we_killed = as_stop;
	end_sandbox(k);
	kernel_begin_death(k);
}

/* {"ev":"installed","id":N,"packages":[[name, version], ...]}: what pip
 * put into the session's site directory during the cell. */
static void
on_installed(struct klocal *k, const struct kframe *f)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(f->json, "packages");
	const cJSON *p;
	int n = 0;

	if (!cJSON_IsArray(list) || k->cb.installed == NULL)
		return;
	cJSON_ArrayForEach(p, list) {
		const char *name, *ver;
		if (n++ >= INSTALLED_MAX)
			break;
		if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2)
			continue;
		name = cJSON_GetStringValue(cJSON_GetArrayItem(p, 0));
		ver = cJSON_GetStringValue(cJSON_GetArrayItem(p, 1));
		/* what the journal may keep: the words the index filter
		 * and the journal's reader accept */
		if (name == NULL || ver == NULL || !pipindex_word_ok(name) ||
		    !pipindex_word_ok(ver))
			continue;
		/* the journal keeps it (EV_PACKAGE); --resume --replay
		 * installs it again before replaying the cells */
		k->cb.installed(k->arg, k->cur, name, ver);
	}
}

/* Sends an "input_reply" command (taken). */
static void
input_send(struct klocal *k, cJSON *cmd)
{
	if (kernel_chan_send(&k->chan, cmd) < 0)
		kill_sandbox(k, xasprintf("the sandbox stopped reading terp's commands (over %u MiB waiting)",
		    KERNEL_CHAN_MAX >> 20), 0);
	cJSON_Delete(cmd);
}

/* {"ev":"input","id":N,"prompt":...,"password":bool}: the running cell
 * asks for a line (input(), sys.stdin, getpass), bounded by
 * kernel_input.h. A refusal goes only when the driver has read all terp
 * sent: with a backlog, nobody waits for the answer. */
static void
on_input(struct klocal *k, const struct kframe *f)
{
	char *prompt = NULL;
	const char *refusal = NULL;
	int rc = kinput_request(&k->input, f, &prompt, &refusal);

	if (rc < 0 && kernel_chan_pending(&k->chan) == 0)
		input_send(k, kinput_answer(k->cur, NULL, refusal, 0));
	if (rc > 0)
		k->cb.input(k->arg, k->cur, prompt, f->password);
	free(prompt);
}

void
klocal_set_input(struct klocal *k, int allow)
{
	k->input_allow = allow != 0;
}

void
klocal_set_width(struct klocal *k, int cols)
{
	k->width = cols >= 20 && cols <= 1000 ? cols : 0;
}

int
klocal_input_reply(struct klocal *k, int cell, const char *line)
{
	cJSON *cmd;

	if (k->cur == 0 || cell != k->cur || (cmd = kinput_reply(&k->input, cell, line)) == NULL)
		return -1;
	input_send(k, cmd);
	return 0;
}

/* One line from the driver. Order is checked here: "ready" only while
 * starting, "result" and "artifact" only for the running cell (by id),
 * "chunk" and "artifact_end" only inside an artifact; anything else is
 * ignored, which costs nothing. */
static void
handle_frame(struct klocal *k, const char *line, size_t len)
{
	struct kframe f;
	const char *why;

	if (kframe_parse(line, len, &f, &why) < 0) {
		/* Frames are claims; garbage means the channel is not ours. */
		kill_sandbox(k, xasprintf("the sandbox sent %s", why), 0);
		return;
	}
	switch (f.type) {
	case KF_READY:
		if (k->state != KERNEL_STARTING)
			break;
		kprocs_ready(&k->procs, k->net != NULL && !k->o->no_sandbox);
		kpyinfo_ready(&k->py, k->o, &f);
		set_state(k, k->loaded ? KERNEL_READY : KERNEL_LOADING,
		    k->loaded ? NULL : "loading pandas, numpy, matplotlib");
		kernel_next(k);
		break;
	case KF_LOADED:
		k->loaded = 1;
		if (k->state == KERNEL_LOADING)
			set_state(k, KERNEL_READY, NULL);
		break;
	case KF_RESULT:
		on_result(k, &f);
		break;
	case KF_ARTIFACT:
		if (k->cur != 0 && !cell_unsent(k) && f.has_id && f.id == k->cur)
			kernel_artifact_begin(k->art, &f);
		break;
	case KF_CHUNK:
		kernel_artifact_chunk(k->art, &f);
		break;
	case KF_ARTIFACT_END:
		kernel_artifact_end(k->art, &f);
		break;
	case KF_ARTIFACT_SKIP:
		if (k->cur != 0 && f.has_id && f.id == k->cur)
			kernel_artifact_skip(k->art, &f);
		break;
	case KF_INSTALLED:
		if (k->cur != 0 && !cell_unsent(k) && f.has_id && f.id == k->cur)
			on_installed(k, &f);
		break;
	case KF_INPUT:
		if (k->cur != 0 && !cell_unsent(k) && f.has_id && f.id == k->cur)
			on_input(k, &f);
		break;
	default:
		break;	/* "reset", "pong" and unknown events need nothing */
	}
	kframe_free(&f);
}

static void
kernel_on_ev(struct loop *l, int fd, int revents, void *arg)
{
	struct klocal *k = arg;
	char b[65536];
	int rounds = 0;
	const char *line;
	size_t len;

	while (rounds++ < 64) {
		ssize_t n = read(fd, b, sizeof b);
		if (n == 0) {
			kernel_begin_death(k);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				kernel_begin_death(k);
			return;
		}
		if (kframe_reader_add(&k->evr, b, (size_t)n) < 0) {
			kill_sandbox(k, xasprintf("the sandbox sent a protocol frame over %u MiB",
			    KFRAME_MAX >> 20), 0);
			return;
		}
		while (kframe_reader_next(&k->evr, &line, &len)) {
			handle_frame(k, line, len);
			if (k->dying || k->p.ev_fd != fd)
				return;
		}
		/* A short read emptied the pipe: the loop's next poll says
		 * when there is more (a read for EAGAIN cost a system call
		 * a frame). */
		if ((size_t)n < sizeof b)
			return;
	}
}

/* bwrap's JSON status lines (kprocs_status). */
static void
kernel_on_status(struct loop *l, int fd, int revents, void *arg)
{
	struct klocal *k = arg;

	if (kprocs_status(&k->procs, fd))
		loop_unwatch(l, fd);
}

static void
on_grace(struct loop *l, void *arg)
{
	struct klocal *k = arg;

	k->grace_timer = 0;
	if (k->cur == 0)
		return;
	/* The cell ignored the interrupt: kill the whole sandbox. */
	k->we_killed = 1;
	end_sandbox(k);
	kernel_begin_death(k);
}

static void
stop_cell(struct klocal *k, enum stop_cause why)
{
	if (k->cur == 0 || k->dying)
		return;
	if (k->stop == STOP_NONE)
		k->stop = why;
	if (cell_unsent(k)) {
		/* The driver has not taken the cell although it looked idle:
		 * code of an earlier cell still runs (it may have forged its
		 * end), or the command pipe was shrunk or is not read. An
		 * interrupt would hit that code, and a half-written command
		 * cannot be taken back: the sandbox goes. */
		kill_sandbox(k, k->stop == STOP_TIMEOUT ?
		    xasprintf("the session did not take the cell within its time limit of %g s (code of an earlier cell still running, or the channel tampered with) and was killed",
		    (double)k->o->timeout_ms / 1000) :
		    xstrdup("the session had not taken the cell when it was interrupted (code of an earlier cell still running, or the channel tampered with) and was killed"),
		    1);
		return;
	}
	k->nints++;
	kprocs_signal(&k->procs, k->p.status_fd, SIGINT);
	if (k->grace_timer == 0)
		k->grace_timer = loop_timer_add(k->loop, k->o->grace_ms, on_grace, k);
}

static void
on_timeout(struct loop *l, void *arg)
{
	struct klocal *k = arg;

	k->timeout_timer = 0;
	stop_cell(k, STOP_TIMEOUT);
}

void
klocal_interrupt(struct klocal *k)
{
	check(k);
	stop_cell(k, STOP_USER);
}

/* Starts the next queued cell when the driver can take it. */
static void
kernel_next(struct klocal *k)
{
	struct pending *p = k->queue;
	cJSON *cmd;

	if (p == NULL || k->cur != 0 || k->dying ||
	    (k->state != KERNEL_READY && k->state != KERNEL_LOADING))
		return;
	k->queue = p->next;
	k->cur = p->n;
	k->cur_start = now_us();
	k->stop = STOP_NONE;
	kernel_artifact_cell_start(k->art, p->n);
	if (k->net != NULL)
		kernel_net_cell(k->net, p->n);
	set_state(k, KERNEL_BUSY, NULL);
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "op", "exec");
	cJSON_AddNumberToObject(cmd, "id", p->n);
	cJSON_AddStringToObject(cmd, "code", p->code);
	if (p->input)
		cJSON_AddTrueToObject(cmd, "stdin");
	kinput_cell(&k->input, p->input);
	cJSON_AddNumberToObject(cmd, "ints", k->nints);
	if (k->width > 0)
		cJSON_AddNumberToObject(cmd, "width", k->width);
	if (k->o->sandbox_env != NULL && k->o->sandbox_env[0] != NULL) {
		cJSON *env = cJSON_AddObjectToObject(cmd, "env");
		for (const char *const *e = k->o->sandbox_env; *e != NULL; e++) {
			const char *eq = strchr(*e, '=');
			char *key;
			if (eq == NULL)
				continue;
			key = xstrndup(*e, (size_t)(eq - *e));
			cJSON_AddStringToObject(env, key, eq + 1);
			free(key);
		}
	}
	/* The clock runs from the queueing, not from when the driver takes
	 * the cell: a driver that never takes it times out all the same. */
	if (k->o->timeout_ms > 0)
		k->timeout_timer = loop_timer_add(k->loop, k->o->timeout_ms, on_timeout, k);
	if (kernel_chan_send(&k->chan, cmd) < 0)
		kill_sandbox(k, xasprintf("the sandbox stopped reading terp's commands (over %u MiB waiting)",
		    KERNEL_CHAN_MAX >> 20), 0);
	k->exec_end = kernel_chan_queued(&k->chan);
	cJSON_Delete(cmd);
	free(p->code);
	free(p);
}

int
klocal_run(struct klocal *k, int n, const char *code, char **err)
{
	struct pending *p, **pp;

	check(k);
	if (strlen(code) > CODE_MAX) {
		*err = xasprintf("the cell's code is over %u MiB", CODE_MAX >> 20);
		return -1;
	}
	if (k->state == KERNEL_STOPPED && k->stopped_why != NULL &&
	    launch(k, err) < 0) {
		set_state(k, KERNEL_DEAD, *err);
		return -1;
	}
	if (k->state == KERNEL_DEAD || k->state == KERNEL_STOPPED) {
		*err = xstrdup("the Python session is not running");
		return -1;
	}
	p = xcalloc(1, sizeof *p);
	p->n = n;
	p->input = k->input_allow && k->cb.input != NULL;
	p->code = xstrdup(code);
	for (pp = &k->queue; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	kernel_next(k);
	check(k);
	check_queue(k);
	return 0;
}

/* ------------------------------------------------------------ death */

static char *
death_reason(struct klocal *k, int wstatus)
{
	if (k->kill_why != NULL)
		return xstrdup(k->kill_why);
	if (k->we_killed)
		return xasprintf("the cell ignored the interrupt for %.1f s and was killed",
		    (double)k->o->grace_ms / 1000.0);
	if (sandbox_run_oom_killed(&k->run)) {
		char *m = memory_reason(k);
		char *r = xasprintf("the Python process was killed: %s", m);
		free(m);
		return r;
	}
	return sandbox_exit_reason(k->procs.exit_code, wstatus);
}

static void
finish_death(struct klocal *k, int wstatus)
{
	char *reason, *msg;
	int was_cell = k->cur;
	int starting = k->state == KERNEL_STARTING;
	char *err = NULL;

	assert(k->dying && k->p.pid <= 0);
	assert(!starting || was_cell == 0);
	loop_timer_cancel(k->loop, k->death_timer);
	k->death_timer = 0;
	drain_all(k);
	kernel_artifact_abandon(k->art, "incomplete: the session ended while it was copied");
	if (starting && !k->o->no_sandbox && k->procs.exit_code < 0) {
		/* bwrap failed in its own setup: its stderr says why. */
		char *why = small_memory(k,
		    sandbox_explain(kpipes_start_err(&k->pipes)));
		unwatch_all(k);
		sandbox_close_fds(&k->p);
		free(k->kill_why);
		k->kill_why = NULL;
		set_state(k, KERNEL_DEAD, why);
		free(why);
		return;
	}
	reason = small_memory(k, death_reason(k, wstatus));
	free(k->kill_why);
	k->kill_why = NULL;
	unwatch_all(k);
	sandbox_close_fds(&k->p);
	if (was_cell) {
		struct kernel_result r;
		memset(&r, 0, sizeof r);
		r.status = k->we_killed ? (k->stop == STOP_TIMEOUT ? CELL_TIMEOUT : CELL_INTERRUPTED) :
		    CELL_CRASHED;
		msg = xasprintf("%s; the session restarted and its state (variables, imports) was lost", reason);
		r.reason = msg;
		r.state_lost = 1;
		finish_cell(k, &r);
		free(msg);
	}
	k->dying = 0;
	if (starting) {
		msg = xasprintf("the sandbox died while starting: %s", reason);
		set_state(k, KERNEL_DEAD, msg);
		free(msg);
		free(reason);
		return;
	}
	msg = xasprintf("%s; restarted the session", reason);
	free(reason);
	if (launch(k, &err) < 0) {
		set_state(k, KERNEL_DEAD, err);
		free(err);
	} else {
		set_status(k, KERNEL_STARTING, msg, 1, 1);
	}
	free(msg);
}

/* Reaps the sandbox's first process when it has exited and finishes
 * the death. Returns 1 when it did. */
static int
reap_death(struct klocal *k)
{
	int status = -1;
	pid_t r = 0;

	if (k->p.status_fd >= 0)
		(void)kprocs_status(&k->procs, k->p.status_fd);
	if (k->p.pid > 0) {
		r = waitpid(k->p.pid, &status, WNOHANG);
		if (r == 0 || (r < 0 && errno == EINTR))
			return 0;	/* still running */
	}
	/* Reaped, or not ours to wait for any more (status -1: unknown). */
	if (r != k->p.pid)
		status = -1;
	k->p.pid = -1;
	if (k->p.status_fd >= 0)
		(void)kprocs_status(&k->procs, k->p.status_fd);
	finish_death(k, status);
	return 1;
}

/* The pidfd: the process exited. */
static void
on_death_exit(struct loop *l, int fd, int revents, void *arg)
{
	reap_death(arg);
}

/* DEATH_WAIT_MS after the channel closed, the sandbox still runs: it is
 * killed, and its exit comes through the pidfd. Without pidfds this
 * timer also looks every DEATH_POLL_MS. */
static void
on_death_timer(struct loop *l, void *arg)
{
	struct klocal *k = arg;
	int64_t waited = now_ms() - k->death_since;

	k->death_timer = 0;
	if (reap_death(k))
		return;
	if (waited >= DEATH_WAIT_MS)
		kill(k->p.pid, SIGKILL);
	if (k->p.pid_fd < 0)
		k->death_timer = loop_timer_add(l, DEATH_POLL_MS, on_death_timer, k);
	else if (waited < DEATH_WAIT_MS)
		k->death_timer = loop_timer_add(l, DEATH_WAIT_MS - waited, on_death_timer, k);
}

/* The channel closed, broke, or we killed the sandbox: wait for the
 * process to go (it will: the driver is gone), then report and restart.
 * Not killed yet: bwrap reports the exit code (os._exit(3) is "exited
 * with code 3", not "killed"); on_death_timer kills it when it lingers. */
static void
kernel_begin_death(struct klocal *k)
{
	if (k->dying)
		return;
	k->dying = 1;
	k->death_since = now_ms();
	sandbox_run_disk_stop(&k->run);	/* what it wrote no longer matters */
	if (k->p.ev_fd >= 0)
		loop_unwatch(k->loop, k->p.ev_fd);
	kernel_chan_detach(&k->chan);	/* nothing more goes out */
	if (reap_death(k))
		return;
	if (k->p.pid_fd >= 0) {
		loop_watch(k->loop, k->p.pid_fd, POLLIN, on_death_exit, k);
		k->death_timer = loop_timer_add(k->loop, DEATH_WAIT_MS, on_death_timer, k);
	} else {
		k->death_timer = loop_timer_add(k->loop, DEATH_POLL_MS, on_death_timer, k);
	}
}

/* ------------------------------------------------------------ control */

static void
stop_now(struct klocal *k)
{
	struct pending *p;

	cancel_timers(k);
	loop_timer_cancel(k->loop, k->death_timer);
	k->death_timer = 0;
	sandbox_run_disk_stop(&k->run);
	unwatch_all(k);
	sandbox_run_kill(&k->run);
	sandbox_kill(&k->p);
	kprocs_forget(&k->procs);
	kernel_artifact_abandon(k->art, NULL);
	free(k->kill_why);
	k->kill_why = NULL;
	while ((p = k->queue) != NULL) {
		k->queue = p->next;
		free(p->code);
		free(p);
	}
	k->dying = 0;
}

int
klocal_reset(struct klocal *k, char **err)
{
	cJSON *cmd;

	check(k);
	if (k->cur != 0) {
		*err = xstrdup("a cell is running; interrupt it first");
		return -1;
	}
	if (k->state != KERNEL_READY && k->state != KERNEL_LOADING) {
		*err = xstrdup("the Python session is not ready");
		return -1;
	}
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "op", "reset");
	if (kernel_chan_send(&k->chan, cmd) < 0) {
		cJSON_Delete(cmd);
		*err = xstrdup("the Python session is not answering");
		return -1;
	}
	cJSON_Delete(cmd);
	return 0;
}

int
klocal_restart(struct klocal *k, char **err)
{
	int running = k->cur;

	check(k);
	if (running) {
		struct kernel_result r;
		memset(&r, 0, sizeof r);
		r.status = CELL_INTERRUPTED;
		r.reason = "the session was restarted by request; its state was lost";
		r.state_lost = 1;
		finish_cell(k, &r);
	}
	stop_now(k);
	return launch(k, err);
}

void
klocal_stop(struct klocal *k, const char *reason)
{
	check(k);
	if (k->state == KERNEL_STOPPED || k->state == KERNEL_DEAD)
		return;
	if (k->cur) {
		struct kernel_result r;
		memset(&r, 0, sizeof r);
		r.status = CELL_INTERRUPTED;
		r.reason = "the sandbox was stopped; its state was lost";
		r.state_lost = 1;
		finish_cell(k, &r);
	}
	stop_now(k);
	free(k->stopped_why);
	k->stopped_why = xstrdup(reason && *reason ? reason : "by request");
	set_status(k, KERNEL_STOPPED, k->stopped_why, 0, 1);
}

void
klocal_free(struct klocal *k)
{
	if (k == NULL)
		return;
	stop_now(k);			/* no sandbox process is left */
	sandbox_run_free(&k->run);
	workspace_free(k->ws);		/* the uid is free again */
	kernel_net_free(k->net);	/* after the sandbox: no client is left */
	kprocs_free(&k->procs);
	kpyinfo_free(&k->py);
	kernel_artifact_free(k->art);
	kframe_reader_free(&k->evr);
	kernel_chan_free(&k->chan);
	free(k->kill_why);
	kpipes_free(&k->pipes);
	free(k->stopped_why);
	free(k);
}

int
klocal_probe(const struct kernel_opts *o, char **err)
{
	if (o->no_sandbox)
		return 0;
	return sandbox_probe(err);
}

/* ------------------------------------------------------------ table */

static void lo_free(void *b) { klocal_free(b); }
static int lo_start(void *b, char **err) { return klocal_start(b, err); }
static void lo_stop(void *b, const char *r) { klocal_stop(b, r); }
static int lo_run(void *b, int n, const char *c, char **err) { return klocal_run(b, n, c, err); }
static void lo_interrupt(void *b) { klocal_interrupt(b); }
static int lo_reset(void *b, char **err) { return klocal_reset(b, err); }
static int lo_restart(void *b, char **err) { return klocal_restart(b, err); }
static char *lo_stage(void *b, const char *p, char **err) { return klocal_stage(b, p, err); }
static enum kernel_state lo_state(const void *b) { return klocal_state(b); }
static int lo_busy(const void *b) { return klocal_busy(b); }
/* "": here, nothing to reach again (the journal's "local") */
static char *lo_session(const void *b) { (void)b; return xstrdup(""); }
static const char *lo_python_info(const void *b) { return klocal_python_info(b); }
static int lo_python_charts(const void *b) { return klocal_python_charts(b); }
static char *lo_python_label(const void *b) { return klocal_python_label(b); }
static void lo_set_input(void *b, int allow) { klocal_set_input(b, allow); }
static void lo_set_width(void *b, int cols) { klocal_set_width(b, cols); }
static int lo_input_reply(void *b, int cell, const char *line) { return klocal_input_reply(b, cell, line); }
static int lo_allow(void *b, const char *s, char **err) { return klocal_egress_allow(b, s, err); }
static int lo_deny(void *b, const char *s, char **err) { return klocal_egress_deny(b, s, err); }

const struct kernel_ops kernel_local_ops = {
	.free = lo_free, .start = lo_start, .stop = lo_stop, .run = lo_run,
	.interrupt = lo_interrupt, .reset = lo_reset, .restart = lo_restart,
	.stage = lo_stage, .state = lo_state, .busy = lo_busy,
	.session = lo_session, .python_info = lo_python_info,
	.python_charts = lo_python_charts, .python_label = lo_python_label,
	.egress_allow = lo_allow, .egress_deny = lo_deny,
	.set_input = lo_set_input, .input_reply = lo_input_reply,
	.set_width = lo_set_width,
};
