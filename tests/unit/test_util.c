/* util: write_file_atomic, the one atomic writer. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

static char *
tmpdir(void)
{
	char *d = strdup("/tmp/terp-util-XXXXXX");
	cr_assert_not_null(mkdtemp(d));
	return d;
}

static int
entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void
rm(const char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

Test(util, atomic_write_replaces_with_the_mode_asked)
{
	char *d = tmpdir(), *p = xasprintf("%s/f", d), *text;
	struct stat st;
	size_t len;
	mode_t old = umask(077);

	cr_assert_eq(write_file_atomic(p, "one", 3, 0644, WRITE_SYNC), 0);
	cr_assert_eq(write_file_atomic(p, "two!", 4, 0644, 0), 0);
	umask(old);
	text = read_file(p, 100, &len);
	cr_assert_str_eq(text, "two!");
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
	cr_assert_eq(entries(d), 1, "a temporary file was left behind");
	free(text);
	free(p);
	rm(d);
	free(d);
}

Test(util, atomic_write_failure_leaves_nothing)
{
	char *d = tmpdir(), *p = xasprintf("%s/sub", d);

	/* the target is a folder: the rename fails, the temporary goes */
	cr_assert_eq(mkdir(p, 0700), 0);
	errno = 0;
	cr_assert_eq(write_file_atomic(p, "x", 1, 0600, 0), -1);
	cr_assert_neq(errno, 0);
	cr_assert_eq(entries(d), 1);
	free(p);
	/* no folder to write in */
	p = xasprintf("%s/missing/f", d);
	cr_assert_eq(write_file_atomic(p, "x", 1, 0600, 0), -1);
	cr_assert_eq(errno, ENOENT);
	free(p);
	rm(d);
	free(d);
}
