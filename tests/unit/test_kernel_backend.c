/* kernel_backend and kernel_ssh: --sandbox's forms, the names shown for
 * them (never a user, password or token), and the ssh spec's checks
 * (nothing that ssh would take as an option). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel.h"
#include "terp/kernel_backend.h"
#include "terp/kernel_ssh.h"
#include "terp/loop.h"

static void out_cb(void *a, int c, int s, const char *p, size_t n) { (void)a; (void)c; (void)s; (void)p; (void)n; }
static void res_cb(void *a, int c, const struct kernel_result *r) { (void)a; (void)c; (void)r; }
static void art_cb(void *a, int c, const char *n, const char *p, uint64_t b) { (void)a; (void)c; (void)n; (void)p; (void)b; }
static void st_cb(void *a, const struct kernel_status *s) { (void)a; (void)s; }

static const struct kernel_cbs cbs = {
	.output = out_cb, .result = res_cb, .artifact = art_cb, .state = st_cb,
};

Test(kernel_backend, kinds)
{
	char *err = NULL;

	cr_assert_eq(kernel_backend_kind(NULL, &err), KERNEL_LOCAL);
	cr_assert_eq(kernel_backend_kind("", &err), KERNEL_LOCAL);
	cr_assert_eq(kernel_backend_kind("local", &err), KERNEL_LOCAL);
	cr_assert_eq(kernel_backend_kind("ssh://box", &err), KERNEL_SSH);
	cr_assert_eq(kernel_backend_kind("jupyter+http://127.0.0.1:8888", &err), KERNEL_JUPYTER);
	cr_assert_eq(kernel_backend_kind("jupyter+https://h.example.invalid/user/me", &err),
	    KERNEL_JUPYTER);
	cr_assert_eq(kernel_backend_kind("aca:https://x.example.invalid/p", &err), KERNEL_ACA);
	cr_assert_null(err);
	const char *bad[] = { "ssh://", "ssh:///x", "jupyter+http://", "http://h", "aca:",
	    "Local", "ssh:box", "\x1b[2Jx" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(kernel_backend_kind(bad[i], &err), -1, "%s", bad[i]);
		cr_assert(strstr(err, "--sandbox takes local, ssh://") != NULL);
		cr_assert(strchr(err, '\x1b') == NULL, "escape in the message");
		free(err);
		err = NULL;
	}
}

Test(kernel_backend, ssh_specs)
{
	char *err = NULL;
	const char *good[] = { "ssh://box", "ssh://me@box", "ssh://me@box:2222",
	    "ssh://10.0.0.1", "ssh://[::1]:22", "ssh://box.example.invalid" };
	const char *bad[] = { "ssh://-oProxyCommand=x", "ssh://me@-oX", "ssh://-l@box",
	    "ssh://box:0", "ssh://box:70000", "ssh://box:22x", "ssh://a b", "ssh://box;id",
	    "ssh://@box", "ssh://box/path", "ssh://box:" };

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		cr_assert_eq(kernel_ssh_check(good[i], &err), 0, "%s: %s", good[i], err);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(kernel_ssh_check(bad[i], &err), -1, "%s", bad[i]);
		cr_assert(strstr(err, "is not ssh://[user@]host[:port]") != NULL);
		free(err);
		err = NULL;
	}
}

Test(kernel_backend, remote_paths)
{
	cr_assert(kernel_ssh_remote_path("box:/srv/data.csv"));
	cr_assert(kernel_ssh_remote_path("me@box:/srv/data.csv"));
	cr_assert_not(kernel_ssh_remote_path("data.csv"));
	cr_assert_not(kernel_ssh_remote_path("./a:/b"));
	cr_assert_not(kernel_ssh_remote_path("box:relative"));
	cr_assert_not(kernel_ssh_remote_path(":/x"));
}

/* Where each backend says it runs: the host, never a user, a password,
 * the pool's path or query. */
Test(kernel_backend, where)
{
	struct loop *l = loop_new();
	struct {
		const char *spec, *where;
	} t[] = {
		{ "ssh://me@box:2222", "ssh box:2222" },
		{ "jupyter+http://127.0.0.1:9/base", "jupyter 127.0.0.1:9" },
		{ "jupyter+https://u:secret@h.example.invalid/user/me", "jupyter h.example.invalid" },
		{ "aca:http://127.0.0.1:9/subscriptions/s/resourceGroups/r/sessionPools/mypool?a=b",
		  "aca pool mypool" },
	};

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct kernel_opts o;
		struct kernel *k;

		kernel_opts_default(&o);
		o.sandbox = t[i].spec;
		o.sandbox_token_env = "TERP_UNIT_NO_SUCH_VAR";
		o.out_dir = "out";
		cr_assert(kernel_opts_remote(&o));
		k = kernel_new(l, &o, &cbs, NULL);
		cr_assert_str_eq(kernel_where(k), t[i].where);
		cr_assert_not_null(kernel_isolation(k));
		cr_assert_eq(kernel_state(k), KERNEL_STOPPED);
		cr_assert_eq(kernel_busy(k), 0);
		cr_assert_null(kernel_python_label(k));
		kernel_free(k);
	}
	{
		struct kernel_opts o;
		kernel_opts_default(&o);
		cr_assert_not(kernel_opts_remote(&o));
		o.sandbox = "local";
		cr_assert_not(kernel_opts_remote(&o));
	}
	loop_free(l);
}
