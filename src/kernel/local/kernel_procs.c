/* kernel_procs: a local sandbox's processes (kernel_procs.h). */
#include "kernel_procs.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define STATUS_MAX	(64 * 1024)	/* one bwrap status line, at most */

void
kprocs_init(struct kprocs *p)
{
	memset(p, 0, sizeof *p);
	p->py_pid = -1;
	p->exit_code = -1;
	p->fwd.pidfd = -1;
	sandbox_tree_known_init(&p->known);
	buf_init(&p->status, STATUS_MAX);
}

void
kprocs_free(struct kprocs *p)
{
	sandbox_tree_unpin(&p->fwd);
	sandbox_tree_known_reset(&p->known);
	buf_free(&p->status);
}

void
kprocs_reset(struct kprocs *p, int no_sandbox)
{
	buf_reset(&p->status);
	p->exit_code = -1;
	p->init_pid = no_sandbox ? -1 : 0;
	p->py_pid = -1;
	sandbox_tree_unpin(&p->fwd);
	sandbox_tree_known_reset(&p->known);
}

void
kprocs_set_python(struct kprocs *p, pid_t pid)
{
	p->py_pid = pid;
}

void
kprocs_forget(struct kprocs *p)
{
	sandbox_tree_known_reset(&p->known);
}

int
kprocs_status(struct kprocs *p, int fd)
{
	char b[4096];
	ssize_t n;

	while ((n = read(fd, b, sizeof b)) > 0) {
		if (buf_add(&p->status, b, (size_t)n) < 0)
			buf_reset(&p->status);
		for (;;) {
			char *nl = memchr(p->status.data, '\n', p->status.len);
			cJSON *j, *v;
			if (nl == NULL)
				break;
			j = cJSON_ParseWithLength(p->status.data, (size_t)(nl - p->status.data));
			if ((v = cJSON_GetObjectItem(j, "child-pid")) && cJSON_IsNumber(v))
				p->init_pid = (pid_t)v->valueint;
			if ((v = cJSON_GetObjectItem(j, "exit-code")) && cJSON_IsNumber(v))
				p->exit_code = v->valueint;
			cJSON_Delete(j);
			buf_consume(&p->status, (size_t)(nl - p->status.data) + 1);
		}
	}
	return n == 0;
}

void
kprocs_ready(struct kprocs *p, int with_fwd)
{
	if (p->init_pid > 0)
		p->py_pid = sandbox_tree_python(p->init_pid);
	/* before any cell ran: the driver's only child is the forwarder
	 * it started (egress_fwd.py) */
	sandbox_tree_unpin(&p->fwd);
	if (with_fwd)
		sandbox_tree_pin_only_child(&p->fwd, p->py_pid);
}

void
kprocs_signal(struct kprocs *p, int status_fd, int sig)
{
	if (p->init_pid == 0 && status_fd >= 0)
		kprocs_status(p, status_fd);
	if (p->py_pid <= 0 && p->init_pid > 0)
		p->py_pid = sandbox_tree_python(p->init_pid);
	if (p->py_pid > 0) {
		/* A pidfd pins the process: no signal to a recycled pid. */
		int pfd = (int)syscall(SYS_pidfd_open, p->py_pid, 0);
		if (pfd >= 0) {
			syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
			close(pfd);
		} else {
			kill(p->py_pid, sig);
		}
	}
}

pid_t
kprocs_root(const struct kprocs *p)
{
	return p->init_pid > 0 ? p->init_pid : p->py_pid;
}

void
kprocs_cell_end(struct kprocs *p, int wait_ms)
{
	pid_t keep[2], root = kprocs_root(p);

	if (p->py_pid <= 0)
		return;
	keep[0] = p->py_pid;
	keep[1] = sandbox_tree_pinned_alive(&p->fwd) ? p->fwd.pid : 0;
	/* the walk of /proc only when the known ones are not all there is */
	if (!sandbox_tree_quiet(&p->known, root, keep, 2))
		sandbox_tree_kill_strays(root, keep, 2, wait_ms);
}
