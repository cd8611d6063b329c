/* seccomp_run: a test-only stand-in for the sandbox launcher, used by
 * test_hostile.py's "bwrap" backend while developing the hostile
 * snippets. It builds terp's two seccomp programs (sandbox_filter.c), puts them
 * on fds 6 and 7, closes every other fd above 2, drops to the given
 * unprivileged uid and execs bwrap's argv with a minimal environment
 * (SANDBOX.md 2.1). Usage: seccomp_run UID -- /usr/bin/bwrap ARGS... */
#include <errno.h>
#include <grp.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>

#include "terp/sandbox_filter.h"

static const struct {
	int		res;
	rlim_t		v;
} lims[] = {
	{ RLIMIT_CORE, 0 }, { RLIMIT_NPROC, 128 }, { RLIMIT_NOFILE, 512 },
	{ RLIMIT_FSIZE, 256 << 20 }, { RLIMIT_DATA, (rlim_t)2 << 30 },
	{ RLIMIT_CPU, 120 },
};

int
main(int argc, char **argv)
{
	char	*envp[] = { "PATH=/usr/bin:/bin", NULL };
	char	*err = NULL, *end;
	long	 uid;
	int	 a, b;

	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: seccomp_run UID -- BWRAP ARGS...\n");
		return 2;
	}
	uid = strtol(argv[1], &end, 10);
	if (*end != '\0' || uid <= 0 || uid > 0x7fffffff) {
		fprintf(stderr, "seccomp_run: refusing uid %s\n", argv[1]);
		return 2;
	}
	if (sandbox_filter_build(&a, &b, &err) == -1) {
		fprintf(stderr, "seccomp_run: %s\n", err);
		return 1;
	}
	/* dup2 clears FD_CLOEXEC on the copies only. */
	if (dup2(a, 6) != 6 || dup2(b, 7) != 7) {
		perror("seccomp_run: dup2");
		return 1;
	}
	if (syscall(SYS_close_range, 8, ~0U, 0) == -1) {
		perror("seccomp_run: close_range");
		return 1;
	}
	/* rlimits as SANDBOX.md 9 (NPROC counts per host uid) */
	for (size_t i = 0; i < sizeof lims / sizeof lims[0]; i++) {
		struct rlimit	rl = { lims[i].v, lims[i].v };

		if (setrlimit(lims[i].res, &rl) == -1) {
			perror("seccomp_run: setrlimit");
			return 1;
		}
	}
	if ((geteuid() == 0 && setgroups(0, NULL) == -1) ||
	    setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) == -1 ||
	    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) == -1) {
		perror("seccomp_run: dropping privileges");
		return 1;
	}
	if (getuid() == 0 || geteuid() == 0) {
		fprintf(stderr, "seccomp_run: still uid 0\n");
		return 1;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	execve(argv[3], argv + 3, envp);
	perror("seccomp_run: execve");
	return 127;
}
