/* kernel_aca: cells in an Azure Container Apps session pool over its
 * REST API (PROTOCOLS.md §7), through http.c inside terp's loop.
 *
 * One job runs at a time: connecting (token, marker check, uploads), a
 * cell (marker check, re-uploads after a recycle, execution, listing,
 * downloads) or a staged upload. A job is a chain of requests; at most
 * one request is in flight (struct rq) and each ends in one handler.
 * Jobs wait in a queue in the order they were asked for.
 *
 * The pieces below it, each with its own types: kernel_aca_opts.c (the
 * options and their offline checks), kernel_aca_parse.c (the pool's and
 * the token command's answers, pure), kernel_aca_token.c (the bearer
 * token, which never leaves it but for the Authorization header),
 * kernel_aca_rest.c (the one request in flight: retries, one line of
 * error); artifacts go through kernel_sink.c, the out-folder diff
 * through kernel_seen.c. The identifier is only ever in request URLs,
 * which no message quotes. */
#include "terp/kernel_aca.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/http.h"
#include "terp/json_text.h"
#include "terp/kernel_aca_rest.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_seen.h"
#include "terp/kernel_sink.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define LIST_MAX	1000		/* files of a listing looked at */
#define REQ_IDLE_MS	60000		/* silence before a non-execution request fails */
#define NOTES_MAX	(16 * 1024)	/* notes kept for the next cell */
#define CODE_MAX	(64u << 20)

/* The marker: set in the session's namespace by every check; a session
 * without it is not the one terp talked to before. One statement that
 * prints, so that it leaves no display value (IPython's `_`). */
#define MARKER_CODE "print('terp-marker:' + ('kept' if globals().get(" \
	"'_terp_marker') == 'terp-1' else 'new')); globals()['_terp_marker'] = 'terp-1'"

#define MSG_RECYCLED "restarted: the pool recycled the remote session (idle past " \
	"its cooldown, or its kernel restarted), so its state (variables, imports, " \
	"files in " ACA_DATA_DIR ") was lost; data files are uploaded again"
#define MSG_NO_STREAM "terp: output arrives when the cell ends (remote sessions " \
	"do not stream)\n"

enum job { JOB_NONE, JOB_CONNECT, JOB_CELL, JOB_UPLOAD };
struct aca;
typedef void (*rq_fin)(struct aca *a, const struct aca_rq_end *e);

/* A data file: kept open for the session, so that a re-upload after a
 * recycle sends the same file. */
struct dfile {
	char		*host;
	char		*name;		/* in /mnt/data */
	int		 fd;
	uint64_t	 size;
	int		 uploaded;	/* 1 done, -1 failed, 0 to do */
};

struct op {
	int		 cell;		/* 1: a cell, 0: an upload */
	int		 n;
	char		*code;
	int		 file;
	struct op	*next;
};

struct crun {
	int		 n;
	char		*code;
	int64_t		 start_us, exec_us;
	int		 lost;		/* its check found the state gone */
	int		 exec_sent;	/* the execution request went out */
	int		 have_exec;	/* the execution answered */
	enum cell_status status;
	char		*value, *ename, *evalue, *traceback, *reason;
	struct aca_file	*cand;		/* files to download */
	int		 ncand, next;
	int		 grew;		/* a download passed its listed size */
};

struct aca {
	struct loop	*loop;
	struct http	*http;
	struct aca_opts	 o;
	struct kernel_cbs cb;
	void		*arg;
	enum kernel_state state;
	enum aca_shape	 shape;
	char		*endpoint;	/* without a trailing '/' */
	char		 id[129];
	int		 known;		/* the identifier had our marker once */
	int		 kept;		/* the last check found our marker */
	int		 connected;
	int		 told_no_stream;
	char		*stopped_why;
	unsigned	 gen;		/* bumped when a job is torn down */
	int		 quiet;		/* > 0 in a teardown: cells only queue */
	/* files */
	struct dfile	*files;
	int		 nfiles;
	struct kernel_seen seen;	/* /mnt/data's last listing */
	struct kernel_sink *sink;	/* artifacts into out_dir */
	struct buf	 notes;		/* for the next cell's stderr */
	/* jobs */
	struct op	*queue;
	enum job	 job;
	int		 up_file;	/* the file being uploaded */
	int		 up_only;	/* the upload job's file */
	struct crun	 cr;
	struct aca_rest	*rest;		/* the request in flight */
	rq_fin		 fin;		/* ... and where its end goes */
};

static void advance(struct aca *a);
static void after_uploads(struct aca *a);
static void finish_cell(struct aca *a);
static void next_download(struct aca *a);
static void fin_upload(struct aca *a, const struct aca_rq_end *e);
static void fin_exec(struct aca *a, const struct aca_rq_end *e);
static void resume_queue(struct aca *a);

/* ------------------------------------------------------------ small helpers */

/* A random version 4 UUID: unguessable, so that nobody else reaches the
 * session (the docs call the identifier sensitive). */
static int
random_uuid(char out[37])
{
	unsigned char r[16];
	size_t got = 0;

	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6],
	    r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
	return 0;
}

static void
pct(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~') {
			buf_addc(b, (char)c);
		} else {
			buf_addc(b, '%');
			buf_addc(b, hex[c >> 4]);
			buf_addc(b, hex[c & 15]);
		}
	}
}

/* endpoint/path?api-version=V&identifier=ID[&path=/mnt/data]; path is
 * already percent-encoded where it holds a file name. */
static char *
make_url(const struct aca *a, const char *path, int with_dir)
{
	struct buf b;

	buf_init(&b, SIZE_MAX / 2);
	buf_printf(&b, "%s/%s?api-version=", a->endpoint, path);
	pct(&b, a->o.api_version);
	buf_adds(&b, "&identifier=");
	pct(&b, a->id);
	if (with_dir) {
		buf_adds(&b, "&path=");
		pct(&b, ACA_DATA_DIR);
	}
	return buf_take(&b);
}

/* ------------------------------------------------------------ state and notes */

/* The one place state reports leave the module, with the typed
 * restarted/state_lost facts (kernel.h's struct kernel_status). */
static void
report_state(struct aca *a, enum kernel_state st, int restarted, int state_lost,
    const char *msg)
{
	struct kernel_status ks = { .state = st, .restarted = restarted,
	    .state_lost = state_lost, .msg = msg ? msg : kernel_state_name(st) };

	a->state = st;
	if (a->cb.state)
		a->cb.state(a->arg, &ks);
}

static void
emit(struct aca *a, int stream, const char *p, size_t n)
{
	if (n > 0 && a->cb.output != NULL && a->job == JOB_CELL)
		a->cb.output(a->arg, a->cr.n, stream, p, n);
}

/* "terp: ..." on the running cell's stderr, or kept for the next cell. */
static void
note(struct aca *a, const char *fmt, ...)
{
	va_list ap;
	char *body, *line;

	va_start(ap, fmt);
	body = xvasprintf(fmt, ap);
	va_end(ap);
	line = xasprintf("terp: %s\n", body);
	free(body);
	if (a->job == JOB_CELL)
		emit(a, 1, line, strlen(line));
	else
		(void)buf_adds(&a->notes, line);	/* dropped when full */
	free(line);
}

/* ------------------------------------------------------------ requests */

static void
rq_done(void *arg, const struct aca_rq_end *e)
{
	struct aca *a = arg;

	a->fin(a, e);
}

static int
rq_download(void *arg, const char *p, size_t n)
{
	struct aca *a = arg;

	/* The pool's excess is said when the download ends (the sink
	 * reports a write error itself). */
	if (n > kernel_sink_room(a->sink)) {
		a->cr.grew = 1;
		return 1;
	}
	return kernel_sink_write(a->sink, p, n) < 0;
}

static void
rq_retrying(void *arg, const char *msg)
{
	struct aca *a = arg;

	report_state(a, a->state, 0, 0, msg);
}

static void
rq_sent(void *arg)
{
	struct aca *a = arg;

	if (a->fin == fin_exec)
		a->cr.exec_sent = 1;
}

/* Starts a request; fin gets its end (see aca_rest_start). */
static void
rq_start(struct aca *a, enum aca_rq_kind kind, char *url, char *body,
    const struct http_part *part, int64_t idle_ms, rq_fin fin)
{
	a->fin = fin;
	aca_rest_start(a->rest, kind, url, body, part, idle_ms);
}

static void
rq_clear(struct aca *a)
{
	aca_rest_clear(a->rest);
}

/* ------------------------------------------------------------ artifacts */

/* The sink's lines, for the cell they name while it runs (a rename note
 * after a teardown has no cell to go to). */
static void
sink_note(void *arg, int cell, const char *line)
{
	struct aca *a = arg;

	if (a->job == JOB_CELL && a->cr.n == cell)
		emit(a, 1, line, strlen(line));
}

static void
sink_copied(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct aca *a = arg;

	if (a->cb.artifact != NULL)
		a->cb.artifact(a->arg, cell, name, host_path, bytes);
}

/* An image the execution returned as its value. Returns -1 when the
 * job was torn down meanwhile. */
static int
image_result(struct aca *a, const char *b64, const char *fmt)
{
	unsigned g = a->gen;
	char *name, *data;
	size_t n, blen = strlen(b64);

	name = xasprintf("result-%d.%s", a->cr.n, fmt ? fmt : "png");
	if (blen / 4 * 3 > a->o.artifact_max + 3) {
		char *why = kernel_sink_refusal(a->sink, KF_TOO_LARGE, blen / 4 * 3);
		kernel_sink_report(a->sink, name, why);
		free(why);
		free(name);
		return 0;
	}
	data = base64_decode(b64, blen, &n);
	if (data == NULL) {
		kernel_sink_report(a->sink, name, "the pool sent an image that is not base64");
		free(name);
		return 0;
	}
	(void)kernel_sink_put(a->sink, "", name, data, n);
	free(data);
	free(name);
	return a->gen == g ? 0 : -1;
}

/* ------------------------------------------------------------ files */

static int
is_staged(const struct aca *a, const char *name)
{
	for (int i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].name, name) == 0)
			return 1;
	return 0;
}

/* Takes the listing as the new baseline; returns the files that are new
 * or changed since the last one (data files aside). */
static int
seen_update(struct aca *a, struct aca_file *f, int n, struct aca_file **cand)
{
	int nc = 0;

	*cand = NULL;
	kernel_seen_start(&a->seen);
	for (int i = 0; i < n; i++) {
		if (!kernel_seen_changed(&a->seen, f[i].name, f[i].size, f[i].mtime) ||
		    is_staged(a, f[i].name))
			continue;
		*cand = xrealloc(*cand, (size_t)(nc + 1) * sizeof **cand);
		(*cand)[nc].name = xstrdup(f[i].name);
		(*cand)[nc].mtime = xstrdup(f[i].mtime);
		(*cand)[nc].size = f[i].size;
		nc++;
	}
	kernel_seen_prune(&a->seen);
	return nc;
}

/* A name for /mnt/data the pool takes: letters, digits, non-ASCII
 * text, and - _ space . @ $ & = ; , # % ^ ( ); the rest as '_'. */
static char *
remote_name(const char *host)
{
	const char *base = strrchr(host, '/');
	char *clean, *s;
	size_t n;

	base = base ? base + 1 : host;
	clean = sanitize_str(base, strlen(base), 0);
	for (s = clean; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_ .@$&=;,#%^()", c) != NULL))
			*s = '_';
	}
	if (clean[0] == '.' || clean[0] == '\0') {
		s = xasprintf("data%s", clean);
		free(clean);
		clean = s;
	}
	n = strlen(clean);
	if (n > 200)
		clean[utf8_complete_prefix(clean, 200)] = '\0';
	return clean;
}

static void
upload_start(struct aca *a, int i)
{
	struct dfile *f = &a->files[i];
	struct http_part part = { .field = "file", .filename = f->name, .fd = f->fd,
	    .size = f->size };

	a->up_file = i;
	rq_start(a, ACA_RQ_UPLOAD, a->shape == ACA_SHAPE_PROPERTIES ?
	    make_url(a, "files/upload", 0) : make_url(a, "files", 1), NULL, &part,
	    REQ_IDLE_MS, fin_upload);
}

/* Starts the next upload that is due; 0 when none is. */
static int
next_upload(struct aca *a)
{
	for (int i = 0; i < a->nfiles; i++) {
		if (a->files[i].uploaded == 0 && a->files[i].fd >= 0) {
			upload_start(a, i);
			return 1;
		}
	}
	return 0;
}

static void
fin_upload(struct aca *a, const struct aca_rq_end *e)
{
	struct dfile *f = &a->files[a->up_file];

	if (e->err != NULL) {
		char *shown = kframe_display_name(f->name);
		f->uploaded = -1;
		if (e->status == 413)
			note(a, "the data file %s was not uploaded: it is over the session "
			    "pool's upload limit (%llu MiB)", shown,
			    (unsigned long long)(a->o.upload_max >> 20));
		else
			note(a, "the data file %s was not uploaded: %s", shown, e->err);
		free(shown);
	} else {
		f->uploaded = 1;
	}
	if (a->job == JOB_UPLOAD) {
		a->job = JOB_NONE;
		advance(a);
		return;
	}
	if (!next_upload(a))
		after_uploads(a);
}

/* ------------------------------------------------------------ connecting */

/* Every cell of q (a queue taken off a->queue before anything could
 * call back: a result callback may queue new cells, which are not
 * these) ends unrun with st and why. */
static void
fail_queue(struct aca *a, struct op *q, enum cell_status st, const char *why)
{
	struct op *p;

	while ((p = q) != NULL) {
		q = p->next;
		if (p->cell && a->cb.result != NULL) {
			struct kernel_result r;
			char *reason = xasprintf("the cell did not run: %s", why);
			memset(&r, 0, sizeof r);
			r.status = st;
			r.reason = reason;
			a->cb.result(a->arg, p->n, &r);
			free(reason);
		}
		free(p->code);
		free(p);
	}
}

static void
connect_fail(struct aca *a, const char *err)
{
	struct op *q = a->queue;

	a->queue = NULL;
	a->job = JOB_NONE;
	a->connected = 0;
	a->state = KERNEL_DEAD;
	a->quiet++;
	fail_queue(a, q, CELL_CRASHED, err);
	report_state(a, KERNEL_DEAD, 0, 0, err);
	a->quiet--;
	resume_queue(a);
}

static void
connect_done(struct aca *a)
{
	a->job = JOB_NONE;
	a->connected = 1;
	report_state(a, KERNEL_READY, 0, 0, a->kept ? "reconnected to the session pool; "
	    "the remote session kept its state" : "connected to the session pool (output "
	    "arrives when a cell ends)");
	advance(a);
}

static void
fin_baseline(struct aca *a, const struct aca_rq_end *e)
{
	struct aca_file *f, *cand;
	const char *why;
	int n, skipped, nc;

	if (e->err != NULL) {
		note(a, "the files in %s were not listed: %s", ACA_DATA_DIR, e->err);
		connect_done(a);
		return;
	}
	n = aca_files_parse(e->body, e->len, LIST_MAX,
	    &f, &skipped, &why);
	if (n >= 0) {
		nc = seen_update(a, f, n, &cand);
		aca_files_free(cand, nc);
		aca_files_free(f, n);
	}
	connect_done(a);
}

static void
fin_check(struct aca *a, const struct aca_rq_end *e)
{
	struct aca_exec ex;
	const char *why;
	int kept, lost;

	if (e->err != NULL) {
		if (a->job == JOB_CONNECT) {
			connect_fail(a, e->err);
		} else {
			a->cr.status = e->timed_out ? CELL_TIMEOUT : CELL_CRASHED;
			a->cr.reason = xasprintf("the cell did not run: %s", e->err);
			finish_cell(a);
		}
		return;
	}
	if (aca_exec_parse(e->body, e->len, &ex, &why) < 0 ||
	    !ex.ok || (strstr(ex.out, "terp-marker:kept") == NULL &&
	    strstr(ex.out, "terp-marker:new") == NULL)) {
		char *msg = xasprintf("the session pool's answer to terp's session check "
		    "is not understood (%s)", ex.json == NULL ? why : "no marker in it");
		if (ex.json != NULL)
			aca_exec_free(&ex);
		if (a->job == JOB_CONNECT) {
			connect_fail(a, msg);
		} else {
			a->cr.status = CELL_CRASHED;
			a->cr.reason = xasprintf("the cell did not run: %s", msg);
			finish_cell(a);
		}
		free(msg);
		return;
	}
	kept = strstr(ex.out, "terp-marker:kept") != NULL;
	a->kept = kept;
	aca_exec_free(&ex);
	lost = !kept && a->known;
	a->known = 1;
	if (!kept) {
		/* A fresh session: nothing of ours is in /mnt/data. */
		kernel_seen_clear(&a->seen);
		for (int i = 0; i < a->nfiles; i++)
			if (a->files[i].fd >= 0)
				a->files[i].uploaded = 0;
	}
	if (lost) {
		unsigned g = a->gen;
		enum kernel_state back = a->state == KERNEL_BUSY ? KERNEL_BUSY : KERNEL_STARTING;
		if (a->job == JOB_CELL)
			a->cr.lost = 1;
		report_state(a, KERNEL_STARTING, 1, 1, MSG_RECYCLED);
		if (a->gen != g)
			return;
		if (back == KERNEL_BUSY) {
			report_state(a, KERNEL_BUSY, 0, 0, "running in the session pool");
			if (a->gen != g)
				return;
		}
	}
	if (!next_upload(a))
		after_uploads(a);
}

static void
send_check(struct aca *a)
{
	cJSON *b = cJSON_CreateObject(), *p;
	char *body, *url;

	if (a->shape == ACA_SHAPE_PROPERTIES) {
		p = cJSON_AddObjectToObject(b, "properties");
		cJSON_AddStringToObject(p, "codeInputType", "inline");
		cJSON_AddStringToObject(p, "executionType", "synchronous");
		cJSON_AddStringToObject(p, "code", MARKER_CODE);
		url = make_url(a, "code/execute", 0);
	} else {
		cJSON_AddStringToObject(b, "codeInputType", "Inline");
		cJSON_AddStringToObject(b, "executionType", "Synchronous");
		cJSON_AddStringToObject(b, "code", MARKER_CODE);
		cJSON_AddNumberToObject(b, "timeoutInSeconds", 60);
		url = make_url(a, "executions", 0);
	}
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	/* The pool may still run an abandoned cell ahead of it. */
	rq_start(a, ACA_RQ_EXEC, url, xstrdup(body), NULL, a->o.timeout_ms + a->o.grace_ms,
	    fin_check);
	cJSON_free(body);
}

static void
connect_begin(struct aca *a)
{
	unsigned g;
	char *msg;

	a->job = JOB_CONNECT;
	if (a->stopped_why != NULL) {
		msg = xasprintf("reconnecting to the session pool (stopped: %s)", a->stopped_why);
		free(a->stopped_why);
		a->stopped_why = NULL;
	} else {
		msg = xstrdup("connecting to the session pool");
	}
	g = ++a->gen;
	report_state(a, KERNEL_STARTING, 0, 0, msg);
	free(msg);
	if (a->gen == g)
		send_check(a);
}

/* ------------------------------------------------------------ cells */

static void send_exec(struct aca *a);

static void
after_uploads(struct aca *a)
{
	switch (a->job) {
	case JOB_CONNECT:
		if (kernel_seen_empty(&a->seen) && a->known) {
			/* A session that kept its state may hold files from
			 * before: they are the baseline, not new. */
			rq_start(a, ACA_RQ_LIST, a->shape == ACA_SHAPE_PROPERTIES ? make_url(a, "files", 0) :
			    make_url(a, "files", 1), NULL, NULL, REQ_IDLE_MS, fin_baseline);
			return;
		}
		connect_done(a);
		break;
	case JOB_CELL:
		send_exec(a);
		break;
	default:
		a->job = JOB_NONE;
		advance(a);
		break;
	}
}

static void
crun_free(struct crun *c)
{
	free(c->code);
	free(c->value);
	free(c->ename);
	free(c->evalue);
	free(c->traceback);
	free(c->reason);
	aca_files_free(c->cand, c->ncand);
	memset(c, 0, sizeof *c);
}

static void
finish_cell(struct aca *a)
{
	struct kernel_result r;
	struct crun c;
	unsigned g;

	kernel_sink_cell_end(a->sink, NULL);
	rq_clear(a);
	c = a->cr;
	memset(&r, 0, sizeof r);
	r.status = c.status;
	r.duration_us = c.exec_us > 0 ? c.exec_us : now_us() - c.start_us;
	r.duration_ms = r.duration_us / 1000;
	r.value = c.value;
	r.ename = c.ename;
	r.evalue = c.evalue;
	r.traceback = c.traceback;
	r.state_lost = c.lost;
	if (c.lost && c.reason == NULL)
		r.reason = "the pool had recycled the remote session before this cell: its "
		    "state (variables, imports, files) was lost";
	else
		r.reason = c.reason;
	memset(&a->cr, 0, sizeof a->cr);
	a->job = JOB_NONE;
	a->gen++;
	g = a->gen;
	if (a->state == KERNEL_BUSY)
		report_state(a, KERNEL_READY, 0, 0, NULL);
	/* Even when the state callback stopped or restarted the session:
	 * every cell gets its one result. */
	if (a->cb.result != NULL)
		a->cb.result(a->arg, c.n, &r);
	crun_free(&c);
	if (a->gen == g)
		advance(a);
}

static void
fin_download(struct aca *a, const struct aca_rq_end *e)
{
	unsigned g = a->gen;

	if (a->cr.grew) {
		a->cr.grew = 0;
		kernel_sink_abandon(a->sink, "the pool sent more bytes than it listed (still "
		    "being written?)");
	} else if (!kernel_sink_active(a->sink)) {
		;	/* a write failed: said */
	} else if (e->err != NULL) {
		char *why = xasprintf("the download failed: %s", e->err);
		kernel_sink_abandon(a->sink, why);
		free(why);
	} else if (kernel_sink_room(a->sink) != 0) {
		kernel_sink_abandon(a->sink, "it changed while it was copied (still being written?)");
	} else if (kernel_sink_commit(a->sink) == 0 && a->gen != g) {
		return;		/* the job was torn down by a callback */
	}
	next_download(a);
}

static void
next_download(struct aca *a)
{
	struct crun *c = &a->cr;

	while (c->next < c->ncand) {
		struct aca_file *f = &c->cand[c->next++];
		struct buf p;

		if (kernel_sink_begin(a->sink, ACA_DATA_DIR "/", f->name, f->size) < 0)
			continue;
		buf_init(&p, SIZE_MAX / 2);
		if (a->shape == ACA_SHAPE_PROPERTIES) {
			buf_adds(&p, "files/content/");
			pct(&p, f->name);
		} else {
			buf_adds(&p, "files/");
			pct(&p, f->name);
			buf_adds(&p, "/content");
		}
		rq_start(a, ACA_RQ_DOWNLOAD, make_url(a, buf_str(&p), 0), NULL, NULL, REQ_IDLE_MS,
		    fin_download);
		buf_free(&p);
		return;
	}
	finish_cell(a);
}

static void
fin_list(struct aca *a, const struct aca_rq_end *e)
{
	struct aca_file *f;
	const char *why;
	int n, skipped;

	if (e->err != NULL) {
		note(a, "the files in %s were not listed, so none was copied: %s",
		    ACA_DATA_DIR, e->err);
		finish_cell(a);
		return;
	}
	n = aca_files_parse(e->body, e->len, LIST_MAX,
	    &f, &skipped, &why);
	if (n < 0) {
		note(a, "the pool's list of the files in %s is not understood (%s), so none "
		    "was copied", ACA_DATA_DIR, why);
		finish_cell(a);
		return;
	}
	if (skipped > 0)
		note(a, "%d entries of the pool's list of files were not looked at (unusable "
		    "names or sizes, or past %d files)", skipped, LIST_MAX);
	a->cr.ncand = seen_update(a, f, n, &a->cr.cand);
	aca_files_free(f, n);
	a->cr.next = 0;
	next_download(a);
}

static void
send_list(struct aca *a)
{
	rq_start(a, ACA_RQ_LIST, a->shape == ACA_SHAPE_PROPERTIES ? make_url(a, "files", 0) :
	    make_url(a, "files", 1), NULL, NULL, REQ_IDLE_MS, fin_list);
}

/* Splits a failed cell's stderr at its traceback: the part before is
 * output, the traceback goes to the result with the exception's name
 * and message from its last line. */
static void
take_error(struct crun *c, const struct aca_exec *ex, const char **pre, size_t *prelen)
{
	const char *tb = NULL, *src = ex->err, *p, *last, *end, *colon;
	const char *mark = "Traceback (most recent call last):";

	*pre = ex->err;
	*prelen = strlen(ex->err);
	for (p = strstr(src, mark); p != NULL; p = strstr(p + 1, mark))
		tb = p;
	if (tb != NULL) {
		*prelen = (size_t)(tb - src);
	} else if (ex->message != NULL && (tb = strstr(ex->message, mark)) != NULL) {
		src = ex->message;
	}
	if (tb == NULL) {
		c->ename = xstrdup(ex->code ? ex->code : "Error");
		c->evalue = xstrdup(ex->message ? ex->message : "the remote cell failed");
		return;
	}
	c->traceback = xstrdup(tb);
	/* The last non-empty line: "Name: message". */
	end = tb + strlen(tb);
	while (end > tb && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	last = end;
	while (last > tb && last[-1] != '\n')
		last--;
	colon = memchr(last, ':', (size_t)(end - last));
	if (colon != NULL && colon > last && (size_t)(colon - last) <= 200 &&
	    strspn(last, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
	    (size_t)(colon - last)) {
		c->ename = xstrndup(last, (size_t)(colon - last));
		p = colon + 1;
		while (p < end && *p == ' ')
			p++;
		c->evalue = xstrndup(p, (size_t)(end - p));
	} else {
		c->ename = xstrndup(last, (size_t)(end - last) > 200 ? 200 : (size_t)(end - last));
		c->evalue = xstrdup("");
	}
}

static void
fin_exec(struct aca *a, const struct aca_rq_end *e)
{
	struct crun *c = &a->cr;
	struct aca_exec ex;
	const char *why, *pre;
	size_t prelen;
	unsigned g = a->gen;
	char lim[32];

	c->exec_us = now_us() - c->start_us;
	snprintf(lim, sizeof lim, "%lld s", (long long)(a->o.timeout_ms / 1000));
	if (e->err != NULL) {
		if (e->timed_out) {
			c->status = CELL_TIMEOUT;
			c->reason = xasprintf("no answer from the session pool in %lld s (its "
			    "execution limit is %s); terp stopped waiting, and the remote cell "
			    "may still run", (long long)((a->o.timeout_ms + a->o.grace_ms) / 1000),
			    lim);
			finish_cell(a);
		} else if (e->status == 408 || e->status == 504) {
			c->status = CELL_TIMEOUT;
			c->reason = xasprintf("the cell ran past the session pool's execution "
			    "limit (%s) and was stopped; split the work into smaller cells", lim);
			send_list(a);
		} else {
			c->status = CELL_CRASHED;
			c->reason = e->status >= 500 ?
			    xasprintf("%s; the cell may or may not have run", e->err) :
			    xasprintf("the cell did not run: %s", e->err);
			finish_cell(a);
		}
		return;
	}
	if (aca_exec_parse(e->body, e->len, &ex, &why) < 0) {
		c->status = CELL_CRASHED;
		c->reason = xasprintf("the session pool's answer is not understood (%s); the "
		    "cell may have run", why);
		finish_cell(a);
		return;
	}
	c->have_exec = 1;
	pre = ex.err;
	prelen = strlen(ex.err);
	if (ex.timed_out) {
		c->status = CELL_TIMEOUT;
		c->reason = xasprintf("the cell ran past the session pool's execution limit "
		    "(%s) and was stopped; split the work into smaller cells", lim);
	} else if (!ex.ok) {
		c->status = CELL_ERROR;
		take_error(c, &ex, &pre, &prelen);
	} else {
		c->status = CELL_OK;
		if (ex.value != NULL) {
			c->value = ex.value;
			ex.value = NULL;
		}
	}
	emit(a, 0, ex.out, strlen(ex.out));
	if (a->gen != g)
		goto out;
	emit(a, 1, pre, prelen);
	if (a->gen != g)
		goto out;
	if (ex.image != NULL && image_result(a, ex.image, ex.image_fmt) < 0)
		goto out;
	aca_exec_free(&ex);
	send_list(a);
	return;
out:
	aca_exec_free(&ex);
}

static void
send_exec(struct aca *a)
{
	cJSON *b = cJSON_CreateObject(), *p;
	char *body, *url;
	int64_t secs = (a->o.timeout_ms + 999) / 1000;

	if (a->shape == ACA_SHAPE_PROPERTIES) {
		p = cJSON_AddObjectToObject(b, "properties");
		cJSON_AddStringToObject(p, "codeInputType", "inline");
		cJSON_AddStringToObject(p, "executionType", "synchronous");
		cJSON_AddStringToObject(p, "code", a->cr.code);
		url = make_url(a, "code/execute", 0);
	} else {
		cJSON_AddStringToObject(b, "codeInputType", "Inline");
		cJSON_AddStringToObject(b, "executionType", "Synchronous");
		cJSON_AddStringToObject(b, "code", a->cr.code);
		cJSON_AddNumberToObject(b, "timeoutInSeconds",
		    (double)(secs < 1 ? 1 : secs > 220 ? 220 : secs));
		url = make_url(a, "executions", 0);
	}
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	if (body == NULL)
		fatal("out of memory");
	/* The pool's clock, not the queue's: it starts here. */
	a->cr.start_us = now_us();
	rq_start(a, ACA_RQ_EXEC, url, xstrdup(body), NULL, a->o.timeout_ms + a->o.grace_ms,
	    fin_exec);
	cJSON_free(body);
}

static void
cell_begin(struct aca *a, struct op *p)
{
	unsigned g;

	a->job = JOB_CELL;
	memset(&a->cr, 0, sizeof a->cr);
	a->cr.n = p->n;
	a->cr.code = p->code;
	a->cr.start_us = now_us();
	kernel_sink_cell_start(a->sink, p->n);
	free(p);
	a->gen++;
	g = a->gen;
	report_state(a, KERNEL_BUSY, 0, 0, "running in the session pool (output arrives "
	    "when the cell ends)");
	if (a->gen != g)
		return;
	if (!a->told_no_stream) {
		a->told_no_stream = 1;
		emit(a, 1, MSG_NO_STREAM, strlen(MSG_NO_STREAM));
		if (a->gen != g)
			return;
	}
	if (a->notes.len > 0) {
		char *n = buf_take(&a->notes);
		emit(a, 1, n, strlen(n));
		free(n);
		buf_init(&a->notes, NOTES_MAX);
		if (a->gen != g)
			return;
	}
	send_check(a);
}

/* Starts what comes next, when nothing runs. */
static void
advance(struct aca *a)
{
	struct op *p;

	if (a->job != JOB_NONE || a->queue == NULL || a->quiet)
		return;
	if (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD || !a->connected) {
		if (a->state != KERNEL_STOPPED && a->state != KERNEL_DEAD)
			connect_begin(a);
		return;
	}
	p = a->queue;
	a->queue = p->next;
	if (p->cell) {
		cell_begin(a, p);
		return;
	}
	a->job = JOB_UPLOAD;
	a->up_only = p->file;
	free(p);
	if (a->files[a->up_only].fd < 0 || a->files[a->up_only].uploaded != 0) {
		a->job = JOB_NONE;
		advance(a);
		return;
	}
	upload_start(a, a->up_only);
}

/* ------------------------------------------------------------ the API */

struct aca *
aca_new(struct loop *l, const struct aca_opts *opts, const struct kernel_cbs *cbs,
    void *arg)
{
	struct aca *a = xcalloc(1, sizeof *a);
	size_t n;

	a->loop = l;
	a->o = *opts;
	if (a->o.api_version == NULL)
		a->o.api_version = ACA_API_DEFAULT;
	if (aca_api_shape(a->o.api_version, &a->shape) < 0)
		a->shape = ACA_SHAPE_PROPERTIES;	/* aca_start refuses it */
	if (cbs != NULL)
		a->cb = *cbs;
	a->arg = arg;
	a->state = KERNEL_STOPPED;
	{
		struct kframe_caps caps = {
			.size_max = a->o.artifact_max,
			.per_cell = a->o.artifacts_per_cell,
			.per_session = a->o.artifacts_per_session,
			.session_bytes = a->o.artifact_bytes,
		};
		a->sink = kernel_sink_new(a->o.out_dir, &caps, sink_copied, sink_note, a);
	}
	a->endpoint = xstrdup(a->o.endpoint ? a->o.endpoint : "");
	n = strlen(a->endpoint);
	while (n > 0 && a->endpoint[n - 1] == '/')
		a->endpoint[--n] = '\0';
	if (a->o.identifier != NULL && aca_identifier_ok(a->o.identifier)) {
		snprintf(a->id, sizeof a->id, "%s", a->o.identifier);
		a->known = 1;	/* a session to find again */
	} else if (random_uuid(a->id) < 0) {
		a->id[0] = '\0';	/* aca_start says so */
	}
	buf_init(&a->notes, NOTES_MAX);
	{
		static const struct aca_rest_cbs rc = {
			.done = rq_done, .download = rq_download, .retrying = rq_retrying,
			.sent = rq_sent,
		};
		a->rest = aca_rest_new(l, &a->o, &rc, a);
	}
	return a;
}

static void
queue_free(struct aca *a)
{
	struct op *p;

	while ((p = a->queue) != NULL) {
		a->queue = p->next;
		free(p->code);
		free(p);
	}
}

void
aca_free(struct aca *a)
{
	if (a == NULL)
		return;
	aca_rest_free(a->rest);
	kernel_sink_free(a->sink);
	crun_free(&a->cr);
	queue_free(a);
	for (int i = 0; i < a->nfiles; i++) {
		if (a->files[i].fd >= 0)
			close(a->files[i].fd);
		free(a->files[i].host);
		free(a->files[i].name);
	}
	free(a->files);
	kernel_seen_clear(&a->seen);
	buf_free(&a->notes);
	free(a->stopped_why);
	free(a->endpoint);
	explicit_bzero(a->id, sizeof a->id);
	free(a);
}

/* Checks a data file and records it; the upload is done by a job. */
static char *
stage_file(struct aca *a, const char *host_path, int *idx, char **err)
{
	struct stat st;
	struct dfile *f;
	char *name, *shown;
	int fd, i;

	fd = open(host_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		shown = kframe_display_name(host_path);
		*err = xasprintf("cannot open the data file %s: %s", shown, strerror(errno));
		free(shown);
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		shown = kframe_display_name(host_path);
		*err = xasprintf("the data file %s is not a regular file", shown);
		free(shown);
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > a->o.upload_max) {
		char x[32], y[32];
		fmt_bytes(x, sizeof x, (uint64_t)st.st_size);
		fmt_bytes(y, sizeof y, a->o.upload_max);
		shown = kframe_display_name(host_path);
		*err = xasprintf("the data file %s is %s, over the session pool's upload "
		    "limit (%s); sample or compress it first", shown, x, y);
		free(shown);
		close(fd);
		return NULL;
	}
	for (i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].host, host_path) == 0)
			break;
	if (i == a->nfiles) {
		char *base = remote_name(host_path);
		name = xstrdup(base);
		/* Another file of the same name: name-2.ext and so on. */
		for (int k = 2; is_staged(a, name); k++) {
			const char *dot = strrchr(base, '.');
			size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
			free(name);
			name = xasprintf("%.*s-%d%s", (int)stem, base, k, base + stem);
		}
		free(base);
		a->files = xrealloc(a->files, (size_t)(a->nfiles + 1) * sizeof *a->files);
		f = &a->files[a->nfiles++];
		f->host = xstrdup(host_path);
		f->name = name;
	} else {
		f = &a->files[i];
		close(f->fd);
	}
	f->fd = fd;
	f->size = (uint64_t)st.st_size;
	f->uploaded = 0;
	*idx = (int)(f - a->files);
	return xasprintf("%s/%s", ACA_DATA_DIR, f->name);
}

int
aca_start(struct aca *a, char **err)
{
	if (a->state != KERNEL_STOPPED && a->state != KERNEL_DEAD) {
		*err = xstrdup("the remote session is connected already");
		return -1;
	}
	if (aca_check_opts(&a->o, err) < 0)
		return -1;
	if (a->id[0] == '\0') {
		*err = xstrdup("cannot make a session identifier: the system's random "
		    "source failed");
		return -1;
	}
	if (kernel_sink_open(a->sink, err) < 0)
		return -1;
	for (int i = 0; i < a->o.ndata; i++) {
		int idx;
		char *p = stage_file(a, a->o.data_files[i], &idx, err);
		if (p == NULL)
			return -1;
		free(p);
	}
	if (a->job != JOB_NONE)
		return 0;	/* a connect is under way */
	a->state = KERNEL_STARTING;
	connect_begin(a);
	return 0;
}

/* Ends the running job with why: a cell ends interrupted. */
static void
teardown(struct aca *a, enum cell_status st, const char *why, int lost)
{
	a->gen++;
	rq_clear(a);
	if (a->job == JOB_CELL) {
		if (!a->cr.have_exec || st != CELL_INTERRUPTED || lost) {
			a->cr.status = st;
			free(a->cr.reason);
			a->cr.reason = xstrdup(why);
		} else {
			note(a, "stopped copying the cell's files (%s)", why);
		}
		if (lost)
			a->cr.lost = 1;
		finish_cell(a);
	} else {
		a->job = JOB_NONE;
	}
}

void
aca_interrupt(struct aca *a)
{
	if (a->job == JOB_CONNECT && aca_busy(a)) {
		/* A connect that hangs (a slow token command, an abandoned
		 * cell still running ahead of the check) holds the cells:
		 * Ctrl-C gives up on it; the next cell connects again. */
		struct op *q = a->queue;

		a->queue = NULL;
		a->quiet++;
		teardown(a, CELL_INTERRUPTED, NULL, 0);
		a->state = KERNEL_STOPPED;
		fail_queue(a, q, CELL_INTERRUPTED, "interrupted (Ctrl-C) while terp was "
		    "connecting to the session pool");
		free(a->stopped_why);
		a->stopped_why = xstrdup("interrupted while connecting");
		report_state(a, KERNEL_STOPPED, 0, 0, a->stopped_why);
		a->quiet--;
		resume_queue(a);
		return;
	}
	if (a->job != JOB_CELL)
		return;
	teardown(a, CELL_INTERRUPTED, a->cr.have_exec ? "Ctrl-C" : a->cr.exec_sent ?
	    "abandoned the wait (Ctrl-C): the remote session has no interrupt, so the "
	    "cell may still run there" : "interrupted (Ctrl-C) before it ran", 0);
}

/* After a teardown: cells queued by its callbacks connect again. */
static void
resume_queue(struct aca *a)
{
	if (a->quiet || a->queue == NULL || a->job != JOB_NONE)
		return;
	if (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD)
		a->state = KERNEL_STARTING;
	advance(a);
}

void
aca_stop(struct aca *a, const char *reason)
{
	const char *r = reason && *reason ? reason : "by request";
	struct op *q = a->queue;
	char *why;

	if (a->state == KERNEL_STOPPED)
		return;
	why = xasprintf("the session was stopped (%s); the remote cell may still run", r);
	a->queue = NULL;
	a->state = KERNEL_STOPPED;
	a->quiet++;	/* cells the callbacks queue wait for the end */
	teardown(a, CELL_INTERRUPTED, why, 0);
	free(why);
	fail_queue(a, q, CELL_INTERRUPTED, "the session was stopped");
	a->connected = 0;
	free(a->stopped_why);
	a->stopped_why = xstrdup(r);
	report_state(a, KERNEL_STOPPED, 0, 0, a->stopped_why);
	a->quiet--;
	resume_queue(a);
}

int
aca_run(struct aca *a, int n, const char *code, char **err)
{
	struct op *p, **pp;

	if (strlen(code) > CODE_MAX) {
		*err = xasprintf("the cell's code is over %u MiB", CODE_MAX >> 20);
		return -1;
	}
	if (!a->quiet && (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD)) {
		if (aca_check_opts(&a->o, err) < 0)
			return -1;
		if (!kernel_sink_is_open(a->sink) && aca_start(a, err) < 0)
			return -1;
		if (a->job == JOB_NONE) {
			a->state = KERNEL_STARTING;
			a->connected = 0;
		}
	}
	p = xcalloc(1, sizeof *p);
	p->cell = 1;
	p->n = n;
	p->code = xstrdup(code);
	for (pp = &a->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	advance(a);
	return 0;
}

int
aca_restart(struct aca *a, char **err)
{
	struct op *q;
	char id[37];
	unsigned g;

	if (random_uuid(id) < 0) {
		*err = xstrdup("cannot make a session identifier: the system's random source "
		    "failed");
		return -1;
	}
	q = a->queue;
	a->queue = NULL;
	a->state = KERNEL_STOPPED;
	a->quiet++;	/* cells the callbacks queue run in the new session */
	teardown(a, CELL_INTERRUPTED, "the session was restarted by request; its state "
	    "was lost (the old remote cell may still run)", 1);
	fail_queue(a, q, CELL_INTERRUPTED, "the session was restarted");
	a->quiet--;
	snprintf(a->id, sizeof a->id, "%s", id);
	a->known = 0;
	a->connected = 0;
	kernel_seen_clear(&a->seen);
	for (int i = 0; i < a->nfiles; i++)
		if (a->files[i].fd >= 0)
			a->files[i].uploaded = 0;
	free(a->stopped_why);
	a->stopped_why = NULL;
	if (!kernel_sink_is_open(a->sink))
		return aca_start(a, err);
	a->job = JOB_CONNECT;
	g = ++a->gen;
	report_state(a, KERNEL_STARTING, 1, 1, "restarted the session by request: a fresh "
	    "session in the pool, so its state was lost");
	if (a->gen == g)
		send_check(a);
	return 0;
}

char *
aca_stage(struct aca *a, const char *host_path, char **err)
{
	struct op *p, **pp;
	char *path;
	int idx;

	if ((path = stage_file(a, host_path, &idx, err)) == NULL)
		return NULL;
	if (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD)
		return path;	/* uploaded when it connects */
	/* Queued even while connecting (the connect may be past its
	 * uploads); the job is skipped when the file went up meanwhile. */
	p = xcalloc(1, sizeof *p);
	p->file = idx;
	for (pp = &a->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	advance(a);
	return path;
}

enum kernel_state
aca_state(const struct aca *a)
{
	return a->state;
}

int
aca_busy(const struct aca *a)
{
	if (a->job == JOB_CELL)
		return 1;
	for (const struct op *p = a->queue; p != NULL; p = p->next)
		if (p->cell)
			return 1;
	return 0;
}

const char *
aca_identifier(const struct aca *a)
{
	return a->id;
}

const char *
aca_note(void)
{
	return "The Python session runs in a remote session pool: data files are in "
	    ACA_DATA_DIR "/; save charts and other files to " ACA_DATA_DIR "/ (e.g. "
	    "plt.savefig('" ACA_DATA_DIR "/chart.png')): files there that are new or "
	    "changed after a cell are copied to the user's output folder. Output appears "
	    "only when a cell ends, and a cell may run for at most 220 s.";
}
