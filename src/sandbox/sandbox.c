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

#include "terp/pyenv.h"
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

/* Sets KEY=VALUE in env, replacing an earlier KEY (the interpreter's
 * PATH replaces terp's). */
static void
av_setenv(struct argv *env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t n = eq ? (size_t)(eq - kv) + 1 : strlen(kv);

	for (int i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], kv, n) == 0) {
			free(env->v[i]);
			env->v[i] = xstrdup(kv);
			return;
		}
	}
	av_add(env, kv);
}

/* The driver starts from its compiled code (never without bwrap). */
static int
use_code(const struct sandbox_spec *s)
{
	return s->code != NULL && s->code_len > 0 && s->loader != NULL && !s->no_sandbox;
}

static const char *
spec_python(const struct sandbox_spec *s)
{
	return s->pyenv != NULL ? s->pyenv->exec : s->python;
}

/* The environment the Python process gets; nothing of terp's. */
static void
sandbox_env(const struct sandbox_spec *s, struct argv *env)
{
	static const char *const proxy_vars[] = {
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
		"https_proxy", "all_proxy", "PIP_PROXY", NULL
	};
	char b[96];

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
	av_add(env, s->preload == SANDBOX_PRELOAD_IDLE ? "TERP_PRELOAD=1" :
	    s->preload == SANDBOX_PRELOAD_NEED ? "TERP_PRELOAD=need" : "TERP_PRELOAD=0");
	av_addf(env, "TERP_OUT_DIR=%s/out", s->no_sandbox ? s->workspace : "/workspace");
	if (s->no_sandbox)
		av_addf(env, "TERP_SITE_DIR=%s/.terp/site", s->workspace);
	else
		av_add(env, "TERP_SITE_DIR=" SANDBOX_SITE_DIR);
	if (s->probe)
		av_add(env, "TERP_PROBE=1");
	if (s->code_want && !s->no_sandbox)
		av_add(env, "TERP_CODE=1");
	/* pip: no questions, no version check, no cache (/tmp is a small
	 * tmpfs and gone with the sandbox), one try: a refusal of the
	 * proxy is final, and pip's retries would wait 8 s for nothing.
	 * PIP_TARGET (the session's site directory) comes from the driver,
	 * which knows the version. */
	av_add(env, "PIP_DISABLE_PIP_VERSION_CHECK=1");
	av_add(env, "PIP_NO_INPUT=1");
	av_add(env, "PIP_NO_CACHE_DIR=1");
	av_add(env, "PIP_RETRIES=0");
	av_add(env, "PIP_ROOT_USER_ACTION=ignore");
	if (s->egress_sock != NULL && !s->no_sandbox) {
		/* NO_PROXY stays unset: 127.0.0.1 inside is the sandbox's
		 * own loopback, and the host's is reached, when allowed,
		 * through the proxy like any other address. */
		for (int i = 0; proxy_vars[i]; i++) {
			snprintf(b, sizeof b, "%s=http://127.0.0.1:%d", proxy_vars[i],
			    SANDBOX_EGRESS_PORT);
			av_add(env, b);
		}
		av_add(env, "TERP_EGRESS=1");
	} else {
		/* Nothing can be downloaded: pip fails at once instead of
		 * trying, and the driver says which setting to change. */
		av_add(env, "PIP_NO_INDEX=1");
		av_add(env, "TERP_EGRESS=0");
	}
	if (s->pyenv != NULL)
		for (size_t i = 0; s->pyenv->env != NULL && s->pyenv->env[i] != NULL; i++)
			av_setenv(env, s->pyenv->env[i]);
	for (size_t i = 0; s->setenv != NULL && s->setenv[i] != NULL; i++)
		if (strchr(s->setenv[i], '=') != NULL)
			av_setenv(env, s->setenv[i]);
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
/* The fd number bwrap sees for the interpreter's i-th bind. */
static int
py_fd(const struct sandbox_spec *s, size_t i)
{
	return SANDBOX_FD_BIND0 + s->nbinds + (int)i;
}

static void
bwrap_argv(const struct sandbox_spec *s, int own_net, struct argv *a)
{
	static const char *etc[] = {
		"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime",
		"/etc/matplotlibrc", "/etc/fonts", "/etc/python3",
		"/etc/mime.types", "/etc/ssl/certs", NULL
	};
	static const char *roots[] = { "bin", "sbin", "lib", "lib64", "lib32", "libx32", NULL };
	struct argv env = { 0 };
	char fd[16], size[32], etcpy[32];

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
	/* Debian's sitecustomize and sysconfig for this version of Python. */
	if (s->pyenv != NULL && s->pyenv->major > 0)
		snprintf(etcpy, sizeof etcpy, "/etc/python%d.%d", s->pyenv->major,
		    s->pyenv->minor);
	else
		snprintf(etcpy, sizeof etcpy, "/etc/python3.11");
	av_add3(a, "--ro-bind-try", etcpy, etcpy);
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
	av_add3(a, "--ro-bind-fd", fd, SANDBOX_STAGED);
	/* Each data file over its placeholder in the workspace's own
	 * (writable) data folder: a bind of the open file, so nothing is
	 * copied, and a mount point, which the code cannot write, remove,
	 * rename or chmod. The others are links to SANDBOX_STAGED. */
	for (int i = 0; i < s->nbinds && i < SANDBOX_MAX_BINDS; i++) {
		char dest[300];
		snprintf(fd, sizeof fd, "%d", SANDBOX_FD_BIND0 + i);
		snprintf(dest, sizeof dest, "/workspace/data/%s", s->bind_names[i]);
		av_add3(a, "--ro-bind-fd", fd, dest);
	}
	/* The interpreter's prefixes, read-only where they are on the host
	 * (after /tmp's tmpfs, so a venv under /tmp shows through it), and
	 * the symlinks met on the way to it. pyenv chose them: nothing of
	 * $HOME but the environment itself. */
	if (s->pyenv != NULL) {
		/* By the fds launch_open opened as terp: as root, the
		 * sandbox's uid then needs no path to them (a pyenv under a
		 * 0700 /root), and a path swapped since is not followed. */
		for (size_t i = 0; i < s->pyenv->nbinds; i++) {
			snprintf(fd, sizeof fd, "%d", py_fd(s, i));
			av_add3(a, "--ro-bind-fd", fd, s->pyenv->binds[i].sandbox);
		}
		for (size_t i = 0; i < s->pyenv->nlinks; i++)
			av_add3(a, "--symlink", s->pyenv->links[i].target,
			    s->pyenv->links[i].path);
		/* An environment's own pip.conf or .condarc may hold an
		 * index password or a channel token: empty inside (/dev/null,
		 * with --dev-bind: the other binds are nodev, and there a
		 * device cannot be opened at all). */
		for (size_t i = 0; i < s->pyenv->nhides; i++) {
			const struct pyenv_hide *h = &s->pyenv->hides[i];
			if (h->dir) {
				av_add2(a, "--tmpfs", h->path);
				av_add2(a, "--remount-ro", h->path);
			} else {
				av_add3(a, "--dev-bind", "/dev/null", h->path);
			}
		}
	}
	snprintf(fd, sizeof fd, "%d", SANDBOX_FD_DRIVER);
	av_add3(a, "--ro-bind-data", fd, SANDBOX_DRIVER);
	if (use_code(s)) {
		snprintf(fd, sizeof fd, "%d", SANDBOX_FD_CODE);
		av_add3(a, "--ro-bind-data", fd, SANDBOX_DRIVER_CODE);
	}
	if (s->egress_sock != NULL) {
		av_add3(a, "--ro-bind", s->egress_sock, SANDBOX_EGRESS_SOCK);
		snprintf(fd, sizeof fd, "%d", SANDBOX_FD_FWD);
		av_add3(a, "--ro-bind-data", fd, SANDBOX_EGRESS_FWD);
	}
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
	av_add(a, spec_python(s));
	av_add(a, "-I");
	av_add(a, "-u");
	if (use_code(s)) {
		av_add(a, "-c");
		av_add(a, s->loader);
	} else {
		av_add(a, SANDBOX_DRIVER);
	}
}

static void
direct_argv(const struct sandbox_spec *s, struct argv *a)
{
	char path[32];

	snprintf(path, sizeof path, "/proc/self/fd/%d", SANDBOX_FD_DRIVER);
	av_add(a, spec_python(s));
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

/* Everything a launch opens on terp's side, closed in one place. Pipes
 * are [read, write]; src maps the fd numbers the sandbox sees to ours. */
struct launch {
	int		 cmd[2], ev[2], out[2], errp[2];
	int		 st[2];		/* launcher -> terp: status lines */
	int		 bst[2];	/* bwrap -> launcher: status lines */
	int		 life[2];	/* terp holds [1]; its close ends all */
	int		 ep[2];		/* set-up errors, one line */
	int		 devnull, drv, pw, gr, ho, ws, dd, sa, sb, fwd, code;
	int		 py[SANDBOX_MAX_PYBINDS];	/* the interpreter's binds */
	int		 src[SANDBOX_FD_MAX];
	int		 nsrc;
	struct argv	 argv, argv_net, envp;
};

static void
launch_init(struct launch *L)
{
	int *pipes[] = { L->cmd, L->ev, L->out, L->errp, L->st, L->bst, L->life, L->ep };

	memset(L, 0, sizeof *L);
	for (size_t i = 0; i < sizeof pipes / sizeof pipes[0]; i++)
		pipes[i][0] = pipes[i][1] = -1;
	L->devnull = L->drv = L->pw = L->gr = L->ho = L->ws = L->dd = L->sa = L->sb = -1;
	L->fwd = L->code = -1;
	for (int i = 0; i < SANDBOX_MAX_PYBINDS; i++)
		L->py[i] = -1;
	for (int i = 0; i < SANDBOX_FD_MAX; i++)
		L->src[i] = -1;
	L->nsrc = SANDBOX_FD_ALIVE + 1;
}

static void
launch_close(struct launch *L)
{
	int *pipes[] = { L->cmd, L->ev, L->out, L->errp, L->st, L->bst, L->life, L->ep };
	int *fds[] = { &L->devnull, &L->drv, &L->pw, &L->gr, &L->ho, &L->ws, &L->dd,
	    &L->sa, &L->sb, &L->fwd, &L->code };

	for (size_t i = 0; i < sizeof pipes / sizeof pipes[0]; i++) {
		close_fd(&pipes[i][0]);
		close_fd(&pipes[i][1]);
	}
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		close_fd(fds[i]);
	for (int i = 0; i < SANDBOX_MAX_PYBINDS; i++)
		close_fd(&L->py[i]);
	av_free(&L->argv);
	av_free(&L->argv_net);
	av_free(&L->envp);
}

/* The interpreter's prefixes, opened here as terp (O_PATH: nothing is
 * read) and bound by fd after the data files'. */
static int
open_py_binds(struct launch *L, const struct sandbox_spec *s, char **err)
{
	size_t n = s->pyenv != NULL ? s->pyenv->nbinds : 0;

	if (n > SANDBOX_MAX_PYBINDS) {
		*err = xasprintf("the Python environment needs %zu folders bound; at most %d",
		    n, SANDBOX_MAX_PYBINDS);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *host = s->pyenv->binds[i].host;

		if ((L->py[i] = open(host, O_PATH | O_CLOEXEC)) < 0) {
			*err = xasprintf("cannot open the Python environment's %s: %s", host,
			    strerror(errno));
			return -1;
		}
		L->src[py_fd(s, i)] = L->py[i];
	}
	L->nsrc = py_fd(s, n);
	/* the data files' mounts, for the launcher only (it closes them) */
	for (int i = 0; i < s->nmounts; i++)
		L->src[L->nsrc + i] = s->mount_fds[i];
	L->nsrc += s->nmounts;
	return 0;
}

/* Opens what the sandbox gets and maps it into L->src. */
static int
launch_open(struct launch *L, const struct sandbox_spec *s, char **err)
{
	static const char passwd[] = "sandbox:x:1000:1000:terp sandbox:/workspace:/usr/sbin/nologin\n";
	static const char group[] = "sandbox:x:1000:\n";
	static const char hosts[] = "127.0.0.1 localhost\n::1 localhost\n";

	if (pipe_pair(L->cmd) < 0 || pipe_pair(L->ev) < 0 || pipe_pair(L->out) < 0 ||
	    pipe_pair(L->errp) < 0 || pipe_pair(L->ep) < 0 ||
	    (L->devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0 ||
	    (L->drv = memfd_with("terp-driver", s->driver, s->driver_len)) < 0) {
		*err = xasprintf("cannot set up the sandbox's pipes: %s", strerror(errno));
		return -1;
	}
	L->src[0] = L->devnull;
	L->src[1] = L->out[1];
	L->src[2] = L->errp[1];
	L->src[SANDBOX_FD_CMD] = L->cmd[0];
	L->src[SANDBOX_FD_EV] = L->ev[1];
	L->src[SANDBOX_FD_DRIVER] = L->drv;
	L->src[SANDBOX_FD_ERRPIPE] = L->ep[1];
	if (s->no_sandbox)
		return 0;
	if (pipe_pair(L->st) < 0 || pipe_pair(L->bst) < 0 || pipe_pair(L->life) < 0 ||
	    (L->pw = memfd_with("passwd", passwd, sizeof passwd - 1)) < 0 ||
	    (L->gr = memfd_with("group", group, sizeof group - 1)) < 0 ||
	    (L->ho = memfd_with("hosts", hosts, sizeof hosts - 1)) < 0) {
		*err = xasprintf("cannot set up the sandbox: %s", strerror(errno));
		return -1;
	}
	/* O_PATH fds opened here, by us: no symlink race on host paths.
	 * (bwrap still resolves their paths as the sandbox uid: the folders
	 * must let it through, see workspace.c.) */
	L->ws = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	L->dd = open(s->datadir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (L->ws < 0 || L->dd < 0) {
		*err = xasprintf("cannot open the session workspace %s: %s",
		    s->workspace, strerror(errno));
		return -1;
	}
	if (sandbox_filter_build(&L->sa, &L->sb, err) < 0)
		return -1;
	if (s->egress_sock != NULL &&
	    (L->fwd = memfd_with("terp-egress-fwd", s->fwd, s->fwd_len)) < 0) {
		*err = xasprintf("cannot set up the sandbox: %s", strerror(errno));
		return -1;
	}
	if (use_code(s) &&
	    (L->code = memfd_with("terp-driver-code", s->code, s->code_len)) < 0) {
		*err = xasprintf("cannot set up the sandbox: %s", strerror(errno));
		return -1;
	}
	L->src[SANDBOX_FD_FWD] = L->fwd;
	L->src[SANDBOX_FD_CODE] = L->code;
	L->src[SANDBOX_FD_STATUS] = L->bst[1];
	L->src[SANDBOX_FD_SECA] = L->sa;
	L->src[SANDBOX_FD_SECB] = L->sb;
	L->src[SANDBOX_FD_WS] = L->ws;
	L->src[SANDBOX_FD_DATA] = L->dd;
	L->src[SANDBOX_FD_PASSWD] = L->pw;
	L->src[SANDBOX_FD_GROUP] = L->gr;
	L->src[SANDBOX_FD_HOSTS] = L->ho;
	for (int i = 0; i < s->nbinds; i++)
		L->src[SANDBOX_FD_BIND0 + i] = s->bind_fds[i];
	L->nsrc = SANDBOX_FD_BIND0 + s->nbinds;
	return open_py_binds(L, s, err);
}

/* The command and the environment of the exec step. */
static void
launch_argv(struct launch *L, const struct sandbox_spec *s)
{
	if (s->no_sandbox) {
		direct_argv(s, &L->argv);
		sandbox_env(s, &L->envp);
		return;
	}
	bwrap_argv(s, 0, &L->argv);
	if (!s->network && s->uid != 0 && geteuid() == 0)
		bwrap_argv(s, 1, &L->argv_net);
	/* bwrap itself gets only PATH: its environment is readable inside
	 * as /proc/1/environ. Python's is in bwrap's --setenv list. */
	av_add(&L->envp, "PATH=/usr/bin:/bin");
}

/* In the forked child: the exec step (no sandbox) or the launcher. */
static void __attribute__((noreturn))
launch_child(struct launch *L, const struct sandbox_spec *s, pid_t terp)
{
	struct sandbox_launcher_args a = {
		.spec = s, .src = L->src, .nsrc = L->nsrc, .argv = L->argv.v,
		.argv_net = L->argv_net.v, .envp = L->envp.v,
		/* bwrap writes bst[1] (its fd 5), the launcher reads bst[0]
		 * and passes the lines on through st[1]. */
		.life = L->life[0], .st_out = L->st[1], .st_in = L->bst[0],
		.errfd = L->ep[1], .terp = terp,
	};

	if (s->no_sandbox) {
		a.nsrc = SANDBOX_FD_ERRPIPE + 1;
		a.argv_net = NULL;
		sandbox_launcher_exec(&a);
	}
	close(L->life[1]);
	close(L->st[0]);
	sandbox_launcher_run(&a);
}

/* Takes *fd into *to (non-blocking, as struct sandbox_proc says). */
static void
hand_over(int *fd, int *to)
{
	*to = *fd;
	*fd = -1;
	if (*to >= 0)
		fd_set_nonblock(*to);
}

int
sandbox_launch(const struct sandbox_spec *s, struct sandbox_proc *p, char **err)
{
	struct launch L;
	char msg[512];
	pid_t terp = getpid(), pid;
	ssize_t n;
	int rc = -1;

	memset(p, 0, sizeof *p);
	p->pid = -1;
	p->cmd_fd = p->ev_fd = p->out_fd = p->err_fd = p->status_fd = p->life_fd = -1;
	p->pid_fd = -1;
	if (!s->no_sandbox && access(bwrap_path(), X_OK) < 0)
		return sandbox_probe(err);
	if (s->nbinds < 0 || s->nmounts < 0 || s->nbinds + s->nmounts > SANDBOX_MAX_BINDS) {
		*err = xasprintf("too many data files to bind (%d; at most %d)",
		    s->nbinds + s->nmounts, SANDBOX_MAX_BINDS);
		return -1;
	}
	launch_init(&L);
	if (launch_open(&L, s, err) < 0)
		goto out;
	launch_argv(&L, s);
	if ((pid = fork()) < 0) {
		*err = xasprintf("fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		launch_child(&L, s, terp);
	/* The error pipe closes on a successful exec (and in the launcher
	 * once bwrap is forked). */
	close_fd(&L.ep[1]);
	n = read(L.ep[0], msg, sizeof msg - 1);
	if (n > 0) {
		msg[n] = '\0';
		close_fd(&L.life[1]);
		waitpid(pid, NULL, 0);
		*err = xasprintf("cannot start the sandbox: %s", msg);
		goto out;
	}
	p->pid = pid;
	/* Our child, not reaped yet: the pid cannot name another process. */
	p->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	hand_over(&L.cmd[1], &p->cmd_fd);
	hand_over(&L.ev[0], &p->ev_fd);
	hand_over(&L.out[0], &p->out_fd);
	hand_over(&L.errp[0], &p->err_fd);
	hand_over(&L.st[0], &p->status_fd);
	p->life_fd = L.life[1];		/* blocking: only ever closed */
	L.life[1] = -1;
	rc = 0;
out:
	launch_close(&L);
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

