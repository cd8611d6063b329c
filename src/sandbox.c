/* sandbox: the bubblewrap launcher. The order of the child's steps is
 * the point of this file (SANDBOX.md 2.1): wire fds, close the rest,
 * rlimits, drop root, parent-death signal, exec bwrap with a clean
 * environment. Every step that fails reports through a pipe so the
 * parent can say what went wrong in one line.
 *
 * Between terp and bwrap sits a launcher process, so that no process of
 * the sandbox outlives terp. bwrap forks a child that waits on an
 * eventfd and does its whole set-up before it sets its own parent-death
 * signal: killing bwrap in that window leaves the child blocked forever.
 * The launcher closes the window from outside. As root it makes bwrap
 * the init of a new pid namespace: when bwrap dies, for any reason, the
 * kernel kills everything in that namespace, and the chain terp ->
 * launcher -> bwrap is tied by parent-death signals. Without root it is
 * a child subreaper: orphans of bwrap become its children, and it kills
 * them when bwrap exits or when terp goes (its end of the life pipe
 * closes, which terp cannot fail to do). */
#include "terp/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "terp/sandbox_filter.h"
#include "terp/loop.h"
#include "terp/util.h"

/* TERP_BWRAP names another bwrap (tests use it to play a missing or a
 * failing one); the user can run any program as themselves anyway. */
static const char *
bwrap_path(void)
{
	const char *p = getenv("TERP_BWRAP");
	return p && *p == '/' ? p : "/usr/bin/bwrap";
}

/* The fd numbers bwrap sees. FD_ALIVE is the launcher's pipe, closed
 * before the exec; the data files' fds follow from FD_BIND0. */
enum {
	FD_CMD = 3, FD_EV = 4, FD_STATUS = 5, FD_SECA = 6, FD_SECB = 7,
	FD_WS = 8, FD_DRIVER = 9, FD_PASSWD = 10, FD_GROUP = 11, FD_HOSTS = 12,
	FD_DATA = 13, FD_ERRPIPE = 14, FD_ALIVE = 15, FD_BIND0 = 16,
	FD_MAX = FD_BIND0 + SANDBOX_MAX_BINDS
};

static int
memfd_with(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, len) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* argv builder */
struct argv {
	char	**v;
	int	  n, cap;
};

static void
av_add(struct argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 128;
		a->v = xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

static void
av_addf(struct argv *a, const char *fmt, const char *arg)
{
	char *s = xasprintf(fmt, arg);
	av_add(a, s);
	free(s);
}

static void
av_add2(struct argv *a, const char *x, const char *y)
{
	av_add(a, x);
	av_add(a, y);
}

static void
av_add3(struct argv *a, const char *x, const char *y, const char *z)
{
	av_add(a, x);
	av_add(a, y);
	av_add(a, z);
}

static void
av_free(struct argv *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

/* The environment the Python process gets; nothing of terp's. */
static void
sandbox_env(const struct sandbox_spec *s, struct argv *env)
{
	char b[64];

	av_add(env, "PATH=/usr/bin:/bin");
	av_addf(env, "HOME=%s", s->no_sandbox ? s->workspace : "/workspace");
	av_add(env, "LANG=C.UTF-8");
	av_add(env, "MPLBACKEND=Agg");
	if (s->no_sandbox)
		av_addf(env, "MPLCONFIGDIR=%s/.terp/mpl", s->workspace);
	else
		av_add(env, "MPLCONFIGDIR=/tmp/mpl");
	av_add(env, "XDG_CACHE_HOME=/tmp/.cache");
	av_add(env, "OPENBLAS_NUM_THREADS=1");
	av_add(env, "OMP_NUM_THREADS=1");
	av_add(env, "MKL_NUM_THREADS=1");
	av_add(env, "PYTHONDONTWRITEBYTECODE=1");
	av_add(env, "PYTHONUNBUFFERED=1");
	snprintf(b, sizeof b, "TERP_ARTIFACT_MAX=%llu", (unsigned long long)s->artifact_max);
	av_add(env, b);
	av_add(env, s->preload ? "TERP_PRELOAD=1" : "TERP_PRELOAD=0");
	av_addf(env, "TERP_OUT_DIR=%s/out", s->no_sandbox ? s->workspace : "/workspace");
}

/* A tmpfs cap: memory / div, within [lo, hi] MiB. */
static uint64_t
tmpfs_size(uint64_t memory, unsigned div, unsigned lo, unsigned hi)
{
	uint64_t v = memory ? memory / div : (uint64_t)hi << 20;

	if (v < ((uint64_t)lo << 20))
		v = (uint64_t)lo << 20;
	if (v > ((uint64_t)hi << 20))
		v = (uint64_t)hi << 20;
	return v;
}

/* Top-level directories of a merged-/usr system are symlinks into /usr;
 * on a non-merged one they are real directories to bind read-only. */
static void
bind_root_dir(struct argv *a, const char *name)
{
	char path[64], target[256];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof path, "/%s", name);
	if (lstat(path, &st) < 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(path, target, sizeof target - 1);
		if (n <= 0)
			return;
		target[n] = '\0';
		av_add3(a, "--symlink", target, path);
	} else if (S_ISDIR(st.st_mode)) {
		av_add3(a, "--ro-bind", path, path);
	}
}

/* own_net: the child made the network namespace itself (net_setup),
 * so bwrap must not make another. */
static void
bwrap_argv(const struct sandbox_spec *s, int own_net, struct argv *a)
{
	static const char *etc[] = {
		"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime",
		"/etc/matplotlibrc", "/etc/fonts", "/etc/python3",
		"/etc/python3.11", "/etc/mime.types", "/etc/ssl/certs", NULL
	};
	static const char *roots[] = { "bin", "sbin", "lib", "lib64", "lib32", "libx32", NULL };
	struct argv env = { 0 };
	char fd[16], size[32];

	av_add(a, bwrap_path());
	/* --unshare-all, spelt out, with the user namespace mandatory. */
	av_add(a, "--unshare-user");
	av_add(a, "--unshare-ipc");
	av_add(a, "--unshare-pid");
	av_add(a, "--unshare-uts");
	av_add(a, "--unshare-cgroup-try");
	if (!s->network && !own_net)
		av_add(a, "--unshare-net");
	av_add(a, "--disable-userns");
	av_add(a, "--die-with-parent");
	av_add(a, "--new-session");
	av_add2(a, "--cap-drop", "ALL");
	av_add2(a, "--uid", "1000");
	av_add2(a, "--gid", "1000");
	av_add2(a, "--hostname", "sandbox");
	av_add(a, "--clearenv");
	sandbox_env(s, &env);
	for (int i = 0; i < env.n; i++) {
		char *eq = strchr(env.v[i], '=');
		*eq = '\0';
		av_add3(a, "--setenv", env.v[i], eq + 1);
	}
	av_free(&env);
	av_add3(a, "--ro-bind", "/usr", "/usr");
	for (int i = 0; roots[i]; i++)
		bind_root_dir(a, roots[i]);
	for (int i = 0; etc[i]; i++)
		av_add3(a, "--ro-bind-try", etc[i], etc[i]);
	snprintf(fd, sizeof fd, "%d", FD_PASSWD);
	av_add3(a, "--ro-bind-data", fd, "/etc/passwd");
	snprintf(fd, sizeof fd, "%d", FD_GROUP);
	av_add3(a, "--ro-bind-data", fd, "/etc/group");
	snprintf(fd, sizeof fd, "%d", FD_HOSTS);
	av_add3(a, "--ro-bind-data", fd, "/etc/hosts");
	av_add2(a, "--proc", "/proc");
	/* /proc/sys read-only even if the uid mapping ever goes wrong. */
	av_add3(a, "--ro-bind", "/proc/sys", "/proc/sys");
	av_add2(a, "--dev", "/dev");
	/* tmpfs pages are memory no rlimit counts: their caps shrink
	 * with --memory (SANDBOX.md 4.1). */
	snprintf(size, sizeof size, "%llu", (unsigned long long)tmpfs_size(s->memory, 8, 8, 64));
	av_add2(a, "--perms", "1777");
	av_add2(a, "--size", size);
	av_add2(a, "--tmpfs", "/dev/shm");
	snprintf(size, sizeof size, "%llu", (unsigned long long)tmpfs_size(s->memory, 4, 16, 256));
	av_add2(a, "--perms", "1777");
	av_add2(a, "--size", size);
	av_add2(a, "--tmpfs", "/tmp");
	snprintf(fd, sizeof fd, "%d", FD_WS);
	av_add3(a, "--bind-fd", fd, "/workspace");
	snprintf(fd, sizeof fd, "%d", FD_DATA);
	av_add3(a, "--ro-bind-fd", fd, "/workspace/data");
	/* Each data file over its placeholder in the (read-only) folder:
	 * a bind of the open file, so nothing is copied. */
	for (int i = 0; i < s->nbinds && i < SANDBOX_MAX_BINDS; i++) {
		char dest[300];
		snprintf(fd, sizeof fd, "%d", FD_BIND0 + i);
		snprintf(dest, sizeof dest, "/workspace/data/%s", s->bind_names[i]);
		av_add3(a, "--ro-bind-fd", fd, dest);
	}
	snprintf(fd, sizeof fd, "%d", FD_DRIVER);
	av_add3(a, "--ro-bind-data", fd, "/run/terp/driver.py");
	/* After every bind: the tmpfs root itself becomes read-only. */
	av_add2(a, "--remount-ro", "/");
	av_add2(a, "--chdir", "/workspace");
	snprintf(fd, sizeof fd, "%d", FD_STATUS);
	av_add2(a, "--json-status-fd", fd);
	snprintf(fd, sizeof fd, "%d", FD_SECA);
	av_add2(a, "--add-seccomp-fd", fd);
	snprintf(fd, sizeof fd, "%d", FD_SECB);
	av_add2(a, "--add-seccomp-fd", fd);
	av_add(a, "--");
	av_add(a, s->python);
	av_add(a, "-I");
	av_add(a, "-u");
	av_add(a, "/run/terp/driver.py");
}

static void
direct_argv(const struct sandbox_spec *s, struct argv *a)
{
	char path[32];

	snprintf(path, sizeof path, "/proc/self/fd/%d", FD_DRIVER);
	av_add(a, s->python);
	av_add(a, "-I");
	av_add(a, "-u");
	av_add(a, path);
}

/* In the child: report why we failed through the error pipe, then die. */
static void __attribute__((noreturn))
child_fail(const char *what)
{
	char msg[256];
	int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
	if (n > 0 && write(FD_ERRPIPE, msg, (size_t)n) < 0) {
		/* nothing more to do */
	}
	_exit(127);
}

static void
set_limit(int res, rlim_t v)
{
	struct rlimit rl = { v, v };
	if (setrlimit(res, &rl) < 0)
		child_fail("setrlimit");
}

/* The signals the launcher ignores; bwrap and Python must get them back
 * (Python leaves SIGINT alone when it starts with it ignored, and the
 * interrupt ladder would do nothing). */
static const int launcher_ignored[] = { SIGINT, SIGQUIT, SIGHUP, SIGPIPE, SIGTERM };

static int
write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = write_all(fd, v, strlen(v));
	close(fd);
	return rc;
}

/* As root, in the child: a network namespace of our own, owned by the
 * host's user namespace, so its settings are out of the sandbox's reach
 * (a namespace bwrap makes belongs to the sandbox's user namespace).
 * Loopback up, as bwrap would, and TCP buffers capped at 256 KiB a
 * direction instead of autotuning to 4-6 MiB per socket: kernel memory
 * that no rlimit counts (issue 8, item 5). Returns 0, or -1 when the
 * kernel refuses (then bwrap makes the namespace, uncapped). */
static int
net_setup(void)
{
	struct ifreq ifr;
	int fd;

	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	if (write_str("/proc/sys/net/ipv4/tcp_rmem", "4096 65536 262144") < 0 ||
	    write_str("/proc/sys/net/ipv4/tcp_wmem", "4096 16384 262144") < 0)
		return -1;
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		close(fd);
		return -1;
	}
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* argv_net: bwrap's argv for when net_setup worked; argv otherwise
 * (NULL: do not try). */
static void __attribute__((noreturn))
child_exec(const struct sandbox_spec *s, int *src, int nsrc, char **argv,
    char **argv_net, char **envp)
{
	sigset_t none;
	pid_t parent = getppid();

	/* 0. into the session's cgroup, while we may still write there. */
	if (s->cgroup_procs_fd >= 0 && write(s->cgroup_procs_fd, "0", 1) != 1)
		child_fail("joining the session cgroup");

	/* 1. fds: move every source above the targets, then into place. */
	for (int i = 0; i < nsrc; i++) {
		if (src[i] < 0)
			continue;
		int t = fcntl(src[i], F_DUPFD, 256);
		if (t < 0)
			_exit(127);
		src[i] = t;
	}
	for (int i = 0; i < nsrc; i++) {
		if (src[i] < 0)
			continue;
		if (dup2(src[i], i) < 0)
			_exit(127);
	}
	/* 2. close everything else, inherited or ours (finding 3). */
	if (syscall(SYS_close_range, nsrc, ~0U, 0) < 0) {
		for (int fd = nsrc; fd < 4096; fd++)
			close(fd);
	}
	for (int i = 0; i < nsrc; i++)
		if (src[i] < 0)
			close(i);
	fcntl(FD_ERRPIPE, F_SETFD, FD_CLOEXEC);

	loop_signal_reset_child();
	for (size_t i = 0; i < sizeof launcher_ignored / sizeof launcher_ignored[0]; i++)
		signal(launcher_ignored[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* 3. rlimits: RLIMIT_DATA, not RLIMIT_AS, which breaks numpy
	 * (finding 4). */
	set_limit(RLIMIT_CORE, 0);
	if (s->memory)
		set_limit(RLIMIT_DATA, s->memory);
	if (s->nproc)
		set_limit(RLIMIT_NPROC, (rlim_t)s->nproc);
	if (s->fsize)
		set_limit(RLIMIT_FSIZE, s->fsize);
	if (s->nofile)
		set_limit(RLIMIT_NOFILE, (rlim_t)s->nofile);
	set_limit(RLIMIT_MEMLOCK, 64 * 1024);
	set_limit(RLIMIT_MSGQUEUE, 0);

	/* 4. as root, a network namespace we control; then never run the
	 * sandbox as host root (finding 1). */
	if (argv_net != NULL && net_setup() == 0)
		argv = argv_net;
	if (s->uid != 0) {
		if (setgroups(0, NULL) < 0)
			child_fail("setgroups");
		if (setresgid(s->uid, s->uid, s->uid) < 0)
			child_fail("setresgid");
		if (setresuid(s->uid, s->uid, s->uid) < 0)
			child_fail("setresuid");
	}
	/* After the uid change, which clears it. The parent may have died
	 * just before: then the signal never comes, and the launcher's end
	 * of FD_ALIVE is closed already (getppid() cannot tell: as the init
	 * of a pid namespace our parent is always 0). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail("prctl");
	if (nsrc > FD_ALIVE && src[FD_ALIVE] >= 0) {
		struct pollfd pf = { .fd = FD_ALIVE, .events = POLLIN };
		if (poll(&pf, 1, 0) != 0)
			_exit(127);
		close(FD_ALIVE);
	} else if (getppid() != parent) {
		_exit(127);
	}
	if (s->no_sandbox && chdir(s->workspace) < 0)
		child_fail("chdir");
	/* 5. a minimal environment: bwrap's own is readable inside as
	 * /proc/1/environ (finding 2). */
	execve(argv[0], argv, envp);
	child_fail(argv[0]);
}

static int
pipe_pair(int p[2])
{
	return pipe2(p, O_CLOEXEC);
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ------------------------------------------------------------ processes */

/* Reads a small /proc file into buf (NUL-terminated); -1 when absent. */
static ssize_t
proc_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* The state letter and the parent of pid from /proc/pid/stat; 0 when
 * it is gone. comm may hold spaces and parens: parse after the last ')'. */
static char
proc_state(pid_t pid, pid_t *ppid)
{
	char path[64], buf[512], *rp, st = 0;
	int pp = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (proc_read(path, buf, sizeof buf) <= 0 || (rp = strrchr(buf, ')')) == NULL ||
	    sscanf(rp + 1, " %c %d", &st, &pp) != 2)
		return 0;
	if (ppid)
		*ppid = (pid_t)pp;
	return st;
}

/* Appends the numbers of a space-separated list to out. */
static int
add_pids(const char *text, pid_t *out, int n, int max)
{
	while (*text && n < max) {
		char *end;
		long v = strtol(text, &end, 10);
		if (end == text)
			break;
		if (v > 0)
			out[n++] = (pid_t)v;
		text = end;
	}
	return n;
}

/* The children of pid, of all its threads, into out. Allocation-free:
 * the launcher calls it too. Reads /proc/pid/task/T/children; without
 * CONFIG_PROC_CHILDREN, scans /proc for processes whose parent is pid. */
static int
list_children(pid_t pid, pid_t *out, int max)
{
	char path[64], buf[4096], dents[4096];
	int n = 0, dfd, found_file = 0;
	long got;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	while ((got = syscall(SYS_getdents64, dfd, dents, sizeof dents)) > 0) {
		for (long off = 0; off < got; ) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
			    unsigned char type; char name[]; } *d = (void *)(dents + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			snprintf(path, sizeof path, "/proc/%d/task/%.16s/children",
			    (int)pid, d->name);
			if (proc_read(path, buf, sizeof buf) < 0)
				continue;
			found_file = 1;
			n = add_pids(buf, out, n, max);
		}
	}
	close(dfd);
	if (found_file)
		return n;
	/* No children files: every process whose parent is pid. */
	if ((dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return n;
	while ((got = syscall(SYS_getdents64, dfd, dents, sizeof dents)) > 0) {
		for (long off = 0; off < got && n < max; ) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
			    unsigned char type; char name[]; } *d = (void *)(dents + off);
			pid_t pp = 0, c;
			off += d->reclen;
			if (d->name[0] < '1' || d->name[0] > '9')
				continue;
			c = (pid_t)atoi(d->name);
			if (proc_state(c, &pp) != 0 && pp == pid)
				out[n++] = c;
		}
	}
	close(dfd);
	return n;
}

int
sandbox_descendants(pid_t root, pid_t *out, int max)
{
	int n = 0;

	if (max <= 0 || root <= 0)
		return 0;
	out[n++] = root;
	/* Breadth first over the list itself. */
	for (int i = 0; i < n && n < max; i++)
		n = list_children(out[i], out + n, max - n) + n;
	return n;
}

/* ------------------------------------------------------------ launcher */

struct launcher {
	int	life;		/* terp's end closes: kill everything and go */
	int	st_out;		/* terp's status pipe */
	int	st_in;		/* bwrap's status pipe, -1 after EOF */
	int	pidns;		/* bwrap is the init of our pid namespace */
	pid_t	bwrap;		/* host pid */
	char	line[4096];
	size_t	nline;
};

/* Writes one status line to terp. In our pid namespace, bwrap's
 * "child-pid" is not a pid terp can use: it becomes the host pid of
 * bwrap's only child. */
static void
relay_line(struct launcher *L, const char *line, size_t n)
{
	char out[64];
	pid_t kids[4];

	if (L->pidns && memmem(line, n, "\"child-pid\"", 11) != NULL) {
		if (list_children(L->bwrap, kids, 4) < 1)
			return;	/* gone already; terp will see the exit */
		n = (size_t)snprintf(out, sizeof out, "{ \"child-pid\": %d }\n", (int)kids[0]);
		line = out;
	}
	if (write_all(L->st_out, line, n) < 0) {
		/* terp is gone; the life pipe tells us next */
	}
}

static void
relay(struct launcher *L)
{
	for (;;) {
		ssize_t n;
		char *nl;

		if (L->st_in < 0)
			return;
		n = read(L->st_in, L->line + L->nline, sizeof L->line - L->nline);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				if (L->nline > 0)
					relay_line(L, L->line, L->nline);
				L->nline = 0;
				close(L->st_in);
				L->st_in = -1;
			}
			return;
		}
		L->nline += (size_t)n;
		while ((nl = memchr(L->line, '\n', L->nline)) != NULL) {
			size_t len = (size_t)(nl - L->line) + 1;
			relay_line(L, L->line, len);
			memmove(L->line, L->line + len, L->nline - len);
			L->nline -= len;
		}
		if (L->nline == sizeof L->line) {	/* no newline: pass it on */
			relay_line(L, L->line, L->nline);
			L->nline = 0;
		}
	}
}

/* Kills and reaps every child we have (bwrap's orphans were handed to
 * us: we are their subreaper) until none is left. */
static void
reap_all(void)
{
	pid_t kids[256];
	int n;

	for (int round = 0; round < 400; round++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			return;
		n = list_children(getpid(), kids, 256);
		for (int i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		/* A SIGKILLed process takes a moment to become a zombie. */
		if (n > 0) {
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
}

static void __attribute__((noreturn))
launcher_exit(struct launcher *L, int status)
{
	relay(L);
	if (L->nline > 0)
		relay_line(L, L->line, L->nline);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) :
	    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127);
}

/* Closes every fd but those in keep (n of them). */
static void
close_all_but(const int *keep, int n)
{
	int lo = 0;

	for (;;) {
		int next = -1;
		for (int i = 0; i < n; i++)
			if (keep[i] >= lo && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0) {
			if (syscall(SYS_close_range, lo, ~0U, 0) < 0)
				for (int fd = lo; fd < 4096; fd++)
					close(fd);
			return;
		}
		if (next > lo && syscall(SYS_close_range, lo, next - 1, 0) < 0)
			for (int fd = lo; fd < next; fd++)
				close(fd);
		lo = next + 1;
	}
}

/* The launcher: forks bwrap, relays its status lines, and makes sure
 * its whole tree dies with it, with bwrap, or when terp goes. */
static void __attribute__((noreturn))
launcher_main(const struct sandbox_spec *s, int *src, int nsrc, char **argv,
    char **argv_net, char **envp, int life, int st_out, int st_in, int ep, pid_t terp)
{
	struct launcher L = { .life = life, .st_out = st_out, .st_in = st_in };
	struct rlimit core = { 0, 0 };
	int alive[2], pidfd, status = 0, devnull;
	sigset_t none;

	/* terp's handlers go; the terminal's signals (Ctrl-C reaches the
	 * whole process group) are terp's to act on, not ours. */
	loop_signal_reset_child();
	for (size_t i = 0; i < sizeof launcher_ignored / sizeof launcher_ignored[0]; i++)
		signal(launcher_ignored[i], SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setrlimit(RLIMIT_CORE, &core);
	if (s->uid != 0 && geteuid() == 0) {
		/* Root: die with terp, and make bwrap the init of a new pid
		 * namespace, so that its death is everyone's. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != terp)
			_exit(127);
		L.pidns = unshare(CLONE_NEWPID) == 0;
		/* No pid namespace (a container may refuse it): then we must
		 * outlive terp long enough to clean up, as without root. */
		if (!L.pidns)
			prctl(PR_SET_PDEATHSIG, 0);
	}
	if (!L.pidns && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		int n = snprintf(L.line, sizeof L.line, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
		if (write(ep, L.line, (size_t)n) < 0) {
			/* terp reads EOF instead */
		}
		_exit(127);
	}
	if (pipe2(alive, O_CLOEXEC) < 0) {
		int n = snprintf(L.line, sizeof L.line, "pipe: %s", strerror(errno));
		if (write(ep, L.line, (size_t)n) < 0) {
			/* as above */
		}
		_exit(127);
	}
	src[FD_ALIVE] = alive[0];
	src[FD_ERRPIPE] = ep;
	L.bwrap = fork();
	if (L.bwrap == 0) {
		close(alive[1]);
		child_exec(s, src, nsrc, argv, argv_net, envp);
	}
	if (L.bwrap < 0) {
		int n = snprintf(L.line, sizeof L.line, "fork: %s", strerror(errno));
		if (write(ep, L.line, (size_t)n) < 0) {
			/* as above */
		}
		_exit(127);
	}
	/* Keep only our own fds: a copy of the sandbox's pipes here would
	 * hide their EOF from terp. */
	{
		int keep[4] = { life, st_out, st_in, alive[1] };
		close_all_but(keep, 4);
	}
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	fd_set_nonblock(st_in);
	pidfd = (int)syscall(SYS_pidfd_open, L.bwrap, 0);
	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = life, .events = POLLIN },
			{ .fd = L.st_in, .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
		};
		pid_t r;

		/* Without a pidfd (Linux < 5.3) a short poll checks on bwrap. */
		if (poll(pf, 3, pidfd >= 0 ? -1 : 20) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			/* terp died or wants the sandbox gone. */
			kill(L.bwrap, SIGKILL);
			while (waitpid(L.bwrap, &status, 0) < 0 && errno == EINTR)
				;
			reap_all();
			_exit(128 + SIGKILL);
		}
		if (pf[1].revents)
			relay(&L);
		r = waitpid(L.bwrap, &status, WNOHANG);
		if (r == L.bwrap)
			break;
		if (r < 0 && errno != EINTR)
			break;
	}
	/* bwrap is gone: whatever it left behind goes too. */
	reap_all();
	launcher_exit(&L, status);
}

int
sandbox_launch(const struct sandbox_spec *s, struct sandbox_proc *p, char **err)
{
	static const char passwd[] = "sandbox:x:1000:1000:terp sandbox:/workspace:/usr/sbin/nologin\n";
	static const char group[] = "sandbox:x:1000:\n";
	static const char hosts[] = "127.0.0.1 localhost\n::1 localhost\n";
	int cmd[2] = { -1, -1 }, ev[2] = { -1, -1 }, out[2] = { -1, -1 };
	int errp[2] = { -1, -1 }, st[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int bst[2] = { -1, -1 }, life[2] = { -1, -1 };
	int src[FD_MAX];
	int nsrc = FD_ALIVE + 1;
	int devnull = -1, drv = -1, pw = -1, gr = -1, ho = -1, ws = -1, dd = -1;
	int sa = -1, sb = -1;
	struct argv argv = { 0 }, argv_net = { 0 }, envp = { 0 };
	char msg[512];
	pid_t terp = getpid();
	ssize_t n;
	pid_t pid;
	int rc = -1;

	memset(p, 0, sizeof *p);
	p->pid = -1;
	p->cmd_fd = p->ev_fd = p->out_fd = p->err_fd = p->status_fd = p->life_fd = -1;
	for (int i = 0; i < FD_MAX; i++)
		src[i] = -1;

	if (!s->no_sandbox && access(bwrap_path(), X_OK) < 0)
		return sandbox_probe(err);
	if (s->nbinds < 0 || s->nbinds > SANDBOX_MAX_BINDS) {
		*err = xasprintf("too many data files to bind (%d; at most %d)", s->nbinds,
		    SANDBOX_MAX_BINDS);
		return -1;
	}
	if (pipe_pair(cmd) < 0 || pipe_pair(ev) < 0 || pipe_pair(out) < 0 ||
	    pipe_pair(errp) < 0 || pipe_pair(ep) < 0 ||
	    (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0 ||
	    (drv = memfd_with("terp-driver", s->driver, s->driver_len)) < 0) {
		*err = xasprintf("cannot set up the sandbox's pipes: %s", strerror(errno));
		goto out;
	}
	src[0] = devnull;
	src[1] = out[1];
	src[2] = errp[1];
	src[FD_CMD] = cmd[0];
	src[FD_EV] = ev[1];
	src[FD_DRIVER] = drv;
	src[FD_ERRPIPE] = ep[1];
	if (!s->no_sandbox) {
		if (pipe_pair(st) < 0 || pipe_pair(bst) < 0 || pipe_pair(life) < 0 ||
		    (pw = memfd_with("passwd", passwd, sizeof passwd - 1)) < 0 ||
		    (gr = memfd_with("group", group, sizeof group - 1)) < 0 ||
		    (ho = memfd_with("hosts", hosts, sizeof hosts - 1)) < 0) {
			*err = xasprintf("cannot set up the sandbox: %s", strerror(errno));
			goto out;
		}
		/* O_PATH fds opened here, by us: no symlink race on host
		 * paths. (bwrap still resolves their paths as the sandbox
		 * uid: the folders must let it through, see kernel.c.) */
		ws = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		dd = open(s->datadir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ws < 0 || dd < 0) {
			*err = xasprintf("cannot open the session workspace %s: %s",
			    s->workspace, strerror(errno));
			goto out;
		}
		if (sandbox_filter_build(&sa, &sb, err) < 0)
			goto out;
		src[FD_STATUS] = bst[1];
		src[FD_SECA] = sa;
		src[FD_SECB] = sb;
		src[FD_WS] = ws;
		src[FD_DATA] = dd;
		src[FD_PASSWD] = pw;
		src[FD_GROUP] = gr;
		src[FD_HOSTS] = ho;
		for (int i = 0; i < s->nbinds; i++)
			src[FD_BIND0 + i] = s->bind_fds[i];
		nsrc = FD_BIND0 + s->nbinds;
		bwrap_argv(s, 0, &argv);
		if (!s->network && s->uid != 0 && geteuid() == 0)
			bwrap_argv(s, 1, &argv_net);
	} else {
		direct_argv(s, &argv);
	}
	sandbox_env(s, &envp);
	if (!s->no_sandbox) {
		/* bwrap itself gets only PATH (finding 2). */
		av_free(&envp);
		memset(&envp, 0, sizeof envp);
		av_add(&envp, "PATH=/usr/bin:/bin");
	}

	pid = fork();
	if (pid < 0) {
		*err = xasprintf("fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		if (s->no_sandbox)
			child_exec(s, src, FD_ERRPIPE + 1, argv.v, NULL, envp.v);
		close(life[1]);
		close(st[0]);
		/* bwrap writes bst[1] (its fd 5), the launcher reads bst[0]
		 * and passes the lines on through st[1]. */
		launcher_main(s, src, nsrc, argv.v, argv_net.v, envp.v, life[0], st[1], bst[0],
		    ep[1], terp);
	}

	/* The error pipe closes on a successful exec (and in the launcher
	 * once bwrap is forked). */
	close_fd(&ep[1]);
	n = read(ep[0], msg, sizeof msg - 1);
	if (n > 0) {
		msg[n] = '\0';
		close_fd(&life[1]);
		waitpid(pid, NULL, 0);
		*err = xasprintf("cannot start the sandbox: %s", msg);
		goto out;
	}
	p->pid = pid;
	p->cmd_fd = cmd[1]; cmd[1] = -1;
	p->ev_fd = ev[0]; ev[0] = -1;
	p->out_fd = out[0]; out[0] = -1;
	p->err_fd = errp[0]; errp[0] = -1;
	p->status_fd = st[0]; st[0] = -1;
	p->life_fd = life[1]; life[1] = -1;
	fd_set_nonblock(p->ev_fd);
	fd_set_nonblock(p->out_fd);
	fd_set_nonblock(p->err_fd);
	fd_set_nonblock(p->cmd_fd);
	if (p->status_fd >= 0)
		fd_set_nonblock(p->status_fd);
	rc = 0;
out:
	close_fd(&cmd[0]); close_fd(&cmd[1]);
	close_fd(&ev[0]); close_fd(&ev[1]);
	close_fd(&out[0]); close_fd(&out[1]);
	close_fd(&errp[0]); close_fd(&errp[1]);
	close_fd(&st[0]); close_fd(&st[1]);
	close_fd(&bst[0]); close_fd(&bst[1]);
	close_fd(&life[0]); close_fd(&life[1]);
	close_fd(&ep[0]); close_fd(&ep[1]);
	close_fd(&devnull); close_fd(&drv); close_fd(&pw); close_fd(&gr);
	close_fd(&ho); close_fd(&ws); close_fd(&dd); close_fd(&sa); close_fd(&sb);
	av_free(&argv);
	av_free(&argv_net);
	av_free(&envp);
	return rc;
}

pid_t
sandbox_python_pid(pid_t init)
{
	pid_t kids[4];

	/* bwrap's init has one child, the command. */
	if (init <= 0 || list_children(init, kids, 4) < 1)
		return -1;
	return kids[0];
}

void
sandbox_close_fds(struct sandbox_proc *p)
{
	close_fd(&p->cmd_fd);
	close_fd(&p->ev_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->status_fd);
	close_fd(&p->life_fd);
}

/* Waits up to ms for our child pid to exit. Returns its wait status, or
 * -1 when it is still running. The pidfd makes this a wait, not a poll. */
static int
wait_child(pid_t pid, int ms)
{
	int status, pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int64_t end = now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		int left = (int)(end - now_ms());
		if (r == pid || (r < 0 && errno != EINTR)) {
			if (pfd >= 0)
				close(pfd);
			return r == pid ? status : 0;
		}
		if (left <= 0)
			break;
		if (pfd >= 0) {
			struct pollfd pf = { .fd = pfd, .events = POLLIN };
			poll(&pf, 1, left);
		} else {
			struct timespec ts = { 0, 2 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	if (pfd >= 0)
		close(pfd);
	return -1;
}

int
sandbox_kill(struct sandbox_proc *p)
{
	int status = -1;

	if (p->pid > 0) {
		if (p->life_fd >= 0) {
			/* The launcher kills bwrap and everything under it,
			 * then exits; a launcher that does not is killed. */
			close_fd(&p->life_fd);
			status = wait_child(p->pid, 2000);
		}
		if (status == -1) {
			kill(p->pid, SIGKILL);
			while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
				;
		}
		p->pid = -1;
	}
	sandbox_close_fds(p);
	return status;
}

int
sandbox_kill_strays(pid_t init, pid_t keep, int wait_ms)
{
	enum { MAX = 1024 };
	pid_t *all = xmalloc(MAX * sizeof *all);
	int *pfds = xmalloc(MAX * sizeof *pfds);
	int killed = 0, npfd = 0;
	int64_t end;

	if (init <= 0) {
		free(all);
		free(pfds);
		return 0;
	}
	/* Repeat: a process may fork between our look and our kill; its
	 * child then shows up (under it, or under init) in the next pass. */
	for (int pass = 0; pass < 64; pass++) {
		int n = sandbox_descendants(init, all, MAX), found = 0;
		for (int i = 1; i < n; i++) {
			pid_t pp = 0, want = 0;
			int pfd;
			char st;

			if (all[i] == keep)
				continue;
			/* Pin it, then check it is still the process we saw (a
			 * live child of a sandbox process): no signal to a pid
			 * that was recycled meanwhile. */
			if ((pfd = (int)syscall(SYS_pidfd_open, all[i], 0)) < 0)
				continue;
			st = proc_state(all[i], &pp);
			for (int j = 0; j < i; j++)
				if (all[j] == pp)
					want = pp;
			if (st == 0 || st == 'Z' || want == 0 ||
			    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0) {
				close(pfd);
				continue;
			}
			found++;
			killed++;
			if (npfd < MAX)
				pfds[npfd++] = pfd;
			else
				close(pfd);
		}
		if (found == 0)
			break;
	}
	/* Wait for them to be gone, so the next cell does not see them. */
	end = now_ms() + wait_ms;
	for (int i = 0; i < npfd; i++) {
		struct pollfd pf = { .fd = pfds[i], .events = POLLIN };
		int left = (int)(end - now_ms());
		poll(&pf, 1, left > 0 ? left : 0);
		close(pfds[i]);
	}
	free(all);
	free(pfds);
	return killed;
}

static long
read_long(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

int
sandbox_probe(char **err)
{
	if (access(bwrap_path(), X_OK) < 0) {
		*err = xasprintf("bubblewrap is not installed (%s): install it with "
		    "`apt-get install bubblewrap`, or pass --no-sandbox to run code without isolation",
		    bwrap_path());
		return -1;
	}
	if (read_long("/proc/sys/user/max_user_namespaces") == 0) {
		*err = xstrdup("user namespaces are disabled (user.max_user_namespaces = 0): "
		    "run `sysctl -w user.max_user_namespaces=15000`, or pass --no-sandbox");
		return -1;
	}
	if (read_long("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
		*err = xstrdup("unprivileged user namespaces are disabled: run "
		    "`sysctl -w kernel.unprivileged_userns_clone=1`, or pass --no-sandbox");
		return -1;
	}
	return 0;
}

char *
sandbox_explain(const char *text)
{
	char line[256];
	const char *nl;
	size_t n;

	if (strstr(text, "setting up uid map") || strstr(text, "RTM_NEWADDR") ||
	    strstr(text, "Operation not permitted")) {
		if (read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
			return xstrdup("the sandbox cannot start: AppArmor blocks user namespaces "
			    "for bwrap (kernel.apparmor_restrict_unprivileged_userns=1); allow it "
			    "with an AppArmor profile for bwrap, or pass --no-sandbox");
	}
	if (strstr(text, "No permissions to creating new namespace") ||
	    strstr(text, "Creating new namespace failed"))
		return xstrdup("the sandbox cannot start: user namespaces are not available "
		    "here (check user.max_user_namespaces and kernel.unprivileged_userns_clone), "
		    "or pass --no-sandbox");
	nl = strchr(text, '\n');
	n = nl ? (size_t)(nl - text) : strlen(text);
	if (n > sizeof line - 1)
		n = sizeof line - 1;
	memcpy(line, text, n);
	line[n] = '\0';
	return xasprintf("the sandbox failed to start: %s", n ? line : "bwrap exited");
}
