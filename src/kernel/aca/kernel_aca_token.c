/* kernel_aca_token: the session pool's bearer token (see
 * kernel_aca_token.h). The command runs in its own process group, read
 * through bounded non-blocking pipes in the loop, killed at its time
 * limit; its stdout is wiped once read. */
#include "terp/kernel_aca_token.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/kernel_aca_parse.h"
#include "terp/proc.h"
#include "terp/util.h"

#define TOKEN_OUT_MAX	(64 * 1024)	/* read of the token command's stdout */
#define TOKEN_ERR_MAX	4096		/* kept of its stderr */
#define TOKEN_MARGIN_S	300		/* refreshed this long before expiry */
#define TOKEN_MIN_S	60		/* a fresh token is kept at least this long */

struct tokjob {
	pid_t		 pid;
	int		 out, err, pidfd;
	struct buf	 obuf, ebuf;
	uint64_t	 timer, poll;
	int		 out_eof, err_eof, overflow, timed_out, reaped;
	int		 wstatus;
};

struct aca_token {
	struct loop		*loop;
	struct aca_token_opts	 o;
	aca_token_done_fn	 done;
	void			*arg;
	char			*token;
	int64_t			 tok_refresh;	/* unix s: fetch again from then on */
	int64_t			 tok_exp;
	int			 tok_once;	/* a fresh token already due: use it once */
	char			 tok_aud[128];
	struct tokjob		*tj;
};

static int64_t
wall(const struct aca_token *a)
{
	return a->o.wallclock ? a->o.wallclock() : (int64_t)time(NULL);
}

static void
tok_job_free(struct aca_token *a)
{
	struct tokjob *t = a->tj;

	if (t == NULL)
		return;
	if (t->out >= 0) {
		loop_unwatch(a->loop, t->out);
		close(t->out);
	}
	if (t->err >= 0) {
		loop_unwatch(a->loop, t->err);
		close(t->err);
	}
	if (t->pidfd >= 0) {
		loop_unwatch(a->loop, t->pidfd);
		close(t->pidfd);
	}
	loop_timer_cancel(a->loop, t->timer);
	loop_timer_cancel(a->loop, t->poll);
	if (!t->reaped && t->pid > 0) {
		/* aca_token_free: nothing may be left behind. SIGKILL cannot be
		 * ignored, so this wait is short. */
		kill(-t->pid, SIGKILL);
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (t->obuf.data != NULL)
		explicit_bzero(t->obuf.data, t->obuf.len);
	buf_free(&t->obuf);
	buf_free(&t->ebuf);
	free(t);
	a->tj = NULL;
}

/* The command has exited and its pipes are closed (or abandoned):
 * take the token or say why not. */
static void
tok_finish(struct aca_token *a)
{
	struct tokjob *t = a->tj;
	char *err = NULL, *line;
	const char *why;
	int64_t exp;
	char *tok;

	if (t->timed_out) {
		err = xasprintf("the token command did not finish in %lld s; run it in a "
		    "shell to see why", (long long)(a->o.timeout_ms / 1000));
	} else if (t->overflow) {
		err = xasprintf("the token command printed more than %d KiB; it should print "
		    "only the token", TOKEN_OUT_MAX / 1024);
	} else if (!WIFEXITED(t->wstatus) || WEXITSTATUS(t->wstatus) != 0) {
		char how[64];
		if (WIFEXITED(t->wstatus))
			snprintf(how, sizeof how, "exit %d", WEXITSTATUS(t->wstatus));
		else
			snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(t->wstatus));
		/* What it printed on stdout may be a token: it names what
		 * to redact from the stderr line and is never shown. */
		buf_addc(&t->obuf, '\0');
		line = aca_redact_line(buf_str(&t->ebuf), t->ebuf.len,
		    t->obuf.len > 1 ? t->obuf.data : NULL);
		if (*line)
			err = xasprintf("the token command failed (%s): %s", how, line);
		else
			err = xasprintf("the token command failed (%s) and said nothing on "
			    "stderr", how);
		free(line);
	} else if ((tok = aca_token_parse(t->obuf.data ? t->obuf.data : "", t->obuf.len,
	    &exp, &why)) == NULL) {
		err = xasprintf("the token command's output is no token: %s", why);
	} else {
		int64_t now = wall(a), life, margin;

		if (a->token != NULL) {
			explicit_bzero(a->token, strlen(a->token));
			free(a->token);
		}
		a->token = tok;
		(void)aca_jwt_claims(tok, &life, a->tok_aud, sizeof a->tok_aud);
		if (exp <= 0)
			exp = now + a->o.lifetime_ms / 1000;
		a->tok_exp = exp;
		life = exp - now;
		margin = life / 2 < TOKEN_MARGIN_S ? life / 2 : TOKEN_MARGIN_S;
		a->tok_refresh = exp - (margin > 0 ? margin : 0);
		/* A token that is already due (clocks differ) is used for a
		 * while all the same: the pool decides, a 401 fetches a new
		 * one, and asking the command again at once would give the
		 * same token. */
		if (a->tok_refresh < now + TOKEN_MIN_S)
			a->tok_refresh = now + TOKEN_MIN_S;
		a->tok_once = 1;
	}
	tok_job_free(a);
	a->done(a->arg, err);
}

static void
tok_maybe_done(struct aca_token *a)
{
	struct tokjob *t = a->tj;

	if (t->out_eof && t->err_eof && t->reaped)
		tok_finish(a);
}

static int
tok_try_reap(struct aca_token *a)
{
	struct tokjob *t = a->tj;
	pid_t r;

	do
		r = waitpid(t->pid, &t->wstatus, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == t->pid || (r < 0 && errno == ECHILD)) {
		t->reaped = 1;
		/* Its own children may still hold the pipes: the group
		 * goes with it. */
		kill(-t->pid, SIGKILL);
		return 1;
	}
	return 0;
}

static void tok_on_poll(struct loop *l, void *arg);

static void
tok_on_pidfd(struct loop *l, int fd, int revents, void *arg)
{
	struct aca_token *a = arg;
	(void)revents;

	if (!tok_try_reap(a))
		return;
	loop_unwatch(l, fd);
	close(fd);
	a->tj->pidfd = -1;
	tok_maybe_done(a);
}

/* Where there is no pidfd, the exit is looked for every 20 ms. */
static void
tok_on_poll(struct loop *l, void *arg)
{
	struct aca_token *a = arg;

	a->tj->poll = 0;
	if (!tok_try_reap(a)) {
		a->tj->poll = loop_timer_add(l, 20, tok_on_poll, a);
		return;
	}
	tok_maybe_done(a);
}

static void
tok_watch_exit(struct aca_token *a)
{
	struct tokjob *t = a->tj;

	if (t->reaped || t->pidfd >= 0 || t->poll != 0)
		return;
	if (tok_try_reap(a)) {
		tok_maybe_done(a);
		return;
	}
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (t->pidfd >= 0) {
		fd_set_cloexec(t->pidfd);
		loop_watch(a->loop, t->pidfd, POLLIN, tok_on_pidfd, a);
	} else {
		t->poll = loop_timer_add(a->loop, 20, tok_on_poll, a);
	}
}

static void
tok_on_pipe(struct loop *l, int fd, int revents, void *arg)
{
	struct aca_token *a = arg;
	struct tokjob *t = a->tj;
	char b[4096];
	ssize_t n;
	int is_out = fd == t->out;
	(void)revents;

	for (;;) {
		n = read(fd, b, sizeof b);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			loop_unwatch(l, fd);
			close(fd);
			if (is_out) {
				t->out = -1;
				t->out_eof = 1;
			} else {
				t->err = -1;
				t->err_eof = 1;
			}
			if (t->out_eof && t->err_eof)
				tok_watch_exit(a);
			break;
		}
		if (is_out) {
			if (buf_add(&t->obuf, b, (size_t)n) < 0) {
				/* past the bound: it is not printing a token */
				t->overflow = 1;
				kill(-t->pid, SIGKILL);
			}
		} else {
			size_t room = t->ebuf.max - t->ebuf.len;
			(void)buf_add(&t->ebuf, b, (size_t)n < room ? (size_t)n : room);
		}
		explicit_bzero(b, sizeof b);
	}
	explicit_bzero(b, sizeof b);
}

static void
tok_on_timeout(struct loop *l, void *arg)
{
	struct aca_token *a = arg;
	struct tokjob *t = a->tj;

	t->timer = 0;
	t->timed_out = 1;
	kill(-t->pid, SIGKILL);
	kill(t->pid, SIGKILL);
	/* A grandchild that left the group may keep the pipes open: stop
	 * reading them and wait for the command itself only. */
	if (t->out >= 0) {
		loop_unwatch(l, t->out);
		close(t->out);
		t->out = -1;
	}
	if (t->err >= 0) {
		loop_unwatch(l, t->err);
		close(t->err);
		t->err = -1;
	}
	t->out_eof = t->err_eof = 1;
	tok_watch_exit(a);
}

/* Starts the token command. Returns 0, or -1 with *err. */
static int
tok_spawn(struct aca_token *a, char **err)
{
	char *argv[] = { "/bin/sh", "-c", (char *)a->o.cmd, NULL };
	/* its own process group (proc_start), so that a timeout kills
	 * whatever it started (az runs python) */
	struct proc_opts o = { .name = "the token command", .stdin_fd = -1,
	    .err = PROC_ERR_TAIL };
	struct tokjob *t;
	int out, errfd;
	pid_t pid = proc_start(argv, &o, &out, &errfd, err);

	if (pid < 0)
		return -1;
	t = xcalloc(1, sizeof *t);
	t->pid = pid;
	t->out = out;
	t->err = errfd;
	t->pidfd = -1;
	buf_init(&t->obuf, TOKEN_OUT_MAX);
	buf_init(&t->ebuf, TOKEN_ERR_MAX);
	fd_set_nonblock(t->out);
	fd_set_nonblock(t->err);
	a->tj = t;
	loop_watch(a->loop, t->out, POLLIN, tok_on_pipe, a);
	loop_watch(a->loop, t->err, POLLIN, tok_on_pipe, a);
	if (a->o.timeout_ms > 0)
		t->timer = loop_timer_add(a->loop, a->o.timeout_ms, tok_on_timeout, a);
	return 0;
}

/* The token from the environment. Returns 0, or -1 with *err. */
static int
tok_from_env(struct aca_token *a, char **err)
{
	const char *v = getenv(a->o.env);
	const char *why;
	char *tok;
	int64_t exp;

	if (v == NULL || *v == '\0') {
		*err = xasprintf("the environment variable %s holds no token for the "
		    "session pool", a->o.env);
		return -1;
	}
	if ((tok = aca_token_parse(v, strlen(v), &exp, &why)) == NULL) {
		*err = xasprintf("the environment variable %s holds no token: %s",
		    a->o.env, why);
		return -1;
	}
	if (exp > 0 && exp <= wall(a)) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
		*err = xasprintf("the token in %s has expired; get a new one (or configure "
		    "a token command, which terp runs again when needed)", a->o.env);
		return -1;
	}
	if (a->token != NULL) {
		explicit_bzero(a->token, strlen(a->token));
		free(a->token);
	}
	a->token = tok;
	(void)aca_jwt_claims(tok, &exp, a->tok_aud, sizeof a->tok_aud);
	a->tok_exp = exp;
	/* Read again at each use: cheap, and it notices expiry. */
	a->tok_refresh = 0;
	a->tok_once = 1;
	return 0;
}

static void
tok_forget(struct aca_token *a)
{
	if (a->token != NULL) {
		explicit_bzero(a->token, strlen(a->token));
		free(a->token);
		a->token = NULL;
	}
	a->tok_refresh = a->tok_exp = 0;
	a->tok_once = 0;
}

struct aca_token *
aca_token_new(struct loop *l, const struct aca_token_opts *o, aca_token_done_fn done,
    void *arg)
{
	struct aca_token *a = xcalloc(1, sizeof *a);

	a->loop = l;
	a->o = *o;
	a->done = done;
	a->arg = arg;
	return a;
}

void
aca_token_free(struct aca_token *a)
{
	if (a == NULL)
		return;
	tok_job_free(a);
	tok_forget(a);
	free(a);
}

const char *
aca_token_get(struct aca_token *a, char **err)
{
	*err = NULL;
	if (a->token == NULL || (wall(a) >= a->tok_refresh && !a->tok_once)) {
		if (a->o.cmd != NULL && *a->o.cmd != '\0') {
			if (a->tj == NULL)
				(void)tok_spawn(a, err);
			return NULL;	/* *err, or done comes */
		}
		if (tok_from_env(a, err) < 0)
			return NULL;
	}
	a->tok_once = 0;
	return a->token;
}

void
aca_token_forget(struct aca_token *a)
{
	tok_forget(a);
}

const char *
aca_token_audience(const struct aca_token *a)
{
	return a->tok_aud;
}
