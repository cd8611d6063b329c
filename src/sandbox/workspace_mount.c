/* workspace_mount: detached, read-only, idmapped mounts of data files
 * (see workspace_mount.h). */
#include "terp/workspace_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/util.h"

static int
map_write(pid_t pid, const char *file, unsigned from, unsigned to)
{
	char path[64], line[64];
	int n = snprintf(line, sizeof line, "%u %u 1\n", from, to), rc;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = write_all(fd, line, (size_t)n);
	close(fd);
	return rc;
}

int
workspace_mount_userns(uid_t uid, gid_t gid, uid_t to)
{
	char path[64];
	int go[2], ready[2], fd = -1, saved = 0;
	char c = 0;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(ready, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		return -1;
	}
	if ((pid = fork()) < 0) {
		saved = errno;
		goto out;
	}
	if (pid == 0) {
		/* In a user namespace of its own, until the parent has its
		 * maps written and its fd open. */
		char ok;
		close(go[1]);		/* or its read would never end */
		close(ready[0]);
		ok = unshare(CLONE_NEWUSER) == 0 ? 1 : 0;
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(ready[1]);
	ready[1] = -1;
	while (read(ready[0], &c, 1) < 0 && errno == EINTR)
		;
	if (c != 1) {
		saved = EPERM;
	} else if (map_write(pid, "uid_map", (unsigned)uid, (unsigned)to) < 0 ||
	    map_write(pid, "gid_map", (unsigned)gid, (unsigned)to) < 0) {
		saved = errno ? errno : EPERM;
	} else {
		snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			saved = errno;
	}
	close(go[1]);		/* the child goes */
	go[1] = -1;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	if (fd < 0)
		errno = saved ? saved : EPERM;
	return fd;
}

int
workspace_mount_clone(int fd, int userns_fd)
{
#if defined(SYS_open_tree) && defined(SYS_mount_setattr)
	struct mount_attr a;
	int m, saved;

	m = (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	    AT_EMPTY_PATH);
	if (m < 0)
		return -1;
	memset(&a, 0, sizeof a);
	a.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
	    MOUNT_ATTR_NOEXEC;
	if (userns_fd >= 0) {
		a.attr_set |= MOUNT_ATTR_IDMAP;
		a.userns_fd = (uint64_t)userns_fd;
	}
	if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
		saved = errno;
		close(m);
		errno = saved;
		return -1;
	}
	return m;
#else
	(void)fd;
	(void)userns_fd;
	errno = ENOSYS;
	return -1;
#endif
}
