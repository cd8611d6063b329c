/* sandbox: the bubblewrap launcher. The order of the child's steps is
 * the point of this file (SANDBOX.md 2.1): wire fds, close the rest,
 * rlimits, drop root, parent-death signal, exec bwrap with a clean
 * environment. Every step that fails reports through a pipe so the
 * parent can say what went wrong in one line. */
#include "terp/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/filter.h"
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

/* The fd numbers the child sees. */
enum {
	FD_CMD = 3, FD_EV = 4, FD_STATUS = 5, FD_SECA = 6, FD_SECB = 7,
	FD_WS = 8, FD_DRIVER = 9, FD_PASSWD = 10, FD_GROUP = 11, FD_HOSTS = 12,
	FD_DATA = 13, FD_ERRPIPE = 14, FD_LAST = 14
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

uid_t
sandbox_session_uid(void)
{
	/* A distinct uid per concurrent session (RLIMIT_NPROC counts per
	 * uid, SANDBOX.md finding 6), far above any real account. */
	return (uid_t)(1500000000u + ((unsigned)getpid() % 1000000u) * 8u +
	    (unsigned)(now_us() % 8));
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

static void
bwrap_argv(const struct sandbox_spec *s, struct argv *a)
{
	static const char *etc[] = {
		"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime",
		"/etc/matplotlibrc", "/etc/fonts", "/etc/python3",
		"/etc/python3.11", "/etc/mime.types", "/etc/ssl/certs", NULL
	};
	static const char *roots[] = { "bin", "sbin", "lib", "lib64", "lib32", "libx32", NULL };
	struct argv env = { 0 };
	char fd[16];

	av_add(a, bwrap_path());
	av_add(a, "--unshare-all");
	av_add(a, "--unshare-user");
	if (s->network)
		av_add(a, "--share-net");
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
	av_add2(a, "--perms", "1777");
	av_add2(a, "--size", "67108864");
	av_add2(a, "--tmpfs", "/dev/shm");
	av_add2(a, "--perms", "1777");
	av_add2(a, "--size", "268435456");
	av_add2(a, "--tmpfs", "/tmp");
	snprintf(fd, sizeof fd, "%d", FD_WS);
	av_add3(a, "--bind-fd", fd, "/workspace");
	snprintf(fd, sizeof fd, "%d", FD_DATA);
	av_add3(a, "--ro-bind-fd", fd, "/workspace/data");
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

static void __attribute__((noreturn))
child_exec(const struct sandbox_spec *s, int *src, char **argv, char **envp)
{
	sigset_t none;
	pid_t parent = getppid();

	/* 0. into the session's cgroup, while we may still write there. */
	if (s->cgroup_procs_fd >= 0 && write(s->cgroup_procs_fd, "0", 1) != 1)
		child_fail("joining the session cgroup");

	/* 1. fds: move every source above the targets, then into place. */
	for (int i = 0; i <= FD_LAST; i++) {
		if (src[i] < 0)
			continue;
		int t = fcntl(src[i], F_DUPFD, 64);
		if (t < 0)
			_exit(127);
		src[i] = t;
	}
	for (int i = 0; i <= FD_LAST; i++) {
		if (src[i] < 0)
			continue;
		if (dup2(src[i], i) < 0)
			_exit(127);
	}
	/* 2. close everything else, inherited or ours (finding 3). */
	if (syscall(SYS_close_range, FD_LAST + 1, ~0U, 0) < 0) {
		for (int fd = FD_LAST + 1; fd < 4096; fd++)
			close(fd);
	}
	fcntl(FD_ERRPIPE, F_SETFD, FD_CLOEXEC);

	loop_signal_reset_child();
	signal(SIGPIPE, SIG_DFL);
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

	/* 4. never run the sandbox as host root (finding 1). */
	if (s->uid != 0) {
		if (setgroups(0, NULL) < 0)
			child_fail("setgroups");
		if (setresgid(s->uid, s->uid, s->uid) < 0)
			child_fail("setresgid");
		if (setresuid(s->uid, s->uid, s->uid) < 0)
			child_fail("setresuid");
	}
	/* After the uid change, which clears it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail("prctl");
	if (getppid() != parent)
		_exit(127);
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

int
sandbox_launch(const struct sandbox_spec *s, struct sandbox_proc *p, char **err)
{
	static const char passwd[] = "sandbox:x:1000:1000:terp sandbox:/workspace:/usr/sbin/nologin\n";
	static const char group[] = "sandbox:x:1000:\n";
	static const char hosts[] = "127.0.0.1 localhost\n::1 localhost\n";
	int cmd[2] = { -1, -1 }, ev[2] = { -1, -1 }, out[2] = { -1, -1 };
	int errp[2] = { -1, -1 }, st[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int src[FD_LAST + 1];
	int devnull = -1, drv = -1, pw = -1, gr = -1, ho = -1, ws = -1, dd = -1;
	int sa = -1, sb = -1;
	struct argv argv = { 0 }, envp = { 0 };
	char msg[512];
	ssize_t n;
	pid_t pid;
	int rc = -1;

	memset(p, 0, sizeof *p);
	p->pid = -1;
	p->cmd_fd = p->ev_fd = p->out_fd = p->err_fd = p->status_fd = -1;
	for (int i = 0; i <= FD_LAST; i++)
		src[i] = -1;

	if (!s->no_sandbox && access(bwrap_path(), X_OK) < 0)
		return sandbox_probe(err);
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
		if (pipe_pair(st) < 0 ||
		    (pw = memfd_with("passwd", passwd, sizeof passwd - 1)) < 0 ||
		    (gr = memfd_with("group", group, sizeof group - 1)) < 0 ||
		    (ho = memfd_with("hosts", hosts, sizeof hosts - 1)) < 0) {
			*err = xasprintf("cannot set up the sandbox: %s", strerror(errno));
			goto out;
		}
		/* O_PATH fds opened here, by us: no symlink race on host
		 * paths, and a dropped uid needs no access to their parents. */
		ws = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		dd = open(s->datadir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ws < 0 || dd < 0) {
			*err = xasprintf("cannot open the session workspace %s: %s",
			    s->workspace, strerror(errno));
			goto out;
		}
		if (filter_build(&sa, &sb, err) < 0)
			goto out;
		src[FD_STATUS] = st[1];
		src[FD_SECA] = sa;
		src[FD_SECB] = sb;
		src[FD_WS] = ws;
		src[FD_DATA] = dd;
		src[FD_PASSWD] = pw;
		src[FD_GROUP] = gr;
		src[FD_HOSTS] = ho;
		bwrap_argv(s, &argv);
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
	if (pid == 0)
		child_exec(s, src, argv.v, envp.v);

	/* The error pipe closes on a successful exec. */
	close_fd(&ep[1]);
	n = read(ep[0], msg, sizeof msg - 1);
	if (n > 0) {
		msg[n] = '\0';
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
	close_fd(&ep[0]); close_fd(&ep[1]);
	close_fd(&devnull); close_fd(&drv); close_fd(&pw); close_fd(&gr);
	close_fd(&ho); close_fd(&ws); close_fd(&dd); close_fd(&sa); close_fd(&sb);
	av_free(&argv);
	av_free(&envp);
	return rc;
}

pid_t
sandbox_python_pid(pid_t init)
{
	char path[64], buf[256];
	int fd;
	ssize_t n;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)init, (int)init);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			return (pid_t)atoi(buf);
		}
	}
	/* No CONFIG_PROC_CHILDREN: find the process whose parent is init. */
	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		char *rp;
		int ppid = 0;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%.20s/stat", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* comm may hold spaces and parens: parse after the last ')'. */
		if ((rp = strrchr(buf, ')')) == NULL ||
		    sscanf(rp + 1, " %*c %d", &ppid) != 1)
			continue;
		if (ppid == init) {
			pid_t r = (pid_t)atoi(de->d_name);
			closedir(d);
			return r;
		}
	}
	closedir(d);
	return -1;
}

void
sandbox_close_fds(struct sandbox_proc *p)
{
	close_fd(&p->cmd_fd);
	close_fd(&p->ev_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->status_fd);
}

int
sandbox_kill(struct sandbox_proc *p)
{
	int status = -1;

	if (p->pid > 0) {
		/* bwrap runs under another uid when we are root; as its
		 * parent we may still signal it. Its death takes the pid
		 * namespace (and every process in it) along. */
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
			;
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
