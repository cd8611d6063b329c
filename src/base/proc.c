/* proc: a program run to completion through bounded pipes (proc.h). */
#include "terp/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/util.h"

#define ERR_MAX_DEFAULT	4096

extern char **environ;

/* fd moved to 10 or above, so that the dup2s onto 0-2 below cannot
 * overwrite one another's source (a parent started with 0-2 closed gets
 * its pipes there). */
static int
high(int fd)
{
	int h = fd < 0 ? -1 : fcntl(fd, F_DUPFD, 10);

	if (fd >= 0 && h < 0)
		_exit(127);
	return h;
}

/* In the child: never returns. The exec's errno goes to the parent
 * through xfd (close-on-exec: a successful exec closes it empty). */
static void
child(char *const argv[], const struct proc_opts *o, int out, int err, int xfd)
{
	sigset_t none;
	int in, e;

	/* Its own process group (or session, which is one too), so that a
	 * kill reaches what it started. */
	if (o->new_session)
		setsid();
	else
		setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)	/* ignored ones survive exec */
		signal(s, SIG_DFL);
	in = o->stdin_fd >= 0 ? o->stdin_fd : open("/dev/null", O_RDONLY);
	if (o->err == PROC_ERR_DROP)
		err = open("/dev/null", O_WRONLY);
	in = high(in);
	out = high(out);
	err = o->err == PROC_ERR_INHERIT ? -1 : high(err);
	xfd = high(xfd);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || (err >= 0 && dup2(err, 2) < 0) ||
	    dup2(xfd, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
		_exit(127);
	closefrom(4);
	if (o->dir == NULL || chdir(o->dir) == 0) {
		if (o->path_search) {
			if (o->envp)
				environ = (char **)o->envp;	/* this process's own copy */
			execvp(argv[0], argv);
		} else {
			execve(argv[0], argv, o->envp ? o->envp : environ);
		}
	}
	e = errno;
	(void)!write(3, &e, sizeof e);
	_exit(127);
}

static void
kill_reap(pid_t pid, int *status)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/* Waits for the exec: 0 when it ran, else the child's errno (reaped). */
static int
exec_errno(pid_t pid, int xfd, int *status)
{
	int e = 0;
	ssize_t n;

	while ((n = read(xfd, &e, sizeof e)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof e)
		return 0;
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return e ? e : EIO;
}

/* Keeps the last max bytes of stderr in r->err. */
static void
add_tail(struct proc_result *r, size_t max, const char *p, size_t n)
{
	if (n >= max) {
		p += n - max;
		n = max;
	}
	if (r->err_len + n > max) {
		size_t drop = r->err_len + n - max;
		memmove(r->err, r->err + drop, r->err_len - drop);
		r->err_len -= drop;
	}
	memcpy(r->err + r->err_len, p, n);
	r->err_len += n;
	r->err[r->err_len] = '\0';
}

/* One read from fd i (0 stdout, 1 stderr). Returns 0, 1 at its end, or
 * -1 when stdout ran past the bound with out_kill. */
static int
read_one(int i, int fd, const struct proc_opts *o, struct proc_result *r)
{
	char chunk[4096];
	ssize_t n;

	if (i == 0 && r->out_len < o->out_max)	/* straight in: no copy */
		n = read(fd, r->out + r->out_len, o->out_max - r->out_len);
	else
		n = read(fd, chunk, sizeof chunk);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return 1;
	if (i == 1) {
		add_tail(r, o->err_max ? o->err_max : ERR_MAX_DEFAULT, chunk,
		    (size_t)n);
	} else if (r->out_len < o->out_max) {
		r->out_len += (size_t)n;
		r->out[r->out_len] = '\0';
	} else {
		explicit_bzero(chunk, sizeof chunk);
		r->overflow = 1;
		if (o->out_kill)
			return -1;
	}
	return 0;
}

/* Reads both pipes to their ends. Returns 0, or -1 with *err. */
static int
drain(pid_t pid, int fds[2], const char *name, const struct proc_opts *o,
    struct proc_result *r, char **err)
{
	int64_t deadline = o->timeout_ms > 0 ? now_ms() + o->timeout_ms : 0;

	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd pf[2] = { { fds[0], POLLIN, 0 }, { fds[1], POLLIN, 0 } };
		int64_t left = deadline ? deadline - now_ms() : -1;
		int n;

		if (deadline && left <= 0) {
			kill_reap(pid, &r->status);
			*err = xasprintf("%s did not answer within %d ms", name,
			    o->timeout_ms);
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(pf, 2, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			kill_reap(pid, &r->status);
			*err = xasprintf("cannot read from %s: %s", name, strerror(e));
			errno = e;
			return -1;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i] < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			switch (read_one(i, fds[i], o, r)) {
			case 1:
				close(fds[i]);
				fds[i] = -1;
				break;
			case -1:
				kill_reap(pid, &r->status);
				*err = xasprintf("%s printed more than %zu bytes", name,
				    o->out_max);
				errno = EFBIG;
				return -1;
			}
		}
	}
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

static void
close_all(int *fd, int n)
{
	for (int i = 0; i < n; i++)
		if (fd[i] >= 0) {
			close(fd[i]);
			fd[i] = -1;
		}
}

pid_t
proc_start(char *const argv[], const struct proc_opts *o, int *out, int *errfd,
    char **err)
{
	const char *name = o->name ? o->name : argv[0];
	/* stdout, stdout's write end, stderr, its write end, exec status */
	int fd[6] = { -1, -1, -1, -1, -1, -1 }, e, status;
	pid_t pid;

	*out = *errfd = -1;
	*err = NULL;
	if (pipe2(fd, O_CLOEXEC) < 0 ||
	    (o->err == PROC_ERR_TAIL && pipe2(fd + 2, O_CLOEXEC) < 0) ||
	    pipe2(fd + 4, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		e = errno;
		close_all(fd, 6);
		*err = xasprintf("cannot run %s: %s", name, strerror(e));
		errno = e;
		return -1;
	}
	if (pid == 0)
		child(argv, o, fd[1], fd[3], fd[5]);
	/* also here: no race with a kill (not for a session: setsid fails
	 * in a process that leads a group already) */
	if (!o->new_session)
		setpgid(pid, pid);
	close(fd[1]);
	close(fd[3]);
	close(fd[5]);
	fd[1] = fd[3] = fd[5] = -1;
	e = exec_errno(pid, fd[4], &status);
	close(fd[4]);
	if (e != 0) {
		close_all(fd, 6);
		*err = xasprintf("cannot run %s: %s", name, strerror(e));
		errno = e;
		return -1;
	}
	*out = fd[0];
	*errfd = fd[2];
	return pid;
}

int
proc_run(char *const argv[], const struct proc_opts *o, struct proc_result *r,
    char **err)
{
	const char *name = o->name ? o->name : argv[0];
	int fds[2], e, rc;
	pid_t pid;

	memset(r, 0, sizeof *r);
	r->out = xmalloc(o->out_max + 1);
	r->out[0] = '\0';
	if (o->err == PROC_ERR_TAIL) {
		r->err = xmalloc((o->err_max ? o->err_max : ERR_MAX_DEFAULT) + 1);
		r->err[0] = '\0';
	}
	if ((pid = proc_start(argv, o, &fds[0], &fds[1], err)) < 0)
		return -1;
	rc = drain(pid, fds, name, o, r, err);
	e = errno;
	close_all(fds, 2);
	errno = e;
	return rc;
}

void
proc_result_free(struct proc_result *r)
{
	if (r->out != NULL)
		explicit_bzero(r->out, r->out_len);
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}
