/* The kernel's lifecycle edges that need no sandbox: a kernel that was
 * never started owns no descriptor, so freeing it closes none (it used
 * to close fd 0: the launcher's pipe and pidfd fields started at 0);
 * and what a session reports of its Python. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/kernel.h"
#include "terp/loop.h"

Test(kernel, free_before_start_closes_no_descriptor)
{
	struct kernel_opts o;
	struct kernel_cbs cbs = { 0 };
	struct loop *l = loop_new();
	struct kernel *k;
	int fd = open("/dev/null", O_RDONLY);

	/* fd 0 must be open to see it closed: the lowest free number. */
	cr_assert(fd >= 0);
	if (fd != 0)
		close(fd);
	cr_assert_neq(fcntl(0, F_GETFD), -1, "fd 0 is not open before the test");
	kernel_opts_default(&o);
	o.session_dir = "/nonexistent/terp-unit";
	k = kernel_new(l, &o, &cbs, NULL);
	kernel_free(k);
	cr_assert_neq(fcntl(0, F_GETFD), -1, "kernel_free closed fd 0");
	loop_free(l);
}

/* A real kernel (Python run without the sandbox, so no bwrap is
 * needed): the driver's "ready" carries the probe of its interpreter,
 * which kernel_python_info turns into the prompt's sentence; a package
 * that appears in the session's site directory during a cell comes back
 * through the installed callback, a malformed name does not; without
 * allowed hosts there is no egress to change. */
struct kt {
	struct loop	*l;
	struct kernel	*k;
	int		 results, installed;
	char		 name[64], version[64];
	enum cell_status status;
	int		 timed_out;
};

static void
kt_result(void *arg, int cell, const struct kernel_result *r)
{
	struct kt *t = arg;

	t->results++;
	t->status = r->status;
	loop_stop(t->l);
}

static void
kt_installed(void *arg, int cell, const char *name, const char *version)
{
	struct kt *t = arg;

	t->installed++;
	snprintf(t->name, sizeof t->name, "%s", name);
	snprintf(t->version, sizeof t->version, "%s", version);
}

static void
kt_deadline(struct loop *l, void *arg)
{
	struct kt *t = arg;

	t->timed_out = 1;
	loop_stop(l);
}

Test(kernel, probe_and_installed_packages)
{
	struct kernel_opts o;
	struct kernel_cbs cbs = { .result = kt_result, .installed = kt_installed };
	struct kt t = { 0 };
	char dir[] = "/tmp/terp-kernel-XXXXXX", sdir[64], out[64];
	char *err = NULL, *label;
	const char *info;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sdir, sizeof sdir, "%s/s", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	setenv("TERP_NO_PRELOAD", "1", 1);
	kernel_opts_default(&o);
	o.no_sandbox = 1;
	o.session_dir = sdir;
	o.out_dir = out;
	t.l = loop_new();
	t.k = kernel_new(t.l, &o, &cbs, &t);
	cr_assert_null(kernel_python_info(t.k), "known before the sandbox said");
	cr_assert_eq(kernel_start(t.k, &err), 0, "%s", err);
	cr_assert_eq(kernel_run(t.k, 1,
	    "import os\n"
	    "d = os.environ['PIP_TARGET']\n"
	    "os.makedirs(os.path.join(d, 'fakepkg-1.2.3.dist-info'))\n"
	    "os.makedirs(os.path.join(d, 'bad name-1.dist-info'))\n", &err), 0, "%s", err);
	loop_timer_add(t.l, 60000, kt_deadline, &t);
	loop_run(t.l);
	cr_assert_eq(t.timed_out, 0, "no result within 60 s");
	cr_assert_eq(t.status, CELL_OK);
	cr_expect_eq(t.installed, 1);
	cr_expect_str_eq(t.name, "fakepkg");
	cr_expect_str_eq(t.version, "1.2.3");
	info = kernel_python_info(t.k);
	cr_assert_not_null(info);
	cr_expect(strncmp(info, "Python 3.", 9) == 0, "%s", info);
	label = kernel_python_label(t.k);
	cr_expect(label != NULL && strncmp(label, "Python 3.", 9) == 0);
	free(label);
	cr_expect_eq(kernel_egress_allow(t.k, "example.invalid", &err), -1);
	cr_expect(err != NULL && strstr(err, "--allow-host") != NULL);
	free(err);
	kernel_free(t.k);
	loop_free(t.l);
	{
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		cr_expect_eq(system(cmd), 0);
	}
}
