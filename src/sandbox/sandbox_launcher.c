/* sandbox_launcher: the forked side of a launch (see
 * sandbox_launcher.h). The order of the exec step is the point: wire
 * fds, close the rest, rlimits, drop root, parent-death signal, exec
 * with a clean environment.
 *
 * Why a launcher between terp and bwrap: bwrap forks a child that waits
 * on an eventfd and does its whole set-up before it sets its own
 * parent-death signal: killing bwrap in that window leaves the child
 * blocked forever. The launcher closes the window from outside. As root
 * it makes bwrap the init of a new pid namespace: when bwrap dies, for
 * any reason, the kernel kills everything in that namespace, and the
 * chain terp -> launcher -> bwrap is tied by parent-death signals.
 * Without root it is a child subreaper: orphans of bwrap become its
 * children, and it kills them when bwrap exits or when terp goes (its
 * end of the life pipe closes, which terp cannot fail to do). */
#include "terp/sandbox_launcher.h"

#include <errno.h>
#include <limits.h>
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
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "terp/loop.h"
#include "terp/pyenv.h"
#include "terp/sandbox_tree.h"
#include "terp/util.h"

/* ------------------------------------------------------------ exec step */

/* In the child: report why we failed through the error pipe, then die. */
static void __attribute__((noreturn))
child_fail(const char *what)
{
	char msg[256];
	int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
	if (n > 0 && write(SANDBOX_FD_ERRPIPE, msg, (size_t)n) < 0) {
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
 * that no rlimit counts. Returns 0, or -1 when the
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

/* The length of the first folder on the way to path (path itself
 * excluded) that others cannot search; 0 when there is none. (No malloc
 * in the forked child: terp may have threads.) */
static size_t
first_blocked(const char *path)
{
	char p[PATH_MAX];
	struct stat st;

	if (strlen(path) >= sizeof p)
		return 0;
	strcpy(p, path);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (stat(p, &st) == 0 && !(st.st_mode & S_IXOTH))
			return (size_t)(c - p);
		*c = '/';
	}
	return 0;
}

/* mkdir -p of path below top (which exists), as root, mode 0755; the
 * last component a file when leaf_file (a bind's mount point). */
static void
skeleton(size_t top, const char *path, int leaf_file)
{
	char p[PATH_MAX];

	strcpy(p, path);	/* first_blocked checked its length */
	for (char *c = p + top + 1; ; c++) {
		int last = *c == '\0';
		if (*c != '/' && !last)
			continue;
		*c = '\0';
		if (last && leaf_file) {
			int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd < 0)
				child_fail(p);
			close(fd);
		} else if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			child_fail(p);
		}
		if (last)
			break;
		*c = '/';
	}
}

/* 3c. As root, before dropping to the sandbox's uid: bwrap resolves
 * every bind's source path as that uid (realpath, --ro-bind-fd too), so
 * an interpreter under a folder others cannot search (a pyenv under a
 * 0700 /root, a venv in a mkdtemp folder) is out of its reach. In a
 * mount namespace of our own, that folder gets a tmpfs holding only the
 * path down to the environment, and the environment terp opened (its
 * fd, checked against the path: a swap is refused) is bound there. The
 * sandbox's uid then resolves the same path, sees nothing else of the
 * folder, and bwrap binds it read-only as before. Nothing changes on
 * the host. */
static void
py_reach(const struct sandbox_spec *s, int *own_ns)
{
	const struct pyenv_bind *bd = s->pyenv != NULL ? s->pyenv->binds : NULL;
	size_t n = s->pyenv != NULL ? s->pyenv->nbinds : 0;
	size_t top[SANDBOX_MAX_PYBINDS] = { 0 };
	int fd[SANDBOX_MAX_PYBINDS], any = 0;
	struct stat a, b;
	char src[64], dir[PATH_MAX];

	for (size_t i = 0; i < n && i < SANDBOX_MAX_PYBINDS; i++)
		any |= (top[i] = first_blocked(bd[i].host)) != 0;
	if (!any)
		return;
	if (!*own_ns) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			child_fail("a mount namespace for the Python environment");
		*own_ns = 1;
	}
	/* Reopened here (the fds terp opened belong to the host's mount
	 * namespace, which a bind cannot take from) before any tmpfs. */
	for (size_t i = 0; i < n; i++) {
		fd[i] = -1;
		if (top[i] == 0)
			continue;
		fd[i] = open(bd[i].host, O_PATH | O_CLOEXEC);
		if (fd[i] < 0 || fstat(fd[i], &a) < 0 ||
		    fstat(SANDBOX_FD_BIND0 + s->nbinds + (int)i, &b) < 0)
			child_fail(bd[i].host);
		if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
			errno = ESTALE;
			child_fail(bd[i].host);
		}
	}
	for (size_t i = 0; i < n; i++) {
		int done = 0;
		if (top[i] == 0)
			continue;
		for (size_t j = 0; j < i; j++)
			done |= top[j] == top[i] && strncmp(bd[j].host, bd[i].host, top[i]) == 0;
		memcpy(dir, bd[i].host, top[i]);
		dir[top[i]] = '\0';
		if (!done && mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV,
		    "mode=0755,size=64k") < 0)
			child_fail(dir);
	}
	for (size_t i = 0; i < n; i++) {
		if (top[i] == 0)
			continue;
		if (fstat(fd[i], &a) < 0)
			child_fail(bd[i].host);
		skeleton(top[i], bd[i].host, !S_ISDIR(a.st_mode));
		snprintf(src, sizeof src, "/proc/self/fd/%d", fd[i]);
		if (mount(src, bd[i].host, NULL, MS_BIND | MS_REC, NULL) < 0)
			child_fail(bd[i].host);
		close(fd[i]);
	}
}

/* 3d. As root, before dropping to the sandbox's uid: the data files
 * bwrap could not bind itself come as detached read-only mounts
 * (workspace_mount.h), attached here over their placeholders in the data
 * folder, in a mount namespace of our own (the host's mount table never
 * changes; the mounts go with the namespace). bwrap's bind of the data
 * folder then carries them; their fds are closed before bwrap runs. */
static void
data_reach(const struct sandbox_spec *s, int *own_ns)
{
	int fd0 = SANDBOX_FD_BIND0 + s->nbinds +
	    (s->pyenv != NULL ? (int)s->pyenv->nbinds : 0);

	if (s->nmounts <= 0)
		return;
	if (!*own_ns) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			child_fail("a mount namespace for the data files");
		*own_ns = 1;
	}
	for (int i = 0; i < s->nmounts; i++) {
		if (syscall(SYS_move_mount, fd0 + i, "", AT_FDCWD, s->mount_paths[i],
		    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			child_fail(s->mount_paths[i]);
		close(fd0 + i);
	}
}

void
sandbox_launcher_exec(struct sandbox_launcher_args *a)
{
	const struct sandbox_spec *s = a->spec;
	int *src = a->src, nsrc = a->nsrc;
	char **argv = a->argv;
	sigset_t none;
	pid_t parent = getppid();
	int own_ns = 0;

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
	/* 2. close everything else, inherited or ours: bwrap passes every
	 * fd it gets on to the sandbox. */
	if (syscall(SYS_close_range, nsrc, ~0U, 0) < 0) {
		for (int fd = nsrc; fd < 4096; fd++)
			close(fd);
	}
	for (int i = 0; i < nsrc; i++)
		if (src[i] < 0)
			close(i);
	fcntl(SANDBOX_FD_ERRPIPE, F_SETFD, FD_CLOEXEC);

	loop_signal_reset_child();
	for (size_t i = 0; i < sizeof launcher_ignored / sizeof launcher_ignored[0]; i++)
		signal(launcher_ignored[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* 3. rlimits: RLIMIT_DATA, not RLIMIT_AS, which counts address
	 * space reserved but unused and breaks numpy and OpenBLAS. */
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

	/* 3b. As the init of our own pid namespace (root), bwrap must find
	 * that namespace's processes in /proc: it reads its child's
	 * namespaces as /proc/<pid>/ns by the pid it knows (2), which in the
	 * host's /proc is another process, or none where the host itself
	 * runs in a pid namespace (bwrap then fails to start). A /proc of
	 * our own, in a mount namespace of our own, is the right one. Where
	 * the mount is refused (some containers), go on as before. */
	if (getpid() == 1 && unshare(CLONE_NEWNS) == 0 &&
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
		own_ns = 1;
		(void)mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	}
	if (!s->no_sandbox && s->uid != 0 && geteuid() == 0) {
		data_reach(s, &own_ns);
		py_reach(s, &own_ns);
	}

	/* 4. as root, a network namespace we control; then never run the
	 * sandbox as host root (bwrap started by root keeps every
	 * capability unless told, and maps the sandbox uid to host root). */
	if (a->argv_net != NULL && net_setup() == 0)
		argv = a->argv_net;
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
	 * of SANDBOX_FD_ALIVE is closed already (getppid() cannot tell: as
	 * the init of a pid namespace our parent is always 0). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail("prctl");
	if (nsrc > SANDBOX_FD_ALIVE && src[SANDBOX_FD_ALIVE] >= 0) {
		struct pollfd pf = { .fd = SANDBOX_FD_ALIVE, .events = POLLIN };
		if (poll(&pf, 1, 0) != 0)
			_exit(127);
		close(SANDBOX_FD_ALIVE);
	} else if (getppid() != parent) {
		_exit(127);
	}
	if (s->no_sandbox && chdir(s->workspace) < 0)
		child_fail("chdir");
	/* 5. a minimal environment: bwrap's own is readable inside as
	 * /proc/1/environ. */
	execve(argv[0], argv, a->envp);
	child_fail(argv[0]);
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
		if (sandbox_tree_children(L->bwrap, kids, 4) < 1)
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
		n = sandbox_tree_children(getpid(), kids, 256);
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
void
sandbox_launcher_run(struct sandbox_launcher_args *a)
{
	const struct sandbox_spec *s = a->spec;
	int life = a->life, st_in = a->st_in, ep = a->errfd;
	struct launcher L = { .life = life, .st_out = a->st_out, .st_in = st_in };
	struct rlimit core = { 0, 0 };
	int alive[2], pidfd, status = 0, devnull;
	sigset_t none;

	/* terp's handlers go; the terminal's signals (Ctrl-C reaches the
	 * whole process group) are terp's to act on, not ours. Our own
	 * process group keeps them from bwrap too, which gets their
	 * default back: in terp's, a Ctrl-C killed bwrap where it is not
	 * the init of a pid namespace (terp not root), and the cell the
	 * user meant to interrupt crashed. */
	setpgid(0, 0);
	loop_signal_reset_child();
	for (size_t i = 0; i < sizeof launcher_ignored / sizeof launcher_ignored[0]; i++)
		signal(launcher_ignored[i], SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setrlimit(RLIMIT_CORE, &core);
	if (s->uid != 0 && geteuid() == 0) {
		/* Root: die with terp, and make bwrap the init of a new pid
		 * namespace, so that its death is everyone's. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != a->terp)
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
	a->src[SANDBOX_FD_ALIVE] = alive[0];
	a->src[SANDBOX_FD_ERRPIPE] = ep;
	L.bwrap = fork();
	if (L.bwrap == 0) {
		close(alive[1]);
		sandbox_launcher_exec(a);
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
		int keep[4] = { life, a->st_out, st_in, alive[1] };
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

