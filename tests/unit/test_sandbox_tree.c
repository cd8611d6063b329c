/* Unit tests for sandbox_tree_quiet (sandbox_tree.c): the cheap look at
 * a cell's end says "quiet" only when the known processes are all there
 * is under the root (one thread each, children exactly the others), so
 * that skipping the walk of /proc never spares a stray. A process tree
 * of our own stands in for the sandbox's: this test process is the
 * root, a forked child the driver's Python. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/sandbox_tree.h"

enum { STRAY = 1, GRANDCHILD = 2, THREAD = 4, REAPS = 8 };

static void *
idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void
wait_forever(void)
{
	for (;;)
		pause();
}

/* A sandbox of our own, in its own process group: a root process (the
 * sandbox's init) with one child (the driver's Python), and what how
 * asks for: a stray beside it, a child of it, a second thread in the
 * root, children reaped at once. Returns the root; *py its child. */
static pid_t
spawn_tree(int how, pid_t *py)
{
	int p[2];
	pid_t root, kid = 0;

	cr_assert_eq(pipe(p), 0);
	root = fork();
	cr_assert_geq(root, 0);
	if (root == 0) {
		pthread_t t;
		close(p[0]);
		setpgid(0, 0);
		if (how & REAPS)
			signal(SIGCHLD, SIG_IGN);	/* no zombies */
		kid = fork();
		if (kid == 0) {
			if ((how & GRANDCHILD) && fork() == 0)
				wait_forever();
			usleep(100000);	/* its own child forked first */
			wait_forever();
		}
		if ((how & STRAY) && fork() == 0)
			wait_forever();
		if ((how & THREAD) && pthread_create(&t, NULL, idle, NULL) != 0)
			_exit(1);
		usleep(200000);		/* every one of them there */
		if (write(p[1], &kid, sizeof kid) != sizeof kid)
			_exit(1);
		wait_forever();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], py, sizeof *py), (ssize_t)sizeof *py);
	close(p[0]);
	return root;
}

static void
reap(pid_t root)
{
	kill(-root, SIGKILL);
	kill(root, SIGKILL);
	waitpid(root, NULL, 0);
}

Test(sandbox_tree, quiet_when_the_known_ones_are_all)
{
	struct sandbox_tree_known q;
	pid_t py, root = spawn_tree(0, &py), keep[2] = { py, 0 };

	sandbox_tree_known_init(&q);
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 1);
	/* again, from the handles held */
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 1);
	/* the root among the kept ones (no sandbox: Python is the root) */
	keep[1] = root;
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 1);
	sandbox_tree_known_reset(&q);
	reap(root);
}

Test(sandbox_tree, not_quiet_with_a_stray_beside_or_under_python)
{
	struct sandbox_tree_known q;
	pid_t py, root, keep[2] = { 0, 0 };

	sandbox_tree_known_init(&q);
	root = spawn_tree(STRAY, &py);
	keep[0] = py;
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 0);
	/* what the walk finds and kills is what the look saw */
	cr_expect_geq(sandbox_tree_kill_strays(root, keep, 2, 2000), 1);
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 0);	/* a zombie yet */
	reap(root);
	sandbox_tree_known_reset(&q);

	root = spawn_tree(GRANDCHILD, &py);
	keep[0] = py;
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 0);
	sandbox_tree_known_reset(&q);
	reap(root);
}

Test(sandbox_tree, not_quiet_once_a_known_one_died_or_runs_threads)
{
	struct sandbox_tree_known q;
	pid_t py, root = spawn_tree(REAPS, &py), keep[2] = { py, 0 };

	sandbox_tree_known_init(&q);
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 1);
	kill(py, SIGKILL);
	usleep(200000);
	/* the held handles read it as dead, whatever gets its pid */
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 0);
	sandbox_tree_known_reset(&q);
	reap(root);

	/* a second thread in the root: children could hide under it */
	root = spawn_tree(THREAD, &py);
	keep[0] = py;
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 0);
	sandbox_tree_known_reset(&q);
	reap(root);
}

Test(sandbox_tree, not_quiet_when_a_kept_one_is_missing)
{
	struct sandbox_tree_known q;
	pid_t py, root = spawn_tree(0, &py), keep[2] = { py, 1 };	/* 1: not its child */

	sandbox_tree_known_init(&q);
	cr_expect_eq(sandbox_tree_quiet(&q, root, keep, 2), 0);
	cr_expect_eq(sandbox_tree_quiet(&q, -1, keep, 2), 0);
	sandbox_tree_known_reset(&q);
	reap(root);
}
