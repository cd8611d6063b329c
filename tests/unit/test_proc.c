/* proc_run: the synchronous fork/exec runner behind the Python probe and
 * the secret commands. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/proc.h"

/* 2,000 lines of 43 bytes (more than a pipe holds), then exit 5. */
#define LOUD	"i=0; while [ $i -lt 2000 ]; do " \
		"echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); " \
		"done; echo finished >&2; exit 5"

static int
sh(const char *script, const struct proc_opts *o, struct proc_result *r,
    char **err)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };

	return proc_run(argv, o, r, err);
}

/* No child left behind (each Criterion test is a process of its own). */
static void
assert_no_child(void)
{
	cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
	cr_assert_eq(errno, ECHILD);
}

Test(proc, output_over_the_bound_is_cut_and_the_child_runs_to_its_end)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 100 };
	struct proc_result r;
	char *err;

	cr_assert_eq(sh(LOUD, &o, &r, &err), 0);
	cr_assert_null(err);
	cr_assert_eq(r.out_len, 100);
	cr_assert_eq(strlen(r.out), 100);
	cr_assert(r.overflow);
	/* drained, not dead of SIGPIPE: it reached its own exit */
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 5,
	    "status %#x", r.status);
	cr_assert_str_eq(r.err, "finished\n");
	proc_result_free(&r);
	assert_no_child();
}

Test(proc, output_over_the_bound_with_out_kill_is_an_error)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 100, .out_kill = 1 };
	struct proc_result r;
	char *err;

	cr_assert_eq(sh(LOUD, &o, &r, &err), -1);
	cr_assert_str_eq(err, "/bin/sh printed more than 100 bytes");
	cr_assert(r.overflow);
	cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
	free(err);
	proc_result_free(&r);
	assert_no_child();
}

Test(proc, a_timeout_kills_the_group_and_reaps)
{
	struct proc_opts o = { .name = "the sleeper", .stdin_fd = -1,
	    .out_max = 64, .timeout_ms = 200 };
	struct proc_result r;
	char *err;

	/* a grandchild holding the pipes open is killed with it */
	cr_assert_eq(sh("sleep 30 & sleep 30", &o, &r, &err), -1);
	cr_assert_str_eq(err, "the sleeper did not answer within 200 ms");
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
	free(err);
	proc_result_free(&r);
	assert_no_child();
}

Test(proc, a_missing_program_is_one_line)
{
	char *argv[] = { "/nonexistent/prog", NULL };
	struct proc_opts o = { .stdin_fd = -1, .out_max = 64 };
	struct proc_result r;
	char *err;

	cr_assert_eq(proc_run(argv, &o, &r, &err), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_str_eq(err, "cannot run /nonexistent/prog: No such file or "
	    "directory");
	free(err);
	proc_result_free(&r);
	assert_no_child();
}

Test(proc, exit_status_and_signal_are_returned)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 64,
	    .err = PROC_ERR_DROP };
	struct proc_result r;
	char *err;

	cr_assert_eq(sh("echo out; echo hidden >&2; exit 3", &o, &r, &err), 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3);
	cr_assert_str_eq(r.out, "out\n");
	cr_assert_null(r.err);
	proc_result_free(&r);
	cr_assert_eq(sh("kill -TERM $$", &o, &r, &err), 0);
	cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM);
	proc_result_free(&r);
}

Test(proc, stdin_is_dev_null_unless_given_and_no_fd_leaks)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 256 };
	struct proc_result r;
	char *err, script[128];
	int p[2], leak = open("/dev/null", O_RDONLY);	/* not close-on-exec */

	cr_assert(leak >= 3);
	snprintf(script, sizeof script, "cat; test -e /proc/self/fd/%d && "
	    "echo leaked || echo closed", leak);
	cr_assert_eq(sh(script, &o, &r, &err), 0);
	cr_assert_str_eq(r.out, "closed\n");
	proc_result_free(&r);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "given\n", 6), 6);
	close(p[1]);
	o.stdin_fd = p[0];
	cr_assert_eq(sh("cat", &o, &r, &err), 0);
	cr_assert_str_eq(r.out, "given\n");
	proc_result_free(&r);
	close(p[0]);
	close(leak);
}

Test(proc, environment_and_folder)
{
	static char *const envp[] = { "A=1", NULL };
	struct proc_opts o = { .envp = envp, .dir = "/", .stdin_fd = -1,
	    .out_max = 256 };
	struct proc_result r;
	char *err;

	cr_assert_eq(sh("echo $A; pwd; echo ${HOME-unset}", &o, &r, &err), 0);
	cr_assert_str_eq(r.out, "1\n/\nunset\n");
	proc_result_free(&r);
}

Test(proc, stderr_keeps_its_tail)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 16, .err_max = 8 };
	struct proc_result r;
	char *err;

	cr_assert_eq(sh("echo 0123456789abcdef >&2", &o, &r, &err), 0);
	cr_assert_str_eq(r.err, "9abcdef\n");
	cr_assert_eq(r.err_len, 8);
	proc_result_free(&r);
}

Test(proc, start_hands_over_the_pipes_for_a_loop_to_read)
{
	char *argv[] = { "/bin/sh", "-c", "echo out; echo err >&2; exit 4", NULL };
	char *missing[] = { "/nonexistent/prog", NULL };
	struct proc_opts o = { .name = "the command", .stdin_fd = -1,
	    .err = PROC_ERR_TAIL };
	char buf[16], *err;
	int out, efd, st;
	pid_t pid = proc_start(argv, &o, &out, &efd, &err);

	cr_assert(pid > 0);
	cr_assert(fcntl(out, F_GETFD) & FD_CLOEXEC);
	cr_assert_eq(read(out, buf, sizeof buf), 4);
	cr_assert_eq(memcmp(buf, "out\n", 4), 0);
	cr_assert_eq(read(efd, buf, sizeof buf), 4);
	cr_assert_eq(memcmp(buf, "err\n", 4), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 4);
	close(out);
	close(efd);
	cr_assert_eq(proc_start(missing, &o, &out, &efd, &err), -1);
	cr_assert_str_eq(err, "cannot run the command: No such file or directory");
	cr_assert_eq(out, -1);
	free(err);
	assert_no_child();
}

Test(proc, path_search_finds_the_program_in_path)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 64, .path_search = 1 };
	char *argv[] = { "sh", "-c", "echo found", NULL };
	struct proc_result r;
	char *err;

	cr_assert_eq(proc_run(argv, &o, &r, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(r.out, "found\n");
	proc_result_free(&r);
	/* without it, "sh" is a path relative to the folder: not found */
	o.path_search = 0;
	o.dir = "/";
	cr_assert_eq(proc_run(argv, &o, &r, &err), -1);
	cr_assert_eq(errno, ENOENT);
	free(err);
	proc_result_free(&r);
	assert_no_child();
}

/* The child's own pid, process group and session, from its stat (fields
 * 1, 5 and 6; its name, sh, has no space). */
static void
ids_of(const struct proc_opts *o, long *pid, long *pgid, long *sid)
{
	char *argv[] = { "/bin/sh", "-c", "cut -d' ' -f1,5,6 /proc/$$/stat", NULL };
	struct proc_result r;
	char *err;

	cr_assert_eq(proc_run(argv, o, &r, &err), 0, "%s", err ? err : "");
	cr_assert_eq(sscanf(r.out, "%ld %ld %ld", pid, pgid, sid), 3, "stat: %s", r.out);
	proc_result_free(&r);
}

Test(proc, new_session_leads_its_own_session_else_its_own_group)
{
	struct proc_opts o = { .stdin_fd = -1, .out_max = 256 };
	long pid, pgid, sid;

	ids_of(&o, &pid, &pgid, &sid);
	cr_assert_eq(pgid, pid);
	cr_assert_eq(sid, (long)getsid(0), "only a group of its own");
	o.new_session = 1;
	ids_of(&o, &pid, &pgid, &sid);
	cr_assert_eq(pgid, pid);
	cr_assert_eq(sid, pid, "a session of its own");
	assert_no_child();
}
