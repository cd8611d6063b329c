#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/sandbox_cgroup.h"
#include "terp/util.h"

static void
put(const char *dir, const char *file, const char *text)
{
	char *p = xasprintf("%s/%s", dir, file);
	FILE *f = fopen(p, "w");

	cr_assert_not_null(f, "%s", p);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	free(p);
}

/* The file's text; a new string. */
static char *
get(const char *dir, const char *file)
{
	char *p = xasprintf("%s/%s", dir, file), *s = read_file(p, 4096, NULL);

	cr_assert_not_null(s, "%s", p);
	free(p);
	return s;
}

Test(sandbox_cgroup, parses_self_from_a_hybrid_hierarchy)
{
	char *p = sandbox_cgroup_parse_self("12:pids:/user.slice\n1:name=systemd:/x\n0::/user.slice/terp.scope\n");
	cr_assert_str_eq(p, "/user.slice/terp.scope");
	free(p);
	cr_assert_null(sandbox_cgroup_parse_self("4:memory:/\n3:cpu:/\n"));
}

Test(sandbox_cgroup, finds_the_cgroup2_mount)
{
	const char *mi =
	    "25 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
	    "35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	    "36 25 0:31 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n";
	char *m = sandbox_cgroup_parse_mount(mi);
	cr_assert_str_eq(m, "/sys/fs/cgroup/unified");
	free(m);
	cr_assert_null(sandbox_cgroup_parse_mount("25 30 0:22 / /sys rw - sysfs sysfs rw\n"));
}

Test(sandbox_cgroup, controller_lists_match_whole_words)
{
	cr_assert(sandbox_cgroup_has_controller("cpu io memory pids\n", "memory"));
	cr_assert(sandbox_cgroup_has_controller("memory", "memory"));
	cr_assert_not(sandbox_cgroup_has_controller("cpu hugetlb", "memory"));
	cr_assert_not(sandbox_cgroup_has_controller("memoryx pidsy", "pids"));
}

/* ---- a fake cgroup tree in a temporary folder (sandbox_cgroup_create_in) ---- */

static char *
fake_tree(const char *subtree_control)
{
	char *d = xstrdup("/tmp/terp-cgroup-XXXXXX");

	cr_assert_not_null(mkdtemp(d));
	put(d, "cgroup.subtree_control", subtree_control);
	return d;
}

/* What a real cgroupfs creates in a new child of a group that delegates
 * memory and pids; a plain folder has none of these. */
static char *
fake_child(const char *parent, const char *name)
{
	static const char *files[] = { "memory.max", "memory.swap.max",
	    "memory.oom.group", "pids.max", "cgroup.procs", "cgroup.kill" };
	char *d = xasprintf("%s/%s", parent, name);

	cr_assert_eq(mkdir(d, 0755), 0);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		put(d, files[i], "");
	put(d, "memory.events", "low 0\nhigh 0\nmax 7\noom 4\noom_kill 3\n");
	return d;
}

static void
rm_rf(const char *d)
{
	char *cmd = xasprintf("rm -rf '%s'", d);

	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

Test(sandbox_cgroup, delegated_tree_gets_the_limits)
{
	char *root = fake_tree("cpu io memory pids\n"), *why = NULL, *s;
	char *child = fake_child(root, "terp-1");
	struct sandbox_cgroup *cg = sandbox_cgroup_create_in(root, "terp-1", 64 << 20, 32, &why);

	cr_assert_not_null(cg, "%s", why);
	cr_assert_str_eq(s = get(child, "memory.max"), "67108864");
	free(s);
	cr_assert_str_eq(s = get(child, "memory.swap.max"), "0");
	free(s);
	cr_assert_str_eq(s = get(child, "memory.oom.group"), "1");
	free(s);
	cr_assert_str_eq(s = get(child, "pids.max"), "32");
	free(s);
	/* the fd a forked child writes "0" to, to move itself in */
	cr_assert_eq(write(sandbox_cgroup_procs_fd(cg), "0", 1), 1);
	cr_assert_str_eq(s = get(child, "cgroup.procs"), "0");
	free(s);
	cr_assert_eq(sandbox_cgroup_oom_kills(cg), 3);
	sandbox_cgroup_destroy(cg);
	cr_assert_str_eq(s = get(child, "cgroup.kill"), "1", "not killed on destroy");
	free(s);
	rm_rf(root);
	free(child);
	free(root);
}

Test(sandbox_cgroup, missing_controllers_say_why_and_create_nothing)
{
	static const char *lists[] = { "cpu io pids\n", "memory\n", "memoryx pids\n", "" };

	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		char *root = fake_tree(lists[i]), *why = NULL;
		char *child = xasprintf("%s/terp-2", root);

		cr_assert_null(sandbox_cgroup_create_in(root, "terp-2", 1 << 20, 8, &why),
		    "created with subtree_control %s", lists[i]);
		cr_assert_not_null(why);
		cr_assert_not_null(strstr(why, "no memory controller delegated"), "%s", why);
		cr_assert_not_null(strstr(why, root), "%s", why);
		cr_assert_neq(access(child, F_OK), 0, "left %s behind", child);
		free(why);
		rm_rf(root);
		free(child);
		free(root);
	}
}

Test(sandbox_cgroup, a_child_without_memory_max_is_refused_and_removed)
{
	/* A group that lists the controllers but whose child gets no
	 * memory.max (a plain folder here) cannot be bounded: refused, and
	 * the half-made group is removed. */
	char *root = fake_tree("memory pids\n"), *why = NULL;
	char *child = xasprintf("%s/terp-3", root);

	cr_assert_null(sandbox_cgroup_create_in(root, "terp-3", 1 << 20, 8, &why));
	cr_assert_not_null(why);
	cr_assert_not_null(strstr(why, "cannot set memory.max"), "%s", why);
	cr_assert_neq(access(child, F_OK), 0, "left %s behind", child);
	free(why);
	rm_rf(root);
	free(child);
	free(root);
}

Test(sandbox_cgroup, kill_without_cgroup_kill_signals_every_member, .timeout = 60)
{
	/* Before Linux 5.14 there is no cgroup.kill: every pid listed in
	 * cgroup.procs gets SIGKILL. The member dies with its test worker
	 * (PR_SET_PDEATHSIG), so a sandbox_cgroup_kill that does nothing fails at
	 * the timeout without leaving a process behind. */
	char *root = fake_tree("memory pids\n"), *why = NULL, *child, *list;
	struct sandbox_cgroup *cg;
	int st, p[2];
	pid_t pid;
	char c;

	child = fake_child(root, "terp-4");
	list = xasprintf("%s/cgroup.kill", child);
	cr_assert_eq(unlink(list), 0);
	free(list);
	cg = sandbox_cgroup_create_in(root, "terp-4", 1 << 20, 8, &why);
	cr_assert_not_null(cg, "%s", why);
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
			_exit(1);
		if (write(p[1], "r", 1) != 1)	/* ready: the parent is alive */
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	list = xasprintf("%d\n", (int)pid);
	put(child, "cgroup.procs", list);
	free(list);
	sandbox_cgroup_kill(cg);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	/* reaped: its pid may be anyone's now, so it leaves the list
	 * before sandbox_cgroup_destroy kills the members again */
	put(child, "cgroup.procs", "");
	sandbox_cgroup_destroy(cg);
	rm_rf(root);
	free(child);
	free(root);
}

Test(sandbox_cgroup, this_machine_answers_with_a_known_reason)
{
	/* Whatever this machine delegates, the call answers cleanly: a
	 * group, or one of the reasons terp shows the user. */
	static const char deleg[] = "no memory controller delegated to terp's cgroup (/";
	char *why = NULL;
	struct sandbox_cgroup *cg = sandbox_cgroup_create("terp-unit-test", 64 << 20, 32, &why);

	if (cg == NULL) {
		cr_assert_not_null(why);
		cr_assert(strcmp(why, "no cgroup v2 hierarchy") == 0 ||
		    strncmp(why, deleg, sizeof deleg - 1) == 0 ||
		    strncmp(why, "cannot ", 7) == 0, "%s", why);
		free(why);
	} else {
		cr_assert_geq(sandbox_cgroup_procs_fd(cg), 0);
		cr_assert_geq(sandbox_cgroup_oom_kills(cg), 0);
		sandbox_cgroup_destroy(cg);
	}
}
