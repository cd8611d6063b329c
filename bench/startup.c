/* bench/startup: what the host-side steps of terp's start and of each
 * cell's end cost, timed in-process (CPU time of this thread, so a
 * loaded machine inflates them less than wall time): the seccomp
 * programs built by libseccomp, the uid pool's checks (NSS look-ups and
 * the /proc scan), a journal-style append + fdatasync, the workspace
 * walk of the disk check, and fork() of a process of terp's size.
 * A diagnosis tool for issue 14 (not part of `make bench`):
 *   make build/bench-startup && build/bench-startup [RUNS] [DIR]
 * DIR: a folder on the disk the session state lives on (default: the
 * current folder) for the fdatasync figure. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "terp/workspace_usage.h"
#include "terp/sandbox_filter.h"
#include "terp/sandbox_uid.h"

static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[n / 2];
}

/* The /proc scan of sandbox_uid.c's uid_has_process, alone. */
static int
proc_scan(uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0, n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		n++;
		found |= fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_uid == uid;
	}
	closedir(d);
	return found ? -n : n;
}

#define STEP(name, runs, ...) do {					\
	double *c_ = calloc((size_t)(runs), sizeof(double));		\
	double *w_ = calloc((size_t)(runs), sizeof(double));		\
	for (int r_ = 0; r_ < (runs); r_++) {				\
		double c0_ = cpu_ms(), w0_ = wall_ms();			\
		__VA_ARGS__;						\
		c_[r_] = cpu_ms() - c0_;				\
		w_[r_] = wall_ms() - w0_;				\
	}								\
	printf("  %-46s %8.3f ms CPU %8.3f ms wall\n", name,		\
	    median(c_, runs), median(w_, runs));			\
	free(c_);							\
	free(w_);							\
} while (0)

int
main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	const char *dir = argc > 2 ? argv[2] : ".";
	uid_t probe = SANDBOX_UID_FIRST + SANDBOX_UID_COUNT - 1;
	char path[4400];
	int nproc = 0;

	if (runs < 1) {
		fprintf(stderr, "usage: bench-startup [RUNS] [DIR]\n");
		return 2;
	}
	printf("startup: host-side steps, median of %d runs (thread CPU, wall)\n", runs);
	STEP("seccomp: sandbox_filter_build (both programs)", runs, {
		int a = -1, b = -1;
		char *err = NULL;
		if (sandbox_filter_build(&a, &b, &err) < 0) {
			fprintf(stderr, "sandbox_filter_build: %s\n", err);
			return 1;
		}
		close(a);
		close(b);
	});
	STEP("uid pool: getpwuid + getgrgid", runs, {
		(void)getpwuid(probe);
		(void)getgrgid((gid_t)probe);
	});
	STEP("uid pool: /proc scan (fstatat per process)", runs, {
		nproc = proc_scan(probe);
	});
	printf("  (%d processes on the machine)\n", nproc < 0 ? -nproc : nproc);
	STEP("uid pool: sandbox_uid_in_use (all of it)", runs, {
		(void)sandbox_uid_in_use(probe, NULL);
	});
	snprintf(path, sizeof path, "%s/bench-startup.%d.jsonl", dir, (int)getpid());
	{
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
		static const char line[] = "{\"t\":\"result\",\"c\":1,\"status\":\"ok\",\"ms\":1}\n";
		if (fd < 0) {
			perror(path);
			return 1;
		}
		STEP("journal: append one line (write)", runs, {
			if (write(fd, line, sizeof line - 1) < 0)
				return 1;
		});
		STEP("journal: append one line + fdatasync", runs, {
			if (write(fd, line, sizeof line - 1) < 0 || fdatasync(fd) < 0)
				return 1;
		});
		close(fd);
		unlink(path);
	}
	{
		/* An empty session workspace: the folder, data/ and out/. */
		char ws[4200];
		struct workspace_usage u;
		snprintf(ws, sizeof ws, "%s/bench-startup-ws.%d", dir, (int)getpid());
		mkdir(ws, 0700);
		snprintf(path, sizeof path, "%s/data", ws);
		mkdir(path, 0700);
		snprintf(path, sizeof path, "%s/out", ws);
		mkdir(path, 0700);
		STEP("disk check: workspace_usage_tree of an empty workspace", runs, {
			workspace_usage_tree(ws, 0, 0, &u);
		});
		snprintf(path, sizeof path, "%s/data", ws);
		rmdir(path);
		snprintf(path, sizeof path, "%s/out", ws);
		rmdir(path);
		rmdir(ws);
	}
	{
		/* fork() of a process holding what terp holds at its fork:
		 * the libraries are mapped in bench-startup too (same link). */
		STEP("fork() + child _exit + waitpid", runs, {
			pid_t p = fork();
			if (p == 0)
				_exit(0);
			waitpid(p, NULL, 0);
		});
	}
	return 0;
}
