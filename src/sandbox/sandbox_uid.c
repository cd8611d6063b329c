/* sandbox_uid: allocation of per-session sandbox uids for a root terp (see
 * sandbox_uid.h for the range and why). A uid is taken by locking its lock
 * file with flock: the kernel releases the lock when the holder dies, so
 * a crashed terp never leaks a uid, and a process it may have left
 * behind still keeps its uid out of use through the process check. */
#include "terp/sandbox_uid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

void
sandbox_uid_default(struct sandbox_uid_pool *p)
{
	unsigned r = 0;

	memset(p, 0, sizeof *p);
	p->first = SANDBOX_UID_FIRST;
	p->count = SANDBOX_UID_COUNT;
	/* A random start spreads concurrent sessions over the range, so
	 * they rarely contend for the same lock. */
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
		r = (unsigned)getpid() * 2654435761u ^ (unsigned)now_us();
	p->start = r % p->count;
	p->lockdir = access("/run", W_OK) == 0 ? "/run/terp/uids" : "/var/lib/terp/uids";
	p->in_use = sandbox_uid_in_use;
}

/* Whether a process runs as uid: /proc/PID belongs to the process's
 * effective uid, one stat per process (a sandbox runs with all its uids
 * equal, under no_new_privs: no setuid program changes them). */
static int
uid_has_process(uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;

	if (d == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		struct stat st;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		found = fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_uid == uid;
	}
	closedir(d);
	return found;
}

int
sandbox_uid_in_use(uid_t uid, void *arg)
{
	(void)arg;
	/* NSS may consult LDAP or SSSD: a uid an account has anywhere is
	 * not ours to run code under. */
	if (getpwuid(uid) != NULL || getgrgid((gid_t)uid) != NULL)
		return 1;
	return uid_has_process(uid);
}

int
sandbox_uid_take(const struct sandbox_uid_pool *p, uid_t *uid, int *lockfd, char **err)
{
	int (*in_use)(uid_t, void *) = p->in_use ? p->in_use : sandbox_uid_in_use;
	int dfd, last_errno = 0;

	if (p->count == 0) {
		*err = xstrdup("the sandbox uid range is empty");
		return -1;
	}
	if (mkdir_p(p->lockdir, 0700) < 0 ||
	    (dfd = open(p->lockdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		*err = xasprintf("cannot use %s for the sandbox uid locks: %s",
		    p->lockdir, strerror(errno));
		return -1;
	}
	for (unsigned i = 0, again = 0; i < p->count; i++) {
		uid_t u = p->first + (p->start + i) % p->count;
		char name[16];
		int fd;

		snprintf(name, sizeof name, "%u", (unsigned)u);
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			last_errno = errno;
			continue;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);	/* another session holds it */
			continue;
		}
		/* A holder unlinks its lock file when it lets go
		 * (sandbox_uid_release): the file we locked must still be the
		 * one the name gives, or a later taker may lock a new one. */
		{
			struct stat a, b;
			if (fstat(fd, &a) < 0 || fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
			    a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
				close(fd);
				if (again++ < 3)
					i--;	/* the same uid again, with the new file */
				continue;
			}
		}
		if (in_use(u, p->arg)) {
			close(fd);
			continue;
		}
		close(dfd);
		*uid = u;
		*lockfd = fd;
		return 0;
	}
	close(dfd);
	*err = last_errno ? xasprintf("no free sandbox uid in %u-%u (%s)",
	    (unsigned)p->first, (unsigned)(p->first + p->count - 1), strerror(last_errno)) :
	    xasprintf("no free sandbox uid in %u-%u: every one is locked by a session or in use",
	    (unsigned)p->first, (unsigned)(p->first + p->count - 1));
	return -1;
}

void
sandbox_uid_release(int lockfd)
{
	char link[64], path[4096];
	ssize_t n;

	if (lockfd < 0)
		return;
	/* Unlinked while still locked, so the lock files do not pile up
	 * (one per uid ever used); takers check the name still leads to
	 * the file they locked. */
	snprintf(link, sizeof link, "/proc/self/fd/%d", lockfd);
	if ((n = readlink(link, path, sizeof path - 1)) > 0 && path[0] == '/') {
		path[n] = '\0';
		(void)unlink(path);
	}
	close(lockfd);
}
