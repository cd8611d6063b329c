/* sandbox: starting and ending one sandboxed Python process, as terp
 * sees it. It builds bwrap's command line (every namespace, read-only
 * system folders, the workspace, the data files bound by fd, two
 * seccomp programs from sandbox_filter.c), the pipes and memfds the
 * sandbox gets, forks the launcher (sandbox_launcher.c) and returns the
 * fds; it kills the sandbox, and explains bwrap's set-up failures. */
#include "terp/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "terp/sandbox_filter.h"
#include "terp/sandbox_launcher.h"
#include "terp/util.h"

/* TERP_BWRAP names another bwrap (tests use it to play a missing or a
 * failing one); the user can run any program as themselves anyway. */
static const char *
bwrap_path(void)
{
	const char *p = getenv("TERP_BWRAP");
	return p && *p == '/' ? p : "/usr/bin/bwrap";
}

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
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_PASSWD);
	av_add3(a, "--ro-bind-data", fd, "/etc/passwd");
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_GROUP);
	av_add3(a, "--ro-bind-data", fd, "/etc/group");
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_HOSTS);
	av_add3(a, "--ro-bind-data", fd, "/etc/hosts");
	av_add2(a, "--proc", "/proc");
	/* /proc/sys read-only even if the uid mapping ever goes wrong. */
	av_add3(a, "--ro-bind", "/proc/sys", "/proc/sys");
	av_add2(a, "--dev", "/dev");
	/* tmpfs pages are memory no rlimit counts: their caps shrink
	 * with --memory. */
	snprintf(size, sizeof size, "%llu", (unsigned long long)tmpfs_size(s->memory, 8, 8, 64));
	av_add2(a, "--perms", "1777");
	av_add2(a, "--size", size);
	av_add2(a, "--tmpfs", "/dev/shm");
	snprintf(size, sizeof size, "%llu", (unsigned long long)tmpfs_size(s->memory, 4, 16, 256));
	av_add2(a, "--perms", "1777");
	av_add2(a, "--size", size);
	av_add2(a, "--tmpfs", "/tmp");
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_WS);
	av_add3(a, "--bind-fd", fd, "/workspace");
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_DATA);
	av_add3(a, "--ro-bind-fd", fd, "/workspace/data");
	/* Each data file over its placeholder in the (read-only) folder:
	 * a bind of the open file, so nothing is copied. */
	for (int i = 0; i < s->nbinds && i < SANDBOX_MAX_BINDS; i++) {
		char dest[300];
		snprintf(fd, sizeof fd, "%d", SANDBOX_FD_BIND0 + i);
		snprintf(dest, sizeof dest, "/workspace/data/%s", s->bind_names[i]);
		av_add3(a, "--ro-bind-fd", fd, dest);
	}
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_DRIVER);
	av_add3(a, "--ro-bind-data", fd, "/run/terp/driver.py");
	/* After every bind: the tmpfs root itself becomes read-only. */
	av_add2(a, "--remount-ro", "/");
	av_add2(a, "--chdir", "/workspace");
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_STATUS);
	av_add2(a, "--json-status-fd", fd);
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_SECA);
	av_add2(a, "--add-seccomp-fd", fd);
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_SECB);
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

	snprintf(path, sizeof path, "/proc/self/fd/%d", SANDBOX_FD_DRIVER);
	av_add(a, s->python);
	av_add(a, "-I");
	av_add(a, "-u");
	av_add(a, path);
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

int
sandbox_launch(const struct sandbox_spec *s, struct sandbox_proc *p, char **err)
{
	static const char passwd[] = "sandbox:x:1000:1000:terp sandbox:/workspace:/usr/sbin/nologin\n";
	static const char group[] = "sandbox:x:1000:\n";
	static const char hosts[] = "127.0.0.1 localhost\n::1 localhost\n";
	int cmd[2] = { -1, -1 }, ev[2] = { -1, -1 }, out[2] = { -1, -1 };
	int errp[2] = { -1, -1 }, st[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int bst[2] = { -1, -1 }, life[2] = { -1, -1 };
	int src[SANDBOX_FD_MAX];
	int nsrc = SANDBOX_FD_ALIVE + 1;
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
	p->pid_fd = -1;
	for (int i = 0; i < SANDBOX_FD_MAX; i++)
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
	src[SANDBOX_FD_CMD] = cmd[0];
	src[SANDBOX_FD_EV] = ev[1];
	src[SANDBOX_FD_DRIVER] = drv;
	src[SANDBOX_FD_ERRPIPE] = ep[1];
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
		 * uid: the folders must let it through, see workspace.c.) */
		ws = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		dd = open(s->datadir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ws < 0 || dd < 0) {
			*err = xasprintf("cannot open the session workspace %s: %s",
			    s->workspace, strerror(errno));
			goto out;
		}
		if (sandbox_filter_build(&sa, &sb, err) < 0)
			goto out;
		src[SANDBOX_FD_STATUS] = bst[1];
		src[SANDBOX_FD_SECA] = sa;
		src[SANDBOX_FD_SECB] = sb;
		src[SANDBOX_FD_WS] = ws;
		src[SANDBOX_FD_DATA] = dd;
		src[SANDBOX_FD_PASSWD] = pw;
		src[SANDBOX_FD_GROUP] = gr;
		src[SANDBOX_FD_HOSTS] = ho;
		for (int i = 0; i < s->nbinds; i++)
			src[SANDBOX_FD_BIND0 + i] = s->bind_fds[i];
		nsrc = SANDBOX_FD_BIND0 + s->nbinds;
		bwrap_argv(s, 0, &argv);
		if (!s->network && s->uid != 0 && geteuid() == 0)
			bwrap_argv(s, 1, &argv_net);
	} else {
		direct_argv(s, &argv);
	}
	sandbox_env(s, &envp);
	if (!s->no_sandbox) {
		/* bwrap itself gets only PATH: its environment is readable
		 * inside as /proc/1/environ. */
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
		struct sandbox_launcher_args a = {
			.spec = s, .src = src, .nsrc = nsrc, .argv = argv.v,
			.argv_net = argv_net.v, .envp = envp.v,
			/* bwrap writes bst[1] (its fd 5), the launcher reads
			 * bst[0] and passes the lines on through st[1]. */
			.life = life[0], .st_out = st[1], .st_in = bst[0],
			.errfd = ep[1], .terp = terp,
		};
		if (s->no_sandbox) {
			a.nsrc = SANDBOX_FD_ERRPIPE + 1;
			a.argv_net = NULL;
			sandbox_launcher_exec(&a);
		}
		close(life[1]);
		close(st[0]);
		sandbox_launcher_run(&a);
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
	/* Our child, not reaped yet: the pid cannot name another process. */
	p->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
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

void
sandbox_close_fds(struct sandbox_proc *p)
{
	close_fd(&p->cmd_fd);
	close_fd(&p->ev_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->status_fd);
	close_fd(&p->life_fd);
	close_fd(&p->pid_fd);
}

/* Waits up to ms for our child p->pid to exit. Returns its wait
 * status, or -1 when it is still running. The pidfd makes this a wait,
 * not a poll. */
static int
wait_child(const struct sandbox_proc *p, int ms)
{
	int status;
	int64_t end = now_ms() + ms;

	for (;;) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);
		int left = (int)(end - now_ms());
		if (r == p->pid || (r < 0 && errno != EINTR))
			return r == p->pid ? status : 0;
		if (left <= 0)
			return -1;
		if (p->pid_fd >= 0) {
			struct pollfd pf = { .fd = p->pid_fd, .events = POLLIN };
			poll(&pf, 1, left);
		} else {
			struct timespec ts = { 0, 2 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
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
			status = wait_child(p, 2000);
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

