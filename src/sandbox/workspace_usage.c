/* workspace_usage: disk accounting of a workspace (see
 * workspace_usage.h). The walk uses openat/fstatat relative to
 * directory fds with O_NOFOLLOW and AT_SYMLINK_NOFOLLOW, so a sandbox
 * that renames or relinks things while we walk can at worst make us
 * count wrong, never make us leave the folder. */
#include "terp/workspace_usage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Directory fds open at once during a walk. A deeper tree is itself a
 * violation (nothing honest nests 256 folders deep), so data cannot be
 * hidden below the walk's reach. */
#define DEPTH_MAX	256

static int
over(const struct workspace_usage *u, uint64_t max_bytes, uint64_t max_inodes)
{
	return (max_bytes && u->bytes > max_bytes) ||
	    (max_inodes && u->inodes > max_inodes);
}

/* Walks the directory open as fd (which it closes). */
static void
walk(int fd, dev_t dev, int depth, uint64_t max_bytes, uint64_t max_inodes,
    struct workspace_usage *u)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (d == NULL) {
		close(fd);
		return;
	}
	while (!u->stopped && (e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* gone meanwhile */
		u->inodes++;
		u->bytes += (uint64_t)st.st_blocks * 512;
		if (over(u, max_bytes, max_inodes)) {
			u->stopped = 1;
			break;
		}
		if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
			int sub;
			if (depth + 1 >= DEPTH_MAX) {
				u->too_deep = 1;
				u->stopped = 1;
				break;
			}
			sub = openat(dirfd(d), e->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk(sub, dev, depth + 1, max_bytes, max_inodes, u);
		}
	}
	closedir(d);
}

int
workspace_usage_tree(const char *dir, uint64_t max_bytes, uint64_t max_inodes,
    struct workspace_usage *u)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	u->inodes++;
	u->bytes += (uint64_t)st.st_blocks * 512;
	if (over(u, max_bytes, max_inodes)) {
		u->stopped = 1;
		close(fd);
		return 0;
	}
	walk(fd, st.st_dev, 0, max_bytes, max_inodes, u);
	return 0;
}

void
workspace_usage_deleted_open(pid_t pid, dev_t dev, struct workspace_usage *u)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if ((d = opendir(path)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		/* Following the fd's magic link stats the open file itself. */
		if (fstatat(dirfd(d), e->d_name, &st, 0) < 0)
			continue;
		if (S_ISREG(st.st_mode) && st.st_nlink == 0 && st.st_dev == dev) {
			u->inodes++;
			u->bytes += (uint64_t)st.st_blocks * 512;
		}
	}
	closedir(d);
}
