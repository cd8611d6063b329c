/* rm_tree (util.h): a depth-first removal by descriptors that reaches
 * trees deeper than PATH_MAX, never follows a link, and opens up
 * folders made read-only. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

Test(rm_tree, deeper_than_path_max_with_links_and_read_only_folders)
{
	char tmpl[] = "/tmp/terp-rmtree-XXXXXX", outside[] = "/tmp/terp-rmkeep-XXXXXX";
	char *root, path[64];
	int fd, levels = 2 * PATH_MAX / 40 + 10;
	struct stat st;

	root = mkdtemp(tmpl);
	cr_assert_not_null(root);
	cr_assert_not_null(mkdtemp(outside));
	snprintf(path, sizeof path, "%s/keep.txt", outside);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	/* levels of 39-character names: the whole path is over 2 * PATH_MAX */
	fd = open(root, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < levels; i++) {
		const char *n = "d-23456789012345678901234567890123456789";
		int nfd;
		cr_assert_eq(mkdirat(fd, n, 0755), 0);
		if (i % 50 == 0) {
			int f = openat(fd, "f.txt", O_WRONLY | O_CREAT, 0600);
			close(f);
			cr_assert_eq(symlinkat(outside, fd, "link-out"), 0);
		}
		nfd = openat(fd, n, O_RDONLY | O_DIRECTORY);
		cr_assert_geq(nfd, 0);
		if (i % 97 == 0)
			(void)fchmod(fd, 0500);	/* read-only on the way */
		close(fd);
		fd = nfd;
	}
	close(fd);
	cr_assert_eq(rm_tree(root), 0, "%s", strerror(errno));
	cr_assert_eq(lstat(root, &st), -1);
	cr_assert_eq(errno, ENOENT);
	/* what the links named is still there */
	cr_assert_eq(stat(path, &st), 0);
	unlink(path);
	rmdir(outside);
}

Test(rm_tree, a_file_or_nothing)
{
	char tmpl[] = "/tmp/terp-rmfile-XXXXXX";
	int fd = mkstemp(tmpl);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rm_tree(tmpl), 0);
	cr_assert_eq(access(tmpl, F_OK), -1);
	cr_assert_eq(rm_tree(tmpl), 0);		/* already gone */
}
