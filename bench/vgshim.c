/* bench/vgshim.c: lets terp run under valgrind (callgrind counts
 * instructions, repeatable on a loaded machine where perf has no
 * hardware counters). Valgrind knows no seccomp(2), so libseccomp's
 * probes of the kernel's API level fail and terp cannot build its
 * filter; and valgrind refuses some setrlimit calls in the launcher.
 * Preloaded, this answers libseccomp's probes as a 6.x kernel does and
 * lets those setrlimit calls pass. The programs are only built and
 * handed to bwrap, which runs natively (valgrind does not follow exec
 * with --trace-children=no): nothing is weakened in the sandbox.
 * A diagnosis tool, never linked into terp.
 *   make build/vgshim.so
 *   LD_PRELOAD=$PWD/build/vgshim.so prlimit --nofile=1024:1024 \
 *       valgrind --tool=callgrind \
 *       --trace-children=no ./terp exec -c 'print(1)'
 * prlimit: valgrind keeps the real fd limit and hands it to the sandbox,
 * whose driver needs its fds under 1024 (select). Valgrind 3.19 does not
 * know pidfd_open: terp takes its fallback (a poll) there. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

long
syscall(long nr, ...)
{
	static long (*real)(long, ...);
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_seccomp) {
		unsigned op = (unsigned)a[0];
		void *args = (void *)a[2];
		switch (op) {
		case SECCOMP_GET_ACTION_AVAIL:
			return 0;
		case SECCOMP_GET_NOTIF_SIZES:
			if (args != NULL) {
				struct seccomp_notif_sizes *s = args;
				s->seccomp_notif = 80;
				s->seccomp_notif_resp = 24;
				s->seccomp_data = 64;
			}
			return 0;
		case SECCOMP_SET_MODE_FILTER:
			if (args == NULL) {	/* a flag probe: supported */
				errno = EFAULT;
				return -1;
			}
			break;
		default:
			errno = EINVAL;
			return -1;
		}
	}
	if (real == NULL)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int
setrlimit(__rlimit_resource_t res, const struct rlimit *rl)
{
	static int (*real)(__rlimit_resource_t, const struct rlimit *);
	int rc;

	if (real == NULL)
		real = (int (*)(__rlimit_resource_t, const struct rlimit *))
		    dlsym(RTLD_NEXT, "setrlimit");
	rc = real(res, rl);
	if (getenv("VGSHIM_DEBUG"))
		fprintf(stderr, "vgshim: setrlimit(%d, %lu) = %d\n", (int)res,
		    (unsigned long)rl->rlim_cur, rc);
	if (rc < 0 && errno == EPERM && res == RLIMIT_NOFILE) {
		/* Valgrind keeps the hard limit of its own fds: lower the
		 * soft one alone (the driver puts its fds under it). */
		struct rlimit cur;
		if (getrlimit(res, &cur) == 0) {
			cur.rlim_cur = rl->rlim_cur < cur.rlim_max ? rl->rlim_cur : cur.rlim_max;
			return real(res, &cur);
		}
	}
	if (rc < 0 && errno == EPERM)
		return 0;	/* valgrind's own limits */
	return rc;
}
