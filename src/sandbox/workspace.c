/* workspace: the session's host folders, the data files staged into
 * them, and their disk use (see workspace.h). Everything here runs
 * before a sandbox starts or from the host's side of a running one;
 * nothing the sandbox wrote is ever followed (lchown, FTW_PHYS,
 * O_NOFOLLOW). */
#include "terp/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "terp/dirsum.h"
#include "terp/workspace_mount.h"
#include "terp/workspace_usage.h"
#include "terp/sandbox.h"
#include "terp/sandbox_tree.h"
#include "terp/sandbox_uid.h"
#include "terp/util.h"

#include "workspace_copy.h"

struct workspace {
	const char	*session_dir;
	int		 no_sandbox;
	uint64_t	 disk, disk_files;	/* the session's limits (0: default) */

	char		*dir, *datadir;		/* NULL until prepared */
	char		*base;			/* holds dir and datadir */
	uid_t		 uid;			/* the sandbox's; 0: terp's own */
	int		 uid_lock;		/* holds uid (sandbox_uid), -1: none */
	struct workspace_bind {			/* data files bound read-only by fd */
		int	 fd;
		char	*name;
		/* 1: given as a mount the launcher attaches over the
		 * placeholder (workspace_mount.h), 0: bound by bwrap */
		int	 mount;
		int	 userns;		/* the mount's idmapping, -1: none */
		char	*path;			/* the placeholder (mount 1) */
	}		*binds;
	int		 nbinds;
	uint64_t	 disk_allow, files_allow;	/* this launch's limits */
	/* what the first launch over the limits was allowed (a stopped
	 * session may delete, not grow: 0 while within the limits) */
	uint64_t	 over_bytes, over_files;
};

struct workspace *
workspace_new(const char *session_dir, int no_sandbox, uint64_t disk,
    uint64_t disk_files)
{
	struct workspace *w = xcalloc(1, sizeof *w);

	w->session_dir = session_dir;
	w->no_sandbox = no_sandbox;
	w->disk = disk;
	w->disk_files = disk_files;
	w->uid = 0;		/* as root, taken with the folders (take_uid) */
	w->uid_lock = -1;
	return w;
}

static void
bind_drop(struct workspace_bind *b)
{
	close(b->fd);
	if (b->userns >= 0)
		close(b->userns);
	free(b->name);
	free(b->path);
}

void
workspace_free(struct workspace *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < w->nbinds; i++)
		bind_drop(&w->binds[i]);
	free(w->binds);
	sandbox_uid_release(w->uid_lock);	/* the uid is free again */
	free(w->dir);
	free(w->datadir);
	free(w->base);
	free(w);
}

const char *
workspace_dir(const struct workspace *w)
{
	return w->dir;
}

const char *
workspace_base(const struct workspace *w)
{
	return w->base;
}

const char *
workspace_datadir(const struct workspace *w)
{
	return w->datadir;
}

uid_t
workspace_uid(const struct workspace *w)
{
	return w->uid;
}

/* ------------------------------------------------------------ folders */

/* Whether every folder from / down to path (itself included) lets
 * other users search it: bwrap, running as the sandbox's uid, resolves
 * the paths of its bind sources (even those it gets as fds) before it
 * mounts them. */
static int
traversable(const char *path)
{
	char *p = xstrdup(path), *s;
	struct stat st;
	int ok = 1;

	for (s = p + strlen(p); ok && s > p; ) {
		*s = '\0';
		if (stat(p, &st) < 0 || !(st.st_mode & S_IXOTH))
			ok = 0;
		while (s > p && *--s != '/')
			;
	}
	free(p);
	return ok;
}

#define VAR_SESSIONS	"/var/lib/terp/sessions"
#define OWNER_FILE	"owner"		/* in a base there: its session folder */
/* When sweep_orphans last ran (its mtime), beside VAR_SESSIONS */
#define SWEPT_STAMP	"/var/lib/terp/sessions-swept"
/* ...and how long a sweep holds: a start walked every base there, six
 * calls each, so a root user's start grew with the sessions kept */
#define SWEEP_EVERY_S	(60 * 60)

/* Whether the sandbox uid gid (a base's group) is held by a live
 * session: its lock file is locked (sandbox_uid.h). Opened without
 * creating it; a lock taken here to look is dropped at once. */
static int
uid_held(gid_t gid)
{
	struct sandbox_uid_pool pool;
	char *path;
	int fd, held = 0;

	sandbox_uid_default(&pool);
	path = xasprintf("%s/%u", pool.lockdir, (unsigned)gid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		held = flock(fd, LOCK_SH | LOCK_NB) < 0;
		close(fd);	/* releases a lock it took */
	}
	free(path);
	return held;
}

/* Whether the base named id under VAR_SESSIONS (open as dfd) is left
 * over: its owner file names a session folder that is gone (deleted by
 * hand, or with the temporary folder it was in) and no live session
 * holds the base's uid. A base without an owner file (an older terp's)
 * or whose folder cannot be told gone is kept. */
static int
base_orphaned(int dfd, const char *id)
{
	char path[4096];
	struct stat st, owner;
	ssize_t n = -1;
	int fd, gone = 0;

	if (fstatat(dfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != 0)
		return 0;
	{
		char *rel = xasprintf("%s/" OWNER_FILE, id);
		fd = openat(dfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		free(rel);
	}
	if (fd < 0)
		return 0;
	/* root's own, as base_dir wrote it: the sandbox cannot write in a
	 * base (root:uid 0710), but nothing it could have made is read */
	if (fstat(fd, &owner) == 0 && S_ISREG(owner.st_mode) && owner.st_uid == 0)
		n = read(fd, path, sizeof path - 1);
	close(fd);
	if (n <= 1 || path[0] != '/' || path[n - 1] != '\n')
		return 0;
	path[n - 1] = '\0';
	if (memchr(path, '\0', (size_t)(n - 1)) != NULL)
		return 0;
	{
		struct stat sd;
		gone = lstat(path, &sd) < 0 && errno == ENOENT;
	}
	return gone && !uid_held(st.st_gid);
}

/* Removes the bases under VAR_SESSIONS that base_orphaned says are left
 * over: a root terp's sandbox folders outlive a session folder removed
 * by other means than terp --delete, and nothing else would ever remove
 * them. Runs when a new base is made there, at most once an hour
 * (sweep_due): one listing, one small read per base. The tree is
 * removed without following links (it holds what a sandbox wrote). */
/* Whether a sweep is due: none in the last SWEEP_EVERY_S (by the
 * stamp's mtime, root's own file; a stamp from the future is stale).
 * When one is, the stamp is touched first, so that sessions starting
 * together do not all walk. */
static int
sweep_due(void)
{
	struct stat st;
	time_t now = time(NULL);
	int fd;

	if (lstat(SWEPT_STAMP, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	    st.st_mtime <= now + 60 && now - st.st_mtime < SWEEP_EVERY_S)
		return 0;
	fd = open(SWEPT_STAMP, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
	    0600);
	if (fd >= 0) {
		(void)futimens(fd, NULL);
		close(fd);
	}
	return 1;
}

static void
sweep_orphans(void)
{
	int dfd;
	struct dirent *e;
	DIR *d;

	if (!sweep_due())
		return;
	dfd = open(VAR_SESSIONS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	if ((d = fdopendir(dup(dfd))) == NULL) {
		close(dfd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		int c;
		if (e->d_name[0] == '.' || !base_orphaned(dfd, e->d_name))
			continue;
		c = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c < 0)
			continue;
		wscopy_remove_tree(c);
		close(c);
		(void)unlinkat(dfd, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
	close(dfd);
}

/* Writes base's owner file: the session folder sd, so that a later
 * sweep_orphans can tell when sd is gone. Best effort: without it the
 * base is only never swept. */
static void
write_owner(const char *base, const char *sd)
{
	char *real = realpath(sd, NULL), *path, *line;
	int fd;

	if (real == NULL)
		return;
	path = xasprintf("%s/" OWNER_FILE, base);
	line = xasprintf("%s\n", real);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
			(void)unlink(path);
		close(fd);
	}
	free(line);
	free(path);
	free(real);
}

/* The folder that holds the sandbox-facing workspace/ and data/.
 * Without root the sandbox runs as us: the session folder itself,
 * 0700. As root it runs as w->uid, which must get through every folder
 * above its bind sources (see traversable) but nobody else may: the
 * base is root-owned, group w->uid, 0710, and sits in the session
 * folder when the folders above it let others search them, else (a
 * home like /root is 0700) under /var/lib/terp/sessions, with a link
 * from the session folder. A session made by an older terp keeps the
 * base its link names. */
static char *
base_dir(struct workspace *w, char **err)
{
	const char *sd = w->session_dir;
	const char *id = strrchr(sd, '/');
	char *base = NULL, *link, *parent, target[4096];
	ssize_t n;

	if (w->uid == 0)
		return xstrdup(sd);
	id = id ? id + 1 : sd;
	link = xasprintf("%s/sandbox", sd);
	parent = xstrndup(sd, (size_t)(id - sd > 1 ? id - sd - 1 : 1));
	n = readlink(link, target, sizeof target - 1);
	if (n > 0) {
		char *old = xasprintf(VAR_SESSIONS "/%s", id);
		target[n] = '\0';
		if (strcmp(target, old) == 0)
			base = old;
		else
			free(old);
	}
	if (base == NULL && traversable(parent)) {
		base = xstrdup(sd);
	} else if (base == NULL) {
		/* 0711: the sandbox uid (a different one per session) must
		 * get through, but nobody can list the sessions. */
		if (mkdir_p(VAR_SESSIONS, 0711) < 0) {
			*err = xasprintf("cannot create " VAR_SESSIONS ": %s", strerror(errno));
			goto out;
		}
		chmod("/var/lib/terp", 0711);
		chmod(VAR_SESSIONS, 0711);
		sweep_orphans();
		base = xasprintf(VAR_SESSIONS "/%s", id);
		if (mkdir(base, 0700) < 0 && errno != EEXIST) {
			*err = xasprintf("cannot create %s: %s", base, strerror(errno));
			free(base);
			base = NULL;
			goto out;
		}
		write_owner(base, sd);
		if (symlink(base, link) < 0 && errno != EEXIST) {
			/* only a convenience for people looking at the session */
		}
	}
	/* root:uid 0710: the sandbox uid may pass, nobody else may even
	 * look; a /workspace the sandbox makes 0777 stays out of reach. */
	if (chown(base, 0, (gid_t)w->uid) < 0 || chmod(base, 0710) < 0) {
		*err = xasprintf("cannot protect %s: %s", base, strerror(errno));
		free(base);
		base = NULL;
	}
out:
	free(link);
	free(parent);
	return base;
}

/* A resumed session's folder still holds the files staged by the run
 * before; they may be stale (the user changed the file since), and
 * staging again under the same name needs the name free. The data
 * folder is terp's alone (the sandbox sees it read-only), so its
 * entries are removed, never followed. */
static void
clear_datadir(struct workspace *w)
{
	DIR *d = opendir(w->datadir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    unlinkat(dirfd(d), e->d_name, 0) < 0 && errno == EISDIR)
			(void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);	/* a folder's */
	}
	closedir(d);
}

/* nftw has no argument for its callback: the uid being handed over. */
static uid_t chown_uid;

static int
chown_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	(void)lchown(path, chown_uid, chown_uid);
	return 0;
}

/* As root: a uid of our own for this session's sandboxes, held until
 * workspace_free (sandbox_uid.h). */
static int
take_uid(struct workspace *w, char **err)
{
	struct sandbox_uid_pool pool;

	if (w->uid != 0 || getuid() != 0 || w->no_sandbox)
		return 0;
	sandbox_uid_default(&pool);
	return sandbox_uid_take(&pool, &w->uid, &w->uid_lock, err);
}

/* The sandbox's /workspace/data is the workspace's own data folder:
 * code may write new files there (beside the CSV it read), on the
 * workspace's disk and under its limits, never outside the workspace.
 * The staged files are bound read-only into it (a mount point cannot be
 * removed or renamed: EBUSY) or are links terp made to SANDBOX_STAGED.
 * As root the folder is root's, group-writable by the sandbox uid and
 * sticky: the sandbox may not remove or rename what it did not make. */
static int
protect_wsdata(const struct workspace *w, const char *wsd)
{
	if (w->uid == 0)
		return 0;
	if (lchown(wsd, 0, (gid_t)w->uid) < 0 || chmod(wsd, 01770) < 0)
		return -1;
	return 0;
}

int
workspace_prepare(struct workspace *w, char **err)
{
	const char *sd = w->session_dir;
	char *base;

	if (w->dir != NULL)
		return 0;
	if (take_uid(w, err) < 0)
		return -1;
	/* The session folder stays ours and private. */
	if (mkdir_p(sd, 0700) < 0 || chmod(sd, 0700) < 0) {
		*err = xasprintf("cannot create the session folder %s: %s", sd,
		    strerror(errno));
		return -1;
	}
	if ((base = base_dir(w, err)) == NULL)
		return -1;
	w->dir = xasprintf("%s/workspace", base);
	/* Without bwrap, Python sees the data files where the sandbox
	 * would: in the workspace. */
	w->datadir = w->no_sandbox ? xasprintf("%s/data", w->dir) :
	    xasprintf("%s/data", base);
	w->base = base;
	if (mkdir_p(w->dir, 0700) < 0 || mkdir_p(w->datadir, 0700) < 0) {
		*err = xasprintf("cannot create the session folder %s: %s", w->dir,
		    strerror(errno));
		return -1;
	}
	/* As root, group w->uid may list the data folder; the files in it
	 * are bind mount points or copies readable by that group only. */
	if (w->uid != 0 && (chown(w->datadir, 0, (gid_t)w->uid) < 0 ||
	    chmod(w->datadir, 0750) < 0)) {
		*err = xasprintf("cannot protect %s: %s", w->datadir, strerror(errno));
		return -1;
	}
	clear_datadir(w);
	{
		char *wsd = xasprintf("%s/data", w->dir);
		char *wso = xasprintf("%s/out", w->dir);
		mkdir(wsd, 0755);
		mkdir(wso, 0755);
		if (w->uid != 0) {
			/* lchown: the workspace's content may be the sandbox's
			 * doing from an earlier run; never follow its links. */
			if (lchown(w->dir, w->uid, w->uid) < 0 ||
			    lchown(wsd, w->uid, w->uid) < 0 ||
			    lchown(wso, w->uid, w->uid) < 0) {
				*err = xasprintf("cannot hand the workspace to the sandbox user: %s",
				    strerror(errno));
				free(wsd);
				free(wso);
				return -1;
			}
			/* A resumed session's workspace holds files an earlier
			 * run's sandbox made under another uid (one per run as
			 * root): hand them over too, or a replayed cell cannot
			 * write its chart again. No sandbox runs yet; links are
			 * changed, never followed (FTW_PHYS). */
			chown_uid = w->uid;
			(void)nftw(w->dir, chown_entry, 16, FTW_PHYS | FTW_MOUNT);
		}
		if (!w->no_sandbox && protect_wsdata(w, wsd) < 0) {
			*err = xasprintf("cannot protect %s: %s", wsd, strerror(errno));
			free(wsd);
			free(wso);
			return -1;
		}
		free(wsd);
		free(wso);
	}
	return 0;
}

/* ------------------------------------------------------------ staging */

/* A file name that is safe on both sides: letters, digits, '.', '-',
 * '_'; no leading dot; at most 100 bytes. New string. */
static char *
safe_name(const char *in)
{
	size_t n = strlen(in), j = 0;
	char *s = xmalloc(n + 8);

	for (size_t i = 0; i < n && j < 100; i++) {
		unsigned char c = (unsigned char)in[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    (c == '.' && j > 0))
			s[j++] = (char)c;
		else if (c == '/')
			s[j++] = '_';
		else if (c < 0x80 || (c & 0xC0) == 0xC0)
			s[j++] = '_';
	}
	if (j == 0)
		s[j++] = '_';
	s[j] = '\0';
	return s;
}

/* Opens a data file: without blocking (a FIFO's open would wait for a
 * writer), through symlinks to the real file, which must be regular or
 * a folder.
 * Returns the fd, or -1 with a one-line *err. */
static int
data_open(const char *path, struct stat *st, char **err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	const char *what;

	if (fd < 0) {
		*err = xasprintf("cannot read data file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, st) < 0) {
		*err = xasprintf("cannot read data file %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
		return fd;
	close(fd);
	what = S_ISFIFO(st->st_mode) ? "a FIFO" :
	    S_ISSOCK(st->st_mode) ? "a socket" : S_ISCHR(st->st_mode) ? "a character device" :
	    S_ISBLK(st->st_mode) ? "a block device" : "not a regular file";
	*err = xasprintf("data file %s is %s; give a regular file or a folder", path, what);
	return -1;
}

/* A folder given as data: within DIRSUM_ENTRIES entries and
 * DIRSUM_DEPTH levels, and its regular files within max bytes (0: any;
 * the session's disk limit: a folder is one data set, bounded as the
 * workspace is). Fills *sum when not NULL. Returns 0, or -1 with a
 * one-line *err. */
static int
folder_check(const char *path, int fd, uint64_t max, struct dirsum *sum, char **err)
{
	struct dirsum s;
	char got[32], lim[32];

	if (dirsum_walk(fd, &s, NULL, NULL) < 0) {
		*err = xasprintf("cannot read the data folder %s: %s", path, strerror(errno));
		return -1;
	}
	if (s.too_many || s.too_deep) {
		*err = xasprintf("the data folder %s holds more than %d entries or %d levels "
		    "of folders; give a smaller folder", path, DIRSUM_ENTRIES, DIRSUM_DEPTH);
		return -1;
	}
	if (max != 0 && s.bytes > max) {
		fmt_bytes(got, sizeof got, s.bytes);
		fmt_bytes(lim, sizeof lim, max);
		*err = xasprintf("the data folder %s holds %s, over the session's disk limit "
		    "of %s; give a smaller folder or a larger --disk", path, got, lim);
		return -1;
	}
	if (sum != NULL)
		*sum = s;
	return 0;
}

int
workspace_check_data(const char *path, char **err)
{
	struct stat st;
	int fd = data_open(path, &st, err);

	if (fd < 0)
		return -1;
	if (S_ISDIR(st.st_mode) && folder_check(path, fd, 0, NULL, err) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Whether the sandbox's uid can read the open file st: itself without
 * root; as root (the sandbox runs as w->uid) only what others may read. */
static int
uid_can_read(const struct workspace *w, const struct stat *st)
{
	mode_t x = S_ISDIR(st->st_mode) ? 1 : 0;	/* a folder: read and search */

	if (w->uid == 0)
		return 1;
	if (st->st_uid == w->uid)
		return (st->st_mode & (S_IRUSR | (x * S_IXUSR))) == (S_IRUSR | (x * S_IXUSR));
	if (st->st_gid == (gid_t)w->uid)
		return (st->st_mode & (S_IRGRP | (x * S_IXGRP))) == (S_IRGRP | (x * S_IXGRP));
	return (st->st_mode & (S_IROTH | (x * S_IXOTH))) == (S_IROTH | (x * S_IXOTH));
}

/* Whether bwrap, as the sandbox's uid, can bind the open file fd: it
 * resolves the file's path (see traversable), so the path must still
 * name it and every folder on it must let the sandbox uid through. */
static int
bindable(const struct workspace *w, int fd, const struct stat *st)
{
	char link[64], path[4096];
	ssize_t n;

	if (w->no_sandbox || st->st_nlink == 0 || !uid_can_read(w, st))
		return 0;
	if (w->uid == 0)
		return 1;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof path - 1)) <= 0 || path[0] != '/')
		return 0;
	path[n] = '\0';
	{
		char *slash = strrchr(path, '/');
		if (slash == path)
			return 1;
		*slash = '\0';
	}
	return traversable(path);
}

char *
workspace_safe_name(const char *base)
{
	return safe_name(base);
}

/* The workspace's data folder, opened without following links (the
 * sandbox owns the workspace: data may be anything now). -1 when it is
 * not a folder. */
static int
wsdata_open(const struct workspace *w)
{
	int dfd = open(w->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd;

	if (dfd < 0)
		return -1;
	fd = openat(dfd, "data", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	return fd;
}

/* Whether the folder name in dfd is empty (a folder bind's mount point
 * from an earlier sandbox), opened without following links. */
static int
wsdata_empty_dir(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	int empty = 1;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (empty && (e = readdir(d)) != NULL)
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/* Whether entry name of the workspace's data folder is terp's: a link
 * to the staged file of that name, or an empty file (a bind's mount
 * point from an earlier sandbox). */
static int
wsdata_ours(int fd, const char *name)
{
	struct stat st;
	char want[300], got[300];
	ssize_t n;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	if (S_ISREG(st.st_mode))
		return st.st_size == 0;
	if (S_ISDIR(st.st_mode))
		return wsdata_empty_dir(fd, name);
	if (!S_ISLNK(st.st_mode))
		return 0;
	snprintf(want, sizeof want, "%s/%s", SANDBOX_STAGED, name);
	n = readlinkat(fd, name, got, sizeof got - 1);
	if (n < 0)
		return 0;
	got[n] = '\0';
	return strcmp(got, want) == 0;
}

/* A name the code's own file holds in the workspace's data folder is
 * not given to a staged file (which would hide it). */
static int
wsdata_taken(const struct workspace *w, const char *name)
{
	int fd, ours;

	if (w->no_sandbox || (fd = wsdata_open(w)) < 0)
		return 0;
	ours = wsdata_ours(fd, name);
	close(fd);
	return !ours;
}

/* Makes /workspace/data/name show the staged file: a link to it under
 * SANDBOX_STAGED (link 1), or, for a bind, nothing in the way of its
 * mount point (link 0). Only terp's own entries are replaced. */
static int
wsdata_place(struct workspace *w, const char *name, int link, char **err)
{
	char target[300];
	int fd;

	if (w->no_sandbox)
		return 0;
	if ((fd = wsdata_open(w)) < 0) {
		*err = xasprintf("cannot stage %s: the workspace's data folder is gone", name);
		return -1;
	}
	if (!wsdata_ours(fd, name)) {
		close(fd);
		*err = xasprintf("cannot stage %s: the workspace's data folder has a file of that name", name);
		return -1;
	}
	if (unlinkat(fd, name, 0) < 0 && errno == EISDIR)
		(void)unlinkat(fd, name, AT_REMOVEDIR);
	snprintf(target, sizeof target, "%s/%s", SANDBOX_STAGED, name);
	if (link && symlinkat(target, fd, name) < 0) {
		*err = xasprintf("cannot stage %s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* A free name in the data folder for base: name, name-2.ext, ...,
 * created empty with O_EXCL (a bind's mount point, or a copy's target
 * when out is not NULL: then left open in *out; a folder when dir). */
static char *
data_claim(struct workspace *w, const char *base, int dir, int *out, char **err)
{
	char *name = safe_name(base), *cand = NULL;
	const char *dot = strrchr(name, '.');
	int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);
	mode_t mode = w->uid != 0 ? 0440 : 0400;
	int failed = 0;

	for (int i = 1; i < 1000 && !failed; i++) {
		char *path;
		int fd;

		free(cand);
		cand = i == 1 ? xstrdup(name) :
		    xasprintf("%.*s-%d%s", stem, name, i, dot && dot != name ? dot : "");
		if (wsdata_taken(w, cand))
			continue;
		path = xasprintf("%s/%s", w->datadir, cand);
		if (!dir)
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		else if ((fd = mkdir(path, mode | 0110)) == 0)	/* a folder's */
			fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		free(path);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0) {
			*err = xasprintf("cannot stage %s: %s", base, strerror(errno));
			failed = 1;
			break;
		}
		/* Readable by the sandbox uid's group only (as root). */
		if (w->uid != 0 && fchown(fd, 0, (gid_t)w->uid) < 0) {
			*err = xasprintf("cannot stage %s: %s", base, strerror(errno));
			close(fd);
			failed = 1;
			break;
		}
		if (out)
			*out = fd;
		else
			close(fd);
		free(name);
		return cand;
	}
	if (!failed)
		*err = xasprintf("too many data files named %s", base);
	free(name);
	free(cand);
	return NULL;
}

/* As root: the idmapping the sandbox's uid needs to read the open file
 * st through a mount (-1: none, readable: it can read it already), or -2 when a
 * mount cannot help or the kernel refuses one here (the file is then
 * copied). The clone is tried once now, so that a launch finds it works. */
static int
mount_userns(const struct workspace *w, int fd, const struct stat *st, int readable)
{
	int ns = -1, m;

	if (w->no_sandbox || w->uid == 0 || geteuid() != 0 || st->st_nlink == 0)
		return -2;
	if (!readable) {
		/* through the mount the sandbox's uid is the owner */
		mode_t need = S_IRUSR | (S_ISDIR(st->st_mode) ? S_IXUSR : 0);
		if ((st->st_mode & need) != need)
			return -2;
		if ((ns = workspace_mount_userns(st->st_uid, st->st_gid, w->uid)) < 0)
			return -2;
	}
	if ((m = workspace_mount_clone(fd, ns)) < 0) {
		if (ns >= 0)
			close(ns);
		return -2;
	}
	close(m);
	return ns;
}

/* Keeps the open data file in as a bind of name (mount: given as a
 * mount, idmapped by ns). */
static void
bind_add(struct workspace *w, int in, char *name, int mount, int ns)
{
	struct workspace_bind *b;

	w->binds = xrealloc(w->binds, (size_t)(w->nbinds + 1) * sizeof *w->binds);
	b = &w->binds[w->nbinds++];
	b->fd = in;
	b->name = name;
	b->mount = mount;
	b->userns = ns;
	b->path = mount ? xasprintf("%s/%s", w->datadir, name) : NULL;
}

struct unreadable {
	const struct workspace	*w;
	uint64_t		 n;
};

static void
count_unreadable(void *arg, const char *rel, const struct stat *st)
{
	struct unreadable *u = arg;

	(void)rel;
	if ((S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) && !uid_can_read(u->w, st))
		u->n++;
}

/* Whether the sandbox's uid can read the folder in and all it holds
 * (as root a 0600 file inside is not: the folder is then mounted,
 * idmapped, instead of bound). */
static int
folder_readable(const struct workspace *w, int in, const struct stat *st)
{
	struct unreadable u = { .w = w };
	struct dirsum s;

	if (w->uid == 0)
		return 1;
	if (!uid_can_read(w, st) || dirsum_walk(in, &s, count_unreadable, &u) < 0)
		return 0;
	return u.n == 0;
}

/* A folder given as data (a partitioned Parquet dataset, a folder of
 * monthly CSVs), bounded by folder_check: bound read-only as a folder,
 * by its fd like a file, or as root given as a mount (idmapped where the
 * sandbox's uid could not read it); copied when a sandbox runs already.
 * Takes in. Symlinks inside are left as they are: they resolve in the
 * sandbox's own view, where nothing of the host outside the folder is. */
static char *
stage_folder(struct workspace *w, const char *host_path, const char *base, int in,
    const struct stat *st, int running, char **err)
{
	char *name = NULL;
	int ns = -1, mount = 0, out = -1, readable;

	if (folder_check(host_path, in, w->disk, NULL, err) < 0)
		goto fail;
	readable = folder_readable(w, in, st);

	if (!running && w->nbinds < SANDBOX_MAX_BINDS && !w->no_sandbox &&
	    ((readable && bindable(w, in, st)) ||
	    (mount = 1, ns = mount_userns(w, in, st, readable)) != -2)) {
		if ((name = data_claim(w, base, 1, &out, err)) == NULL ||
		    wsdata_place(w, name, mount, err) < 0)
			goto fail;
		close(out);
		bind_add(w, in, name, mount, ns);
		return xasprintf("/workspace/data/%s", name);
	}
	ns = -1;
	if ((name = data_claim(w, base, 1, &out, err)) == NULL)
		goto fail;
	if (wscopy_tree(w->uid, in, out, st->st_dev, 0) < 0) {
		*err = xasprintf("cannot copy the data folder %s into the session: %s",
		    host_path, strerror(errno));
		wscopy_remove_tree(out);
		goto fail;
	}
	close(out);
	out = -1;
	close(in);
	in = -1;
	if (wsdata_place(w, name, 1, err) < 0)
		goto fail;
	{
		char *r = w->no_sandbox ? xasprintf("%s/%s", w->datadir, name) :
		    xasprintf("/workspace/data/%s", name);
		free(name);
		return r;
	}
fail:
	if (out >= 0)
		close(out);
	if (ns >= 0)
		close(ns);
	if (in >= 0)
		close(in);
	free(name);
	return NULL;
}

/* Puts host_path into the session's data folder. Before the sandbox
 * starts, a file the sandbox uid can read is bound read-only by its fd
 * (no copy, no disk, constant time whatever its size). As root, one it
 * cannot read or reach (a 0600 file, a 0700 folder on its path) is
 * given as a read-only mount, idmapped to the sandbox's uid where it
 * must be (workspace_mount.h), over its placeholder in the data folder,
 * to which /workspace/data/NAME links: no copy either. A sandbox that
 * runs already cannot get a new mount: the file is hard-linked there
 * when it can be, else copied (holes kept), readable by the sandbox uid
 * only; so is a file no mount can serve. */
char *
workspace_stage(struct workspace *w, const char *host_path, int running, char **err)
{
	const char *base;
	struct stat st;
	char *name, *r, last[256];
	int in, out = -1, ns;
	size_t n = strlen(host_path);

	if (workspace_prepare(w, err) < 0)
		return NULL;
	/* the last name, without a folder's trailing slashes */
	while (n > 1 && host_path[n - 1] == '/')
		n--;
	for (base = host_path + n; base > host_path && base[-1] != '/'; base--)
		;
	snprintf(last, sizeof last, "%.*s", (int)(host_path + n - base), base);
	base = last;
	if ((in = data_open(host_path, &st, err)) < 0)
		return NULL;
	if (S_ISDIR(st.st_mode))
		return stage_folder(w, host_path, base, in, &st, running, err);
	if (!running && w->nbinds < SANDBOX_MAX_BINDS && bindable(w, in, &st)) {
		if ((name = data_claim(w, base, 0, NULL, err)) == NULL) {
			close(in);
			return NULL;
		}
		if (wsdata_place(w, name, 0, err) < 0) {
			free(name);
			close(in);
			return NULL;
		}
		bind_add(w, in, name, 0, -1);
		return w->no_sandbox ? xasprintf("%s/%s", w->datadir, name) :
		    xasprintf("/workspace/data/%s", name);
	}
	if (!running && w->nbinds < SANDBOX_MAX_BINDS &&
	    (ns = mount_userns(w, in, &st, uid_can_read(w, &st))) != -2) {
		if ((name = data_claim(w, base, 0, NULL, err)) == NULL ||
		    wsdata_place(w, name, 1, err) < 0) {
			free(name);
			if (ns >= 0)
				close(ns);
			close(in);
			return NULL;
		}
		bind_add(w, in, name, 1, ns);
		return xasprintf("/workspace/data/%s", name);
	}
	if ((name = data_claim(w, base, 0, &out, err)) == NULL) {
		close(in);
		return NULL;
	}
	{
		char link[64], *dest = xasprintf("%s/%s", w->datadir, name);
		int linked = 0;
		snprintf(link, sizeof link, "/proc/self/fd/%d", in);
		if (uid_can_read(w, &st)) {
			/* The link replaces the empty file we claimed. */
			char *tmp = xasprintf("%s/.%s.link", w->datadir, name);
			if (linkat(AT_FDCWD, link, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
				linked = rename(tmp, dest) == 0;
				if (!linked)
					unlink(tmp);
			}
			free(tmp);
		}
		if (!linked && wscopy_file(in, out) < 0) {
			*err = xasprintf("cannot copy %s into the session: %s", host_path,
			    strerror(errno));
			close(out);
			close(in);
			unlink(dest);
			free(dest);
			free(name);
			return NULL;
		}
		close(out);
		free(dest);
	}
	close(in);
	if (wsdata_place(w, name, 1, err) < 0) {
		free(name);
		return NULL;
	}
	r = w->no_sandbox ? xasprintf("%s/%s", w->datadir, name) :
	    xasprintf("/workspace/data/%s", name);
	free(name);
	return r;
}

/* A bound file that is no longer linked (deleted since) has no path
 * bwrap could resolve: it becomes a copy before the next launch. */
static int
unbind_deleted(struct workspace *w, char **err)
{
	for (int i = 0; i < w->nbinds; i++) {
		struct stat st;
		char *dest;
		int out;

		if (fstat(w->binds[i].fd, &st) < 0 || st.st_nlink > 0)
			continue;
		dest = xasprintf("%s/%s", w->datadir, w->binds[i].name);
		out = open(dest, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
		if (out < 0 || wscopy_file(w->binds[i].fd, out) < 0) {
			*err = xasprintf("cannot copy the deleted data file %s: %s",
			    w->binds[i].name, strerror(errno));
			if (out >= 0)
				close(out);
			free(dest);
			return -1;
		}
		close(out);
		free(dest);
		/* the code's path now leads to the copy */
		if (!w->binds[i].mount && wsdata_place(w, w->binds[i].name, 1, err) < 0)
			return -1;
		bind_drop(&w->binds[i]);
		w->binds[i--] = w->binds[--w->nbinds];
	}
	return 0;
}

int
workspace_binds(struct workspace *w, int *fds, const char **names, int max, char **err)
{
	int n = 0;

	if (unbind_deleted(w, err) < 0)
		return -1;
	for (int i = 0; i < w->nbinds && n < max; i++) {
		if (w->binds[i].mount)
			continue;
		fds[n] = w->binds[i].fd;
		names[n] = w->binds[i].name;
		n++;
	}
	return n;
}

int
workspace_mounts(struct workspace *w, int *fds, const char **paths, int max,
    char **err)
{
	int n = 0;

	for (int i = 0; i < w->nbinds && n < max; i++) {
		struct workspace_bind *b = &w->binds[i];
		if (!b->mount)
			continue;
		if ((fds[n] = workspace_mount_clone(b->fd, b->userns)) < 0) {
			*err = xasprintf("cannot mount the data file %s for the sandbox: %s",
			    b->name, strerror(errno));
			while (n > 0)
				close(fds[--n]);
			return -1;
		}
		paths[n++] = b->path;
	}
	return n;
}

/* ------------------------------------------------------------ disk */

/* The workspace is a folder of the host's disk, so its size is bounded
 * by measuring (workspace_usage.h); kernel.c measures on a timer while the
 * sandbox lives and at each cell's end, and kills the sandbox when it
 * is over the limit. */

/* The entry limit: the session's, or one per 32 KiB of disk, at least
 * 4096 and at most 200000. */
static uint64_t
files_limit(const struct workspace *w)
{
	uint64_t n = w->disk / (32 * 1024);

	if (w->disk_files)
		return w->disk_files;
	return n < 4096 ? 4096 : n > 200000 ? 200000 : n;
}

int64_t
workspace_disk_measure(const char *dir, pid_t root, uint64_t max_bytes,
    uint64_t max_files, struct workspace_usage *u)
{
	int64_t t0 = now_us();
	struct stat st;

	memset(u, 0, sizeof *u);
	if (dir == NULL || workspace_usage_tree(dir, max_bytes, max_files, u) < 0)
		return now_us() - t0;
	if (!u->stopped && root > 0 && stat(dir, &st) == 0) {
		pid_t *pids = xmalloc(1024 * sizeof *pids);
		int n = sandbox_tree_list(root, pids, 1024);
		for (int i = 0; i < n; i++)
			workspace_usage_deleted_open(pids[i], st.st_dev, u);
		free(pids);
	}
	return now_us() - t0;
}

int
workspace_disk_baseline(struct workspace *w, pid_t root, char **err)
{
	struct workspace_usage u;
	char lim[32], got[32];

	w->disk_allow = w->disk;
	w->files_allow = files_limit(w);
	if (w->disk == 0)
		return 0;
	workspace_disk_measure(w->dir, root, 0, 0, &u);
	if (u.bytes <= w->disk_allow && u.inodes <= w->files_allow) {
		w->over_bytes = w->over_files = 0;
		return 0;
	}
	/* Over the limits (a sandbox stopped for them): this one may delete.
	 * It was allowed no growth, but wrote until the next check; a second
	 * such round is refused, so restarts cannot grow the workspace by
	 * one overshoot each. */
	if (w->over_bytes != 0 && (u.bytes > w->over_bytes || u.inodes > w->over_files)) {
		fmt_bytes(lim, sizeof lim, w->disk);
		fmt_bytes(got, sizeof got, u.bytes);
		*err = xasprintf("the workspace holds %s (or %llu files), over the "
		    "session's disk limit of %s, and grew again after the sandbox "
		    "was stopped for it: delete files in %s, or resume with a larger "
		    "--disk", got, (unsigned long long)u.inodes, lim, w->dir);
		return -1;
	}
	if (u.bytes > w->disk_allow)
		w->disk_allow = u.bytes;
	if (u.inodes > w->files_allow)
		w->files_allow = u.inodes;
	if (w->over_bytes == 0) {
		w->over_bytes = w->disk_allow;
		w->over_files = w->files_allow;
	}
	return 0;
}

char *
workspace_disk_check(struct workspace *w, pid_t root, int64_t *cost_us)
{
	struct workspace_usage u;

	*cost_us = workspace_disk_measure(w->dir, root, w->disk_allow, w->files_allow, &u);
	return workspace_disk_verdict(w, &u);
}

char *
workspace_disk_params(const struct workspace *w, uint64_t *max_bytes,
    uint64_t *max_files)
{
	*max_bytes = w->disk_allow;
	*max_files = w->files_allow;
	return w->dir != NULL ? xstrdup(w->dir) : NULL;
}

char *
workspace_disk_verdict(const struct workspace *w, const struct workspace_usage *u)
{
	char lim[32], got[32];

	if (!u->too_deep && u->bytes <= w->disk_allow && u->inodes <= w->files_allow)
		return NULL;
	if (u->too_deep)
		return xstrdup("the sandbox was stopped: its workspace nests folders "
		    "more than 256 deep");
	fmt_bytes(lim, sizeof lim, w->disk);
	fmt_bytes(got, sizeof got, u->bytes);
	if (u->bytes > w->disk_allow)
		return xasprintf("the sandbox was stopped: the workspace holds more "
		    "than the session's disk limit of %s (%s%s); delete files to go on",
		    lim, u->stopped ? "over " : "", got);
	return xasprintf("the sandbox was stopped: the workspace holds more "
	    "than %llu files, the session's limit; delete files to go on",
	    (unsigned long long)files_limit(w));
}
