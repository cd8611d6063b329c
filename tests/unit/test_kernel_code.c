/* Unit tests for kernel_code.c: the cache file of the driver's compiled
 * code is named after everything the code depends on, and only a file
 * of ours that nobody else can write, reached without a symlink, with
 * the blob's shape and a bounded size is ever loaded. The round trip
 * through a real sandbox: tests/integration/test_exec.py. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/kernel_code.h"
#include "terp/pyenv.h"
#include "terp/util.h"

static char dir[64];

static void
setup(void)
{
	strcpy(dir, "/tmp/terp-kcode-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static char *
put(const char *name, const void *data, size_t len, unsigned mode)
{
	char *p = xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	cr_assert_eq(chmod(p, mode), 0);
	return p;
}

static const char good[] = KCODE_MAGIC "\x02\x0b\x03\xf0\0\0\0\0" "marshalled code";

Test(kcode, loads_a_private_file_of_ours, .init = setup, .fini = teardown)
{
	char *p = put("a.code", good, sizeof good, 0600);
	size_t n = 0;
	unsigned char *b = kcode_load(p, &n);
	cr_assert_not_null(b);
	cr_assert_eq(n, sizeof good);
	cr_assert_eq(memcmp(b, good, n), 0);
	free(b);
	free(p);
}

Test(kcode, refuses_files_others_can_write, .init = setup, .fini = teardown)
{
	static const unsigned modes[] = { 0602, 0620, 0622, 0666 };
	size_t n;
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		char *p = put("w.code", good, sizeof good, modes[i]);
		cr_assert_null(kcode_load(p, &n), "mode %o loaded", modes[i]);
		free(p);
	}
}

Test(kcode, refuses_a_file_of_another_uid, .init = setup, .fini = teardown)
{
	char *p = put("u.code", good, sizeof good, 0600);
	size_t n;
	/* As root (the tests' setting) the file can be given away; as
	 * anyone else, at least our own file must load. */
	if (geteuid() == 0) {
		cr_assert_eq(chown(p, 12345, (gid_t)-1), 0);
		cr_assert_null(kcode_load(p, &n));
	} else {
		unsigned char *b = kcode_load(p, &n);
		cr_assert_not_null(b);
		free(b);
	}
	free(p);
}

Test(kcode, refuses_symlinks_and_bad_blobs, .init = setup, .fini = teardown)
{
	char *p = put("a.code", good, sizeof good, 0600), *l = xasprintf("%s/l.code", dir);
	size_t n;
	cr_assert_eq(symlink(p, l), 0);
	cr_assert_null(kcode_load(l, &n));
	free(p);
	p = put("m.code", "TERPCODX\0\0\0\0\0\0\0\0xyz", 19, 0600);
	cr_assert_null(kcode_load(p, &n));
	free(p);
	p = put("s.code", good, KCODE_HEAD, 0600);
	cr_assert_null(kcode_load(p, &n));
	free(p);
	cr_assert_null(kcode_load("/nonexistent/x.code", &n));
	free(l);
}

Test(kcode, store_is_private_and_round_trips, .init = setup, .fini = teardown)
{
	char *p = xasprintf("%s/sub/dir/x.code", dir);
	struct stat st;
	size_t n;
	unsigned char *b;

	kcode_store(p, good, sizeof good);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	b = kcode_load(p, &n);
	cr_assert_not_null(b);
	cr_assert_eq(n, sizeof good);
	free(b);
	/* Not a blob: nothing written. */
	kcode_store(p, "garbage", 7);
	b = kcode_load(p, &n);
	cr_assert_not_null(b);
	free(b);
	free(p);
}

Test(kcode, name_follows_driver_and_interpreter, .init = setup, .fini = teardown)
{
	char *bin = put("python3", "#!", 2, 0755);
	struct pyenv pe = { .exec = bin, .real = bin };
	char *a = kcode_file(dir, &pe, "driver 1");
	char *b = kcode_file(dir, &pe, "driver 2");
	char *c, *d;
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_str_neq(a, b);
	cr_assert_eq(strncmp(a, dir, strlen(dir)), 0);
	/* The binary replaced (another stat): another file. */
	cr_assert_eq(utimensat(AT_FDCWD, bin, ts, 0), 0);
	c = kcode_file(dir, &pe, "driver 1");
	cr_assert_str_neq(a, c);
	/* Another path to it (a venv's python): another file. */
	pe.exec = "/venv/bin/python3";
	d = kcode_file(dir, &pe, "driver 1");
	cr_assert_str_neq(c, d);
	cr_assert_null(kcode_file(NULL, &pe, "driver 1"));
	pe.real = "/nonexistent/python3";
	cr_assert_null(kcode_file(dir, &pe, "driver 1"));
	free(a);
	free(b);
	free(c);
	free(d);
	free(bin);
}
