/* kernel_ssh: the Python session in terp's sandbox on another machine,
 * reached with the system's ssh: `ssh -T -o BatchMode=yes host terp
 * serve` (serve_wire.h has the protocol). The user's ssh config, agent, jump
 * hosts and known_hosts apply; no password is ever asked. Data files go
 * up through the channel, streamed from the file a chunk at a time
 * (progress in the state messages); host:/path names a file already
 * there, staged in place. Artifacts come back through the channel into
 * out_dir under names terp picks. A dropped connection ends the running
 * cells with their state lost and stops the session; the next cell
 * reconnects and says so ("restarted"), like the idle stop.
 *
 * What comes back is from terp on a machine of the user's, through ssh,
 * and still bounded: lines (SERVE_LINE_MAX), artifacts (the caps of
 * kernel_opts), names (kframe_host_name). */
#include "terp/kernel_ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/json_text.h"
#include "terp/kernel_sink.h"
#include "terp/kernel_frame.h"
#include "terp/proc.h"
#include "terp/sanitize.h"
#include "terp/serve_wire.h"
#include "terp/util.h"
#include "terp/workspace.h"

#define ERR_KEEP	8192		/* ssh's stderr, for the one line */
#define WQ_LOW		(1u << 20)	/* refill the write queue below this */
#define FREE_WAIT_MS	3000		/* for ssh to end after its stdin closed */

/* A data file, sent again on every connection. */
struct ssh_file {
	char		*local;		/* a file here to upload, or NULL */
	char		*remote;	/* a path there to stage in place, or NULL */
	char		*name;		/* as the code sees it (the prediction) */
	struct ssh_file	*next;
};

/* A cell sent or waiting, until its result. */
struct ssh_cell {
	int		 n;
	struct ssh_cell	*next;
};

/* What the writer sends next: a line, or a file as upload lines. */
struct ssh_op {
	char		*line;		/* with its '\n' */
	struct ssh_file	*file;
	struct ssh_op	*next;
};

struct ssh {
	struct loop		*loop;
	const struct kernel_opts *o;
	const struct kernel_cbs	*cb;
	void			*arg;
	char			*spec_host, *spec_user, *spec_port;
	char			*host;		/* for messages: the host as given */

	enum kernel_state	 state;
	int			 connected;	/* ssh runs */
	int			 hello;		/* serve answered */
	int			 ever;		/* a session was up once */
	int			 reconnect_lost;	/* the next connect says "restarted" */
	int			 resumed;	/* a resumed notebook's: the first
						 * connect says its state is new */
	pid_t			 pid;
	int			 in_fd, out_fd, err_fd;
	struct kframe_reader	 rd;
	struct buf		 errbuf;

	/* the writer */
	struct ssh_op		*ops;
	struct buf		 wq;
	size_t			 woff;
	int			 up_fd;		/* the file being uploaded */
	struct ssh_file		*up;
	uint64_t		 up_size, up_sent;
	int			 up_pct;

	struct ssh_file		*files;
	struct ssh_cell		*cells;
	struct buf		 notes;		/* for the next cell's stderr */

	/* the artifact coming in */
	struct kernel_sink	*sink;		/* its cell is the artifact's */
};

static void on_out(struct loop *l, int fd, int revents, void *arg);
static void on_err(struct loop *l, int fd, int revents, void *arg);
static void on_in(struct loop *l, int fd, int revents, void *arg);

/* ------------------------------------------------------------ spec */

/* ssh://[user@]host[:port] into its parts. Returns 0 or -1. */
static int
parse_spec(const char *spec, char **user, char **host, char **port)
{
	const char *p = spec + 6, *at, *end, *colon;

	*user = *host = *port = NULL;
	if (strncmp(spec, "ssh://", 6) != 0)
		return -1;
	end = p + strcspn(p, "/?#");
	if (*end == '/' && end[1] != '\0')
		return -1;
	at = memchr(p, '@', (size_t)(end - p));
	if (at != NULL) {
		if (at == p)
			return -1;
		*user = xstrndup(p, (size_t)(at - p));
		p = at + 1;
	}
	if (*p == '[') {	/* [v6 address][:port] */
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (close == NULL || close == p + 1 ||
		    (close + 1 < end && close[1] != ':'))
			goto bad;
		colon = close + 1 < end ? close + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
	}
	if (colon != NULL) {
		*port = xstrndup(colon + 1, (size_t)(end - colon - 1));
		if (**port == '\0' || strspn(*port, "0123456789") != strlen(*port) ||
		    strlen(*port) > 5 || atoi(*port) < 1 || atoi(*port) > 65535)
			goto bad;
		end = colon;
	}
	if (end == p)
		goto bad;
	if (*p == '[') {	/* ssh takes the address without brackets */
		p++;
		end--;
		*host = xstrndup(p, (size_t)(end - p));
		if (strspn(*host, "0123456789abcdefABCDEF:.") != strlen(*host))
			goto bad;
	} else {
		*host = xstrndup(p, (size_t)(end - p));
	}
	/* Names and addresses only: nothing ssh would take as an option. */
	if ((*host)[0] == '-' || strspn(*host, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") != strlen(*host))
		goto bad;
	if (*user && ((*user)[0] == '-' || strspn(*user, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != strlen(*user)))
		goto bad;
	return 0;
bad:
	free(*user);
	free(*host);
	free(*port);
	*user = *host = *port = NULL;
	return -1;
}

int
kernel_ssh_check(const char *spec, char **err)
{
	char *u, *h, *p;

	if (parse_spec(spec, &u, &h, &p) < 0) {
		char *s = sanitize_str(spec, strnlen(spec, 200), 0);
		*err = xasprintf("%s is not ssh://[user@]host[:port] (a host name or "
		    "address; the rest comes from your ssh config)", s);
		free(s);
		return -1;
	}
	free(u);
	free(h);
	free(p);
	return 0;
}

int
kernel_ssh_remote_path(const char *arg)
{
	const char *colon = strchr(arg, ':');

	return colon != NULL && colon > arg && colon[1] == '/' &&
	    memchr(arg, '/', (size_t)(colon - arg)) == NULL;
}

/* ------------------------------------------------------------ state */

static void
set_status(struct ssh *s, enum kernel_state st, const char *msg,
    int restarted, int state_lost)
{
	struct kernel_status ks = { .state = st, .restarted = restarted,
	    .state_lost = state_lost, .msg = msg ? msg : kernel_state_name(st) };

	s->state = st;
	s->cb->state(s->arg, &ks);
}

static void
set_state(struct ssh *s, enum kernel_state st, const char *msg)
{
	set_status(s, st, msg, 0, 0);
}

static void
emit_note(struct ssh *s, int cell)
{
	if (s->notes.len == 0)
		return;
	s->cb->output(s->arg, cell, 1, s->notes.data, s->notes.len);
	buf_reset(&s->notes);
}

static void
note(struct ssh *s, const char *fmt, const char *a)
{
	char *clean = sanitize_str(a, strnlen(a, 400), 0);
	buf_adds(&s->notes, "terp: ");
	buf_printf(&s->notes, fmt, clean);
	buf_adds(&s->notes, "\n");
	free(clean);
}

/* The cells not answered yet, taken off the list: they are ended with
 * fail_cells after the state is reported, since a result callback may
 * queue the next cell at once (which must not be among them). */
static struct ssh_cell *
take_cells(struct ssh *s)
{
	struct ssh_cell *c = s->cells;

	s->cells = NULL;
	return c;
}

static void
fail_cells(struct ssh *s, struct ssh_cell *c, enum cell_status st, const char *reason)
{
	while (c != NULL) {
		struct ssh_cell *next = c->next;
		struct kernel_result r = { .status = st, .reason = reason,
		    .state_lost = 1 };
		s->cb->result(s->arg, c->n, &r);
		free(c);
		c = next;
	}
}

/* ------------------------------------------------------------ writer */

static void
ops_clear(struct ssh *s)
{
	struct ssh_op *op;

	while ((op = s->ops) != NULL) {
		s->ops = op->next;
		free(op->line);
		free(op);
	}
	if (s->up_fd >= 0)
		close(s->up_fd);
	s->up_fd = -1;
	s->up = NULL;
	buf_reset(&s->wq);
	s->woff = 0;
}

static void
push_op(struct ssh *s, char *line, struct ssh_file *f)
{
	struct ssh_op *op = xcalloc(1, sizeof *op), **pp;

	op->line = line;
	op->file = f;
	for (pp = &s->ops; *pp; pp = &(*pp)->next)
		;
	*pp = op;
}

static void
push_cmd(struct ssh *s, cJSON *c)
{
	char *j = cJSON_PrintUnformatted(c), *line = xasprintf("%s\n", j);

	free(j);
	cJSON_Delete(c);
	push_op(s, line, NULL);
}

static cJSON *
cmd(const char *op)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "op", op);
	return c;
}

static void
wq_line(struct ssh *s, cJSON *c)
{
	char *j = cJSON_PrintUnformatted(c);

	buf_adds(&s->wq, j);
	buf_addc(&s->wq, '\n');
	free(j);
	cJSON_Delete(c);
}

static void
upload_progress(struct ssh *s)
{
	int pct = s->up_size ? (int)(s->up_sent * 100 / s->up_size) : 100;
	char a[32], b[32], *msg;

	if (pct / 10 == s->up_pct / 10 && pct != 100)
		return;
	s->up_pct = pct;
	fmt_bytes(a, sizeof a, s->up_sent);
	fmt_bytes(b, sizeof b, s->up_size);
	msg = xasprintf("uploading %s to %s: %s of %s", s->up->name, s->host, a, b);
	set_state(s, KERNEL_STARTING, msg);
	free(msg);
}

/* Moves the next op into the write queue: a line, or the next chunk of
 * the file being uploaded (one at a time: a big file is never read
 * into memory whole). */
static int
refill(struct ssh *s)
{
	if (s->up_fd >= 0) {
		char *raw = xmalloc(SERVE_CHUNK);
		ssize_t n = read(s->up_fd, raw, SERVE_CHUNK);
		cJSON *c;
		if (n > 0) {
			size_t len;
			char *b = base64_encode(raw, (size_t)n, &len);
			c = cmd("chunk");
			cJSON_AddStringToObject(c, "b64", b);
			free(b);
			wq_line(s, c);
			s->up_sent += (uint64_t)n;
			upload_progress(s);
		} else {
			close(s->up_fd);
			s->up_fd = -1;
			s->up = NULL;
			wq_line(s, cmd("upload_end"));
		}
		free(raw);
		return 1;
	}
	if (s->ops != NULL) {
		struct ssh_op *op = s->ops;
		s->ops = op->next;
		if (op->line != NULL) {
			buf_adds(&s->wq, op->line);
		} else {
			struct stat st;
			int fd = open(op->file->local, O_RDONLY | O_CLOEXEC);
			cJSON *c = cmd("upload");
			if (fd < 0 || fstat(fd, &st) < 0) {
				note(s, "data file %s not sent: it cannot be read", op->file->local);
				if (fd >= 0)
					close(fd);
				cJSON_Delete(c);
			} else {
				cJSON_AddStringToObject(c, "name", op->file->name);
				cJSON_AddNumberToObject(c, "size", (double)st.st_size);
				wq_line(s, c);
				s->up_fd = fd;
				s->up = op->file;
				s->up_size = (uint64_t)st.st_size;
				s->up_sent = 0;
				s->up_pct = -10;
				upload_progress(s);
			}
		}
		free(op->line);
		free(op);
		return 1;
	}
	return 0;
}

static void
flush(struct ssh *s)
{
	if (!s->connected || s->in_fd < 0)
		return;
	for (;;) {
		while (s->wq.len - s->woff < WQ_LOW && refill(s))
			;
		if (s->woff == s->wq.len) {
			buf_reset(&s->wq);
			s->woff = 0;
			loop_watch(s->loop, s->in_fd, 0, on_in, s);
			return;
		}
		ssize_t n = write(s->in_fd, s->wq.data + s->woff, s->wq.len - s->woff);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			loop_watch(s->loop, s->in_fd, POLLOUT, on_in, s);
			return;
		}
		if (n < 0) {		/* EPIPE: the reader sees the end */
			loop_unwatch(s->loop, s->in_fd);
			return;
		}
		s->woff += (size_t)n;
		if (s->woff > (4u << 20)) {
			buf_consume(&s->wq, s->woff);
			s->woff = 0;
		}
	}
}

static void
on_in(struct loop *l, int fd, int revents, void *arg)
{
	(void)l;
	(void)fd;
	(void)revents;
	flush(arg);
}

/* ------------------------------------------------------------ process */

static void
close_fds(struct ssh *s)
{
	int *fds[] = { &s->in_fd, &s->out_fd, &s->err_fd };

	for (size_t i = 0; i < 3; i++) {
		if (*fds[i] >= 0) {
			loop_unwatch(s->loop, *fds[i]);
			close(*fds[i]);
			*fds[i] = -1;
		}
	}
}

/* Drops the artifact coming in, if any: its temporary file is removed. */
static void
art_abandon(struct ssh *s)
{
	kernel_sink_abandon(s->sink, NULL);
}

/* Ends ssh (its stdin closed first, so that serve ends the sandbox and
 * removes its folder), waiting at most wait_ms before the kill. */
static void
end_ssh(struct ssh *s, int64_t wait_ms)
{
	int64_t until = now_us() / 1000 + wait_ms;

	if (s->in_fd >= 0) {
		loop_unwatch(s->loop, s->in_fd);
		close(s->in_fd);
		s->in_fd = -1;
	}
	if (s->pid > 0) {
		int st;
		while (waitpid(s->pid, &st, WNOHANG) == 0) {
			if (now_us() / 1000 >= until) {
				kill(s->pid, SIGTERM);
				waitpid(s->pid, &st, 0);
				break;
			}
			/* drain its output so that it is not blocked on us */
			if (s->out_fd >= 0) {
				struct pollfd p = { .fd = s->out_fd, .events = POLLIN };
				char b[4096];
				if (poll(&p, 1, 50) > 0 && read(s->out_fd, b, sizeof b) == 0) {
					close(s->out_fd);
					loop_unwatch(s->loop, s->out_fd);
					s->out_fd = -1;
				}
			} else {
				poll(NULL, 0, 20);
			}
		}
		s->pid = -1;
	}
	close_fds(s);
	s->connected = s->hello = 0;
	ops_clear(s);
	kframe_reader_reset(&s->rd);
	art_abandon(s);
}

static char *
remote_command(const struct ssh *s)
{
	/* ssh_terp may hold options: "terp --python /usr/bin/python3"
	 * runs "terp serve --python /usr/bin/python3". */
	const char *terp = s->o->ssh_terp ? s->o->ssh_terp : "terp";
	int prog = (int)strcspn(terp, " \t");
	char *c;

	if (s->o->timeout_ms >= 0 && s->o->grace_ms > 0)
		c = xasprintf("%.*s serve%s --timeout %lldms --grace %lldms", prog, terp,
		    terp + prog, (long long)s->o->timeout_ms, (long long)s->o->grace_ms);
	else
		c = xasprintf("%.*s serve%s", prog, terp, terp + prog);
	return c;
}

static int
spawn(struct ssh *s, char **err)
{
	/* Its own session: the terminal's Ctrl-C is terp's, not ssh's, and
	 * BatchMode aside, nothing can prompt on /dev/tty. */
	struct proc_opts po = { .name = "ssh", .err = PROC_ERR_TAIL,
	    .path_search = 1, .new_session = 1 };
	int in[2], out, er;
	const char *sshcmd = s->o->ssh_command ? s->o->ssh_command : "ssh";
	char *words = xstrdup(sshcmd), *save = NULL, *remote = remote_command(s);
	char *argv[64], *perr = NULL;
	int argc = 0;

	for (char *t = strtok_r(words, " \t", &save); t && argc < 40; t = strtok_r(NULL, " \t", &save))
		argv[argc++] = t;
	argv[argc++] = "-T";
	argv[argc++] = "-o";
	argv[argc++] = "BatchMode=yes";
	if (s->spec_port) {
		argv[argc++] = "-p";
		argv[argc++] = s->spec_port;
	}
	if (s->spec_user) {
		argv[argc++] = "-l";
		argv[argc++] = s->spec_user;
	}
	argv[argc++] = s->spec_host;
	argv[argc++] = "--";
	argv[argc++] = remote;
	argv[argc] = NULL;
	if (pipe2(in, O_CLOEXEC) < 0) {
		*err = xasprintf("cannot start ssh: %s", strerror(errno));
		free(words);
		free(remote);
		return -1;
	}
	po.stdin_fd = in[0];
	s->pid = proc_start(argv, &po, &out, &er, &perr);
	close(in[0]);
	if (s->pid < 0) {
		int e = errno;
		close(in[1]);
		if (e == ENOENT || e == EACCES || e == ENOEXEC) {
			*err = xasprintf("cannot run ssh (%s): install the OpenSSH client "
			    "(openssh-client)", sshcmd);
			free(perr);
		} else {
			*err = perr;	/* "cannot run ssh: ..." */
		}
		free(words);
		free(remote);
		s->pid = -1;
		return -1;
	}
	free(words);
	free(remote);
	s->in_fd = in[1];
	s->out_fd = out;
	s->err_fd = er;
	fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	s->connected = 1;
	buf_reset(&s->errbuf);
	loop_watch(s->loop, s->out_fd, POLLIN, on_out, s);
	loop_watch(s->loop, s->err_fd, POLLIN, on_err, s);
	return 0;
}

/* Queues a data file for the remote: a local one uploaded, a remote
 * path staged where it is. */
static void
queue_stage(struct ssh *s, struct ssh_file *f)
{
	cJSON *c;

	if (f->local) {
		push_op(s, NULL, f);
		return;
	}
	c = cmd("stage");
	cJSON_AddStringToObject(c, "path", f->remote);
	push_cmd(s, c);
}

/* Connects and queues the data files, the start, and the cells that
 * wait. */
static int
connect_ssh(struct ssh *s, char **err)
{
	char *msg;

	if (spawn(s, err) < 0)
		return -1;
	if (s->reconnect_lost) {
		msg = xasprintf("restarted: reconnecting to %s; the session's state "
		    "(variables, imports) was lost", s->host);
	} else if (s->resumed && !s->ever) {
		/* ssh reaches no earlier session: say so, as a Jupyter
		 * server does for a kernel that is gone */
		msg = xasprintf("restarted: connecting to %s in a new session; the resumed "
		    "notebook's state (variables, imports) was lost", s->host);
		s->reconnect_lost = 1;
	} else {
		msg = xasprintf("connecting to %s", s->host);
	}
	set_status(s, KERNEL_STARTING, msg, s->reconnect_lost, s->reconnect_lost);
	free(msg);
	s->reconnect_lost = 0;
	for (struct ssh_file *f = s->files; f; f = f->next)
		queue_stage(s, f);
	push_cmd(s, cmd("start"));
	flush(s);
	return 0;
}

/* ------------------------------------------------------------ reader */

/* The one line for a connection that ended before serve said hello. */
static char *
connect_error(struct ssh *s, int wstatus)
{
	const char *e = s->errbuf.data ? s->errbuf.data : "";
	int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
	char *last = NULL, *clean, *msg;

	if (strstr(e, "Host key verification failed") || strstr(e, "No ED25519 host key") ||
	    strstr(e, "host key for") || strstr(e, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
		return xasprintf("ssh to %s failed: its host key is not known (or it "
		    "changed); connect once with ssh %s to check and accept it", s->host, s->host);
	if (strstr(e, "Permission denied"))
		return xasprintf("ssh to %s failed: the login was refused (no password is "
		    "asked: BatchMode); add your key to ssh-agent or to %s's "
		    "~/.ssh/authorized_keys", s->host, s->host);
	if (code == 127 || strstr(e, "command not found") || strstr(e, "not found"))
		return xasprintf("%s has no terp (ssh ran \"%s serve\" there): install terp "
		    "on %s, or set ssh_terp in the config to its path there", s->host,
		    s->o->ssh_terp ? s->o->ssh_terp : "terp", s->host);
	/* The last non-empty line of what ssh or the remote said. */
	for (char *p = s->errbuf.data; p && *p; ) {
		size_t n = strcspn(p, "\n");
		if (n > 0 && strspn(p, " \t\r") < n)
			last = p;
		p += n + (p[n] == '\n');
	}
	if (last == NULL)
		return xasprintf("ssh to %s ended before the session started (exit %d)",
		    s->host, code);
	clean = sanitize_str(last, strcspn(last, "\r\n") > 300 ? 300 : strcspn(last, "\r\n"), 0);
	if (strncmp(clean, "terp: ", 6) == 0)
		msg = xasprintf("on %s: %s", s->host, clean + 6);
	else
		msg = xasprintf("ssh to %s failed: %s", s->host, clean);
	free(clean);
	return msg;
}

static void
connection_ended(struct ssh *s)
{
	int st = 0;

	if (s->pid > 0) {
		waitpid(s->pid, &st, 0);
		s->pid = -1;
	}
	if (s->err_fd >= 0) {		/* what ssh said last */
		char b[4096];
		ssize_t n;
		while ((n = read(s->err_fd, b, sizeof b)) > 0)
			buf_add(&s->errbuf, b, (size_t)n);
	}
	if (!s->hello) {
		char *why = connect_error(s, st);
		struct ssh_cell *cells = take_cells(s);
		end_ssh(s, 0);
		set_state(s, KERNEL_DEAD, why);
		fail_cells(s, cells, CELL_CRASHED, why);
		free(why);
		return;
	}
	end_ssh(s, 0);
	{
		char *why = xasprintf("the connection to %s dropped; the session's state "
		    "(variables, imports) was lost, and the next cell reconnects", s->host);
		struct ssh_cell *cells = take_cells(s);
		s->reconnect_lost = 1;
		set_status(s, KERNEL_STOPPED, why, 0, 1);
		fail_cells(s, cells, CELL_CRASHED, why);
		free(why);
	}
}

static int
cell_known(const struct ssh *s, int n)
{
	for (const struct ssh_cell *c = s->cells; c; c = c->next)
		if (c->n == n)
			return 1;
	return 0;
}

/* The sink's lines go to the cell the artifact named. */
static void
sink_note(void *arg, int cell, const char *line)
{
	struct ssh *s = arg;

	s->cb->output(s->arg, cell, 1, line, strlen(line));
}

static void
sink_copied(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct ssh *s = arg;

	s->cb->artifact(s->arg, cell, name, host_path, bytes);
}

/* "art": the remote serve's artifact for a cell, its bytes to follow.
 * The cell is the sink's running cell from here on (serve sends a cell's
 * artifacts before its result), so that its per-cell counts hold. */
static void
art_begin(struct ssh *s, const cJSON *o)
{
	const char *name = json_str(o, "name");
	double cell = 0, size = 0;
	char *err = NULL;

	art_abandon(s);		/* one that did not end */
	if (name == NULL || json_num(o, "cell", &cell) < 0 || json_num(o, "size", &size) < 0 ||
	    cell < 1 || cell > INT32_MAX || size < 0 || size > 9e15)
		return;
	if (kernel_sink_cell(s->sink) != (int)cell) {
		kernel_sink_cell_end(s->sink, NULL);
		kernel_sink_cell_start(s->sink, (int)cell);
	}
	if (kernel_sink_open(s->sink, &err) < 0) {
		kernel_sink_report(s->sink, name, err);
		free(err);
		return;
	}
	(void)kernel_sink_begin(s->sink, "out/", name, (uint64_t)size);
}

static void
art_chunk(struct ssh *s, const cJSON *o)
{
	const char *b = json_str(o, "b64");
	size_t n;
	char *raw;

	if (!kernel_sink_active(s->sink) || b == NULL)
		return;
	raw = base64_decode(b, strlen(b), &n);
	if (raw == NULL)
		kernel_sink_abandon(s->sink, "it came back damaged (not base64)");
	else
		(void)kernel_sink_write(s->sink, raw, n);
	free(raw);
}

static void
art_end(struct ssh *s)
{
	(void)kernel_sink_commit(s->sink);
}

static void
on_result(struct ssh *s, const cJSON *o)
{
	double cell, status, us = 0, lost = 0;
	struct kernel_result r;
	struct ssh_cell **pp, *c;
	char *own[5];

	if (json_num(o, "cell", &cell) < 0 || json_num(o, "status", &status) < 0 ||
	    !cell_known(s, (int)cell) || status < CELL_OK || status > CELL_CRASHED)
		return;
	json_num(o, "us", &us);
	json_num(o, "lost", &lost);
	memset(&r, 0, sizeof r);
	r.status = (enum cell_status)status;
	r.duration_us = (int64_t)us;
	r.duration_ms = (int64_t)us / 1000;
	/* The remote terp serve cuts its texts as the local kernel does; a
	 * malicious server need not: the same caps, here where they arrive. */
	r.value = own[0] = kframe_text_cap(json_str(o, "value"));
	r.ename = own[1] = kframe_text_cap(json_str(o, "ename"));
	r.evalue = own[2] = kframe_text_cap(json_str(o, "evalue"));
	r.traceback = own[3] = kframe_text_cap(json_str(o, "traceback"));
	r.reason = own[4] = kframe_text_cap(json_str(o, "reason"));
	r.state_lost = lost != 0;
	for (pp = &s->cells; (c = *pp) != NULL; pp = &c->next)
		if (c->n == (int)cell)
			break;
	*pp = c->next;
	free(c);
	if (kernel_sink_cell(s->sink) == (int)cell)	/* its count of unlisted reports */
		kernel_sink_cell_end(s->sink, "incomplete: the cell ended before terp had all of it");
	s->cb->result(s->arg, (int)cell, &r);
	for (int i = 0; i < 5; i++)
		free(own[i]);
}

static void
handle(struct ssh *s, const char *line, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	const char *e = o ? json_str(o, "ev") : NULL;
	double n = 0, st = 0;

	if (e == NULL) {
		cJSON_Delete(o);
		return;
	}
	if (strcmp(e, "hello") == 0) {
		s->hello = 1;
		s->ever = 1;
	} else if (strcmp(e, "fatal") == 0) {
		const char *m = json_str(o, "msg");
		buf_reset(&s->errbuf);
		buf_printf(&s->errbuf, "terp: %.300s\n", m ? m : "the sandbox cannot run");
	} else if (strcmp(e, "state") == 0 && json_num(o, "st", &st) == 0 &&
	    st >= KERNEL_STOPPED && st <= KERNEL_DEAD) {
		const char *m = json_str(o, "msg");
		char *clean = m ? sanitize_str(m, strnlen(m, 1000), 0) : NULL;
		if (st == KERNEL_DEAD && clean) {
			char *w = xasprintf("on %s: %s", s->host, clean);
			free(clean);
			clean = w;
		}
		/* the remote kernel's typed facts (serve.c sends them) */
		double rs = 0, sl = 0;
		(void)json_num(o, "restarted", &rs);
		(void)json_num(o, "lost", &sl);
		set_status(s, (enum kernel_state)st, clean, rs != 0, sl != 0);
		free(clean);
	} else if (strcmp(e, "out") == 0 && json_num(o, "cell", &n) == 0 && json_num(o, "s", &st) == 0) {
		const char *b = json_str(o, "b64");
		size_t len2;
		char *raw = b ? base64_decode(b, strlen(b), &len2) : NULL;
		if (raw != NULL)
			s->cb->output(s->arg, (int)n, st != 0, raw, len2);
		free(raw);
	} else if (strcmp(e, "result") == 0) {
		on_result(s, o);
	} else if (strcmp(e, "art") == 0) {
		art_begin(s, o);
	} else if (strcmp(e, "achunk") == 0) {
		art_chunk(s, o);
	} else if (strcmp(e, "aend") == 0) {
		art_end(s);
	} else if (strcmp(e, "staged") == 0) {
		const char *err = json_str(o, "err"), *name = json_str(o, "name");
		if (err != NULL)
			note(s, "a data file was not staged: %s", err);
		(void)name;
	} else if (strcmp(e, "error") == 0) {
		const char *m = json_str(o, "msg");
		if (m)
			note(s, "%s", m);
	}
	cJSON_Delete(o);
}

static void
on_out(struct loop *l, int fd, int revents, void *arg)
{
	struct ssh *s = arg;
	char buf[65536];
	const char *line;
	size_t len;
	ssize_t n = read(fd, buf, sizeof buf);

	(void)l;
	(void)revents;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || kframe_reader_add(&s->rd, buf, (size_t)n) < 0) {
		connection_ended(s);
		return;
	}
	while (s->connected && kframe_reader_next(&s->rd, &line, &len) == 1)
		handle(s, line, len);
}

static void
on_err(struct loop *l, int fd, int revents, void *arg)
{
	struct ssh *s = arg;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf);

	(void)revents;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		loop_unwatch(l, fd);
		close(fd);
		s->err_fd = -1;
		return;
	}
	if (s->errbuf.len + (size_t)n > ERR_KEEP)	/* keep the tail */
		buf_consume(&s->errbuf, s->errbuf.len + (size_t)n - ERR_KEEP > s->errbuf.len ?
		    s->errbuf.len : s->errbuf.len + (size_t)n - ERR_KEEP);
	buf_add(&s->errbuf, buf, (size_t)n);
}

/* ------------------------------------------------------------ ops */

static int
ssh_start(void *b, char **err)
{
	struct ssh *s = b;

	if (s->connected) {
		*err = xstrdup("the Python session is running already");
		return -1;
	}
	return connect_ssh(s, err);
}

static void
ssh_stop(void *b, const char *reason)
{
	struct ssh *s = b;
	struct ssh_cell *cells;
	char *why;

	if (!s->connected)
		return;
	cells = take_cells(s);
	end_ssh(s, FREE_WAIT_MS);
	why = xstrdup(reason && *reason ? reason : "by request");
	s->reconnect_lost = 1;
	set_state(s, KERNEL_STOPPED, why);
	fail_cells(s, cells, CELL_INTERRUPTED, "the sandbox was stopped; its state was lost");
	free(why);
}

static int
ssh_run(void *b, int n, const char *code, char **err)
{
	struct ssh *s = b;
	struct ssh_cell *c, **pp;
	cJSON *j;

	if (!s->connected) {
		if (s->state == KERNEL_DEAD || !s->ever) {
			if (s->state == KERNEL_DEAD) {
				*err = xstrdup("the Python session is not running");
				return -1;
			}
		}
		if (connect_ssh(s, err) < 0)
			return -1;
	}
	c = xcalloc(1, sizeof *c);
	c->n = n;
	for (pp = &s->cells; *pp; pp = &(*pp)->next)
		;
	*pp = c;
	emit_note(s, n);
	j = cmd("run");
	cJSON_AddNumberToObject(j, "n", n);
	cJSON_AddStringToObject(j, "code", code);
	push_cmd(s, j);
	flush(s);
	return 0;
}

static void
ssh_interrupt(void *b)
{
	struct ssh *s = b;

	if (s->connected && s->cells != NULL) {
		push_cmd(s, cmd("interrupt"));
		flush(s);
	}
}

static int
ssh_reset(void *b, char **err)
{
	struct ssh *s = b;

	if (!s->connected) {
		*err = xstrdup("the Python session is not running");
		return -1;
	}
	push_cmd(s, cmd("reset"));
	flush(s);
	return 0;
}

static int
ssh_restart(void *b, char **err)
{
	struct ssh *s = b;

	struct ssh_cell *cells = take_cells(s);
	int rc;

	if (s->connected)
		end_ssh(s, FREE_WAIT_MS);
	s->reconnect_lost = 1;
	rc = connect_ssh(s, err);
	fail_cells(s, cells, CELL_INTERRUPTED,
	    "the session was restarted by request; its state was lost");
	return rc;
}

/* The name the code will see: the one serve's workspace picks for a
 * fresh name (workspace_safe_name), made unique among ours. */
static char *
claim_name(struct ssh *s, const char *path)
{
	const char *base = strrchr(path, '/');
	char *name = workspace_safe_name(base ? base + 1 : path), *cand = NULL;
	const char *dot = strrchr(name, '.');
	int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);

	for (int i = 1; i < 1000; i++) {
		int used = 0;
		free(cand);
		cand = i == 1 ? xstrdup(name) :
		    xasprintf("%.*s-%d%s", stem, name, i, dot && dot != name ? dot : "");
		for (struct ssh_file *f = s->files; f; f = f->next)
			used |= strcmp(f->name, cand) == 0;
		if (!used)
			break;
	}
	free(name);
	return cand;
}

static char *
ssh_stage(void *b, const char *path, char **err)
{
	struct ssh *s = b;
	struct ssh_file *f = xcalloc(1, sizeof *f), **pp;

	if (kernel_ssh_remote_path(path) && access(path, F_OK) != 0) {
		f->remote = xstrdup(strchr(path, ':') + 1);
	} else {
		struct stat st;
		if (kernel_check_data(path, err) < 0) {
			free(f);
			return NULL;
		}
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			/* uploads are of one file; a folder there is staged */
			*err = xasprintf("the data folder %s cannot be uploaded over ssh: give "
			    "its files, or HOST:/PATH of a folder on the remote host", path);
			free(f);
			return NULL;
		}
		f->local = xstrdup(path);
	}
	f->name = claim_name(s, f->local ? f->local : f->remote);
	for (pp = &s->files; *pp; pp = &(*pp)->next)
		;
	*pp = f;
	if (s->connected) {
		queue_stage(s, f);
		flush(s);
	}
	return xasprintf("/workspace/data/%s", f->name);
}

static enum kernel_state
ssh_state(const void *b)
{
	return ((const struct ssh *)b)->state;
}

static int
ssh_busy(const void *b)
{
	return ((const struct ssh *)b)->cells != NULL;
}

static void
ssh_free(void *b)
{
	struct ssh *s = b;
	struct ssh_file *f;
	struct ssh_cell *c;

	end_ssh(s, FREE_WAIT_MS);
	while ((f = s->files) != NULL) {
		s->files = f->next;
		free(f->local);
		free(f->remote);
		free(f->name);
		free(f);
	}
	while ((c = s->cells) != NULL) {
		s->cells = c->next;
		free(c);
	}
	kernel_sink_free(s->sink);
	kframe_reader_free(&s->rd);
	buf_free(&s->errbuf);
	buf_free(&s->wq);
	buf_free(&s->notes);
	free(s->spec_host);
	free(s->spec_user);
	free(s->spec_port);
	free(s->host);
	free(s);
}

/* "": the journal keeps where the session ran (so that --resume goes
 * back to that host), with nothing to reach again there: a connection
 * is a new session. */
static char *
ssh_session(const void *b)
{
	(void)b;
	return xstrdup("");
}

static const struct kernel_ops ssh_ops = {
	.free = ssh_free, .start = ssh_start, .stop = ssh_stop, .run = ssh_run,
	.interrupt = ssh_interrupt, .reset = ssh_reset, .restart = ssh_restart,
	.stage = ssh_stage, .state = ssh_state, .busy = ssh_busy,
	.session = ssh_session,
};

#define SSH_ISOLATION \
	"The code runs in terp's sandbox there (the same bubblewrap sandbox as here, " \
	"set up by the terp installed on that machine), with that machine's limits."

void
kernel_ssh_build(struct loop *l, const struct kernel_opts *o, const struct kernel_cbs *cbs,
    void *arg, struct kernel_backend *kb)
{
	struct ssh *s = xcalloc(1, sizeof *s);

	s->loop = l;
	s->o = o;
	s->cb = cbs;
	s->arg = arg;
	s->pid = -1;
	s->in_fd = s->out_fd = s->err_fd = s->up_fd = -1;
	{
		struct kframe_caps caps = {
			.size_max = o->artifact_max,
			.per_cell = o->artifacts_per_cell,
			.per_session = o->artifacts_per_session,
			.session_bytes = o->artifact_bytes,
		};
		s->sink = kernel_sink_new(o->out_dir, &caps, sink_copied, sink_note, s);
	}
	if (parse_spec(o->sandbox, &s->spec_user, &s->spec_host, &s->spec_port) < 0)
		s->spec_host = xstrdup("invalid.invalid");
	s->host = xstrdup(s->spec_host);
	s->resumed = o->sandbox_session != NULL;
	kframe_reader_init(&s->rd, SERVE_LINE_MAX);
	buf_init(&s->errbuf, ERR_KEEP * 2);
	buf_init(&s->wq, (size_t)SERVE_LINE_MAX * 2);
	buf_init(&s->notes, 64 * 1024);
	kb->ops = &ssh_ops;
	kb->b = s;
	kb->isolation = SSH_ISOLATION;
	kb->note = NULL;	/* the same /workspace as here */
	/* A new connection is a new session folder there. */
	kb->files_note = "files the code wrote under /workspace are gone too (the data "
	    "files are staged again)";
}
