/* Unit tests for the memory rows of the seccomp programs (sandbox_filter.c):
 * memfd_create and SysV shmget/msgget/semget fail with
 * ENOSYS, and setsockopt cannot grow a socket's buffers (it returns 0 and
 * the size stays). As in test_sandbox_filter.c, a forked child installs A then B
 * the way bwrap does, tries the call and reports to the parent; every
 * call is also tried without the filters, where the kernel answers
 * otherwise, so a missing rule fails a test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/sandbox_filter.h"

struct outcome {
	long	ret;
	int	err;
	long	extra;		/* what try() measured afterwards */
};

static long extra;

static struct outcome
run(int filtered, long (*try)(void))
{
	unsigned char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	struct outcome o = { -999, 0, 0 };
	char *err = NULL;
	long res[3];
	int p[2], st;
	pid_t pid;

	if (filtered) {
		cr_assert_eq(sandbox_filter_bpf(SANDBOX_FILTER_ALLOW, &a, &alen, &err), 0, "%s", err ? err : "");
		cr_assert_eq(sandbox_filter_bpf(SANDBOX_FILTER_DENY, &b, &blen, &err), 0, "%s", err ? err : "");
	}
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[0]);
		if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
		    sandbox_filter_load_bpf(a, alen) == -1 || sandbox_filter_load_bpf(b, blen) == -1))
			_exit(120);
		errno = 0;
		res[0] = try();
		res[1] = res[0] == -1 ? errno : 0;
		res[2] = extra;
		if (write(p[1], res, sizeof res) != sizeof res)
			_exit(123);
		_exit(0);
	}
	close(p[1]);
	free(a);
	free(b);
	if (read(p[0], res, sizeof res) == sizeof res) {
		o.ret = res[0];
		o.err = (int)res[1];
		o.extra = res[2];
	}
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	return o;
}

static long try_memfd(void) { return syscall(SYS_memfd_create, "x", 0); }
static long try_shmget(void) { return syscall(SYS_shmget, IPC_PRIVATE, 4096, IPC_CREAT | 0600); }
static long try_msgget(void) { return syscall(SYS_msgget, IPC_PRIVATE, IPC_CREAT | 0600); }
static long try_semget(void) { return syscall(SYS_semget, IPC_PRIVATE, 1, IPC_CREAT | 0600); }

/* Sets SO_SNDBUF to 1 MiB (level and name given as 64-bit values with
 * high bits when high is set: the kernel reads 32 bits) and measures the
 * buffer size afterwards into extra. */
static long
sndbuf(int high)
{
	int sv[2], v = 1 << 20, got = 0;
	socklen_t len = sizeof got;
	long r;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -2;
	r = syscall(SYS_setsockopt, (long)sv[0],
	    (long)SOL_SOCKET | (high ? (1L << 32) : 0),
	    (long)SO_SNDBUF | (high ? (1L << 32) : 0), &v, (long)sizeof v);
	getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &got, &len);
	extra = got;
	return r;
}

static long try_sndbuf(void) { return sndbuf(0); }
static long try_sndbuf_high(void) { return sndbuf(1); }

static long
try_rcvbufforce(void)
{
	int sv[2], v = 1 << 20;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -2;
	return setsockopt(sv[0], SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v);
}

/* Another option still reaches the kernel. */
static long
try_keepalive(void)
{
	int sv[2], v = 1, got = 0;
	socklen_t len = sizeof got;
	long r;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -2;
	r = setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &v, sizeof v);
	getsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &got, &len);
	extra = got;
	return r;
}

static void
expect_enosys(long (*try)(void), const char *what)
{
	struct outcome o = run(0, try);

	cr_assert(o.ret >= 0, "%s: control: the kernel refused it (%s)", what, strerror(o.err));
	o = run(1, try);
	cr_assert(o.ret == -1 && o.err == ENOSYS, "%s: returned %ld, errno %d", what, o.ret, o.err);
}

Test(sandbox_filter_mem, memfd_and_sysv_ipc_are_enosys)
{
	expect_enosys(try_memfd, "memfd_create");
	expect_enosys(try_shmget, "shmget");
	expect_enosys(try_msgget, "msgget");
	expect_enosys(try_semget, "semget");
}

Test(sandbox_filter_mem, socket_buffers_cannot_grow)
{
	struct outcome base = run(0, try_sndbuf), o;

	/* Control: unfiltered, the buffer does change. */
	cr_assert_eq(base.ret, 0);
	o = run(1, try_sndbuf);
	cr_assert_eq(o.ret, 0, "setsockopt must still report success");
	cr_assert_neq(o.extra, base.extra, "SO_SNDBUF grew to %ld under the filter", o.extra);
	o = run(1, try_sndbuf_high);
	cr_assert_eq(o.ret, 0);
	cr_assert_neq(o.extra, base.extra, "high bits: SO_SNDBUF grew to %ld", o.extra);
	o = run(1, try_rcvbufforce);
	cr_assert_eq(o.ret, 0, "SO_RCVBUFFORCE: %ld errno %d", o.ret, o.err);
}

Test(sandbox_filter_mem, other_socket_options_still_work)
{
	struct outcome o = run(1, try_keepalive);

	cr_assert_eq(o.ret, 0);
	cr_assert_eq(o.extra, 1);
}
