/* Unit tests of sandbox_start's disk bound with the real loop: each
 * measure runs on a thread of its own, its verdict comes back on the
 * loop (a workspace over its limit is said through the over callback),
 * and stopping waits for a measure in flight. No sandbox is launched:
 * the workspace is measured as the bound would measure a live one. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/loop.h"
#include "terp/sandbox_start.h"
#include "terp/util.h"
#include "terp/workspace.h"

struct t {
	char			 dir[64];
	struct workspace	*ws;
	struct loop		*loop;
	struct sandbox_run	 run;
	char			*why;		/* over's, taken */
	int			 overs;
};

static pid_t
no_root(void *arg)
{
	(void)arg;
	return 0;
}

static void
on_over(void *arg, char *why)
{
	struct t *t = arg;

	t->overs++;
	free(t->why);
	t->why = why;
	loop_stop(t->loop);
}

static const struct sandbox_disk_cbs cbs = { no_root, on_over };

static void
setup(struct t *t, uint64_t disk)
{
	char *err = NULL;

	memset(t, 0, sizeof *t);
	strcpy(t->dir, "/tmp/terp-unit-disk.XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	t->ws = workspace_new(t->dir, 1, disk, 0);
	cr_assert_eq(workspace_prepare(t->ws, &err), 0, "%s", err ? err : "");
	cr_assert_eq(workspace_disk_baseline(t->ws, 0, &err), 0, "%s", err ? err : "");
	t->loop = loop_new();
	sandbox_run_disk(&t->run, t->loop, t->ws, 1, &cbs, t);
}

static void
teardown(struct t *t)
{
	char *cmd = xasprintf("rm -rf '%s'", t->dir);

	sandbox_run_free(&t->run);
	workspace_free(t->ws);
	loop_free(t->loop);
	free(t->why);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

/* A file of n bytes (written, so its blocks count) in the workspace. */
static void
fill(struct t *t, const char *name, size_t n)
{
	char *path = xasprintf("%s/%s", workspace_dir(t->ws), name);
	char *b = xcalloc(1, n);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	close(fd);
	free(b);
	free(path);
}

/* Runs the loop until over is called or ms pass. */
static void
run_for(struct t *t, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (t->overs == 0 && now_ms() < end)
		loop_run_once(t->loop, 20);
}

Test(sandbox_start, a_workspace_over_its_limit_is_said_from_the_walk)
{
	struct t t;

	setup(&t, 1 << 20);
	sandbox_run_disk_arm(&t.run);
	run_for(&t, 300);
	cr_assert_eq(t.overs, 0, "within the limit, yet: %s", t.why);
	fill(&t, "big", 2 << 20);
	sandbox_run_disk_soon(&t.run);
	run_for(&t, 5000);
	cr_assert_eq(t.overs, 1);
	cr_assert(strstr(t.why, "disk limit of 1 MiB") != NULL, "%s", t.why);
	cr_assert_null(t.run.walk, "the walk's end was not read back");
	teardown(&t);
}

Test(sandbox_start, stopping_waits_for_a_walk_in_flight)
{
	struct t t;
	char name[32];

	setup(&t, 1ULL << 30);
	/* enough files that the walk is likely still going when stopped */
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof name, "f%04d", i);
		fill(&t, name, 1);
	}
	sandbox_run_disk_arm(&t.run);
	sandbox_run_disk_soon(&t.run);
	loop_run_once(t.loop, 0);	/* the timer at 0: a walk starts */
	cr_assert_not_null(t.run.walk, "no walk was started");
	sandbox_run_disk_stop(&t.run);
	cr_assert_null(t.run.walk);
	/* nothing is left to come back: the loop runs dry */
	loop_run_once(t.loop, 200);
	cr_assert_eq(t.overs, 0);
	teardown(&t);
}
