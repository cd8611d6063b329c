/* serve: `terp serve`. The local kernel driven by JSON lines on stdin,
 * its callbacks written as JSON lines on stdout (serve.h has the
 * protocol). The session's folders are a private temporary folder,
 * removed at the end: the notebook and journal live with the terp that
 * connected. What comes in is from that terp (through ssh, as the same
 * user), and is still bounded and checked. */
#include "terp/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/digest.h"
#include "terp/kernel.h"
#include "terp/kernel_chan.h"
#include "terp/kernel_frame.h"
#include "terp/loop.h"
#include "terp/util.h"

struct serve {
	struct loop		*loop;
	struct kernel		*k;
	struct kernel_opts	 ko;
	struct kframe_reader	 in;
	struct kernel_chan	 out;		/* to stdout, never blocking */
	char			*dir;		/* the session folder (removed at the end) */
	char			*outdir, *updir;
	/* the upload in progress */
	int			 up_fd;
	char			*up_name, *up_path;
	uint64_t		 up_left;
	int			 gone;		/* stdout broke: the host is gone */
};

static void
send_obj(struct serve *s, cJSON *o)
{
	if (!s->gone && kernel_chan_send(&s->out, o) < 0)
		s->gone = 1;	/* the host stopped reading: nothing to tell */
	cJSON_Delete(o);
	if (s->gone)
		loop_stop(s->loop);
}

static cJSON *
ev(const char *name)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ev", name);
	return o;
}

static void
add_b64(cJSON *o, const char *key, const void *p, size_t n)
{
	size_t len;
	char *b = base64_encode(p, n, &len);
	cJSON_AddStringToObject(o, key, b);
	free(b);
}

static void
add_opt(cJSON *o, const char *key, const char *v)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, key, v);
}

/* ------------------------------------------------------------ callbacks */

static void
on_output(void *arg, int cell, int stream, const char *p, size_t n)
{
	struct serve *s = arg;
	cJSON *o = ev("out");

	cJSON_AddNumberToObject(o, "cell", cell);
	cJSON_AddNumberToObject(o, "s", stream);
	add_b64(o, "b64", p, n);
	send_obj(s, o);
}

static void
on_result(void *arg, int cell, const struct kernel_result *r)
{
	struct serve *s = arg;
	cJSON *o = ev("result");

	cJSON_AddNumberToObject(o, "cell", cell);
	cJSON_AddNumberToObject(o, "status", r->status);
	cJSON_AddNumberToObject(o, "us", (double)r->duration_us);
	add_opt(o, "value", r->value);
	add_opt(o, "ename", r->ename);
	add_opt(o, "evalue", r->evalue);
	add_opt(o, "traceback", r->traceback);
	add_opt(o, "reason", r->reason);
	cJSON_AddNumberToObject(o, "lost", r->state_lost);
	send_obj(s, o);
}

/* The artifact was copied into our out folder: its bytes go to the
 * host, then the copy here goes. */
static void
on_artifact(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct serve *s = arg;
	int fd = open(host_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *buf;
	ssize_t n;
	cJSON *o;

	(void)bytes;
	if (fd < 0)
		return;
	o = ev("art");
	cJSON_AddNumberToObject(o, "cell", cell);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "size", (double)bytes);
	send_obj(s, o);
	buf = xmalloc(SERVE_CHUNK);
	while ((n = read(fd, buf, SERVE_CHUNK)) > 0) {
		o = ev("achunk");
		add_b64(o, "b64", buf, (size_t)n);
		send_obj(s, o);
	}
	free(buf);
	close(fd);
	unlink(host_path);
	send_obj(s, ev("aend"));
}

static void
on_state(void *arg, const struct kernel_status *ks)
{
	struct serve *s = arg;
	cJSON *o = ev("state");

	cJSON_AddNumberToObject(o, "st", ks->state);
	add_opt(o, "msg", ks->msg);
	if (ks->restarted)
		cJSON_AddNumberToObject(o, "restarted", 1);
	if (ks->state_lost)
		cJSON_AddNumberToObject(o, "lost", 1);
	send_obj(s, o);
}

static const struct kernel_cbs cbs = {
	.output = on_output, .result = on_result, .artifact = on_artifact,
	.state = on_state,
};

/* ------------------------------------------------------------ commands */

static void
reply_error(struct serve *s, const char *op, const char *msg)
{
	cJSON *o = ev("error");
	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddStringToObject(o, "msg", msg);
	send_obj(s, o);
}

static void
staged(struct serve *s, const char *name, const char *path, char *err)
{
	cJSON *o = ev("staged");

	cJSON_AddStringToObject(o, "name", name);
	if (path != NULL)
		cJSON_AddStringToObject(o, "path", path);
	else
		cJSON_AddStringToObject(o, "err", err ? err : "cannot stage it");
	send_obj(s, o);
	free(err);
}

static void
stage_path(struct serve *s, const char *name, const char *path)
{
	char *err = NULL, *p;

	if (kernel_check_data(path, &err) < 0) {
		staged(s, name, NULL, err);
		return;
	}
	p = kernel_stage(s->k, path, &err);
	staged(s, name, p, err);
	free(p);
}

static void
upload_abort(struct serve *s)
{
	if (s->up_fd >= 0)
		close(s->up_fd);
	s->up_fd = -1;
	free(s->up_name);
	free(s->up_path);
	s->up_name = s->up_path = NULL;
}

static void
cmd_upload(struct serve *s, const cJSON *c)
{
	const cJSON *name = cJSON_GetObjectItem(c, "name");
	const cJSON *size = cJSON_GetObjectItem(c, "size");
	char *safe;

	upload_abort(s);
	if (!cJSON_IsString(name) || !cJSON_IsNumber(size) || size->valuedouble < 0)
		return;
	safe = kframe_host_name(name->valuestring);
	s->up_name = xstrdup(name->valuestring);
	s->up_path = xasprintf("%s/%s", s->updir, safe);
	free(safe);
	s->up_left = (uint64_t)size->valuedouble;
	unlink(s->up_path);
	s->up_fd = open(s->up_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->up_fd < 0) {
		staged(s, s->up_name, NULL, xasprintf("cannot write the upload here: %s",
		    strerror(errno)));
		upload_abort(s);
	}
}

static void
cmd_chunk(struct serve *s, const cJSON *c)
{
	const cJSON *b = cJSON_GetObjectItem(c, "b64");
	size_t n;
	char *raw;

	if (s->up_fd < 0 || !cJSON_IsString(b))
		return;
	raw = base64_decode(b->valuestring, strlen(b->valuestring), &n);
	if (raw == NULL || n > s->up_left || write_all(s->up_fd, raw, n) < 0) {
		staged(s, s->up_name, NULL, xasprintf("the upload of %s failed here%s%s",
		    s->up_path, raw ? ": " : "", raw ? strerror(errno) : ""));
		unlink(s->up_path);
		upload_abort(s);
	} else {
		s->up_left -= n;
	}
	free(raw);
}

static void
cmd_upload_end(struct serve *s)
{
	char *name, *path;

	if (s->up_fd < 0)
		return;
	close(s->up_fd);
	s->up_fd = -1;
	name = s->up_name;
	path = s->up_path;
	s->up_name = s->up_path = NULL;
	stage_path(s, name, path);
	free(name);
	free(path);
}

static void
handle(struct serve *s, const char *line, size_t len)
{
	cJSON *c = cJSON_ParseWithLength(line, len);
	const cJSON *op = c ? cJSON_GetObjectItem(c, "op") : NULL;
	const char *o = cJSON_IsString(op) ? op->valuestring : "";
	char *err = NULL;

	if (strcmp(o, "chunk") == 0) {
		cmd_chunk(s, c);
	} else if (strcmp(o, "upload") == 0) {
		cmd_upload(s, c);
	} else if (strcmp(o, "upload_end") == 0) {
		cmd_upload_end(s);
	} else if (strcmp(o, "stage") == 0) {
		const cJSON *p = cJSON_GetObjectItem(c, "path");
		if (cJSON_IsString(p))
			stage_path(s, p->valuestring, p->valuestring);
	} else if (strcmp(o, "start") == 0) {
		if (kernel_start(s->k, &err) < 0) {
			struct kernel_status ks = { .state = KERNEL_DEAD, .msg = err };
			on_state(s, &ks);
			free(err);
		}
	} else if (strcmp(o, "run") == 0) {
		const cJSON *n = cJSON_GetObjectItem(c, "n");
		const cJSON *code = cJSON_GetObjectItem(c, "code");
		if (cJSON_IsNumber(n) && cJSON_IsString(code) &&
		    kernel_run(s->k, n->valueint, code->valuestring, &err) < 0) {
			struct kernel_result r = { .status = CELL_CRASHED, .reason = err };
			on_result(s, n->valueint, &r);
			free(err);
		}
	} else if (strcmp(o, "interrupt") == 0) {
		kernel_interrupt(s->k);
	} else if (strcmp(o, "reset") == 0 || strcmp(o, "restart") == 0) {
		int rc = o[2] == 's' ? kernel_reset(s->k, &err) : kernel_restart(s->k, &err);
		if (rc < 0) {
			reply_error(s, o, err);
			free(err);
		}
	} else if (strcmp(o, "stop") == 0) {
		const cJSON *r = cJSON_GetObjectItem(c, "reason");
		kernel_stop(s->k, cJSON_IsString(r) ? r->valuestring : NULL);
	}
	cJSON_Delete(c);
}

static void
on_stdin(struct loop *l, int fd, int revents, void *arg)
{
	struct serve *s = arg;
	char buf[65536];
	const char *line;
	size_t len;
	ssize_t n = read(fd, buf, sizeof buf);

	(void)revents;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || kframe_reader_add(&s->in, buf, (size_t)n) < 0) {
		loop_unwatch(l, fd);
		loop_stop(l);	/* the host is gone (or sent garbage) */
		return;
	}
	while (!loop_stopped(l) && kframe_reader_next(&s->in, &line, &len) == 1)
		handle(s, line, len);
}

static void
chan_broken(void *arg)
{
	struct serve *s = arg;
	s->gone = 1;
	loop_stop(s->loop);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	(void)signo;
	(void)arg;
	loop_stop(l);
}

/* Writes what is queued for stdout, blocking (the end: the host reads
 * it or is gone, and ssh's pipe says which). */
static void
flush_out(struct serve *s)
{
	while (!s->gone && kernel_chan_pending(&s->out) > 0)
		if (loop_run_once(s->loop, 1000) < 0)
			break;
}

int
serve_run(struct cli *c)
{
	struct serve s;
	char *err = NULL, tmpl[] = "/tmp/terp-serve-XXXXXX";
	const char *tmp = getenv("TMPDIR");
	int rc = 0;

	memset(&s, 0, sizeof s);
	s.up_fd = -1;
	s.ko = c->kopts;
	signal(SIGPIPE, SIG_IGN);
	if (kernel_probe(&s.ko, &err) < 0) {
		/* one line, for the terp at the other end to show */
		char *msg = xasprintf("the sandbox cannot run on this machine: %s", err);
		cJSON *o = ev("fatal");
		char *line;
		cJSON_AddStringToObject(o, "msg", msg);
		line = cJSON_PrintUnformatted(o);
		printf("%s\n", line);
		fflush(stdout);
		fprintf(stderr, "terp: %s\n", msg);
		free(line);
		free(msg);
		free(err);
		cJSON_Delete(o);
		return 4;
	}
	(void)tmp;
	if (mkdtemp(tmpl) == NULL) {
		fprintf(stderr, "terp: cannot create a session folder: %s\n", strerror(errno));
		return 1;
	}
	/* As root the sandbox's uid must pass through it (kernel.c). */
	chmod(tmpl, getuid() == 0 ? 0711 : 0700);
	s.dir = xstrdup(tmpl);
	s.outdir = xasprintf("%s/out", s.dir);
	s.updir = xasprintf("%s/uploads", s.dir);
	if (mkdir(s.outdir, 0700) < 0 || mkdir(s.updir, 0700) < 0) {
		fprintf(stderr, "terp: cannot create %s: %s\n", s.outdir, strerror(errno));
		rc = 1;
		goto out;
	}
	s.ko.session_dir = s.dir;
	s.ko.out_dir = s.outdir;
	s.ko.data_files = NULL;
	s.ko.ndata = 0;
	s.ko.sandbox = NULL;
	s.loop = loop_new();
	kframe_reader_init(&s.in, SERVE_LINE_MAX);
	kernel_chan_init(&s.out, s.loop, chan_broken, &s);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	kernel_chan_attach(&s.out, 1);
	loop_signal(s.loop, SIGTERM, on_term, &s);
	loop_signal(s.loop, SIGHUP, on_term, &s);
	s.k = kernel_new(s.loop, &s.ko, &cbs, &s);
	{
		cJSON *o = ev("hello");
		cJSON_AddNumberToObject(o, "version", SERVE_VERSION);
		send_obj(&s, o);
	}
	loop_watch(s.loop, 0, POLLIN, on_stdin, &s);
	loop_run(s.loop);
	kernel_free(s.k);		/* no sandbox process is left */
	flush_out(&s);
	upload_abort(&s);
	kernel_chan_free(&s.out);
	kframe_reader_free(&s.in);
	loop_free(s.loop);
out:
	/* by descriptors: the workspace may hold paths past PATH_MAX,
	 * which nftw could not reach (and left in /tmp) */
	(void)rm_tree(s.dir);
	free(s.dir);
	free(s.outdir);
	free(s.updir);
	return rc;
}
