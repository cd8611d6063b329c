/* pipindex: the index URLs the user configured for pip, as pip reads
 * them (its config files' sections and keys, the environment over the
 * files), and the host and port a URL reaches. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/pipindex.h"

static char *
value(const char *text, const char *key)
{
	return pipindex_conf_value(text, strlen(text), key);
}

Test(pipindex, conf_sections_keys_and_continuations)
{
	char *v;

	v = value("[global]\nindex-url = https://g.example.invalid/simple\n", "index-url");
	cr_assert_str_eq(v, "https://g.example.invalid/simple");
	free(v);
	/* [install] wins over [global] whatever the order; _ is -. */
	v = value("[install]\nindex_url=https://i.example.invalid/\n[global]\n"
	    "index-url = https://g.example.invalid/\n", "index-url");
	cr_assert_str_eq(v, "https://i.example.invalid/");
	free(v);
	/* Other sections and comments do not count. */
	v = value("[freeze]\nindex-url = https://f.example.invalid/\n# index-url = x\n",
	    "index-url");
	cr_assert_null(v);
	/* A value continued on indented lines, as configparser reads it. */
	v = value("[global]\nextra-index-url =\n    https://a.example.invalid/\n"
	    "    https://b.example.invalid/\ntimeout = 5\n", "extra-index-url");
	cr_assert_str_eq(v, " https://a.example.invalid/ https://b.example.invalid/");
	free(v);
	v = value("[global]\nIndex-URL: https://c.example.invalid/", "index-url");
	cr_assert_str_eq(v, "https://c.example.invalid/");
	free(v);
}

Test(pipindex, url_host)
{
	char h[64];
	unsigned port;
	int cred;

	cr_assert_eq(pipindex_url_host("https://idx.example.invalid/simple", h, sizeof h,
	    &port, &cred), 0);
	cr_expect_str_eq(h, "idx.example.invalid");
	cr_expect_eq(port, 443);
	cr_expect_eq(cred, 0);
	cr_assert_eq(pipindex_url_host("http://User:tok@IDX.example.invalid:8080/s/", h,
	    sizeof h, &port, &cred), 0);
	cr_expect_str_eq(h, "idx.example.invalid");
	cr_expect_eq(port, 8080);
	cr_expect_eq(cred, 1);
	cr_assert_eq(pipindex_url_host("http://[2001:db8::1]:3141", h, sizeof h, &port,
	    &cred), 0);
	cr_expect_str_eq(h, "2001:db8::1");
	cr_expect_eq(port, 3141);
	cr_expect_eq(pipindex_url_host("ftp://x.example.invalid/", h, sizeof h, &port, &cred), -1);
	cr_expect_eq(pipindex_url_host("https://:443/", h, sizeof h, &port, &cred), -1);
	cr_expect_eq(pipindex_url_host("https://x.example.invalid:0/", h, sizeof h, &port,
	    &cred), -1);
	cr_expect_eq(pipindex_url_host("https://x.example.invalid:99999/", h, sizeof h,
	    &port, &cred), -1);
	cr_expect_eq(pipindex_url_host("https://x.example.invalid:1x/", h, sizeof h, &port,
	    &cred), -1);
}

Test(pipindex, find_files_then_environment)
{
	char dir[] = "/tmp/terp-pipindex-XXXXXX", path[256];
	FILE *fp;
	struct pipindex pi;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/pip.conf", dir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("[global]\nindex-url = https://file.example.invalid/simple\n"
	    "extra-index-url = https://e1.example.invalid/ https://e2.example.invalid/\n", fp);
	fclose(fp);
	{
		char cf[300];
		const char *envp[] = { cf, NULL };
		snprintf(cf, sizeof cf, "PIP_CONFIG_FILE=%s", path);
		pipindex_find(envp, NULL, &pi);
		cr_assert_eq(pi.n, 3);
		cr_expect_str_eq(pi.u[0].url, "https://file.example.invalid/simple");
		cr_expect_str_eq(pi.u[0].from, path);
		cr_expect_eq(pi.u[0].extra, 0);
		cr_expect_str_eq(pi.u[2].url, "https://e2.example.invalid/");
		cr_expect_eq(pi.u[2].extra, 1);
		pipindex_free(&pi);
	}
	{
		char cf[300];
		const char *envp[] = { cf, "PIP_INDEX_URL=https://env.example.invalid/",
			NULL };
		snprintf(cf, sizeof cf, "PIP_CONFIG_FILE=%s", path);
		pipindex_find(envp, NULL, &pi);
		cr_assert_eq(pi.n, 3);
		/* The environment's index replaces the file's; the extras stay. */
		for (size_t i = 0; i < pi.n; i++)
			if (!pi.u[i].extra) {
				cr_expect_str_eq(pi.u[i].url, "https://env.example.invalid/");
				cr_expect_str_eq(pi.u[i].from, "PIP_INDEX_URL");
			}
		pipindex_free(&pi);
	}
	{
		/* PIP_CONFIG_FILE=/dev/null: no file at all. */
		const char *envp[] = { "PIP_CONFIG_FILE=/dev/null", NULL };
		pipindex_find(envp, NULL, &pi);
		cr_expect_eq(pi.n, 0);
		pipindex_free(&pi);
	}
	unlink(path);
	rmdir(dir);
}

/* The replay's reinstall cell: only pip's characters reach the code (a
 * journal is a file on disk; a quote must not end the string), nothing
 * left is no cell. */
Test(pipindex, reinstall_code_takes_only_plain_specs)
{
	const char *specs[] = { "terp_idx_pkg==1.0", "evil\")==1", "x==1\"; import os",
	    "noversion", "polars==0.0.1", NULL };
	const char *bad[] = { "a\"b==1", "==1", "c==", NULL };
	char *code = pipindex_reinstall_code(specs);

	cr_assert_not_null(code);
	cr_assert(strstr(code, "_tw = [(\"terp_idx_pkg\", \"1.0\"), (\"polars\", \"0.0.1\")]\n")
	    != NULL, "%s", code);
	cr_assert(strstr(code, "evil") == NULL && strstr(code, "import os") == NULL);
	cr_assert(strstr(code, "\"--no-deps\"") != NULL);
	free(code);
	cr_assert_null(pipindex_reinstall_code(bad));
	cr_assert_null(pipindex_reinstall_code(NULL));
	cr_assert(pipindex_word_ok("1.0rc1+local.2!x"));
	cr_assert(!pipindex_word_ok(""));
	cr_assert(!pipindex_word_ok("a b"));
}

Test(pipindex, a_token_in_the_path_or_query_is_a_credential)
{
	char h[256];
	unsigned port;
	int cred;
	const char *yes[] = { "https://dl.example.invalid/AbCdEf1234567890xy/org/simple/",
	    "https://idx.example.invalid/t/s3cr3t-pass-4471/simple",
	    "https://idx.example.invalid/simple?token=abc",
	    "https://idx.example.invalid/simple?x=1&api_key=z" };
	const char *no[] = { "https://idx.example.invalid/simple",
	    "https://idx.example.invalid/whl/cu118",
	    "https://idx.example.invalid/api/pypi/pypi-remote/simple/",
	    "http://127.0.0.1:3141/root/pypi/+simple/" };

	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		cr_assert_eq(pipindex_url_host(yes[i], h, sizeof h, &port, &cred), 0);
		cr_expect_eq(cred, 1, "%s", yes[i]);
	}
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		cr_assert_eq(pipindex_url_host(no[i], h, sizeof h, &port, &cred), 0);
		cr_expect_eq(cred, 0, "%s", no[i]);
	}
}
