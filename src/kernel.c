/* kernel: the host side of a sandboxed Python session. It owns the
 * session's workspace, launches the sandbox (sandbox.c), speaks the
 * driver's line protocol (src/driver.py), streams output, enforces the
 * per-cell time limit, notices death, restarts, and copies artifacts to
 * the output folder. Every byte from the sandbox is hostile: frames are
 * size-capped and validated, names are sanitized, files are created
 * with O_EXCL under names terp chooses. */
#include "terp/kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/cgroup.h"
#include "terp/digest.h"
#include "terp/kernel_frame.h"
#include "terp/diskuse.h"
#include "terp/sandbox.h"
#include "terp/sanitize.h"
#include "terp/uidpool.h"
#include "terp/util.h"

#include "driver_py.h"

#define STDERR_KEEP	4096		/* bwrap's own messages, for setup errors */
#define CODE_MAX	(64u << 20)	/* a cell's code */
#define OUTQ_MAX	(512u << 20)	/* commands not written yet (JSON may be 6x) */
#define RESULT_TEXT_MAX	(256u << 10)	/* each text of a result (the driver cuts at 64K) */
#define REPORTS_PER_CELL 20		/* "artifact x not copied" lines; then a count */
#define NAME_TRIES	1000		/* chart.png, chart-2.png ... chart-1000.png */
#define DEATH_POLL_MS	5
#define DEATH_WAIT_MS	2000
#define DISK_EVERY_MS	100	/* disk check interval, at least... */
#define DISK_EVERY_MAX	1000	/* ...and at most; 20 times a check's cost between */
#define STRAY_WAIT_MS	2000	/* for processes killed at a cell's end to go */

struct pending {
	int		 n;
	char		*code;
	struct pending	*next;
};

enum stop_cause { STOP_NONE, STOP_USER, STOP_TIMEOUT };

struct kernel {
	struct loop		*loop;
	const struct kernel_opts *o;
	struct kernel_cbs	 cb;
	void			*arg;

	enum kernel_state	 state;
	int			 loaded;	/* preload finished */
	struct sandbox_proc	 p;
	pid_t			 init_pid;	/* bwrap's init in the host ns */
	pid_t			 py_pid;
	uid_t			 uid;
	int			 exit_code;	/* from --json-status-fd, -1 unknown */
	int			 we_killed;
	int			 dying;
	uint64_t		 death_timer;
	int64_t			 death_since;

	char			*workspace, *datadir;
	int			 uid_lock;	/* holds uid (uidpool), -1: none */
	struct kernel_bind {		/* data files bound read-only by fd */
		int	 fd;
		char	*name;
	}			*binds;
	int			 nbinds;
	uint64_t		 disk_timer;
	uint64_t		 disk_allow, files_allow;	/* this launch's limits */
	char			*kill_why;	/* why terp itself killed the sandbox */
	int			 out_dirfd;
	struct cgroup		*cg;		/* NULL: rlimits only */
	int			 cg_tried;
	long			 oom_at_launch;

	struct kframe_reader	 evr;		/* the driver's events */
	struct buf		 statusbuf, bwrap_err;
	/* Commands go out through a queue drained on POLLOUT: the sandbox
	 * can stop reading (or shrink its pipe) and terp must not block. */
	struct buf		 outq;
	size_t			 outq_off;	/* written so far */
	int			 cur_unsent;	/* the running cell is still in outq */
	char			 carry[2][4];	/* cut UTF-8 sequences */
	size_t			 ncarry[2];

	/* the running cell */
	int			 cur;		/* 0: none */
	int			 last;		/* gets output between cells */
	int64_t			 cur_start;	/* now_us() when the cell was sent */
	uint64_t		 timeout_timer, grace_timer;
	enum stop_cause		 stop;
	struct pending		*queue;

	/* the artifact being received; every name here is terp's except
	 * art_shown, the sandbox's name made safe to print */
	int			 art_fd;
	char			*art_shown, *art_path, *art_tmp;
	uint64_t		 art_size, art_got;
	int			 art_cell;
	struct written {
		char		*name;		/* in out_dir */
		uint64_t	 size;
	}			*written;	/* files terp wrote this session */
	int			 nwritten;
	struct kframe_usage	 use;		/* counted against the caps */
	int			 reports;	/* not-copied lines this cell */
	int			 unreported;	/* ... and those beyond the cap */

	char			*stopped_why;	/* kernel_stop's reason until relaunch */
};

static void kernel_on_ev(struct loop *l, int fd, int revents, void *arg);
static void kernel_on_out(struct loop *l, int fd, int revents, void *arg);
static void kernel_on_status(struct loop *l, int fd, int revents, void *arg);
static void kernel_on_cmd(struct loop *l, int fd, int revents, void *arg);
static void kernel_begin_death(struct kernel *k);
static void kernel_next(struct kernel *k);

/* Ends the whole sandbox: closing the launcher's life pipe makes it kill
 * everything under it (a SIGKILL of the launcher alone could leave
 * bwrap's child behind during its start-up). */
static void
end_sandbox(struct kernel *k)
{
	if (k->p.life_fd >= 0) {
		close(k->p.life_fd);
		k->p.life_fd = -1;
	} else if (k->p.pid > 0) {
		kill(k->p.pid, SIGKILL);
	}
}

void
kernel_opts_default(struct kernel_opts *o)
{
	memset(o, 0, sizeof *o);
	o->python = "/usr/bin/python3";
	o->out_dir = "out";
	o->memory = 4ULL << 30;
	o->timeout_ms = 120000;
	o->grace_ms = 3000;
	o->nproc = 256;
	o->fsize = 1ULL << 30;
	o->nofile = 1024;
	o->artifact_max = 64ULL << 20;
	o->artifacts_per_cell = 64;
	o->artifacts_per_session = 1000;
	o->artifact_bytes = 1ULL << 30;
	o->disk = 4ULL << 30;
}

uint64_t
kernel_disk_files(uint64_t disk)
{
	uint64_t n = disk / (32 * 1024);

	return n < 4096 ? 4096 : n > 200000 ? 200000 : n;
}

const char *
kernel_state_name(enum kernel_state s)
{
	switch (s) {
	case KERNEL_STOPPED: return "stopped";
	case KERNEL_STARTING: return "starting";
	case KERNEL_LOADING: return "loading libraries";
	case KERNEL_READY: return "ready";
	case KERNEL_BUSY: return "running";
	case KERNEL_DEAD: return "dead";
	}
	return "unknown";
}

static void
set_status(struct kernel *k, enum kernel_state st, const char *msg,
    int restarted, int state_lost)
{
	struct kernel_status ks = { .state = st, .restarted = restarted,
	    .state_lost = state_lost, .msg = msg ? msg : kernel_state_name(st) };

	k->state = st;
	if (k->cb.state)
		k->cb.state(k->arg, &ks);
}

static void
set_state(struct kernel *k, enum kernel_state st, const char *msg)
{
	set_status(k, st, msg, 0, 0);
}

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

/* The folder that holds the sandbox-facing workspace/ and data/.
 * Without root the sandbox runs as us: the session folder itself,
 * 0700. As root it runs as k->uid, which must get through every folder
 * above its bind sources (see traversable) but nobody else may: the
 * base is root-owned, group k->uid, 0710, and sits in the session
 * folder when the folders above it let others search them, else (a
 * home like /root is 0700) under /var/lib/terp/sessions, with a link
 * from the session folder. A session made by an older terp keeps the
 * base its link names. */
static char *
sandbox_base(struct kernel *k, char **err)
{
	const char *sd = k->o->session_dir;
	const char *id = strrchr(sd, '/');
	char *base = NULL, *link, *parent, target[4096];
	ssize_t n;

	if (k->uid == 0)
		return xstrdup(sd);
	id = id ? id + 1 : sd;
	link = xasprintf("%s/sandbox", sd);
	parent = xstrndup(sd, (size_t)(id - sd > 1 ? id - sd - 1 : 1));
	n = readlink(link, target, sizeof target - 1);
	if (n > 0) {
		char *old = xasprintf("/var/lib/terp/sessions/%s", id);
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
		if (mkdir_p("/var/lib/terp/sessions", 0711) < 0) {
			*err = xasprintf("cannot create /var/lib/terp/sessions: %s", strerror(errno));
			goto out;
		}
		chmod("/var/lib/terp", 0711);
		chmod("/var/lib/terp/sessions", 0711);
		base = xasprintf("/var/lib/terp/sessions/%s", id);
		if (mkdir(base, 0700) < 0 && errno != EEXIST) {
			*err = xasprintf("cannot create %s: %s", base, strerror(errno));
			free(base);
			base = NULL;
			goto out;
		}
		if (symlink(base, link) < 0 && errno != EEXIST) {
			/* only a convenience for people looking at the session */
		}
	}
	/* root:uid 0710: the sandbox uid may pass, nobody else may even
	 * look; a /workspace the sandbox makes 0777 stays out of reach. */
	if (chown(base, 0, (gid_t)k->uid) < 0 || chmod(base, 0710) < 0) {
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
clear_datadir(struct kernel *k)
{
	DIR *d = opendir(k->datadir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			(void)unlinkat(dirfd(d), e->d_name, 0);
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
 * kernel_free (uidpool.h). */
static int
take_uid(struct kernel *k, char **err)
{
	struct uidpool pool;

	if (k->uid != 0 || getuid() != 0 || k->o->no_sandbox)
		return 0;
	uidpool_default(&pool);
	return uidpool_take(&pool, &k->uid, &k->uid_lock, err);
}

static int
prepare_dirs(struct kernel *k, char **err)
{
	const char *sd = k->o->session_dir;
	char *base;

	if (take_uid(k, err) < 0)
		return -1;
	/* The session folder stays ours and private. */
	if (mkdir_p(sd, 0700) < 0 || chmod(sd, 0700) < 0) {
		*err = xasprintf("cannot create the session folder %s: %s", sd,
		    strerror(errno));
		return -1;
	}
	if ((base = sandbox_base(k, err)) == NULL)
		return -1;
	k->workspace = xasprintf("%s/workspace", base);
	/* Without bwrap, Python sees the data files where the sandbox
	 * would: in the workspace. */
	k->datadir = k->o->no_sandbox ? xasprintf("%s/data", k->workspace) :
	    xasprintf("%s/data", base);
	free(base);
	if (mkdir_p(k->workspace, 0700) < 0 || mkdir_p(k->datadir, 0700) < 0) {
		*err = xasprintf("cannot create the session folder %s: %s", k->workspace,
		    strerror(errno));
		return -1;
	}
	/* As root, group k->uid may list the data folder; the files in it
	 * are bind mount points or copies readable by that group only. */
	if (k->uid != 0 && (chown(k->datadir, 0, (gid_t)k->uid) < 0 ||
	    chmod(k->datadir, 0750) < 0)) {
		*err = xasprintf("cannot protect %s: %s", k->datadir, strerror(errno));
		return -1;
	}
	clear_datadir(k);
	{
		char *wsd = xasprintf("%s/data", k->workspace);
		char *wso = xasprintf("%s/out", k->workspace);
		mkdir(wsd, 0755);
		mkdir(wso, 0755);
		if (k->uid != 0) {
			/* lchown: the workspace's content may be the sandbox's
			 * doing from an earlier run; never follow its links. */
			if (lchown(k->workspace, k->uid, k->uid) < 0 ||
			    lchown(wsd, k->uid, k->uid) < 0 ||
			    lchown(wso, k->uid, k->uid) < 0) {
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
			chown_uid = k->uid;
			(void)nftw(k->workspace, chown_entry, 16, FTW_PHYS | FTW_MOUNT);
		}
		free(wsd);
		free(wso);
	}
	return 0;
}

struct kernel *
kernel_new(struct loop *l, const struct kernel_opts *o, const struct kernel_cbs *cb,
    void *arg)
{
	struct kernel *k = xcalloc(1, sizeof *k);

	k->loop = l;
	k->o = o;
	k->cb = *cb;
	k->arg = arg;
	k->p.pid = -1;
	k->p.cmd_fd = k->p.ev_fd = k->p.out_fd = k->p.err_fd = k->p.status_fd = -1;
	k->out_dirfd = -1;
	k->art_fd = -1;
	k->exit_code = -1;
	k->uid = 0;		/* as root, taken with the folders (take_uid) */
	k->uid_lock = -1;
	kframe_reader_init(&k->evr, KFRAME_MAX);
	buf_init(&k->outq, OUTQ_MAX);
	buf_init(&k->statusbuf, 64 * 1024);
	buf_init(&k->bwrap_err, STDERR_KEEP);
	return k;
}

int
kernel_probe(const struct kernel_opts *o, char **err)
{
	if (o->no_sandbox)
		return 0;
	return sandbox_probe(err);
}

const char *
kernel_workspace(const struct kernel *k)
{
	return k->workspace;
}

enum kernel_state
kernel_state(const struct kernel *k)
{
	return k->state;
}

int
kernel_busy(const struct kernel *k)
{
	return k->cur != 0 || k->queue != NULL;
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

/* Copies in to out, both regular files, keeping holes: only the data
 * segments (SEEK_DATA/SEEK_HOLE) are copied, so a sparse file costs
 * what it holds. copy_file_range first: in-kernel, and reflinks where
 * the file system can. */
static int
copy_fd(int in, int out)
{
	char b[1 << 16];
	struct stat st;
	off_t pos = 0, end;

	if (fstat(in, &st) < 0)
		return -1;
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;
		if (data < 0) {
			if (errno == ENXIO)
				break;		/* only a hole is left */
			data = pos;		/* no SEEK_DATA here: copy all */
			hole = st.st_size;
		} else if ((hole = lseek(in, data, SEEK_HOLE)) < 0) {
			hole = st.st_size;
		}
		end = hole;
		pos = data;
		while (pos < end) {
			off_t o_in = pos, o_out = pos;
			ssize_t r = copy_file_range(in, &o_in, out, &o_out,
			    (size_t)(end - pos < (1 << 30) ? end - pos : (1 << 30)), 0);
			if (r > 0) {
				pos += r;
				continue;
			}
			if (r == 0)
				break;
			if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
			    errno != EOPNOTSUPP)
				return -1;
			/* By hand. */
			r = pread(in, b, (size_t)(end - pos < (off_t)sizeof b ? end - pos : (off_t)sizeof b), pos);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r < 0 ? -1 : 0;
			if (pwrite(out, b, (size_t)r, pos) != r)
				return -1;
			pos += r;
		}
		pos = end;
	}
	return ftruncate(out, st.st_size);
}

/* Opens a data file: without blocking (a FIFO's open would wait for a
 * writer), through symlinks to the real file, which must be regular.
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
	if (S_ISREG(st->st_mode))
		return fd;
	close(fd);
	what = S_ISDIR(st->st_mode) ? "a folder" : S_ISFIFO(st->st_mode) ? "a FIFO" :
	    S_ISSOCK(st->st_mode) ? "a socket" : S_ISCHR(st->st_mode) ? "a character device" :
	    S_ISBLK(st->st_mode) ? "a block device" : "not a regular file";
	*err = xasprintf("data file %s is %s; give a regular file", path, what);
	return -1;
}

int
kernel_check_data(const char *path, char **err)
{
	struct stat st;
	int fd = data_open(path, &st, err);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Whether the sandbox's uid can read the open file st: itself without
 * root; as root (the sandbox runs as k->uid) only what others may read. */
static int
sandbox_can_read(const struct kernel *k, const struct stat *st)
{
	if (k->uid == 0)
		return 1;
	if (st->st_uid == k->uid)
		return (st->st_mode & S_IRUSR) != 0;
	if (st->st_gid == (gid_t)k->uid)
		return (st->st_mode & S_IRGRP) != 0;
	return (st->st_mode & S_IROTH) != 0;
}

/* Whether bwrap, as the sandbox's uid, can bind the open file fd: it
 * resolves the file's path (see traversable), so the path must still
 * name it and every folder on it must let the sandbox uid through. */
static int
bindable(const struct kernel *k, int fd, const struct stat *st)
{
	char link[64], path[4096];
	ssize_t n;

	if (k->o->no_sandbox || st->st_nlink == 0 || !sandbox_can_read(k, st))
		return 0;
	if (k->uid == 0)
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

/* A free name in the data folder for base: name, name-2.ext, ...,
 * created empty with O_EXCL (a bind's mount point, or a copy's target
 * when out is not NULL: then left open for writing in *out). */
static char *
data_claim(struct kernel *k, const char *base, int *out, char **err)
{
	char *name = safe_name(base), *cand = NULL;
	const char *dot = strrchr(name, '.');
	int stem = dot && dot != name ? (int)(dot - name) : (int)strlen(name);
	mode_t mode = k->uid != 0 ? 0440 : 0400;
	int failed = 0;

	for (int i = 1; i < 1000 && !failed; i++) {
		char *path;
		int fd;

		free(cand);
		cand = i == 1 ? xstrdup(name) :
		    xasprintf("%.*s-%d%s", stem, name, i, dot && dot != name ? dot : "");
		path = xasprintf("%s/%s", k->datadir, cand);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		free(path);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0) {
			*err = xasprintf("cannot stage %s: %s", base, strerror(errno));
			failed = 1;
			break;
		}
		/* Readable by the sandbox uid's group only (as root). */
		if (k->uid != 0 && fchown(fd, 0, (gid_t)k->uid) < 0) {
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

/* Puts host_path into the session's data folder. Before the sandbox
 * starts, a file the sandbox uid can read is bound read-only by its fd
 * (no copy, no disk, constant time whatever its size). A sandbox that
 * runs already cannot get a new mount: the file is hard-linked there
 * when it can be, else copied (holes kept), readable by the sandbox uid
 * only; so is a file the sandbox uid could not read itself. */
static char *
stage_file(struct kernel *k, const char *host_path, char **err)
{
	const char *base = strrchr(host_path, '/');
	struct stat st;
	char *name, *r;
	int in, out = -1;

	base = base ? base + 1 : host_path;
	if ((in = data_open(host_path, &st, err)) < 0)
		return NULL;
	if (k->p.pid <= 0 && k->nbinds < SANDBOX_MAX_BINDS && bindable(k, in, &st)) {
		if ((name = data_claim(k, base, NULL, err)) == NULL) {
			close(in);
			return NULL;
		}
		k->binds = xrealloc(k->binds, (size_t)(k->nbinds + 1) * sizeof *k->binds);
		k->binds[k->nbinds].fd = in;
		k->binds[k->nbinds].name = name;
		k->nbinds++;
		return k->o->no_sandbox ? xasprintf("%s/%s", k->datadir, name) :
		    xasprintf("/workspace/data/%s", name);
	}
	if ((name = data_claim(k, base, &out, err)) == NULL) {
		close(in);
		return NULL;
	}
	{
		char link[64], *dest = xasprintf("%s/%s", k->datadir, name);
		int linked = 0;
		snprintf(link, sizeof link, "/proc/self/fd/%d", in);
		if (sandbox_can_read(k, &st)) {
			/* The link replaces the empty file we claimed. */
			char *tmp = xasprintf("%s/.%s.link", k->datadir, name);
			if (linkat(AT_FDCWD, link, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
				linked = rename(tmp, dest) == 0;
				if (!linked)
					unlink(tmp);
			}
			free(tmp);
		}
		if (!linked && copy_fd(in, out) < 0) {
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
	r = k->o->no_sandbox ? xasprintf("%s/%s", k->datadir, name) :
	    xasprintf("/workspace/data/%s", name);
	free(name);
	return r;
}

char *
kernel_stage(struct kernel *k, const char *host_path, char **err)
{
	if (k->workspace == NULL && prepare_dirs(k, err) < 0)
		return NULL;
	return stage_file(k, host_path, err);
}

/* A bound file that is no longer linked (deleted since) has no path
 * bwrap could resolve: it becomes a copy before the next launch. */
static int
unbind_deleted(struct kernel *k, char **err)
{
	for (int i = 0; i < k->nbinds; i++) {
		struct stat st;
		char *dest;
		int out;

		if (fstat(k->binds[i].fd, &st) < 0 || st.st_nlink > 0)
			continue;
		dest = xasprintf("%s/%s", k->datadir, k->binds[i].name);
		out = open(dest, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
		if (out < 0 || copy_fd(k->binds[i].fd, out) < 0) {
			*err = xasprintf("cannot copy the deleted data file %s: %s",
			    k->binds[i].name, strerror(errno));
			if (out >= 0)
				close(out);
			free(dest);
			return -1;
		}
		close(out);
		free(dest);
		close(k->binds[i].fd);
		free(k->binds[i].name);
		k->binds[i--] = k->binds[--k->nbinds];
	}
	return 0;
}

/* ------------------------------------------------------------ disk */

/* The workspace is a folder of the host's disk, so its size is bounded
 * by measuring (diskuse.h): on a timer while the sandbox lives and at
 * each cell's end. Over the limit, terp kills the sandbox: that stops
 * every writer, threads and background processes included. The
 * overshoot is what the sandbox writes between two checks: at most
 * write speed x the interval (DISK_EVERY_MS, longer when a check is
 * costly), and each file stays under --max-file-size. */

static uint64_t
files_limit(const struct kernel *k)
{
	return k->o->disk_files ? k->o->disk_files : kernel_disk_files(k->o->disk);
}

/* Measures the workspace and the deleted files the sandbox still holds
 * open; limits of 0 measure everything. Returns the cost in us. */
static int64_t
disk_measure(struct kernel *k, uint64_t max_bytes, uint64_t max_files,
    struct diskuse *u)
{
	int64_t t0 = now_us();
	pid_t root = k->init_pid > 0 ? k->init_pid : k->py_pid;
	struct stat st;

	memset(u, 0, sizeof *u);
	if (k->workspace == NULL || diskuse_tree(k->workspace, max_bytes, max_files, u) < 0)
		return now_us() - t0;
	if (!u->stopped && root > 0 && stat(k->workspace, &st) == 0) {
		pid_t *pids = xmalloc(1024 * sizeof *pids);
		int n = sandbox_descendants(root, pids, 1024);
		for (int i = 0; i < n; i++)
			diskuse_deleted_open(pids[i], st.st_dev, u);
		free(pids);
	}
	return now_us() - t0;
}

/* This launch's limits: --disk, or what the workspace holds already
 * when that is more (a session stopped for its disk use restarts and
 * may delete, but not grow). */
static void
disk_baseline(struct kernel *k)
{
	struct diskuse u;

	k->disk_allow = k->o->disk;
	k->files_allow = files_limit(k);
	if (k->o->disk == 0)
		return;
	disk_measure(k, 0, 0, &u);
	if (u.bytes > k->disk_allow)
		k->disk_allow = u.bytes;
	if (u.inodes > k->files_allow)
		k->files_allow = u.inodes;
}

static void on_disk_timer(struct loop *l, void *arg);

static void
disk_schedule(struct kernel *k, int64_t ms)
{
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = 0;
	if (k->o->disk == 0 || k->p.pid <= 0)
		return;
	if (ms < DISK_EVERY_MS)
		ms = DISK_EVERY_MS;
	if (ms > DISK_EVERY_MAX)
		ms = DISK_EVERY_MAX;
	k->disk_timer = loop_timer_add(k->loop, ms, on_disk_timer, k);
}

/* Checks the limits; over them, kills the sandbox with the reason and
 * returns 1. */
static int
disk_check(struct kernel *k)
{
	struct diskuse u;
	char lim[32], got[32];
	int64_t cost;

	if (k->o->disk == 0 || k->p.pid <= 0 || k->dying)
		return 0;
	cost = disk_measure(k, k->disk_allow, k->files_allow, &u);
	if (!u.too_deep && u.bytes <= k->disk_allow && u.inodes <= k->files_allow) {
		disk_schedule(k, cost * 20 / 1000);
		return 0;
	}
	fmt_bytes(lim, sizeof lim, k->o->disk);
	fmt_bytes(got, sizeof got, u.bytes);
	free(k->kill_why);
	if (u.too_deep)
		k->kill_why = xstrdup("the sandbox was stopped: its workspace nests folders "
		    "more than 256 deep");
	else if (u.bytes > k->disk_allow)
		k->kill_why = xasprintf("the sandbox was stopped: the workspace holds more "
		    "than the session's disk limit of %s (%s%s); delete files to go on",
		    lim, u.stopped ? "over " : "", got);
	else
		k->kill_why = xasprintf("the sandbox was stopped: the workspace holds more "
		    "than %llu files, the session's limit; delete files to go on",
		    (unsigned long long)files_limit(k));
	/* The launcher kills the whole sandbox when its life pipe closes. */
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = 0;
	end_sandbox(k);
	kernel_begin_death(k);
	return 1;
}

static void
on_disk_timer(struct loop *l, void *arg)
{
	struct kernel *k = arg;

	k->disk_timer = 0;
	disk_check(k);
}

/* At a cell's end: the processes it left behind go (they are not
 * bounded by the cell's time limit otherwise), and the disk is
 * checked. The driver's Python stays. */
static void
cell_cleanup(struct kernel *k)
{
	if (k->p.pid <= 0 || k->dying)
		return;
	if (k->py_pid > 0)
		sandbox_kill_strays(k->init_pid > 0 ? k->init_pid : k->py_pid, k->py_pid,
		    STRAY_WAIT_MS);
	/* From the loop, not from here: a kill now could end in
	 * finish_death, which finishes this very cell a second time. */
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = loop_timer_add(k->loop, 0, on_disk_timer, k);
}

/* ------------------------------------------------------------ launch */

/* A new channel: nothing of the last sandbox's is pending on it. */
static void
watch_all(struct kernel *k)
{
	buf_reset(&k->outq);
	k->outq_off = 0;
	k->cur_unsent = 0;
	/* Paused until a command waits (events 0); see cmd_flush. */
	loop_watch(k->loop, k->p.cmd_fd, 0, kernel_on_cmd, k);
	loop_watch(k->loop, k->p.ev_fd, POLLIN, kernel_on_ev, k);
	loop_watch(k->loop, k->p.out_fd, POLLIN, kernel_on_out, k);
	loop_watch(k->loop, k->p.err_fd, POLLIN, kernel_on_out, k);
	if (k->p.status_fd >= 0)
		loop_watch(k->loop, k->p.status_fd, POLLIN, kernel_on_status, k);
}

static void
unwatch_all(struct kernel *k)
{
	if (k->p.cmd_fd >= 0)
		loop_unwatch(k->loop, k->p.cmd_fd);
	if (k->p.ev_fd >= 0)
		loop_unwatch(k->loop, k->p.ev_fd);
	if (k->p.out_fd >= 0)
		loop_unwatch(k->loop, k->p.out_fd);
	if (k->p.err_fd >= 0)
		loop_unwatch(k->loop, k->p.err_fd);
	if (k->p.status_fd >= 0)
		loop_unwatch(k->loop, k->p.status_fd);
}

static int
launch(struct kernel *k, char **err)
{
	struct sandbox_spec s;
	int bind_fds[SANDBOX_MAX_BINDS];
	const char *bind_names[SANDBOX_MAX_BINDS];
	int rc;
	/* a sandbox ran before this one: its Python state is gone */
	int lost = k->state != KERNEL_STOPPED || k->stopped_why != NULL;

	memset(&s, 0, sizeof s);
	if (unbind_deleted(k, err) < 0)
		return -1;
	for (int i = 0; i < k->nbinds; i++) {
		bind_fds[i] = k->binds[i].fd;
		bind_names[i] = k->binds[i].name;
	}
	s.bind_fds = bind_fds;
	s.bind_names = bind_names;
	s.nbinds = k->nbinds;
	s.python = k->o->python ? k->o->python : "/usr/bin/python3";
	s.workspace = k->workspace;
	s.datadir = k->datadir;
	s.driver = (const char *)driver_py;
	s.driver_len = sizeof driver_py;
	s.uid = k->uid;
	s.memory = k->o->memory;
	s.nproc = k->o->nproc;
	s.fsize = k->o->fsize;
	s.nofile = k->o->nofile;
	s.artifact_max = k->o->artifact_max;
	s.no_sandbox = k->o->no_sandbox;
	s.network = k->o->network;
	s.preload = getenv("TERP_NO_PRELOAD") == NULL;
	if (!k->cg_tried && !k->o->no_sandbox) {
		char *why = NULL, name[64];
		const char *id = strrchr(k->o->session_dir, '/');
		k->cg_tried = 1;
		snprintf(name, sizeof name, "terp-%.40s-%d", id ? id + 1 : "session", (int)getpid());
		k->cg = cgroup_create(name, k->o->memory, k->o->nproc, &why);
		free(why);	/* rlimits only: the common case on many machines */
	}
	s.cgroup_procs_fd = cgroup_procs_fd(k->cg);
	k->oom_at_launch = cgroup_oom_kills(k->cg);

	kframe_reader_reset(&k->evr);
	buf_reset(&k->statusbuf);
	buf_reset(&k->bwrap_err);
	k->ncarry[0] = k->ncarry[1] = 0;
	k->exit_code = -1;
	k->we_killed = 0;
	k->dying = 0;
	k->loaded = 0;
	k->init_pid = k->o->no_sandbox ? -1 : 0;
	k->py_pid = -1;
	free(k->kill_why);
	k->kill_why = NULL;
	disk_baseline(k);
	rc = sandbox_launch(&s, &k->p, err);
	if (rc < 0)
		return -1;
	if (k->o->no_sandbox)
		k->py_pid = k->p.pid;
	watch_all(k);
	disk_schedule(k, DISK_EVERY_MS);
	if (k->stopped_why != NULL) {
		char *msg = xasprintf("restarted the sandbox, which was stopped (%s)",
		    k->stopped_why);
		free(k->stopped_why);
		k->stopped_why = NULL;
		set_status(k, KERNEL_STARTING, msg, 1, 1);
		free(msg);
	} else {
		set_status(k, KERNEL_STARTING, "starting the sandbox", 0, lost);
	}
	return 0;
}

int
kernel_start(struct kernel *k, char **err)
{
	if (k->state != KERNEL_STOPPED && k->state != KERNEL_DEAD) {
		*err = xstrdup("the Python session is running already");
		return -1;
	}
	if (k->workspace == NULL && prepare_dirs(k, err) < 0)
		return -1;
	if (k->out_dirfd < 0) {
		/* The output folder is the user's: created if missing, and
		 * everything goes through this fd with O_EXCL/O_NOFOLLOW. */
		if (mkdir_p(k->o->out_dir, 0755) < 0 ||
		    (k->out_dirfd = open(k->o->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
			*err = xasprintf("cannot use the output folder %s: %s", k->o->out_dir,
			    strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < k->o->ndata; i++) {
		char *p = stage_file(k, k->o->data_files[i], err);
		if (p == NULL)
			return -1;
		free(p);
	}
	return launch(k, err);
}

/* ------------------------------------------------------------ artifacts */

/* The frames of an artifact (artifact, chunk..., artifact_end) are
 * claims: terp checks their order, counts them against the caps, picks
 * the host name itself and writes through a hidden temporary file that
 * is unlinked whenever the artifact is abandoned. Every artifact not
 * copied is reported in the cell's stderr, which reaches the user and
 * the model alike. */

static void emit_output(struct kernel *k, int stream, const char *p, size_t n);
static void drain_all(struct kernel *k);

/* "terp: artifact NAME not copied: WHY" in the running cell's stderr;
 * past REPORTS_PER_CELL lines only counted (art_report_rest). */
static void
art_report(struct kernel *k, const char *shown, const char *why)
{
	char *msg;

	if (k->cur == 0)
		return;		/* no cell to tell: a stray (forged) frame */
	if (k->reports >= REPORTS_PER_CELL) {
		k->unreported++;
		return;
	}
	k->reports++;
	drain_all(k);	/* after what the cell printed before */
	msg = xasprintf("terp: artifact %s not copied: %s\n", shown, why);
	emit_output(k, 1, msg, strlen(msg));
	free(msg);
}

static void
art_report_rest(struct kernel *k)
{
	char *msg;

	if (k->cur == 0 || k->unreported == 0)
		return;
	msg = xasprintf("terp: %d more artifacts not copied (not listed)\n", k->unreported);
	emit_output(k, 1, msg, strlen(msg));
	free(msg);
	k->unreported = 0;
}

/* Drops the artifact being received: its temporary file is unlinked,
 * and when why is set the cell is told. */
static void
art_abandon(struct kernel *k, const char *why)
{
	if (k->art_fd >= 0)
		close(k->art_fd);
	if (k->art_tmp != NULL && k->out_dirfd >= 0)
		(void)unlinkat(k->out_dirfd, k->art_tmp, 0);
	if (why != NULL && k->art_shown != NULL && k->art_cell == k->cur)
		art_report(k, k->art_shown, why);
	k->art_fd = -1;
	free(k->art_shown);
	free(k->art_path);
	free(k->art_tmp);
	k->art_shown = k->art_path = k->art_tmp = NULL;
	k->art_size = k->art_got = 0;
}

static void
art_fail_errno(struct kernel *k, const char *what, int err)
{
	char *why;

	if (err == ENOSPC || err == EDQUOT)
		why = xasprintf("the output folder is full (%s)", strerror(err));
	else if (err == EFBIG)
		why = xasprintf("it is over the output folder's file size limit (%s)",
		    strerror(err));
	else
		why = xasprintf("cannot %s it in the output folder: %s", what, strerror(err));
	art_abandon(k, why);
	free(why);
}

/* Index in k->written of a file terp wrote this session, or -1. */
static int
written_index(const struct kernel *k, const char *name)
{
	for (int i = 0; i < k->nwritten; i++)
		if (strcmp(k->written[i].name, name) == 0)
			return i;
	return -1;
}

static char *
cap_reason(const struct kernel *k, enum kframe_refusal r, uint64_t size)
{
	char a[32], b[32];

	switch (r) {
	case KF_TOO_LARGE:
		fmt_bytes(a, sizeof a, size);
		fmt_bytes(b, sizeof b, k->o->artifact_max);
		return xasprintf("too large (%s; the limit is %s)", a, b);
	case KF_CELL_CAP:
		return xasprintf("cap reached (%d artifacts per cell)", k->o->artifacts_per_cell);
	case KF_SESSION_CAP:
		return xasprintf("cap reached (%d artifact files per session)",
		    k->o->artifacts_per_session);
	case KF_BYTES_CAP:
		fmt_bytes(a, sizeof a, k->o->artifact_bytes);
		return xasprintf("cap reached (%s of artifacts per session)", a);
	case KF_ADMIT:
		break;
	}
	return xstrdup("refused");
}

/* Chooses the host name: the sanitized name; when a file of that name
 * exists that terp did not write in this session, name-2.ext and so on.
 * A file terp wrote in this session is replaced (through a temp file and
 * rename, never by writing into the existing inode). */
static void
art_begin(struct kernel *k, const struct kframe *f)
{
	struct kframe_caps caps = {
		.size_max = k->o->artifact_max,
		.per_cell = k->o->artifacts_per_cell,
		.per_session = k->o->artifacts_per_session,
		.session_bytes = k->o->artifact_bytes,
	};
	const char *problem;
	char *host, *why;
	enum kframe_refusal r;
	uint64_t size;
	int w = -1;

	art_abandon(k, "incomplete: another artifact started before it ended");
	if (f->name == NULL || k->out_dirfd < 0)
		return;
	k->art_cell = k->cur;
	k->art_shown = kframe_display_name(f->name);
	if ((problem = kframe_name_problem(f->name)) != NULL) {
		art_abandon(k, problem);
		return;
	}
	if (!f->has_size || f->size < 0) {
		art_abandon(k, "the sandbox gave no valid size");
		return;
	}
	size = (uint64_t)f->size;
	/* The caps that hold whatever the name: checked before the search
	 * for a free name, so that a flood past the cap costs nothing. */
	if ((r = kframe_admit(&caps, &k->use, size, 1, UINT64_MAX)) != KF_ADMIT) {
		why = cap_reason(k, r, size);
		art_abandon(k, why);
		free(why);
		return;
	}
	host = kframe_host_name(f->name);
	for (int i = 1; i <= NAME_TRIES; i++) {
		struct stat st;
		char *cand = kframe_host_candidate(host, i);
		if (fstatat(k->out_dirfd, cand, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			k->art_path = cand;
			break;
		}
		if (S_ISREG(st.st_mode) && (w = written_index(k, cand)) >= 0) {
			k->art_path = cand;
			break;
		}
		free(cand);
	}
	free(host);
	if (k->art_path == NULL) {
		art_abandon(k, "no free name for it in the output folder");
		return;
	}
	r = kframe_admit(&caps, &k->use, size, w >= 0, w >= 0 ? k->written[w].size : 0);
	if (r != KF_ADMIT) {
		why = cap_reason(k, r, size);
		art_abandon(k, why);
		free(why);
		return;
	}
	k->use.cell++;
	k->art_size = size;
	k->art_tmp = xasprintf(".terp-%d-%s.part", (int)getpid(), k->art_path);
	(void)unlinkat(k->out_dirfd, k->art_tmp, 0);
	k->art_fd = openat(k->out_dirfd, k->art_tmp,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (k->art_fd < 0) {
		int e = errno;
		free(k->art_tmp);	/* not ours: never unlink it */
		k->art_tmp = NULL;
		art_fail_errno(k, "create", e);
	}
}

static void
art_chunk(struct kernel *k, const struct kframe *f)
{
	size_t n;
	char *data;

	if (k->art_fd < 0 || f->data == NULL)
		return;		/* "chunk" outside an artifact: ignored */
	data = base64_decode(f->data, f->data_len, &n);
	if (data == NULL) {
		art_abandon(k, "the sandbox sent data that is not base64");
		return;
	}
	if (n > k->art_size - k->art_got) {
		free(data);
		art_abandon(k, "it grew while it was copied (still being written?)");
		return;
	}
	if (write_all(k->art_fd, data, n) < 0) {
		int e = errno;
		free(data);
		art_fail_errno(k, "write", e);
		return;
	}
	k->art_got += n;
	free(data);
}

static void
art_end(struct kernel *k, const struct kframe *f)
{
	char *host;
	int w, fd;

	if (k->art_fd < 0)
		return;		/* "artifact_end" outside an artifact: ignored */
	if (f->reason != NULL) {
		/* The driver's own account (a read error, a cap): shown, not trusted. */
		char *r = kframe_display_name(f->reason);
		art_abandon(k, r);
		free(r);
		return;
	}
	if (k->art_got != k->art_size || !f->has_size || (uint64_t)f->size != k->art_got) {
		art_abandon(k, "it changed while it was copied (still being written?)");
		return;
	}
	fd = k->art_fd;
	k->art_fd = -1;
	if (close(fd) < 0) {
		art_fail_errno(k, "write", errno);
		return;
	}
	if (renameat(k->out_dirfd, k->art_tmp, k->out_dirfd, k->art_path) < 0) {
		art_fail_errno(k, "rename", errno);
		return;
	}
	free(k->art_tmp);
	k->art_tmp = NULL;
	if ((w = written_index(k, k->art_path)) >= 0) {
		k->use.bytes -= k->written[w].size < k->use.bytes ? k->written[w].size : k->use.bytes;
	} else {
		k->written = xrealloc(k->written, (size_t)(k->nwritten + 1) * sizeof *k->written);
		w = k->nwritten++;
		k->written[w].name = xstrdup(k->art_path);
		k->use.files++;
	}
	k->written[w].size = k->art_got;
	k->use.bytes += k->art_got;
	if (k->cb.artifact) {
		host = xasprintf("%s/%s", k->o->out_dir, k->art_path);
		k->cb.artifact(k->arg, k->art_cell, k->art_path, host, k->art_got);
		free(host);
	}
	art_abandon(k, NULL);
}

/* ------------------------------------------------------------ output */

static void
emit_output(struct kernel *k, int stream, const char *p, size_t n)
{
	int cell = k->cur ? k->cur : k->last;
	char tmp[8];
	size_t cut;

	if (k->cb.output == NULL || n == 0)
		return;
	/* Complete a UTF-8 sequence cut at the end of the last read. */
	if (k->ncarry[stream] > 0) {
		size_t c = k->ncarry[stream], take = 0;
		memcpy(tmp, k->carry[stream], c);
		while (take < n && c + take < 4 && ((unsigned char)p[take] & 0xC0) == 0x80)
			take++;
		memcpy(tmp + c, p, take);
		k->ncarry[stream] = 0;
		k->cb.output(k->arg, cell, stream, tmp, c + take);
		p += take;
		n -= take;
	}
	cut = utf8_complete_prefix(p, n);
	if (cut > 0)
		k->cb.output(k->arg, cell, stream, p, cut);
	if (n - cut > 0 && n - cut < 4) {
		memcpy(k->carry[stream], p + cut, n - cut);
		k->ncarry[stream] = n - cut;
	}
}

static void
flush_carry(struct kernel *k)
{
	for (int s = 0; s < 2; s++) {
		if (k->ncarry[s] > 0 && k->cb.output)
			k->cb.output(k->arg, k->cur ? k->cur : k->last, s, k->carry[s],
			    k->ncarry[s]);
		k->ncarry[s] = 0;
	}
}

/* Bytes from the sandbox's stdout/stderr. Until the driver is ready
 * they are bwrap's (or Python's) start-up complaints: kept for the
 * error message, not shown as a cell's output. */
static void
on_bytes(struct kernel *k, int stream, const char *b, size_t n)
{
	if (k->state == KERNEL_STARTING) {
		size_t room = STDERR_KEEP - k->bwrap_err.len;
		buf_add(&k->bwrap_err, b, n < room ? n : room);
		return;
	}
	emit_output(k, stream, b, n);
}

/* Reads what is in the pipe now. Returns 0, or -1 at EOF. */
static int
drain_fd(struct kernel *k, int fd, int stream)
{
	char b[65536];
	int rounds = 0;

	/* Bounded rounds: a flooding cell must not starve the loop. */
	while (rounds++ < 64) {
		ssize_t n = read(fd, b, sizeof b);
		if (n > 0) {
			on_bytes(k, stream, b, (size_t)n);
			continue;
		}
		if (n == 0)
			return -1;
		if (errno == EINTR)
			continue;
		return 0;
	}
	return 0;
}

static void
kernel_on_out(struct loop *l, int fd, int revents, void *arg)
{
	struct kernel *k = arg;
	int stream = fd == k->p.err_fd ? 1 : 0;

	if (drain_fd(k, fd, stream) < 0)
		loop_unwatch(l, fd);
}

/* Drains both pipes completely: the driver wrote a cell's output before
 * its result frame, so everything of the cell is in the pipes now. */
static void
drain_all(struct kernel *k)
{
	for (int s = 0; s < 2; s++) {
		int fd = s ? k->p.err_fd : k->p.out_fd;
		if (fd < 0)
			continue;
		for (int i = 0; i < 1024; i++) {
			char b[65536];
			ssize_t n = read(fd, b, sizeof b);
			if (n <= 0)
				break;
			on_bytes(k, s, b, (size_t)n);
		}
	}
}

/* ------------------------------------------------------------ cells */

static void
cancel_timers(struct kernel *k)
{
	loop_timer_cancel(k->loop, k->timeout_timer);
	loop_timer_cancel(k->loop, k->grace_timer);
	k->timeout_timer = k->grace_timer = 0;
}

static void
finish_cell(struct kernel *k, struct kernel_result *r)
{
	int n = k->cur;

	cell_cleanup(k);

	cancel_timers(k);
	art_abandon(k, "incomplete: the cell ended before terp had all of it");
	art_report_rest(k);
	flush_carry(k);
	r->duration_us = now_us() - k->cur_start;
	r->duration_ms = r->duration_us / 1000;
	k->last = n;
	k->cur = 0;
	k->stop = STOP_NONE;
	if (k->state == KERNEL_BUSY)
		set_state(k, k->loaded ? KERNEL_READY : KERNEL_LOADING, NULL);
	if (k->cb.result)
		k->cb.result(k->arg, n, r);
}

static char *
memory_reason(const struct kernel *k)
{
	char b[32];
	fmt_bytes(b, sizeof b, k->o->memory);
	return xasprintf("out of memory (limit %s)", b);
}

/* s, or a copy cut to RESULT_TEXT_MAX in *owned: the driver cuts its
 * texts at 64 KiB, a forged frame need not. */
static const char *
cut_text(const char *s, char **owned)
{
	size_t n;

	if (s == NULL || strlen(s) <= RESULT_TEXT_MAX)
		return s;
	n = utf8_complete_prefix(s, RESULT_TEXT_MAX);
	*owned = xasprintf("%.*s... [cut by terp at %u KiB]", (int)n, s, RESULT_TEXT_MAX >> 10);
	return *owned;
}

static void
on_result(struct kernel *k, const struct kframe *f)
{
	struct kernel_result r;
	char *reason = NULL, *own[4] = { NULL, NULL, NULL, NULL };

	/* Only the running cell's, once (cur is 0 after), and only once
	 * the driver has the cell: anything else is stale or forged. */
	if (!f->has_id || k->cur == 0 || f->id != k->cur || k->cur_unsent)
		return;
	drain_all(k);
	memset(&r, 0, sizeof r);
	r.value = cut_text(f->value, &own[0]);
	r.ename = cut_text(f->ename, &own[1]);
	r.evalue = cut_text(f->evalue, &own[2]);
	r.traceback = cut_text(f->traceback, &own[3]);
	r.status = f->ok ? CELL_OK : CELL_ERROR;
	if (r.ename && strcmp(r.ename, "KeyboardInterrupt") == 0 && k->stop != STOP_NONE) {
		if (k->stop == STOP_TIMEOUT) {
			r.status = CELL_TIMEOUT;
			reason = xasprintf("the cell ran past its time limit of %lld s and was interrupted; the session kept its state",
			    (long long)(k->o->timeout_ms / 1000));
		} else {
			r.status = CELL_INTERRUPTED;
			reason = xstrdup("interrupted; the session kept its state");
		}
	} else if (r.ename && strcmp(r.ename, "MemoryError") == 0) {
		reason = memory_reason(k);
	}
	r.reason = reason;
	finish_cell(k, &r);
	free(reason);
	for (int i = 0; i < 4; i++)
		free(own[i]);
	kernel_next(k);
}

/* terp ends the sandbox itself, for why (taken). as_stop: the running
 * cell ends as timed out or interrupted (k->stop), else as crashed. */
static void
kill_sandbox(struct kernel *k, char *why, int as_stop)
{
	if (k->dying) {
		free(why);
		return;
	}
	free(k->kill_why);
	k->kill_why = why;
	k->we_killed = as_stop;
	end_sandbox(k);
	kernel_begin_death(k);
}

/* One line from the driver. Order is checked here: "ready" only while
 * starting, "result" and "artifact" only for the running cell (by id),
 * "chunk" and "artifact_end" only inside an artifact; anything else is
 * ignored, which costs nothing. */
static void
handle_frame(struct kernel *k, const char *line, size_t len)
{
	struct kframe f;
	const char *why;

	if (kframe_parse(line, len, &f, &why) < 0) {
		/* Frames are claims; garbage means the channel is not ours. */
		kill_sandbox(k, xasprintf("the sandbox sent %s", why), 0);
		return;
	}
	switch (f.type) {
	case KF_READY:
		if (k->state != KERNEL_STARTING)
			break;
		if (!k->o->no_sandbox && k->init_pid > 0)
			k->py_pid = sandbox_python_pid(k->init_pid);
		set_state(k, k->loaded ? KERNEL_READY : KERNEL_LOADING,
		    k->loaded ? NULL : "loading pandas, numpy, matplotlib");
		kernel_next(k);
		break;
	case KF_LOADED:
		k->loaded = 1;
		if (k->state == KERNEL_LOADING)
			set_state(k, KERNEL_READY, NULL);
		break;
	case KF_RESULT:
		on_result(k, &f);
		break;
	case KF_ARTIFACT:
		if (k->cur != 0 && !k->cur_unsent && f.has_id && f.id == k->cur)
			art_begin(k, &f);
		break;
	case KF_CHUNK:
		art_chunk(k, &f);
		break;
	case KF_ARTIFACT_END:
		art_end(k, &f);
		break;
	case KF_ARTIFACT_SKIP:
		if (k->cur != 0 && f.has_id && f.id == k->cur) {
			char *name = kframe_display_name(f.name ? f.name : "?");
			char *r = kframe_display_name(f.reason ? f.reason : "refused");
			art_report(k, name, r);
			free(name);
			free(r);
		}
		break;
	default:
		break;	/* "reset", "pong" and unknown events need nothing */
	}
	kframe_free(&f);
}

static void
kernel_on_ev(struct loop *l, int fd, int revents, void *arg)
{
	struct kernel *k = arg;
	char b[65536];
	int rounds = 0;
	const char *line;
	size_t len;

	while (rounds++ < 64) {
		ssize_t n = read(fd, b, sizeof b);
		if (n == 0) {
			kernel_begin_death(k);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				kernel_begin_death(k);
			return;
		}
		if (kframe_reader_add(&k->evr, b, (size_t)n) < 0) {
			kill_sandbox(k, xasprintf("the sandbox sent a protocol frame over %u MiB",
			    KFRAME_MAX >> 20), 0);
			return;
		}
		while (kframe_reader_next(&k->evr, &line, &len)) {
			handle_frame(k, line, len);
			if (k->dying || k->p.ev_fd != fd)
				return;
		}
	}
}

/* bwrap's JSON status lines: {"child-pid": N, ...} then {"exit-code": N}. */
static void
kernel_on_status(struct loop *l, int fd, int revents, void *arg)
{
	struct kernel *k = arg;
	char b[4096];
	ssize_t n;

	while ((n = read(fd, b, sizeof b)) > 0) {
		if (buf_add(&k->statusbuf, b, (size_t)n) < 0)
			buf_reset(&k->statusbuf);
		for (;;) {
			char *nl = memchr(k->statusbuf.data, '\n', k->statusbuf.len);
			cJSON *j, *v;
			if (nl == NULL)
				break;
			j = cJSON_ParseWithLength(k->statusbuf.data,
			    (size_t)(nl - k->statusbuf.data));
			if ((v = cJSON_GetObjectItem(j, "child-pid")) && cJSON_IsNumber(v))
				k->init_pid = (pid_t)v->valueint;
			if ((v = cJSON_GetObjectItem(j, "exit-code")) && cJSON_IsNumber(v))
				k->exit_code = v->valueint;
			cJSON_Delete(j);
			buf_consume(&k->statusbuf, (size_t)(nl - k->statusbuf.data) + 1);
		}
	}
	if (n == 0)
		loop_unwatch(l, fd);
}

/* Writes what the command pipe takes now; the rest waits for POLLOUT.
 * Never blocks: the sandbox may stop reading (a cell that forged its
 * result and sleeps) or shrink the pipe, and the loop must go on. */
static void
cmd_flush(struct kernel *k)
{
	if (k->dying || k->p.cmd_fd < 0)
		return;
	while (k->outq_off < k->outq.len) {
		ssize_t n = write(k->p.cmd_fd, k->outq.data + k->outq_off,
		    k->outq.len - k->outq_off);
		if (n > 0) {
			k->outq_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			loop_watch(k->loop, k->p.cmd_fd, POLLOUT, kernel_on_cmd, k);
			return;
		}
		/* EPIPE: the driver is gone. */
		loop_watch(k->loop, k->p.cmd_fd, 0, kernel_on_cmd, k);
		kernel_begin_death(k);
		return;
	}
	if (k->outq.cap > (1u << 20)) {
		buf_free(&k->outq);	/* a big cell's room is not kept */
		buf_init(&k->outq, OUTQ_MAX);
	}
	buf_reset(&k->outq);
	k->outq_off = 0;
	k->cur_unsent = 0;
	loop_watch(k->loop, k->p.cmd_fd, 0, kernel_on_cmd, k);
}

static void
kernel_on_cmd(struct loop *l, int fd, int revents, void *arg)
{
	cmd_flush(arg);
}

/* Queues a command (one JSON line). Returns 0, or -1 when the queue is
 * full: the driver has not read for OUTQ_MAX bytes. */
static int
send_cmd(struct kernel *k, cJSON *cmd)
{
	char *s = cJSON_PrintUnformatted(cmd);
	size_t len;
	int rc;

	if (s == NULL)
		fatal("out of memory (cJSON)");
	len = strlen(s);
	s[len] = '\n';	/* replaces the NUL: we queue len + 1 bytes */
	if (k->outq_off > 0) {
		buf_consume(&k->outq, k->outq_off);
		k->outq_off = 0;
	}
	rc = buf_add(&k->outq, s, len + 1);
	free(s);
	if (rc < 0)
		return -1;
	cmd_flush(k);
	return 0;
}

static void
signal_python(struct kernel *k, int sig)
{
	if (k->init_pid == 0 && k->p.status_fd >= 0)
		kernel_on_status(k->loop, k->p.status_fd, POLLIN, k);
	if (k->py_pid <= 0 && k->init_pid > 0)
		k->py_pid = sandbox_python_pid(k->init_pid);
	if (k->py_pid > 0) {
		/* A pidfd pins the process: no signal to a recycled pid. */
		int pfd = (int)syscall(SYS_pidfd_open, k->py_pid, 0);
		if (pfd >= 0) {
			syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
			close(pfd);
		} else {
			kill(k->py_pid, sig);
		}
	}
}

static void
on_grace(struct loop *l, void *arg)
{
	struct kernel *k = arg;

	k->grace_timer = 0;
	if (k->cur == 0)
		return;
	/* The cell ignored the interrupt: kill the whole sandbox. */
	k->we_killed = 1;
	end_sandbox(k);
	kernel_begin_death(k);
}

static void
stop_cell(struct kernel *k, enum stop_cause why)
{
	if (k->cur == 0 || k->dying)
		return;
	if (k->stop == STOP_NONE)
		k->stop = why;
	if (k->cur_unsent) {
		/* The driver has not taken the cell although it looked idle:
		 * code of an earlier cell still runs (it may have forged its
		 * end), or the command pipe was shrunk or is not read. An
		 * interrupt would hit that code, and a half-written command
		 * cannot be taken back: the sandbox goes. */
		kill_sandbox(k, k->stop == STOP_TIMEOUT ?
		    xasprintf("the session did not take the cell within its time limit of %lld s (code of an earlier cell still running, or the channel tampered with) and was killed",
		    (long long)(k->o->timeout_ms / 1000)) :
		    xstrdup("the session had not taken the cell when it was interrupted (code of an earlier cell still running, or the channel tampered with) and was killed"),
		    1);
		return;
	}
	signal_python(k, SIGINT);
	if (k->grace_timer == 0)
		k->grace_timer = loop_timer_add(k->loop, k->o->grace_ms, on_grace, k);
}

static void
on_timeout(struct loop *l, void *arg)
{
	struct kernel *k = arg;

	k->timeout_timer = 0;
	stop_cell(k, STOP_TIMEOUT);
}

void
kernel_interrupt(struct kernel *k)
{
	stop_cell(k, STOP_USER);
}

/* Starts the next queued cell when the driver can take it. */
static void
kernel_next(struct kernel *k)
{
	struct pending *p = k->queue;
	cJSON *cmd;

	if (p == NULL || k->cur != 0 || k->dying ||
	    (k->state != KERNEL_READY && k->state != KERNEL_LOADING))
		return;
	k->queue = p->next;
	k->cur = p->n;
	k->cur_start = now_us();
	k->stop = STOP_NONE;
	k->use.cell = k->reports = k->unreported = 0;
	set_state(k, KERNEL_BUSY, NULL);
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "op", "exec");
	cJSON_AddNumberToObject(cmd, "id", p->n);
	cJSON_AddStringToObject(cmd, "code", p->code);
	/* The clock runs from the queueing, not from when the driver takes
	 * the cell: a driver that never takes it times out all the same. */
	if (k->o->timeout_ms > 0)
		k->timeout_timer = loop_timer_add(k->loop, k->o->timeout_ms, on_timeout, k);
	k->cur_unsent = 1;
	if (send_cmd(k, cmd) < 0)
		kill_sandbox(k, xasprintf("the sandbox stopped reading terp's commands (over %u MiB waiting)",
		    OUTQ_MAX >> 20), 0);
	cJSON_Delete(cmd);
	free(p->code);
	free(p);
}

int
kernel_run(struct kernel *k, int n, const char *code, char **err)
{
	struct pending *p, **pp;

	if (strlen(code) > CODE_MAX) {
		*err = xasprintf("the cell's code is over %u MiB", CODE_MAX >> 20);
		return -1;
	}
	if (k->state == KERNEL_STOPPED && k->stopped_why != NULL &&
	    launch(k, err) < 0) {
		set_state(k, KERNEL_DEAD, *err);
		return -1;
	}
	if (k->state == KERNEL_DEAD || k->state == KERNEL_STOPPED) {
		*err = xstrdup("the Python session is not running");
		return -1;
	}
	p = xcalloc(1, sizeof *p);
	p->n = n;
	p->code = xstrdup(code);
	for (pp = &k->queue; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	kernel_next(k);
	return 0;
}

/* ------------------------------------------------------------ death */

static char *
death_reason(struct kernel *k, int wstatus)
{
	int code = k->exit_code;
	int sig = 0;

	if (code < 0 && wstatus >= 0) {
		if (WIFEXITED(wstatus))
			code = WEXITSTATUS(wstatus);
		else if (WIFSIGNALED(wstatus))
			code = 128 + WTERMSIG(wstatus);
	}
	if (code > 128 && code < 160)
		sig = code - 128;
	if (k->kill_why != NULL)
		return xstrdup(k->kill_why);
	if (k->we_killed)
		return xasprintf("the cell ignored the interrupt for %.1f s and was killed",
		    (double)k->o->grace_ms / 1000.0);
	if (k->cg && cgroup_oom_kills(k->cg) > k->oom_at_launch) {
		char *m = memory_reason(k);
		char *r = xasprintf("the Python process was killed: %s", m);
		free(m);
		return r;
	}
	switch (sig) {
	case 0:
		if (code < 0)
			return xstrdup("the Python process died");
		return xasprintf("the Python process exited with code %d", code);
	case SIGKILL:
		/* RLIMIT_DATA turns most memory bombs into MemoryError; a
		 * SIGKILL we did not send is the OOM killer or a kill(). */
		return xasprintf("the Python process was killed (SIGKILL: out of memory or killed)");
	case SIGSEGV:
		return xstrdup("the Python process crashed (segmentation fault)");
	case SIGABRT:
		return xstrdup("the Python process aborted (SIGABRT)");
	case SIGBUS:
		return xstrdup("the Python process crashed (bus error)");
	case SIGSYS:
		return xstrdup("the Python process was killed by the sandbox's system-call policy (SIGSYS)");
	case SIGXCPU:
		return xstrdup("the Python process used up its CPU time budget (SIGXCPU)");
	case SIGXFSZ:
		return xstrdup("the Python process wrote a file past the size limit (SIGXFSZ)");
	default:
		return xasprintf("the Python process was killed by signal %d", sig);
	}
}

static void
finish_death(struct kernel *k, int wstatus)
{
	char *reason, *msg;
	int was_cell = k->cur;
	int starting = k->state == KERNEL_STARTING;
	char *err = NULL;

	loop_timer_cancel(k->loop, k->death_timer);
	k->death_timer = 0;
	drain_all(k);
	art_abandon(k, "incomplete: the session ended while it was copied");
	if (starting && !k->o->no_sandbox && k->exit_code < 0) {
		/* bwrap failed in its own setup: its stderr says why. */
		char *why = sandbox_explain(buf_str(&k->bwrap_err));
		unwatch_all(k);
		sandbox_close_fds(&k->p);
		free(k->kill_why);
		k->kill_why = NULL;
		set_state(k, KERNEL_DEAD, why);
		free(why);
		return;
	}
	reason = death_reason(k, wstatus);
	free(k->kill_why);
	k->kill_why = NULL;
	unwatch_all(k);
	sandbox_close_fds(&k->p);
	if (was_cell) {
		struct kernel_result r;
		memset(&r, 0, sizeof r);
		r.status = k->we_killed ? (k->stop == STOP_TIMEOUT ? CELL_TIMEOUT : CELL_INTERRUPTED) :
		    CELL_CRASHED;
		msg = xasprintf("%s; the session restarted and its state (variables, imports) was lost", reason);
		r.reason = msg;
		r.state_lost = 1;
		finish_cell(k, &r);
		free(msg);
	}
	k->dying = 0;
	if (starting) {
		msg = xasprintf("the sandbox died while starting: %s", reason);
		set_state(k, KERNEL_DEAD, msg);
		free(msg);
		free(reason);
		return;
	}
	msg = xasprintf("%s; restarted the session", reason);
	free(reason);
	if (launch(k, &err) < 0) {
		set_state(k, KERNEL_DEAD, err);
		free(err);
	} else {
		set_status(k, KERNEL_STARTING, msg, 1, 1);
	}
	free(msg);
}

static void
on_death_poll(struct loop *l, void *arg)
{
	struct kernel *k = arg;
	int status;
	pid_t r;

	k->death_timer = 0;
	if (k->p.status_fd >= 0)
		kernel_on_status(l, k->p.status_fd, POLLIN, k);
	r = waitpid(k->p.pid, &status, WNOHANG);
	if (r == k->p.pid) {
		k->p.pid = -1;
		if (k->p.status_fd >= 0)
			kernel_on_status(l, k->p.status_fd, POLLIN, k);
		finish_death(k, status);
		return;
	}
	if (now_ms() - k->death_since > DEATH_WAIT_MS && k->p.pid > 0)
		kill(k->p.pid, SIGKILL);
	k->death_timer = loop_timer_add(l, DEATH_POLL_MS, on_death_poll, k);
}

/* The channel closed, broke, or we killed the sandbox: wait for the
 * process to go (it will: the driver is gone), then report and restart. */
static void
kernel_begin_death(struct kernel *k)
{
	if (k->dying)
		return;
	k->dying = 1;
	k->death_since = now_ms();
	if (k->p.ev_fd >= 0)
		loop_unwatch(k->loop, k->p.ev_fd);
	/* Not killed yet: let bwrap report the exit code (os._exit(3) is
	 * "exited with code 3", not "killed"); on_death_poll kills it when
	 * it lingers. */
	on_death_poll(k->loop, k);
}

/* ------------------------------------------------------------ control */

static void
stop_now(struct kernel *k)
{
	struct pending *p;

	cancel_timers(k);
	loop_timer_cancel(k->loop, k->death_timer);
	k->death_timer = 0;
	loop_timer_cancel(k->loop, k->disk_timer);
	k->disk_timer = 0;
	unwatch_all(k);
	cgroup_kill(k->cg);
	sandbox_kill(&k->p);
	art_abandon(k, NULL);
	free(k->kill_why);
	k->kill_why = NULL;
	while ((p = k->queue) != NULL) {
		k->queue = p->next;
		free(p->code);
		free(p);
	}
	k->dying = 0;
}

int
kernel_reset(struct kernel *k, char **err)
{
	cJSON *cmd;

	if (k->cur != 0) {
		*err = xstrdup("a cell is running; interrupt it first");
		return -1;
	}
	if (k->state != KERNEL_READY && k->state != KERNEL_LOADING) {
		*err = xstrdup("the Python session is not ready");
		return -1;
	}
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "op", "reset");
	if (send_cmd(k, cmd) < 0) {
		cJSON_Delete(cmd);
		*err = xstrdup("the Python session is not answering");
		return -1;
	}
	cJSON_Delete(cmd);
	return 0;
}

int
kernel_restart(struct kernel *k, char **err)
{
	int running = k->cur;

	if (running) {
		struct kernel_result r;
		memset(&r, 0, sizeof r);
		r.status = CELL_INTERRUPTED;
		r.reason = "the session was restarted by request; its state was lost";
		r.state_lost = 1;
		finish_cell(k, &r);
	}
	stop_now(k);
	return launch(k, err);
}

void
kernel_stop(struct kernel *k, const char *reason)
{
	if (k->state == KERNEL_STOPPED || k->state == KERNEL_DEAD)
		return;
	if (k->cur) {
		struct kernel_result r;
		memset(&r, 0, sizeof r);
		r.status = CELL_INTERRUPTED;
		r.reason = "the sandbox was stopped; its state was lost";
		r.state_lost = 1;
		finish_cell(k, &r);
	}
	stop_now(k);
	free(k->stopped_why);
	k->stopped_why = xstrdup(reason && *reason ? reason : "by request");
	set_status(k, KERNEL_STOPPED, k->stopped_why, 0, 1);
}

void
kernel_free(struct kernel *k)
{
	if (k == NULL)
		return;
	stop_now(k);
	cgroup_destroy(k->cg);
	for (int i = 0; i < k->nbinds; i++) {
		close(k->binds[i].fd);
		free(k->binds[i].name);
	}
	free(k->binds);
	free(k->kill_why);
	uidpool_release(k->uid_lock);	/* the uid is free again */
	if (k->out_dirfd >= 0)
		close(k->out_dirfd);
	for (int i = 0; i < k->nwritten; i++)
		free(k->written[i].name);
	free(k->written);
	kframe_reader_free(&k->evr);
	buf_free(&k->outq);
	free(k->kill_why);
	buf_free(&k->statusbuf);
	buf_free(&k->bwrap_err);
	free(k->workspace);
	free(k->datadir);
	free(k->stopped_why);
	free(k);
}
