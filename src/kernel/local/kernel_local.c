/* kernel_local: the local backend (kernel_local.h). The host side of a
 * sandboxed Python session, its lifecycle:
 * start, run cells, the interrupt ladder, death, restart, stop. It
 * launches the sandbox (sandbox.c) in the session's folders
 * (workspace.c), reads the driver's frames (kernel_frame.c) and hands
 * artifacts to kernel_artifact.c, writes commands through kernel_chan.c,
 * streams output, and reports everything through the callbacks. Every
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/egress.h"
#include "terp/sandbox_cgroup.h"
#include "terp/kernel_artifact.h"
#include "terp/kernel_chan.h"
#include "terp/kernel_code.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_net.h"
#include "terp/pipindex.h"
#include "terp/pyenv.h"
#include "terp/sandbox.h"
#include "terp/sandbox_tree.h"
#include "terp/sanitize.h"
#include "terp/util.h"
#include "terp/utf8carry.h"
#include "terp/workspace.h"

#include "driver_py.h"
#include "egress_fwd_py.h"

#define STDERR_KEEP	4096		/* bwrap's own messages, for setup errors */
#define CODE_MAX	(64u << 20)	/* a cell's code */
#define DEATH_WAIT_MS	2000	/* after the channel closed, before the kill */
#define DEATH_POLL_MS	5	/* without pidfds only: how often to look */
#define DISK_EVERY_MS	100	/* disk check interval, at least... */
#define DISK_EVERY_MAX	1000	/* ...and at most; 20 times a check's cost between */
#define STRAY_WAIT_MS	2000	/* for processes killed at a cell's end to go */
#define INSTALLED_MAX	256	/* packages one "installed" frame may name */
#define INPUT_MAX	1000	/* input requests one cell may make */
#define INPUT_PROMPT_SHOWN 200	/* bytes of a prompt passed on (cut there) */
#define INPUT_REPLY_MAX	(64u << 10)	/* bytes of a line sent back */

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
	pid_t			 init_pid;	/* bwrap's init in the host ns */
	pid_t			 py_pid;
	int			 exit_code;	/* from --json-status-fd, -1 unknown */
	int			 we_killed;
	/* SIGINTs sent to this sandbox's Python: each exec command says how
	 * many came before it, so the driver tells an interrupt meant for
	 * the cell from a stale one when it lands before the code runs */
	unsigned		 nints;
	int			 dying;
	uint64_t		 death_timer;
	int64_t			 death_since;

	struct workspace	*ws;		/* the session's folders */
	uint64_t		 disk_timer;
	int64_t			 disk_last;	/* now_ms() of the last check */
	char			*kill_why;	/* why terp itself killed the sandbox */
	struct sandbox_cgroup	*cg;		/* NULL: rlimits only */
	int			 cg_tried;
	long			 oom_at_launch;

	struct kframe_reader	 evr;		/* the driver's events */
	struct buf		 statusbuf, bwrap_err;
	struct kernel_chan	 chan;		/* terp's commands to the driver */
	struct utf8carry	 carry[2];	/* cut UTF-8 sequences */

	/* the running cell */
	int			 cur;		/* 0: none */
	int			 last;		/* gets output between cells */
	int64_t			 cur_start;	/* now_us() when the cell was sent */
	uint64_t		 timeout_timer, grace_timer;
	enum stop_cause		 stop;
	struct pending		*queue;
	/* input(): whether cells queued now may ask, whether the running
	 * one may, its request waiting for kernel_input_reply, and how
	 * many it made (each frame may be forged: bounded). */
	int			 input_allow, cur_input, input_open, input_count;
	int			 width;		/* the user's pane (klocal_set_width), or 0 */
	unsigned long long	 exec_end;	/* kernel_chan_queued after its exec */

	struct kernel_artifacts	*art;		/* the artifacts cells save */

	char			*stopped_why;	/* kernel_stop's reason until relaunch */

	/* The interpreter's packages (pyenv.h), from the cache or from the
	 * driver's "ready"; probe_line is the prompt's sentence. */
	struct pyenv_probe	 probe;
	int			 have_probe;
	char			*probe_line;

	/* Egress: the proxy (NULL without allowed hosts), and the
	 * forwarder the driver started, spared when a cell's strays die
	 * for as long as its pidfd says it is the same process. */
	struct kernel_net	*net;
	pid_t			 fwd_pid;
	int			 fwd_pidfd;

	/* The driver's compiled code (kernel_code.h): the cache file for
	 * this interpreter (NULL: no cache), its blob once loaded, and
	 * whether the lookup was done (once per kernel). */
	char			*code_file;
	unsigned char		*code;
	size_t			 code_len;
	int			 code_tried;
};

static void kernel_on_ev(struct loop *l, int fd, int revents, void *arg);
static void kernel_on_out(struct loop *l, int fd, int revents, void *arg);
static void kernel_on_status(struct loop *l, int fd, int revents, void *arg);
static void kernel_begin_death(struct klocal *k);
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

static void
probe_set(struct klocal *k, const struct pyenv_probe *p)
{
	k->probe = *p;
	k->have_probe = 1;
	free(k->probe_line);
	k->probe_line = pyenv_prompt_line(p);
}

/* A runner that runs nothing: with it pyenv_probe answers from its
 * cache or not at all. The interpreter is probed inside the sandbox
 * (the driver's "ready"), never on the host. */
static int
run_none(void *ctx, char *const argv[], size_t max, char **out, size_t *outlen,
    char **err)
{
	*out = NULL;
	*err = xstrdup("not probed yet");
	return -1;
}

/* A runner that "runs" the probe by handing over the driver's answer. */
static int
run_answer(void *ctx, char *const argv[], size_t max, char **out, size_t *outlen,
    char **err)
{
	const char *text = ctx;
	size_t n = strlen(text);

	if (n > max) {
		*err = xstrdup("its answer to the probe was too long");
		return -1;
	}
	*out = xstrdup(text);
	*outlen = n;
	return 0;
}

static void
probe_cached(struct klocal *k)
{
	struct pyenv_probe p;
	char *err = NULL;

	if (k->o->pyenv != NULL && k->o->probe_cache != NULL &&
	    pyenv_probe(k->o->pyenv, k->o->probe_cache, run_none, NULL, &p, &err) == 0)
		probe_set(k, &p);
	free(err);
}

/* The driver's "probe" in its "ready" frame: what its interpreter has,
 * found before any cell ran and before the session's own site
 * directory joined sys.path. Checked like any frame (pyenv_probe_parse
 * admits only known packages and plain version strings), then cached. */
static void
probe_from_ready(struct klocal *k, const struct kframe *f)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(f->json, "probe");
	struct pyenv_probe p;
	char *text, *err = NULL;
	int rc;

	if (k->have_probe || !cJSON_IsObject(j) || (text = cJSON_PrintUnformatted(j)) == NULL)
		return;
	if (k->o->pyenv != NULL)
		rc = pyenv_probe(k->o->pyenv, k->o->probe_cache, run_answer, text, &p, &err);
	else
		rc = pyenv_probe_parse(text, strlen(text), &p, &err);
	if (rc == 0)
		probe_set(k, &p);
	free(err);
	free(text);
}

const char *
klocal_python_info(const struct klocal *k)
{
	return k->have_probe ? k->probe_line : NULL;
}

int
klocal_python_charts(const struct klocal *k)
{
	return k->have_probe ? pyenv_probe_charts(&k->probe) : -1;
}

char *
klocal_python_label(const struct klocal *k)
{
	if (k->o->pyenv != NULL)
		return pyenv_label(k->o->pyenv, k->have_probe ? &k->probe : NULL);
	if (k->have_probe)
		return xasprintf("Python %s", k->probe.version);
	return NULL;
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
	k->exit_code = -1;
	k->fwd_pidfd = -1;
	probe_cached(k);
	k->ws = workspace_new(o->session_dir, o->no_sandbox, o->disk, o->disk_files);
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
	buf_init(&k->statusbuf, 64 * 1024);
	buf_init(&k->bwrap_err, STDERR_KEEP);
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

/* The workspace is a folder of the host's disk: its size is bounded by
 * measuring (workspace.h) on a timer while the sandbox lives and at
 * each cell's end (unless one ran less than DISK_EVERY_MS before: the
 * timer's next one keeps the bound). Over the limit, terp kills the sandbox: that stops
 * every writer, threads and background processes included. The
 * overshoot is what the sandbox writes between two checks: at most
 * write speed x the interval (DISK_EVERY_MS, longer when a check is
 * costly), and each file stays under --max-file-size. */

/* The sandbox's first process: its deleted-but-open files count. */
static pid_t
disk_root(const struct klocal *k)
{
	return k->init_pid > 0 ? k->init_pid : k->py_pid;
}

static void on_disk_timer(struct loop *l, void *arg);

static void
disk_schedule(struct klocal *k, int64_t ms)
{
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = 0;
	if (k->o->disk == 0 || k->p.pid <= 0)
		return;
	if (ms < DISK_EVERY_MS)
		ms = DISK_EVERY_MS;
	if (ms > DISK_EVERY_MAX)
		ms = DISK_EVERY_MAX;
	k->disk_timer = loop_timer_add(k->loop, ms, on_disk_timer, k);
}

/* Checks the limits; over them, kills the sandbox with the reason and
 * returns 1. */
static int
disk_check(struct klocal *k)
{
	char *why;
	int64_t cost;

	if (k->o->disk == 0 || k->p.pid <= 0 || k->dying)
		return 0;
	k->disk_last = now_ms();
	if ((why = workspace_disk_check(k->ws, disk_root(k), &cost)) == NULL) {
		disk_schedule(k, cost * 20 / 1000);
		return 0;
	}
	free(k->kill_why);
	k->kill_why = why;
	/* The launcher kills the whole sandbox when its life pipe closes. */
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = 0;
	end_sandbox(k);
	kernel_begin_death(k);
	return 1;
}

static void
on_disk_timer(struct loop *l, void *arg)
{
	struct klocal *k = arg;

	k->disk_timer = 0;
	disk_check(k);
}

/* Whether the forwarder found at "ready" still runs: its pidfd turns
 * readable when it exits, so a recycled pid is never spared. */
static int
fwd_alive(const struct klocal *k)
{
	struct pollfd pf = { .fd = k->fwd_pidfd, .events = POLLIN };

	return k->fwd_pid > 0 && k->fwd_pidfd >= 0 && poll(&pf, 1, 0) == 0;
}

static void
fwd_forget(struct klocal *k)
{
	if (k->fwd_pidfd >= 0)
		close(k->fwd_pidfd);
	k->fwd_pidfd = -1;
	k->fwd_pid = 0;
}

/* At "ready", before any cell ran: the driver's only child is the
 * forwarder it started (egress_fwd.py). */
static void
fwd_find(struct klocal *k)
{
	pid_t kids[4];

	fwd_forget(k);
	if (k->net == NULL || k->py_pid <= 0 || k->o->no_sandbox)
		return;
	if (sandbox_tree_children(k->py_pid, kids, 4) != 1)
		return;
	k->fwd_pidfd = (int)syscall(SYS_pidfd_open, kids[0], 0);
	if (k->fwd_pidfd >= 0)
		k->fwd_pid = kids[0];
}

/* At a cell's end: the processes it left behind go (they are not
 * bounded by the cell's time limit otherwise), and the disk is
 * checked. The driver's Python stays. */
static void
cell_cleanup(struct klocal *k)
{
	if (k->p.pid <= 0 || k->dying)
		return;
	if (k->py_pid > 0) {
		pid_t keep[2] = { k->py_pid, fwd_alive(k) ? k->fwd_pid : 0 };
		sandbox_tree_kill_strays(k->init_pid > 0 ? k->init_pid : k->py_pid, keep, 2,
		    STRAY_WAIT_MS);
	}
	/* A check less than an interval ago: the timer's next one keeps
	 * the bound (what the sandbox writes between two checks, whatever
	 * its cells), and cells ending every millisecond do not each pay
	 * a walk of the workspace. */
	if (k->disk_timer != 0 && now_ms() - k->disk_last < DISK_EVERY_MS)
		return;
	/* From the loop, not from here: a kill now could end in
	 * finish_death, which finishes this very cell a second time. */
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = loop_timer_add(k->loop, 0, on_disk_timer, k);
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

/* The driver's compiled code from the cache, looked up once. */
static void
code_cached(struct klocal *k)
{
	if (k->code_tried || k->o->no_sandbox)
		return;
	k->code_tried = 1;
	k->code_file = kcode_file(k->o->probe_cache, k->o->pyenv, driver_py_sha256);
	if (k->code_file != NULL)
		k->code = kcode_load(k->code_file, &k->code_len);
}

/* The driver's code in its "ready" frame (asked for by TERP_CODE=1, so
 * only when the cache had none): sent before any cell ran, by the
 * interpreter the cache file is named after. Its shape is checked
 * here; the loader checks that it is for the running version. */
static void
code_from_ready(struct klocal *k, const struct kframe *f)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(f->json, "code");
	size_t n = 0;
	char *blob;

	if (k->code_file == NULL || k->code != NULL || !cJSON_IsString(j) ||
	    strlen(j->valuestring) > KCODE_MAX / 3 * 4 + 4)
		return;
	blob = base64_decode(j->valuestring, strlen(j->valuestring), &n);
	if (blob != NULL && kcode_valid(blob, n)) {
		kcode_store(k->code_file, blob, n);
		k->code = (unsigned char *)blob;
		k->code_len = n;
		return;
	}
	free(blob);
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
	s->preload = getenv("TERP_NO_PRELOAD") == NULL;
	s->cgroup_procs_fd = -1;
	s->pyenv = k->o->pyenv;
	/* sandbox_env (the user's pip index) goes with each exec command,
	 * not on bwrap's command line, which any local user can read */
	s->setenv = NULL;
	s->probe = !k->have_probe;
	s->code = k->code;
	s->code_len = k->code_len;
	s->loader = kcode_loader;
	s->code_want = k->code_file != NULL && k->code == NULL;
	if (k->net != NULL) {
		s->egress_sock = kernel_net_socket(k->net);
		s->fwd = (const char *)egress_fwd_py;
		s->fwd_len = sizeof egress_fwd_py;
	}
}

/* The session's cgroup, tried once: without one, rlimits only, the
 * common case on many machines. */
static void
cgroup_once(struct klocal *k)
{
	char *why = NULL, name[64];
	const char *id = strrchr(k->o->session_dir, '/');

	if (k->cg_tried || k->o->no_sandbox)
		return;
	k->cg_tried = 1;
	snprintf(name, sizeof name, "terp-%.40s-%d", id ? id + 1 : "session", (int)getpid());
	k->cg = sandbox_cgroup_create(name, k->o->memory, k->o->nproc, &why);
	free(why);
}

/* Nothing of the last sandbox's is left in what a launch starts with. */
static void
launch_reset(struct klocal *k)
{
	kframe_reader_reset(&k->evr);
	buf_reset(&k->statusbuf);
	buf_reset(&k->bwrap_err);
	k->carry[0].n = k->carry[1].n = 0;
	k->exit_code = -1;
	k->we_killed = 0;
	k->dying = 0;
	k->loaded = 0;
	k->init_pid = k->o->no_sandbox ? -1 : 0;
	k->py_pid = -1;
	fwd_forget(k);
	free(k->kill_why);
	k->kill_why = NULL;
}

static int
launch(struct klocal *k, char **err)
{
	struct sandbox_spec s;
	int bind_fds[SANDBOX_MAX_BINDS];
	const char *bind_names[SANDBOX_MAX_BINDS];
	/* a sandbox ran before this one: its Python state is gone */
	int lost = k->state != KERNEL_STOPPED || k->stopped_why != NULL;

	/* One sandbox at a time: the last one is reaped. */
	assert(k->p.pid <= 0 && !k->dying);
	k->nints = 0;	/* a new driver counts from 0 */
	code_cached(k);
	spec_fill(k, &s);
	s.nbinds = workspace_binds(k->ws, bind_fds, bind_names, SANDBOX_MAX_BINDS, err);
	if (s.nbinds < 0)
		return -1;
	s.bind_fds = bind_fds;
	s.bind_names = bind_names;
	cgroup_once(k);
	s.cgroup_procs_fd = sandbox_cgroup_procs_fd(k->cg);
	k->oom_at_launch = sandbox_cgroup_oom_kills(k->cg);
	launch_reset(k);
	if (workspace_disk_baseline(k->ws, disk_root(k), err) < 0)
		return -1;
	if (sandbox_launch(&s, &k->p, err) < 0)
		return -1;
	if (k->o->no_sandbox)
		k->py_pid = k->p.pid;
	watch_all(k);
	disk_schedule(k, DISK_EVERY_MS);
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

struct out_to {
	struct klocal	*k;
	int		 cell, stream;
};

static void
out_emit(void *arg, const char *p, size_t n)
{
	struct out_to *o = arg;

	o->k->cb.output(o->k->arg, o->cell, o->stream, p, n);
}

/* A read may end inside a UTF-8 sequence: the cut tail waits for the
 * next read (utf8carry), so the frontends never see half a character. */
static void
emit_output(struct klocal *k, int stream, const char *p, size_t n)
{
	struct out_to o = { k, k->cur ? k->cur : k->last, stream };

	if (k->cb.output == NULL || n == 0)
		return;
	utf8carry_feed(&k->carry[stream], p, n, out_emit, &o);
}

static void
flush_carry(struct klocal *k)
{
	for (int s = 0; s < 2; s++) {
		struct out_to o = { k, k->cur ? k->cur : k->last, s };
		if (k->cb.output)
			utf8carry_flush(&k->carry[s], out_emit, &o);
		k->carry[s].n = 0;
	}
}

/* Bytes from the sandbox's stdout/stderr. Until the driver is ready
 * they are bwrap's (or Python's) start-up complaints: kept for the
 * error message, not shown as a cell's output. */
static void
on_bytes(struct klocal *k, int stream, const char *b, size_t n)
{
	if (k->state == KERNEL_STARTING) {
		/* The start of it holds bwrap's message; the rest is dropped. */
		size_t room = k->bwrap_err.max - k->bwrap_err.len;
		int rc = buf_add(&k->bwrap_err, b, n < room ? n : room);
		assert(rc == 0);	/* within max by construction */
		(void)rc;
		return;
	}
	emit_output(k, stream, b, n);
}

/* Reads what is in the pipe now. Returns 0, or -1 at EOF. */
static int
drain_fd(struct klocal *k, int fd, int stream)
{
	char b[65536];
	int rounds = 0;

	/* Bounded rounds: a flooding cell must not starve the loop. */
	while (rounds++ < 64) {
		ssize_t n = read(fd, b, sizeof b);
		if (n > 0) {
			on_bytes(k, stream, b, (size_t)n);
			continue;
		}
		if (n == 0)
			return -1;
		if (errno == EINTR)
			continue;
		return 0;
	}
	return 0;
}

static void
kernel_on_out(struct loop *l, int fd, int revents, void *arg)
{
	struct klocal *k = arg;
	int stream = fd == k->p.err_fd ? 1 : 0;

	if (drain_fd(k, fd, stream) < 0)
		loop_unwatch(l, fd);
}

/* Drains both pipes completely: the driver wrote a cell's output before
 * its result frame, so everything of the cell is in the pipes now. */
static void
drain_all(struct klocal *k)
{
	for (int s = 0; s < 2; s++) {
		int fd = s ? k->p.err_fd : k->p.out_fd;
		if (fd < 0)
			continue;
		for (int i = 0; i < 1024; i++) {
			char b[65536];
			ssize_t n = read(fd, b, sizeof b);
			if (n <= 0)
				break;
			on_bytes(k, s, b, (size_t)n);
		}
	}
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
	flush_carry(k);
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

static void
input_answer(struct klocal *k, const char *value, const char *error, int eof)
{
	cJSON *cmd = cJSON_CreateObject();

	cJSON_AddStringToObject(cmd, "op", "input_reply");
	cJSON_AddNumberToObject(cmd, "id", k->cur);
	if (eof)
		cJSON_AddTrueToObject(cmd, "eof");
	else if (error != NULL)
		cJSON_AddStringToObject(cmd, "error", error);
	else
		cJSON_AddStringToObject(cmd, "value", value);
	if (kernel_chan_send(&k->chan, cmd) < 0)
		kill_sandbox(k, xasprintf("the sandbox stopped reading terp's commands (over %u MiB waiting)",
		    KERNEL_CHAN_MAX >> 20), 0);
	cJSON_Delete(cmd);
}

/* {"ev":"input","id":N,"prompt":...,"password":bool}: the running cell
 * asks for a line (input(), sys.stdin, getpass). Asked of the frontend
 * only when terp let this cell ask, one request at a time and at most
 * INPUT_MAX per cell; the prompt is cut and made safe to show. Beyond
 * those a request is refused with one line the cell raises, and from a
 * cell that may not ask (whose driver raises by itself) it is ignored. */
static void
on_input(struct klocal *k, const struct kframe *f)
{
	char *prompt;
	size_t n;

	/* A driver that may not ask raises by itself: this one is forged. */
	if (!k->cur_input || k->cb.input == NULL)
		return;
	if (k->input_open || k->input_count >= INPUT_MAX) {
		/* The driver's own request comes when it has read all terp
		 * sent: with a backlog, nobody waits for the answer. */
		if (kernel_chan_pending(&k->chan) == 0)
			input_answer(k, NULL, k->input_open ? "an input request is already open" :
			    "too many input requests in one cell", 0);
		return;
	}
	k->input_open = 1;
	k->input_count++;
	n = f->prompt ? strlen(f->prompt) : 0;
	if (n > INPUT_PROMPT_SHOWN)
		n = utf8_complete_prefix(f->prompt, INPUT_PROMPT_SHOWN);
	prompt = sanitize_str(f->prompt ? f->prompt : "", n, 0);
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
	if (k->cur == 0 || cell != k->cur || !k->input_open)
		return -1;
	k->input_open = 0;
	if (line != NULL && strlen(line) > INPUT_REPLY_MAX)
		input_answer(k, NULL, "the line typed is too long", 0);
	else
		input_answer(k, line, NULL, line == NULL);
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
		if (!k->o->no_sandbox && k->init_pid > 0)
			k->py_pid = sandbox_tree_python(k->init_pid);
		fwd_find(k);
		probe_from_ready(k, &f);
		code_from_ready(k, &f);
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
	}
}

/* bwrap's JSON status lines: {"child-pid": N, ...} then {"exit-code": N}. */
static void
kernel_on_status(struct loop *l, int fd, int revents, void *arg)
{
	struct klocal *k = arg;
	char b[4096];
	ssize_t n;

	while ((n = read(fd, b, sizeof b)) > 0) {
		if (buf_add(&k->statusbuf, b, (size_t)n) < 0)
			buf_reset(&k->statusbuf);
		for (;;) {
			char *nl = memchr(k->statusbuf.data, '\n', k->statusbuf.len);
			cJSON *j, *v;
			if (nl == NULL)
				break;
			j = cJSON_ParseWithLength(k->statusbuf.data,
			    (size_t)(nl - k->statusbuf.data));
			if ((v = cJSON_GetObjectItem(j, "child-pid")) && cJSON_IsNumber(v))
				k->init_pid = (pid_t)v->valueint;
			if ((v = cJSON_GetObjectItem(j, "exit-code")) && cJSON_IsNumber(v))
				k->exit_code = v->valueint;
			cJSON_Delete(j);
			buf_consume(&k->statusbuf, (size_t)(nl - k->statusbuf.data) + 1);
		}
	}
	if (n == 0)
		loop_unwatch(l, fd);
}

static void
signal_python(struct klocal *k, int sig)
{
	if (k->init_pid == 0 && k->p.status_fd >= 0)
		kernel_on_status(k->loop, k->p.status_fd, POLLIN, k);
	if (k->py_pid <= 0 && k->init_pid > 0)
		k->py_pid = sandbox_tree_python(k->init_pid);
	if (k->py_pid > 0) {
		/* A pidfd pins the process: no signal to a recycled pid. */
		int pfd = (int)syscall(SYS_pidfd_open, k->py_pid, 0);
		if (pfd >= 0) {
			syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
			close(pfd);
		} else {
			kill(k->py_pid, sig);
		}
	}
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
	signal_python(k, SIGINT);
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
	k->cur_input = p->input;
	k->input_open = k->input_count = 0;
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
	int code = k->exit_code;
	int sig = 0;

	if (code < 0 && wstatus >= 0) {
		if (WIFEXITED(wstatus))
			code = WEXITSTATUS(wstatus);
		else if (WIFSIGNALED(wstatus))
			code = 128 + WTERMSIG(wstatus);
	}
	if (code > 128 && code < 160)
		sig = code - 128;
	if (k->kill_why != NULL)
		return xstrdup(k->kill_why);
	if (k->we_killed)
		return xasprintf("the cell ignored the interrupt for %.1f s and was killed",
		    (double)k->o->grace_ms / 1000.0);
	if (k->cg && sandbox_cgroup_oom_kills(k->cg) > k->oom_at_launch) {
		char *m = memory_reason(k);
		char *r = xasprintf("the Python process was killed: %s", m);
		free(m);
		return r;
	}
	switch (sig) {
	case 0:
		if (code < 0)
			return xstrdup("the Python process died");
		return xasprintf("the Python process exited with code %d", code);
	case SIGKILL:
		/* RLIMIT_DATA turns most memory bombs into MemoryError; a
		 * SIGKILL we did not send is the OOM killer or a kill(). */
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
	if (starting && !k->o->no_sandbox && k->exit_code < 0) {
		/* bwrap failed in its own setup: its stderr says why. */
		char *why = small_memory(k,
		    sandbox_explain(buf_str(&k->bwrap_err)));
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
		kernel_on_status(k->loop, k->p.status_fd, POLLIN, k);
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
		kernel_on_status(k->loop, k->p.status_fd, POLLIN, k);
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
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = 0;
	unwatch_all(k);
	sandbox_cgroup_kill(k->cg);
	sandbox_kill(&k->p);
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
	sandbox_cgroup_destroy(k->cg);
	workspace_free(k->ws);		/* the uid is free again */
	kernel_net_free(k->net);	/* after the sandbox: no client is left */
	fwd_forget(k);
	free(k->probe_line);
	free(k->code_file);
	free(k->code);
	kernel_artifact_free(k->art);
	kframe_reader_free(&k->evr);
	kernel_chan_free(&k->chan);
	free(k->kill_why);
	buf_free(&k->statusbuf);
	buf_free(&k->bwrap_err);
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
