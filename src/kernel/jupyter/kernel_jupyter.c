/* kernel_jupyter: the Jupyter server backend. Its life, all on the loop:
 *
 *   start: GET /api/kernelspecs (reachable? token? kernel?) -> PUT the session folders
 *          (terp-<id>/, data/, out/) -> POST /api/kernels with the
 *          session folder as the kernel's cwd (or GET the kernel to
 *          attach to) -> WebSocket to its channels -> kernel_info
 *          handshake -> a silent execute that checks the cwd -> ready
 *   queue: cells, uploads and resets run one at a time, in order; a
 *          cell is done when its execute_reply came and iopub went idle
 *          for it; then out/ is listed (only when the fingerprint the
 *          reply carries changed) and new or changed files are fetched
 *   trouble: a dropped WebSocket is reopened once with the same session
 *          id (the server replays what it buffered); a kernel the server
 *          no longer has (404) is replaced and the state reported lost.
 *
 * The start (the checks of URL and token, probe, folders, kernel, socket)
 * is kernel_jupyter_start.c's; the handshake on the socket and all after
 * it are here.
 *
 * What the server sends is bounded (ws.c skips messages over max_msg,
 * REST bodies have caps), type-checked field by field, and names from
 * it never become host paths: artifacts get names terp picks
 * (kernel_frame.h's rules, as the local sandbox's do). */
#include "terp/kernel_jupyter.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/kernel_jupyter_cell.h"
#include "terp/kernel_jupyter_msg.h"
#include "terp/kernel_jupyter_out.h"
#include "terp/kernel_jupyter_put.h"
#include "terp/kernel_jupyter_rest.h"
#include "terp/kernel_jupyter_start.h"
#include "terp/kernel_sink.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_hold.h"
#include "terp/util.h"
#include "terp/ws.h"

#define REST_BODY_MAX	(1u << 20)	/* an ordinary REST answer */
#define CODE_MAX	(8u << 20)
#define FP_MAX		64		/* the out/ fingerprint's text */
#define CWD_MAX		4096
#define NOTES_PER_CELL	20
#define CHECK_MS	3000	/* a cell the kernel has not taken: is it there? */
#define OUT_HOLD_MAX	(64u << 10)	/* stream text held back, at most */
#define OUT_HOLD_MS	20		/* and for at most this long */

#define ISOLATION_LINE \
	"The code runs on the Jupyter server with whatever isolation that server gives " \
	"(often none: it can read and write what the server's user can, and reach the " \
	"network); terp's sandbox does not apply there."

/* An expression the kernel evaluates after each cell (user_expressions):
 * a fingerprint of out/, so that the folder is listed over REST only
 * when something in it changed. Only a hint: a kernel that lies hides
 * its own files, nothing more. */
#define OUT_FP_EXPR \
	"str(hash(tuple(sorted((e.name, e.stat(follow_symlinks=False).st_size, " \
	"e.stat(follow_symlinks=False).st_mtime_ns) for e in __import__('os').scandir('out')))))"
#define CWD_EXPR "__import__('os').getcwd()"

enum op_type { OP_CELL, OP_UPLOAD, OP_RESET };

struct op {
	struct op	*next;
	enum op_type	 type;
	int		 n;		/* cell */
	char		*code;
	char		*host_path;	/* upload */
	char		*name;		/* its name in data/ */
};

enum phase {
	PH_OFF,		/* not started, or stopped */
	PH_STARTING,	/* the start sequence is running */
	PH_READY,	/* ready or running a cell */
	PH_DEAD,
};

struct jupyter {
	struct loop		*loop;
	const struct jupyter_opts *o;
	struct kernel_cbs	 cb;
	void			*arg;
	struct jrest		 rest;		/* base, auth, where, the requests */
	/* The kernel's id, its socket, the step of the start sequence. */
	struct jstart		 st;
	char			*deleting;	/* a kernel whose DELETE is in flight */
	struct kernel_sink	*sink;		/* artifacts into out_dir */

	enum phase		 phase;
	enum kernel_state	 state;
	int			 lost;		/* state was lost since the last ready */
	int			 restarted;	/* the next ready follows a restart */
	char			*ready_note;	/* said with the next ready */
	int			 restarting_by_us;
	char			 info_id[40], ctl_id[40];
	int			 ctl_kind;	/* 0 none, 1 cwd check, 2 reset */
	char			*stopped_why;

	struct op		*queue;
	struct op		*op;		/* an upload or reset in progress */
	struct jcell		 cur;		/* the running cell */
	char			*last_fp;
	uint64_t		 timeout_timer, grace_timer, start_timer, check_timer;
	/* the cwd check's execute_reply came / its iopub idle came; until
	 * both did, the check is sent again (nudge_timer): see send_cwd */
	int			 ctl_replied, ctl_idle;
	uint64_t		 nudge_timer;
	char			*pending_note;	/* a failed upload, for the next cell */

	struct jput		 up;		/* the upload of op */

	/* out/ and artifacts. */
	struct jout		*out;		/* out/ and figures into the sink */

	/* Stream text not passed on yet (kernel_hold.h). */
	struct khold		 hold;
};

static void pump(struct jupyter *j);
static void start_sequence(struct jupyter *j);
static void cell_maybe_done(struct jupyter *j);
static void finish_cell(struct jupyter *j, enum cell_status st, const char *reason, int lost);
static void lose_connection(struct jupyter *j, const char *why);
static void go_dead(struct jupyter *j, const char *msg);
static void send_kernel_info(struct jupyter *j);
static void cwd_answered(struct jupyter *j);
static void on_check(struct loop *l, void *arg);
static void on_start_timeout(struct loop *l, void *arg);

/* ------------------------------------------------------------ small helpers */

void
jupyter_opts_default(struct jupyter_opts *o)
{
	memset(o, 0, sizeof *o);
	o->timeout_ms = 120000;
	o->grace_ms = 3000;
	o->connect_timeout_ms = 20000;
	o->max_msg = 16u << 20;
	o->artifact_max = 64u << 20;
	o->artifacts_per_cell = 64;
	o->artifacts_per_session = 1000;
	o->artifact_bytes = 1ull << 30;
	o->out_files_max = 1000;
}

/* ------------------------------------------------------------ callbacks out */

/* The one place that calls the state callback, with the typed
 * restarted/state_lost facts (kernel.h's struct kernel_status). */
static void
emit_state(struct jupyter *j, enum kernel_state st, const char *msg, int restarted,
    int state_lost)
{
	struct kernel_status ks = { .state = st, .restarted = restarted,
	    .state_lost = state_lost, .msg = msg ? msg : kernel_state_name(st) };

	j->state = st;
	khold_flush(&j->hold);
	if (j->cb.state != NULL)
		j->cb.state(j->arg, &ks);
}

/* Where held stream text goes (kernel_hold.h). */
static void
hold_out(void *arg, int cell, int stream, const char *p, size_t n)
{
	struct jupyter *j = arg;

	if (j->cb.output != NULL)
		j->cb.output(j->arg, cell, stream, p, n);
}

/* Stream text goes out through the hold; anything else reported
 * flushes it first (hold_flush), so the order is kept. */
static void
emit_output(struct jupyter *j, int cell, int stream, const char *p, size_t n)
{
	khold_add(&j->hold, cell, stream, p, n);
}

/* "terp: ..." on the running cell's stderr (bounded per cell). */
static void
note(struct jupyter *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
note(struct jupyter *j, const char *fmt, ...)
{
	va_list ap;
	char *m, *line;

	if (!j->cur.active)
		return;
	if (j->cur.notes >= NOTES_PER_CELL) {
		j->cur.unnoted++;
		return;
	}
	j->cur.notes++;
	va_start(ap, fmt);
	m = xvasprintf(fmt, ap);
	va_end(ap);
	line = xasprintf("terp: %s\n", m);
	emit_output(j, j->cur.n, 1, line, strlen(line));
	free(line);
	free(m);
}

/* ------------------------------------------------------------ kernel messages */

/* Sends a message on channel; content is consumed. Writes its msg_id
 * into id[40]. Returns 0, or -1 when the socket cannot take it. */
static int
send_msg(struct jupyter *j, const char *type, const char *channel, cJSON *content,
    char id[40])
{
	char *txt = jmsg_text(type, channel, j->st.ws_session, content, id), *err = NULL;
	int r = ws_send(j->st.ws, txt, strlen(txt), &err);

	free(txt);
	free(err);
	return r;
}

/* ------------------------------------------------------------ artifacts */

/* The sink's lines, for the cell they name while it runs. */
static void
sink_note(void *arg, int cell, const char *line)
{
	struct jupyter *j = arg;

	if (j->cur.active && j->cur.n == cell)
		emit_output(j, cell, 1, line, strlen(line));
}

static void
sink_copied(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct jupyter *j = arg;

	khold_flush(&j->hold);		/* the cell's text before it, in order */
	if (j->cb.artifact != NULL)
		j->cb.artifact(j->arg, cell, name, host_path, bytes);
}

/* The out/ fetch of the running cell goes on while it is running. */
static int
out_live(void *arg)
{
	struct jupyter *j = arg;

	return j->cur.active && j->cur.fetching;
}

static void
out_ended(void *arg)
{
	struct jupyter *j = arg;

	j->cur.fetching = 0;
	cell_maybe_done(j);
}

static void
out_note(void *arg, const char *text)
{
	note(arg, "%s", text);
}

static void
fetch_out(struct jupyter *j)
{
	j->cur.fetching = 1;
	jout_fetch(j->out, j->st.session);
}

/* ------------------------------------------------------------ cells */

static void
op_free(struct op *p)
{
	if (p == NULL)
		return;
	free(p->code);
	free(p->host_path);
	free(p->name);
	free(p);
}

static void
cancel_cell_timers(struct jupyter *j)
{
	loop_timer_cancel(j->loop, j->timeout_timer);
	loop_timer_cancel(j->loop, j->grace_timer);
	loop_timer_cancel(j->loop, j->check_timer);
	j->timeout_timer = j->grace_timer = j->check_timer = 0;
}

/* The kernel went away under the running cell. A cell it never took is
 * queued again (first) to run on the next kernel; one it ran ends with
 * reason, its state lost. */
static void
cell_gone(struct jupyter *j, const char *reason)
{
	if (!j->cur.active)
		return;
	if (!j->cur.started && j->cur.code != NULL) {
		struct op *p = xcalloc(1, sizeof *p);
		p->type = OP_CELL;
		p->n = j->cur.n;
		p->code = j->cur.code;
		j->cur.code = NULL;
		p->next = j->queue;
		j->queue = p;
		cancel_cell_timers(j);
		jcell_clear(&j->cur);
		return;
	}
	finish_cell(j, CELL_CRASHED, reason, 1);
}

/* Reports the running cell's result and moves on. */
static void
finish_cell(struct jupyter *j, enum cell_status st, const char *reason, int lost)
{
	struct kernel_result r;
	struct jcell c;

	if (!j->cur.active)
		return;
	cancel_cell_timers(j);
	kernel_sink_cell_end(j->sink, NULL);
	if (j->cur.unnoted > 0) {
		char *m = xasprintf("terp: %d more notes on this cell (not listed)\n", j->cur.unnoted);
		emit_output(j, j->cur.n, 1, m, strlen(m));
		free(m);
	}
	c = j->cur;
	memset(&j->cur, 0, sizeof j->cur);
	jout_cancel(j->out);
	jcell_result(&c, st, reason, lost, now_us(), &r);
	if (j->phase == PH_READY && j->state == KERNEL_BUSY)
		emit_state(j, KERNEL_READY, NULL, 0, 0);
	khold_flush(&j->hold);
	if (j->cb.result != NULL)
		j->cb.result(j->arg, c.n, &r);
	jcell_clear(&c);
}

/* Ends every queued cell without running it (a restart or a stop drops
 * them; each still gets its one result). Uploads stay queued: the
 * session folder outlives the kernel, so they go up with the next one. */
static void
drop_queue(struct jupyter *j, const char *why)
{
	struct op **pp = &j->queue, *p;

	while ((p = *pp) != NULL) {
		if (p->type == OP_UPLOAD) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		if (p->type == OP_CELL && j->cb.result != NULL) {
			struct kernel_result r;
			khold_flush(&j->hold);
			memset(&r, 0, sizeof r);
			r.status = CELL_INTERRUPTED;
			r.reason = why;
			j->cb.result(j->arg, p->n, &r);
		}
		op_free(p);
	}
}

/* The running cell's outcome once its reply and its idle are in, and
 * out/ was looked at. */
static void
cell_maybe_done(struct jupyter *j)
{
	struct jcell *c = &j->cur;
	enum cell_status st;
	char *reason;

	if (!c->active || !c->got_reply || !c->got_idle || c->fetching)
		return;
	if (!c->looked) {
		/* out/ is listed when the fingerprint the reply carries is
		 * missing (an error, a non-Python kernel) or changed. */
		c->looked = 1;
		if (c->fp == NULL || j->last_fp == NULL || strcmp(c->fp, j->last_fp) != 0) {
			free(j->last_fp);
			j->last_fp = c->fp ? xstrdup(c->fp) : NULL;
			fetch_out(j);
			return;
		}
	}
	st = jcell_outcome(c, j->o->timeout_ms, &reason);
	finish_cell(j, st, reason, 0);
	free(reason);
	pump(j);
}

static void restart_kernel(struct jupyter *j, const char *cell_reason, enum cell_status st);

static void
on_grace(struct loop *l, void *arg)
{
	struct jupyter *j = arg;
	char *why;
	(void)l;

	j->grace_timer = 0;
	if (!j->cur.active)
		return;
	why = xasprintf("the cell ignored the interrupt for %.1f s; the kernel was restarted and its state (variables, imports) was lost",
	    (double)j->o->grace_ms / 1000.0);
	restart_kernel(j, why, j->cur.stop == JCELL_STOP_TIMEOUT ? CELL_TIMEOUT : CELL_INTERRUPTED);
	free(why);
}

static void
on_interrupt_done(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jupyter *j = arg;
	char *p;

	if (q->i != j->rest.gen || !j->cur.active)
		return;
	if ((p = jrest_problem(&j->rest, r, "the interrupt")) != NULL) {
		note(j, "%s", p);
		free(p);
	}
}

static void
interrupt_cell(struct jupyter *j, enum jcell_stop why)
{
	char *path;

	if (!j->cur.active || j->cur.stop != JCELL_STOP_NONE)
		return;
	j->cur.stop = why;
	path = jrest_path("/api/kernels/", j->st.kernel_id, "/interrupt");
	(void)jrest_call(&j->rest, "POST", path, "{}", REST_BODY_MAX, on_interrupt_done);
	free(path);
	loop_timer_cancel(j->loop, j->grace_timer);
	j->grace_timer = loop_timer_add(j->loop, j->o->grace_ms > 0 ? j->o->grace_ms : 1,
	    on_grace, j);
}

static void
on_timeout(struct loop *l, void *arg)
{
	struct jupyter *j = arg;
	(void)l;

	j->timeout_timer = 0;
	interrupt_cell(j, JCELL_STOP_TIMEOUT);
}

static void replace_kernel(struct jupyter *j);

static void
on_check_done(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jupyter *j = arg;
	if (q->i != j->rest.gen || !j->cur.active || j->cur.started)
		return;
	if (r->status == 404) {
		/* Culled or lost while idle (the server says nothing on the
		 * socket when it shuts a kernel down). */
		replace_kernel(j);
		return;
	}
	j->check_timer = loop_timer_add(j->loop, CHECK_MS, on_check, j);
}

/* The cell was sent but the kernel has not said a word about it: is
 * the kernel still there? */
static void
on_check(struct loop *l, void *arg)
{
	struct jupyter *j = arg;
	char *path;
	(void)l;

	j->check_timer = 0;
	if (!j->cur.active || j->cur.started || j->phase != PH_READY || j->st.kernel_id == NULL)
		return;
	path = jrest_path("/api/kernels/", j->st.kernel_id, NULL);
	(void)jrest_call(&j->rest, "GET", path, NULL, REST_BODY_MAX, on_check_done);
	free(path);
}

static void
send_cell(struct jupyter *j, struct op *p)
{
	char *note_text = j->pending_note;

	j->pending_note = NULL;
	jcell_clear(&j->cur);
	j->cur.active = 1;
	j->cur.n = p->n;
	j->cur.code = p->code;
	p->code = NULL;
	j->cur.start_us = now_us();
	kernel_sink_cell_start(j->sink, p->n);
	emit_state(j, KERNEL_BUSY, NULL, 0, 0);
	if (note_text != NULL) {
		note(j, "%s", note_text);
		free(note_text);
	}
	if (send_msg(j, "execute_request", "shell",
	    jmsg_execute_content(j->cur.code, 0, "terp_out", OUT_FP_EXPR), j->cur.msg_id) < 0) {
		lose_connection(j, "cannot send on the kernel's WebSocket");
		return;
	}
	if (j->o->timeout_ms > 0)
		j->timeout_timer = loop_timer_add(j->loop, j->o->timeout_ms, on_timeout, j);
	j->check_timer = loop_timer_add(j->loop, CHECK_MS, on_check, j);
}

/* ------------------------------------------------------------ uploads */

/* The upload of j->op ended: a problem is told with the next cell. */
static void
upload_end(void *arg, char *problem)
{
	struct jupyter *j = arg;
	struct op *p = j->op;

	if (problem != NULL && p != NULL) {
		char *m = xasprintf("data file %s was not uploaded to the Jupyter server: %s",
		    p->name, problem);
		if (j->pending_note == NULL)
			j->pending_note = m;
		else
			free(m);
	}
	free(problem);
	op_free(p);
	j->op = NULL;
	pump(j);
}

static void
start_upload(struct jupyter *j, struct op *p)
{
	j->op = p;
	jput_start(&j->up, &j->rest, j->st.session, p->host_path, p->name, upload_end, j);
}

/* ------------------------------------------------------------ the queue */

static void
pump(struct jupyter *j)
{
	struct op *p;

	while (j->phase == PH_READY && !j->cur.active && j->op == NULL && j->ctl_kind == 0 &&
	    (p = j->queue) != NULL) {
		j->queue = p->next;
		p->next = NULL;
		switch (p->type) {
		case OP_CELL:
			send_cell(j, p);
			free(p->code);
			free(p);
			return;
		case OP_UPLOAD:
			start_upload(j, p);
			return;
		case OP_RESET:
			j->ctl_kind = 2;
			free(p);
			if (send_msg(j, "execute_request", "shell",
			    jmsg_execute_content("%reset -f", 1, NULL, NULL), j->ctl_id) < 0) {
				j->ctl_kind = 0;
				lose_connection(j, "cannot send on the kernel's WebSocket");
			}
			return;
		}
	}
}

/* ------------------------------------------------------------ messages */

static void
on_cwd_reply(struct jupyter *j, const cJSON *content)
{
	const char *cwd = jmsg_user_expr_text(content, "cwd");
	size_t n = cwd ? strlen(cwd) : 0;
	char *want = xasprintf("/%s'", j->st.session);

	/* The repr of a str: '...'. Only compared, never used as a path. */
	if (cwd != NULL && (n < strlen(want) + 1 || n > CWD_MAX ||
	    strcmp(cwd + n - strlen(want), want) != 0)) {
		free(j->ready_note);
		j->ready_note = xasprintf("the kernel's working directory is not the session folder %s (the server ignored it); data files are under %s/data on the server",
		    j->st.session, j->st.session);
	}
	free(want);
}

static void
became_ready(struct jupyter *j)
{
	char *msg;
	/* Whether a cell was running across the reconnect: read before the
	 * state callback, which may queue a new cell (and pump sends it). */
	int was_active = j->cur.active;

	loop_timer_cancel(j->loop, j->start_timer);
	j->start_timer = 0;
	j->st.step = JSTART_NONE;
	j->phase = PH_READY;
	j->st.reconnecting = 0;
	if (j->restarted && j->lost)
		msg = xasprintf("restarted the Jupyter kernel; its state (variables, imports) was lost%s%s",
		    j->ready_note ? "; " : "", j->ready_note ? j->ready_note : "");
	else if (j->restarted)
		msg = xasprintf("reconnected to the Jupyter kernel; its state was kept%s%s",
		    j->ready_note ? "; " : "", j->ready_note ? j->ready_note : "");
	else
		msg = xasprintf("connected to the Jupyter kernel at %s%s%s", j->rest.where,
		    j->ready_note ? "; " : "", j->ready_note ? j->ready_note : "");
	emit_state(j, j->cur.active ? KERNEL_BUSY : KERNEL_READY, msg, j->restarted, j->lost);
	free(msg);
	free(j->ready_note);
	j->ready_note = NULL;
	j->restarted = j->lost = 0;
	if (was_active && j->cur.active && !j->cur.got_reply) {
		/* The kernel answered kernel_info after the cell (the shell
		 * channel is in order), yet the cell's reply never came: it
		 * was lost with the old connection. */
		j->cur.lost_reply = 1;
		j->cur.got_reply = j->cur.got_idle = 1;
		cell_maybe_done(j);
	} else if (was_active && j->cur.active) {
		cell_maybe_done(j);
	}
	pump(j);
}

static void
on_kernel_status(struct jupyter *j, const char *es, const char *parent)
{
	if (j->st.step == JSTART_CWD && parent != NULL && strcmp(parent, j->ctl_id) == 0 &&
	    strcmp(es, "idle") == 0) {
		j->ctl_idle = 1;
		cwd_answered(j);
		return;
	}
	if (j->cur.active && parent != NULL && strcmp(parent, j->cur.msg_id) == 0)
		j->cur.started = 1;
	if (strcmp(es, "idle") == 0 && j->cur.active && parent != NULL &&
	    strcmp(parent, j->cur.msg_id) == 0) {
		j->cur.got_idle = 1;
		cell_maybe_done(j);
		return;
	}
	if (strcmp(es, "dead") == 0) {
		j->st.kernel_dead = 1;
		if (j->cur.active)
			finish_cell(j, CELL_CRASHED,
			    "the Jupyter kernel died and the server could not restart it; its state was lost", 1);
		go_dead(j, "the Jupyter kernel died and the server could not restart it");
		return;
	}
	if (strcmp(es, "restarting") == 0 && !j->restarting_by_us && j->phase == PH_READY) {
		/* The server restarts a kernel that died (autorestart). */
		if (j->cur.active)
			finish_cell(j, CELL_CRASHED,
			    "the Jupyter kernel died (the server restarted it); its state (variables, imports) was lost", 1);
		j->phase = PH_STARTING;
		j->restarted = j->lost = 1;
		emit_state(j, KERNEL_STARTING, "the Jupyter kernel died; the server is restarting it",
		    1, 1);
		send_kernel_info(j);
	}
}

#define NUDGE_MS	200	/* the cwd check again while iopub is silent */

/* The silent cwd check that ends the start sequence. Ready takes its
 * execute_reply (shell) and its idle status (iopub): right after a
 * restart the server's iopub subscription may not be connected yet
 * (zmq's slow joiner), and a cell sent then got its reply but never its
 * idle, so it ran forever. As Jupyter Server nudges a new connection,
 * the check is sent again until iopub answers (the start timeout bounds
 * it). */
static void
send_cwd(struct jupyter *j)
{
	j->st.step = JSTART_CWD;
	j->ctl_kind = 1;
	j->ctl_replied = j->ctl_idle = 0;
	if (send_msg(j, "execute_request", "shell",
	    jmsg_execute_content("", 1, "cwd", CWD_EXPR), j->ctl_id) < 0) {
		j->ctl_kind = 0;
		lose_connection(j, "cannot send on the kernel's WebSocket");
	}
}

static void
on_nudge(struct loop *l, void *arg)
{
	struct jupyter *j = arg;
	(void)l;

	j->nudge_timer = 0;
	if (j->st.step == JSTART_CWD && j->ctl_kind == 0 && !j->ctl_idle)
		send_cwd(j);
}

/* One half of the cwd check's answer came; ready when both did. */
static void
cwd_answered(struct jupyter *j)
{
	if (j->ctl_replied && j->ctl_idle) {
		loop_timer_cancel(j->loop, j->nudge_timer);
		j->nudge_timer = 0;
		became_ready(j);
	} else if (j->ctl_replied && j->nudge_timer == 0) {
		j->nudge_timer = loop_timer_add(j->loop, NUDGE_MS, on_nudge, j);
	}
}

/* The running cell's text and figures (kernel_jupyter_cell.h). */
static void
on_cell_output(void *arg, int stream, const char *p, size_t n)
{
	struct jupyter *j = arg;

	emit_output(j, j->cur.n, stream, p, n);
}

static void
on_cell_image(void *arg, const char *png_b64)
{
	struct jupyter *j = arg;

	jout_image(j->out, j->cur.n, png_b64);
}

static const struct jcell_cbs cell_cbs = { on_cell_output, on_cell_image };

static void
on_ws_message(void *arg, const char *p, size_t n, int binary)
{
	struct jupyter *j = arg;
	struct jmsg msg;
	cJSON *m;
	const cJSON *content;
	const char *type, *parent, *channel;

	if (binary)
		return;		/* only the v1 subprotocol sends these; not asked for */
	if (jmsg_parse(p, n, &msg) < 0)
		return;		/* not a kernel message: ignored */
	m = msg.json;
	type = msg.type;
	parent = msg.parent;
	channel = msg.channel;
	content = msg.content;

	if (strcmp(type, "status") == 0) {
		const char *es = json_str(content, "execution_state");
		if (es != NULL)
			on_kernel_status(j, es, parent);
		cJSON_Delete(m);
		return;
	}
	if (strcmp(type, "kernel_info_reply") == 0 && j->st.step == JSTART_INFO &&
	    parent != NULL && strcmp(parent, j->info_id) == 0) {
		send_cwd(j);
		cJSON_Delete(m);
		return;
	}
	if (strcmp(type, "execute_reply") == 0 && j->ctl_kind != 0 && parent != NULL &&
	    strcmp(parent, j->ctl_id) == 0) {
		int kind = j->ctl_kind;
		j->ctl_kind = 0;
		if (kind == 1) {
			on_cwd_reply(j, content);
			cJSON_Delete(m);
			j->ctl_replied = 1;
			cwd_answered(j);
			return;
		}
		cJSON_Delete(m);
		pump(j);
		return;
	}
	if (!j->cur.active || parent == NULL || strcmp(parent, j->cur.msg_id) != 0) {
		cJSON_Delete(m);
		return;		/* someone else's, or late */
	}
	j->cur.started = 1;
	if (strcmp(type, "execute_reply") == 0 && (channel == NULL || strcmp(channel, "shell") == 0)) {
		jcell_reply(&j->cur, content, "terp_out", FP_MAX);
		cell_maybe_done(j);
	} else {
		jcell_message(&j->cur, type, content, &cell_cbs, j);
	}
	cJSON_Delete(m);
}

static void
on_ws_dropped(void *arg, uint64_t size)
{
	struct jupyter *j = arg;
	char a[32], b[32];

	fmt_bytes(a, sizeof a, size);
	fmt_bytes(b, sizeof b, j->o->max_msg);
	note(j, "a message from the Jupyter server (over %s) was skipped: the limit is %s", a, b);
}

/* ------------------------------------------------------------ the start sequence */

/* Abandons whatever runs: requests, the socket, the running cell (it
 * ends with reason, its state lost) and the queued cells. */
static void
teardown(struct jupyter *j, enum cell_status st, const char *reason)
{
	loop_timer_cancel(j->loop, j->start_timer);
	j->start_timer = 0;
	loop_timer_cancel(j->loop, j->nudge_timer);
	j->nudge_timer = 0;
	j->rest.gen++;
	jrest_cancel(&j->rest);
	jstart_drop_ws(&j->st);
	j->st.step = JSTART_NONE;
	j->ctl_kind = 0;
	j->st.reconnecting = 0;
	j->restarting_by_us = 0;
	if (j->cur.active)
		finish_cell(j, st, reason, 1);
	if (j->op != NULL) {
		/* An upload cut short goes again with the next start. */
		struct op *p = j->op;
		j->op = NULL;
		jput_stop(&j->up);
		if (p->type == OP_UPLOAD) {
			p->next = j->queue;
			j->queue = p;
		} else {
			free(p);
		}
	}
	drop_queue(j, "not run: the Jupyter session stopped");
}

static void
go_dead(struct jupyter *j, const char *msg)
{
	teardown(j, CELL_CRASHED, msg);
	j->phase = PH_DEAD;
	emit_state(j, KERNEL_DEAD, msg, 0, 0);
}

static void
send_kernel_info(struct jupyter *j)
{
	j->st.step = JSTART_INFO;
	if (send_msg(j, "kernel_info_request", "shell", cJSON_CreateObject(), j->info_id) < 0)
		lose_connection(j, "cannot send on the kernel's WebSocket");
}

static void
on_ws_open(void *arg)
{
	struct jupyter *j = arg;

	send_kernel_info(j);
}

static void
on_ws_closed(void *arg, const struct ws_end *e)
{
	struct jupyter *j = arg;
	int was = j->st.step;

	j->st.ws = NULL;
	if (j->phase == PH_OFF || j->phase == PH_DEAD)
		return;
	if (j->restarting_by_us)
		return;		/* on_restarted opens a new one */
	if (was == JSTART_WS && e->http_status != 0) {
		jstart_ws_refused(&j->st, e);
		return;
	}
	lose_connection(j, e->error);
}

/* The start sequence's reports (kernel_jupyter_start.h). */
static void
on_start_dead(void *arg, const char *msg)
{
	go_dead(arg, msg);
}

static void
on_kernel_gone(void *arg)
{
	struct jupyter *j = arg;

	cell_gone(j, "the Jupyter kernel is gone (the server culled or lost it); its state was lost");
	j->restarted = j->lost = 1;
}

static const struct jstart_cbs start_cbs = {
	on_start_dead, on_kernel_gone,
	{ on_ws_open, on_ws_message, on_ws_dropped, on_ws_closed },
};

/* The server no longer has our kernel: a new one, the state lost. */
static void
replace_kernel(struct jupyter *j)
{
	j->rest.gen++;
	jrest_cancel(&j->rest);
	jstart_drop_ws(&j->st);
	jstart_forget(&j->st);
	cell_gone(j, "the Jupyter kernel is gone (the server culled or lost it); its state was lost");
	j->ctl_kind = 0;
	j->restarted = j->lost = 1;
	j->phase = PH_STARTING;
	free(j->last_fp);
	j->last_fp = NULL;
	emit_state(j, KERNEL_STARTING,
	    "the Jupyter kernel is gone (the server culled or lost it); starting a new one", 1, 1);
	loop_timer_cancel(j->loop, j->start_timer);
	j->start_timer = loop_timer_add(j->loop, j->o->connect_timeout_ms * 6, on_start_timeout, j);
	jstart_create(&j->st);
}

static void
on_start_timeout(struct loop *l, void *arg)
{
	struct jupyter *j = arg;
	char *m;
	(void)l;

	j->start_timer = 0;
	if (j->phase != PH_STARTING)
		return;
	m = xasprintf("the Jupyter kernel was not ready after %ld s", (long)(j->o->connect_timeout_ms * 6 / 1000));
	go_dead(j, m);
	free(m);
}

/* Runs the whole sequence: probe, folders, kernel, socket, handshake. */
static void
start_sequence(struct jupyter *j)
{
	j->rest.gen++;
	j->phase = PH_STARTING;
	loop_timer_cancel(j->loop, j->start_timer);
	/* Kernels on a cluster (Enterprise Gateway) can take a while. */
	j->start_timer = loop_timer_add(j->loop, j->o->connect_timeout_ms * 6, on_start_timeout, j);
	jstart_begin(&j->st);
}

/* The WebSocket broke: reopen it once with the same session id (the
 * server replays what it buffered meanwhile). A second failure, or a
 * kernel that is gone, is reported. */
static void
lose_connection(struct jupyter *j, const char *why)
{
	char *m;

	jstart_drop_ws(&j->st);
	if (j->st.reconnecting || j->phase != PH_READY || j->st.kernel_id == NULL) {
		m = xasprintf("lost the connection to the Jupyter server: %s", why ? why : "closed");
		go_dead(j, m);
		free(m);
		return;
	}
	j->rest.gen++;
	j->st.reconnecting = 1;
	j->restarted = 1;
	j->phase = PH_STARTING;
	m = xasprintf("lost the connection to the Jupyter server (%s); reconnecting", why ? why : "closed");
	emit_state(j, KERNEL_STARTING, m, 0, 0);
	free(m);
	loop_timer_cancel(j->loop, j->start_timer);
	j->start_timer = loop_timer_add(j->loop, j->o->connect_timeout_ms * 6, on_start_timeout, j);
	jstart_attach(&j->st);
}

/* ------------------------------------------------------------ restart */

static void
on_restarted(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jupyter *j = arg;
	char *p;

	if (q->i != j->rest.gen)
		return;
	j->restarting_by_us = 0;
	if (r->status == 404) {
		jstart_forget(&j->st);
		jstart_drop_ws(&j->st);
		jstart_create(&j->st);
		return;
	}
	if ((p = jrest_problem(&j->rest, r, "the restart")) != NULL) {
		go_dead(j, p);
		free(p);
		return;
	}
	if (j->st.ws == NULL || !ws_is_open(j->st.ws))
		jstart_open_ws(&j->st);
	else
		send_kernel_info(j);
}

/* Restarts the kernel through REST; the running cell (if any) ends with
 * st and cell_reason, its state lost. */
static void
restart_kernel(struct jupyter *j, const char *cell_reason, enum cell_status st)
{
	char *path;

	if (j->cur.active)
		finish_cell(j, st, cell_reason, 1);
	j->rest.gen++;
	jrest_cancel(&j->rest);
	if (j->op != NULL) {
		/* An upload in flight: cancelled, retried after the restart. */
		struct op *p = j->op;
		j->op = NULL;
		jput_stop(&j->up);
		p->next = j->queue;
		j->queue = p;
	}
	j->ctl_kind = 0;
	loop_timer_cancel(j->loop, j->nudge_timer);
	j->nudge_timer = 0;
	j->st.step = JSTART_NONE;
	j->phase = PH_STARTING;
	j->restarted = j->lost = 1;
	j->restarting_by_us = 1;
	free(j->last_fp);
	j->last_fp = NULL;
	emit_state(j, KERNEL_STARTING, "restarting the Jupyter kernel", 1, 1);
	loop_timer_cancel(j->loop, j->start_timer);
	j->start_timer = loop_timer_add(j->loop, j->o->connect_timeout_ms * 6, on_start_timeout, j);
	path = jrest_path("/api/kernels/", j->st.kernel_id, "/restart");
	(void)jrest_call(&j->rest, "POST", path, "{}", REST_BODY_MAX, on_restarted);
	free(path);
}

/* ------------------------------------------------------------ API */

struct jupyter *
jupyter_new(struct loop *l, const struct jupyter_opts *opts, const struct kernel_cbs *cbs,
    void *arg)
{
	struct jupyter *j = xcalloc(1, sizeof *j);

	j->loop = l;
	j->o = opts;
	j->cb = *cbs;
	j->arg = arg;
	{
		struct kframe_caps caps = {
			.size_max = opts->artifact_max,
			.per_cell = opts->artifacts_per_cell,
			.per_session = opts->artifacts_per_session,
			.session_bytes = opts->artifact_bytes,
		};
		static const struct jout_cbs oc = { out_live, out_ended, out_note };
		struct jout_opts oo = { opts->artifact_max, opts->out_files_max };
		j->sink = kernel_sink_new(opts->out_dir, &caps, sink_copied, sink_note, j);
		j->out = jout_new(&j->rest, j->sink, &oo, &oc, j);
	}
	jput_init(&j->up);
	jstart_init(&j->st, l, &j->rest, opts, &start_cbs, j);
	j->rest.owner = j;
	j->rest.loop = l;
	j->rest.connect_timeout_ms = opts->connect_timeout_ms;
	j->rest.ca_file = opts->ca_file;
	khold_init(&j->hold, l, OUT_HOLD_MAX, OUT_HOLD_MS, hold_out, j);
	j->phase = PH_OFF;
	j->state = KERNEL_STOPPED;
	return j;
}

int
jupyter_start(struct jupyter *j, char **err)
{
	if (j->phase == PH_STARTING || j->phase == PH_READY) {
		*err = xstrdup("the Jupyter session is running already");
		return -1;
	}
	if (j->rest.base == NULL) {
		if (jstart_configure(&j->st, err) < 0)
			return -1;
		for (int i = 0; i < j->o->ndata; i++) {
			char *p = jupyter_stage(j, j->o->data_files[i], err);
			if (p == NULL)
				return -1;
			free(p);
		}
	}
	if (j->o->out_dir == NULL) {
		*err = xstrdup("cannot use the output folder (none): no folder was given");
		return -1;
	}
	if (kernel_sink_open(j->sink, err) < 0)
		return -1;
	if (j->st.kernel_dead) {
		/* The server said "dead": a new kernel. */
		free(j->st.kernel_id);
		j->st.kernel_id = NULL;
		j->restarted = j->lost = 1;
	}
	if (j->stopped_why != NULL) {
		/* "restarted" tells the agent that the state is gone. */
		char *m = xasprintf("starting a new Jupyter kernel; the last one was stopped (%s)",
		    j->stopped_why);
		j->restarted = j->lost = 1;
		free(j->stopped_why);
		j->stopped_why = NULL;
		emit_state(j, KERNEL_STARTING, m, 1, 1);
		free(m);
	} else if (j->phase == PH_DEAD) {
		emit_state(j, KERNEL_STARTING, "reconnecting to the Jupyter server", 0, 0);
	} else {
		emit_state(j, KERNEL_STARTING, "connecting to the Jupyter server", 0, 0);
	}
	start_sequence(j);
	return 0;
}

int
jupyter_run(struct jupyter *j, int n, const char *code, char **err)
{
	struct op *p, **pp;

	if (strlen(code) > CODE_MAX) {
		*err = xasprintf("the cell's code is over %u MiB", CODE_MAX >> 20);
		return -1;
	}
	if (j->phase == PH_OFF || j->phase == PH_DEAD) {
		/* Stopped (idle), or the connection died: the next cell
		 * reconnects, as the local sandbox restarts. */
		if (j->rest.base == NULL) {
			*err = xstrdup("the Jupyter session is not started");
			return -1;
		}
		if (jupyter_start(j, err) < 0)
			return -1;
	}
	p = xcalloc(1, sizeof *p);
	p->type = OP_CELL;
	p->n = n;
	p->code = xstrdup(code);
	for (pp = &j->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	pump(j);
	return 0;
}

void
jupyter_interrupt(struct jupyter *j)
{
	interrupt_cell(j, JCELL_STOP_USER);
}

int
jupyter_reset(struct jupyter *j, char **err)
{
	struct op *p, **pp;

	if (j->phase != PH_READY && j->phase != PH_STARTING) {
		*err = xstrdup("the Jupyter session is not running");
		return -1;
	}
	p = xcalloc(1, sizeof *p);
	p->type = OP_RESET;
	for (pp = &j->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	pump(j);
	return 0;
}

int
jupyter_restart(struct jupyter *j, char **err)
{
	if (j->st.kernel_id == NULL || (j->phase != PH_READY && j->phase != PH_STARTING)) {
		*err = xstrdup("the Jupyter kernel is not running");
		return -1;
	}
	if (j->cur.active)
		finish_cell(j, CELL_INTERRUPTED, "the session was restarted by request; its state was lost", 1);
	drop_queue(j, "not run: the session was restarted");
	restart_kernel(j, NULL, CELL_INTERRUPTED);
	return 0;
}

char *
jupyter_stage(struct jupyter *j, const char *host_path, char **err)
{
	struct stat st;
	const char *base;
	struct op *p, **pp;
	int fd;

	fd = open(host_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*err = xasprintf("cannot open %s: %s", host_path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		*err = xasprintf("%s is not a regular file", host_path);
		return NULL;
	}
	close(fd);
	base = strrchr(host_path, '/');
	base = base ? base + 1 : host_path;
	p = xcalloc(1, sizeof *p);
	p->type = OP_UPLOAD;
	p->host_path = xstrdup(host_path);
	p->name = kframe_host_name(base);
	for (pp = &j->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	pump(j);
	return xasprintf("data/%s", p->name);
}

static void
on_deleted(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jupyter *j = arg;
	(void)q;
	(void)r;
	free(j->deleting);
	j->deleting = NULL;
}

void
jupyter_stop(struct jupyter *j, const char *reason)
{
	struct jreq *q;
	char *path;

	if (j->phase == PH_OFF)
		return;
	teardown(j, CELL_INTERRUPTED, "the Jupyter session was stopped; its state was lost");
	free(j->stopped_why);
	j->stopped_why = xstrdup(reason && *reason ? reason : "by request");
	if (j->st.kernel_id != NULL && !j->o->keep_kernel) {
		path = jrest_path("/api/kernels/", j->st.kernel_id, NULL);
		q = jrest_call(&j->rest, "DELETE", path, NULL, REST_BODY_MAX, on_deleted);
		free(path);
		free(j->deleting);
		j->deleting = j->st.kernel_id;
		j->st.kernel_id = NULL;
		(void)q;
	}
	free(j->last_fp);
	j->last_fp = NULL;
	j->phase = PH_OFF;
	emit_state(j, KERNEL_STOPPED, j->stopped_why, 0, 0);
}

void
jupyter_free(struct jupyter *j)
{
	struct op *p;

	if (j == NULL)
		return;
	khold_flush(&j->hold);
	j->cb.state = NULL;
	j->cb.result = NULL;
	j->cb.output = NULL;
	j->cb.artifact = NULL;
	loop_timer_cancel(j->loop, j->start_timer);
	loop_timer_cancel(j->loop, j->nudge_timer);
	cancel_cell_timers(j);
	jrest_cancel(&j->rest);
	jstart_drop_ws(&j->st);
	jstart_delete_sync(&j->st, j->st.kernel_id);
	jstart_delete_sync(&j->st, j->deleting);
	while ((p = j->queue) != NULL) {
		j->queue = p->next;
		op_free(p);
	}
	op_free(j->op);
	jput_stop(&j->up);
	jcell_clear(&j->cur);
	jrest_free(&j->rest);
	kernel_sink_free(j->sink);
	jout_free(j->out);
	jstart_free(&j->st);
	free(j->deleting);
	free(j->ready_note);
	free(j->stopped_why);
	free(j->last_fp);
	free(j->pending_note);
	khold_free(&j->hold);
	free(j);
}

enum kernel_state
jupyter_state(const struct jupyter *j)
{
	return j->state;
}

int
jupyter_busy(const struct jupyter *j)
{
	return j->cur.active || j->queue != NULL || j->op != NULL;
}

const char *
jupyter_isolation(const struct jupyter *j)
{
	(void)j;
	return ISOLATION_LINE;
}

const char *
jupyter_where(const struct jupyter *j)
{
	return j->rest.where ? j->rest.where : "jupyter";
}

const char *
jupyter_kernel_id(const struct jupyter *j)
{
	return j->st.kernel_id;
}

const char *
jupyter_session_dir(const struct jupyter *j)
{
	return j->st.session;
}
