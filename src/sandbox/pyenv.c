/* pyenv: choosing the Python the sandbox runs, what to bind for it, and
 * what it has installed. Resolution mirrors CPython's own rules (getpath
 * for pyvenv.cfg and the stdlib landmark, site.py for
 * include-system-site-packages) without running the interpreter; the
 * probe runs it once per change, through a runner the caller chooses. */
#include "terp/pyenv.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/util.h"

extern char **environ;

#define CFG_MAX		(64 * 1024)	/* pyvenv.cfg, .python-version */
#define CACHE_MAX	(256 * 1024)	/* one cache file */
#define MAX_LINKS	40		/* symlinks followed per path, as Linux */
#define PROBE_FORMAT	3		/* bump when the script's answer changes */

/* ---- Paths -------------------------------------------------------- */

/* p is dir itself or lies below it. */
static int
path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return p[0] == '/';
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* A new string: a and b joined with one slash. */
static char *
path_join(const char *a, const char *b)
{
	size_t n = strlen(a);

	while (n > 1 && a[n - 1] == '/')
		n--;
	while (*b == '/')
		b++;
	if (n == 1 && a[0] == '/')
		return xasprintf("/%s", b);
	return xasprintf("%.*s/%s", (int)n, a, b);
}

/* A new string: the directory part of an absolute, normalized path. */
static char *
path_dirname(const char *p)
{
	const char *s = strrchr(p, '/');

	if (s == NULL || s == p)
		return xstrdup("/");
	return xstrndup(p, (size_t)(s - p));
}

static const char *
path_base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Makes p absolute (against cwd) and normalizes it the way Python's
 * os.path.abspath does, lexically: no //, no /./, no .. (sys.executable
 * and site.py's venv search are computed that way). New string, or NULL
 * when the result would pass PATH_MAX. */
static char *
path_normalize(const char *p, const char *cwd)
{
	char *in = p[0] == '/' ? xstrdup(p) : path_join(cwd, p);
	char *out = xmalloc(strlen(in) + 2);
	size_t n = 0;
	char *s = in;

	for (;;) {
		char *e;
		size_t len;

		while (*s == '/')
			s++;
		if (*s == '\0')
			break;
		e = strchrnul(s, '/');
		len = (size_t)(e - s);
		if (len == 1 && s[0] == '.') {
			/* nothing */
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else {
			out[n++] = '/';
			memcpy(out + n, s, len);
			n += len;
		}
		s = e;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	free(in);
	if (n >= PATH_MAX) {
		free(out);
		return NULL;
	}
	return out;
}

static int
is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int
is_exec_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

/* read_small's flags. RS_OWN: only a file of ours that no one else may
 * write (terp's own caches: the driver cache's check, kcode_load). */
enum { RS_NOFOLLOW = 1, RS_OWN = 2 };

/* Reads at most max bytes of a regular file, never through a FIFO or a
 * device. New NUL-terminated buffer or NULL (errno set). */
static char *
read_small(const char *path, size_t max, size_t *len, int flags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
	    ((flags & RS_NOFOLLOW) ? O_NOFOLLOW : 0));
	struct stat st;
	char *b;
	size_t n = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || ((flags & RS_OWN) &&
	    (st.st_uid != geteuid() || (st.st_mode & 022) != 0))) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	b = xmalloc(max + 1);
	while (n < max) {
		ssize_t r = read(fd, b + n, max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(b);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	if (len != NULL)
		*len = n;
	return b;
}

/* ---- pyvenv.cfg --------------------------------------------------- */

static char *
trimmed(const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	return xstrndup(s, n);
}

int
pyenv_cfg_parse(const char *text, size_t len, struct pyvenv_cfg *out)
{
	const char *p = text, *end = text + len;
	char *version_info = NULL;

	memset(out, 0, sizeof *out);
	out->system_site = 1;	/* site.py: system_site = "true" until read */
	if (memchr(text, '\0', len) != NULL)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(le - p));

		if (eq != NULL) {
			char *key = trimmed(p, (size_t)(eq - p));
			char *val = trimmed(eq + 1, (size_t)(le - eq - 1));

			for (char *k = key; *k; k++)
				*k = (char)tolower((unsigned char)*k);
			if (strcmp(key, "home") == 0 && out->home == NULL) {
				out->home = val;
				val = NULL;
			} else if (strcmp(key, "include-system-site-packages") == 0) {
				out->system_site = strcasecmp(val, "true") == 0;
			} else if (strcmp(key, "version") == 0) {
				free(out->version);
				out->version = val;
				val = NULL;
			} else if (strcmp(key, "version_info") == 0) {
				free(version_info);
				version_info = val;
				val = NULL;
			} else if (strcmp(key, "executable") == 0) {
				free(out->executable);
				out->executable = val;
				val = NULL;
			}
			free(key);
			free(val);
		}
		p = nl ? nl + 1 : end;
	}
	if (out->version == NULL)
		out->version = version_info;
	else
		free(version_info);
	return 0;
}

void
pyenv_cfg_free(struct pyvenv_cfg *cfg)
{
	free(cfg->home);
	free(cfg->version);
	free(cfg->executable);
	memset(cfg, 0, sizeof *cfg);
}

/* ---- Trust -------------------------------------------------------- */

enum pyenv_distrust
pyenv_untrusted(unsigned mode, uid_t uid, gid_t gid, uid_t me, gid_t mygid,
    int ancestor)
{
	int sticky = S_ISDIR(mode) && (mode & S_ISVTX);

	if (S_ISLNK(mode))
		return PYENV_TRUSTED;	/* a link's own mode means nothing */
	if ((mode & S_IWOTH) && !(ancestor && sticky))
		return PYENV_WORLD_WRITABLE;
	if ((mode & S_IWGRP) && gid != 0 && gid != mygid && !(ancestor && sticky))
		return PYENV_GROUP_WRITABLE;
	if (uid != 0 && uid != me)
		return PYENV_OTHER_OWNER;
	return PYENV_TRUSTED;
}

/* ---- Resolution --------------------------------------------------- */

struct rctx {
	const struct pyenv_choice *choice;
	const char *const *envp;
	char		*cwd;
	uid_t		 me;
	gid_t		 mygid;
	char		*home_real;	/* realpath($HOME), or NULL */
	char		**ok;		/* directories already found trusted */
	size_t		 nok;
	struct pyenv_link *met;	/* symlinks met while recording */
	size_t		 nmet;
	int		 record;
	int		 root_prefix_ok;	/* prefix / with its stdlib in /usr */
	char		*err;
	struct pyenv	*pe;
};

static char *
user_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	return pw ? xasprintf("%s (uid %u)", pw->pw_name, (unsigned)uid)
	    : xasprintf("uid %u", (unsigned)uid);
}

static char *
group_name(gid_t gid)
{
	struct group *gr = getgrgid(gid);
	return gr ? xasprintf("group %s (gid %u)", gr->gr_name, (unsigned)gid)
	    : xasprintf("group %u", (unsigned)gid);
}

/* Checks one real path (no symlinks in it) against the trust rule.
 * what: the path it leads to, named in the message when different. */
static int
trust_one(struct rctx *c, const char *real, int ancestor, const char *what)
{
	struct stat st;
	enum pyenv_distrust d;
	char *on = NULL, *a = NULL, *b = NULL;

	if (ancestor)
		for (size_t i = 0; i < c->nok; i++)
			if (strcmp(c->ok[i], real) == 0)
				return 0;
	if (lstat(real, &st) < 0) {
		c->err = xasprintf("cannot check %s: %s", real, strerror(errno));
		return -1;
	}
	d = pyenv_untrusted(st.st_mode, st.st_uid, st.st_gid, c->me, c->mygid, ancestor);
	if (d == PYENV_TRUSTED) {
		if (ancestor) {
			c->ok = xrealloc(c->ok, (c->nok + 1) * sizeof *c->ok);
			c->ok[c->nok++] = xstrdup(real);
		}
		return 0;
	}
	if (what != NULL && strcmp(what, real) != 0)
		on = xasprintf(" (on the way to %s)", what);
	switch (d) {
	case PYENV_WORLD_WRITABLE:
		c->err = xasprintf("refusing %s%s: it is writable by every user; "
		    "chmod o-w %s", real, on ? on : "", real);
		break;
	case PYENV_GROUP_WRITABLE:
		a = group_name(st.st_gid);
		c->err = xasprintf("refusing %s%s: it is writable by %s, which is "
		    "neither yours nor root's; chmod g-w %s", real, on ? on : "", a, real);
		break;
	default:
		a = user_name(st.st_uid);
		b = user_name(c->me);
		c->err = xasprintf("refusing %s%s: it belongs to %s, not to you "
		    "(%s) or root, so its owner could change what terp runs; "
		    "run terp as that user, or chown the environment to you",
		    real, on ? on : "", a, b);
		break;
	}
	free(on);
	free(a);
	free(b);
	return -1;
}

/* Checks every directory above real (ancestors, where a sticky bit
 * excuses world-writability), then real itself. */
static int
trust_tree(struct rctx *c, const char *real)
{
	char *p = xstrdup(real);
	int rc = 0;

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char save = *s;
			if (save == '\0')
				break;
			*s = '\0';
			rc = trust_one(c, p, 1, real);
			*s = save;
			if (rc < 0)
				break;
		}
	}
	if (rc == 0 && trust_one(c, "/", 1, real) < 0)
		rc = -1;
	if (rc == 0)
		rc = trust_one(c, real, 0, NULL);
	free(p);
	return rc;
}

/* A prefix's bin and lib directories, which walks only pass through
 * (where a sticky bit would excuse world-writability): a stranger could
 * add a bin/pip that PATH finds first. */
static int
trust_inner(struct rctx *c, const char *prefix)
{
	static const char *const sub[] = { "bin", "lib", NULL };

	for (size_t i = 0; sub[i]; i++) {
		char *p = path_join(prefix, sub[i]);
		struct stat st;
		int rc = 0;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rc = trust_one(c, p, 0, NULL);
		free(p);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Resolves the absolute path like realpath(3) into *real (new string),
 * but checks every real directory it looks into against the trust rule
 * (as an ancestor) and, when c->record, remembers every symlink it
 * meets with its target. A missing component: -1 with errno ENOENT and
 * *missing the absolute name that is missing (new string). */
static int
walk(struct rctx *c, const char *path, char **real, char **missing)
{
	char cur[PATH_MAX];
	char *rest = xstrdup(path);
	size_t off = 0, links = 0;

	*real = NULL;
	if (missing)
		*missing = NULL;
	cur[0] = '\0';
	for (;;) {
		char *s = rest + off, *e, cand[PATH_MAX], tgt[PATH_MAX];
		size_t len;
		struct stat st;
		ssize_t tn;

		while (*s == '/')
			s++;
		if (*s == '\0')
			break;
		e = strchrnul(s, '/');
		len = (size_t)(e - s);
		off = (size_t)(e - rest);
		if (len == 1 && s[0] == '.')
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			char *sl = strrchr(cur, '/');
			if (sl != NULL)
				*sl = '\0';
			continue;
		}
		if (strlen(cur) + 1 + len >= sizeof cand) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		{
			size_t cl = strlen(cur);
			memcpy(cand, cur, cl);
			cand[cl] = '/';
			memcpy(cand + cl + 1, s, len);
			cand[cl + 1 + len] = '\0';
		}
		if (trust_one(c, cur[0] ? cur : "/", 1, path) < 0) {
			errno = EPERM;
			goto fail;
		}
		if (lstat(cand, &st) < 0) {
			if (errno == ENOENT && missing)
				*missing = xasprintf("%s%s", cand, e);
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			char *nr;
			if (++links > MAX_LINKS) {
				errno = ELOOP;
				goto fail;
			}
			tn = readlink(cand, tgt, sizeof tgt - 1);
			if (tn <= 0) {
				if (tn == 0)
					errno = EINVAL;
				goto fail;
			}
			tgt[tn] = '\0';
			if (c->record) {
				c->met = xrealloc(c->met, (c->nmet + 1) * sizeof *c->met);
				c->met[c->nmet].path = xstrdup(cand);
				c->met[c->nmet].target = xstrdup(tgt);
				c->nmet++;
			}
			nr = xasprintf("%s%s", tgt, e);
			free(rest);
			rest = nr;
			off = 0;
			if (tgt[0] == '/')
				cur[0] = '\0';
			continue;
		}
		if (*e != '\0' && !S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			goto fail;
		}
		memcpy(cur, cand, strlen(cand) + 1);
	}
	free(rest);
	*real = xstrdup(cur[0] ? cur : "/");
	return 0;
fail:
	free(rest);
	return -1;
}

/* "python3.11" -> 3, 11, abi ""; "python3.13t" -> abi "t". 0 when the
 * name carries no version. */
static int
name_version(const char *name, int *major, int *minor, char abi[2])
{
	const char *s;
	char *e;
	long a, b;

	if (strncmp(name, "python", 6) != 0)
		return 0;
	s = name + 6;
	if (!isdigit((unsigned char)*s))
		return 0;
	a = strtol(s, &e, 10);
	if (*e != '.' || !isdigit((unsigned char)e[1]))
		return 0;
	b = strtol(e + 1, &e, 10);
	abi[0] = abi[1] = '\0';
	if (*e == 't')
		abi[0] = *e++;
	if (*e != '\0' || a > 99 || b > 999)
		return 0;
	*major = (int)a;
	*minor = (int)b;
	return 1;
}

/* "3.11.2" -> 3, 11. */
static int
text_version(const char *v, int *major, int *minor)
{
	char *e;
	long a, b;

	if (v == NULL || !isdigit((unsigned char)*v))
		return 0;
	a = strtol(v, &e, 10);
	if (*e != '.' || !isdigit((unsigned char)e[1]))
		return 0;
	b = strtol(e + 1, &e, 10);
	if (a > 99 || b > 999)
		return 0;
	*major = (int)a;
	*minor = (int)b;
	return 1;
}

/* The stdlib landmark under prefix for version major.minor: as
 * getpath.py, lib/pythonX.Y/os.py (or .pyc), or lib/pythonXY.zip; lib64
 * too for platlibdir=lib64 distributions. */
static int
has_landmark(const char *prefix, int major, int minor, const char *abi)
{
	static const char *const libs[] = { "lib", "lib64" };
	char p[PATH_MAX];

	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof p, "%s/%s/python%d.%d%s/os.py",
		    strcmp(prefix, "/") ? prefix : "", libs[i], major, minor, abi);
		if (is_file(p))
			return 1;
		strcat(p, "c");
		if (is_file(p))
			return 1;
		snprintf(p, sizeof p, "%s/%s/python%d%d%s.zip",
		    strcmp(prefix, "/") ? prefix : "", libs[i], major, minor, abi);
		if (is_file(p))
			return 1;
	}
	return 0;
}

/* With no version in the binary's name: the one lib/pythonX.Y with an
 * os.py under prefix. 0 when none or several. */
static int
guess_version(const char *prefix, int *major, int *minor, char abi[2])
{
	char p[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int found = 0;

	snprintf(p, sizeof p, "%s/lib", strcmp(prefix, "/") ? prefix : "");
	if ((d = opendir(p)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		int a, b;
		char t[2];
		if (!name_version(de->d_name, &a, &b, t) || !has_landmark(prefix, a, b, t))
			continue;
		if (found++ == 0) {
			*major = a;
			*minor = b;
			memcpy(abi, t, 2);
		}
	}
	closedir(d);
	return found == 1;
}

/* getpath.py's search_up: from dir upwards, the first directory holding
 * the stdlib landmark. Sets the version when it was unknown (*major 0).
 * New string or NULL. */
static char *
search_up(const char *dir, int *major, int *minor, char abi[2])
{
	char *p = xstrdup(dir);

	for (;;) {
		char *up;
		if (*major != 0 ? has_landmark(p, *major, *minor, abi)
		    : guess_version(p, major, minor, abi))
			return p;
		if (strcmp(p, "/") == 0)
			break;
		up = path_dirname(p);
		free(p);
		p = up;
	}
	free(p);
	return NULL;
}

static void
add_env(struct pyenv *pe, char *kv)
{
	size_t n = 0;

	while (pe->env != NULL && pe->env[n] != NULL)
		n++;
	pe->env = xrealloc(pe->env, (n + 2) * sizeof *pe->env);
	pe->env[n] = kv;
	pe->env[n + 1] = NULL;
}

static void
add_watch(struct pyenv *pe, char *path)
{
	size_t n = 0;

	while (pe->watch != NULL && pe->watch[n] != NULL) {
		if (strcmp(pe->watch[n], path) == 0) {
			free(path);
			return;
		}
		n++;
	}
	pe->watch = xrealloc(pe->watch, (n + 2) * sizeof *pe->watch);
	pe->watch[n] = path;
	pe->watch[n + 1] = NULL;
}

/* Whether the sandbox shows real as it is without a bind of ours: /usr
 * is bound whole today. */
static int
system_path(const char *real)
{
	return path_under(real, "/usr");
}

static int
bind_covered(const struct pyenv *pe, const char *real)
{
	if (system_path(real))
		return 1;
	for (size_t i = 0; i < pe->nbinds; i++)
		if (path_under(real, pe->binds[i].host))
			return 1;
	return 0;
}

/* Adds a read-only bind of the real directory dir, after the trust and
 * $HOME rules; a bind it contains is dropped. */
/* The package managers' configuration files at the top of each bound
 * prefix (where pip and conda look for an environment's own): kept out
 * of the sandbox (struct pyenv_hide says why). lstat: a symlink there
 * is covered too (bwrap binds over what it names, which is then
 * covered, or not bound at all). */
static void
find_hides(struct pyenv *pe)
{
	static const char *const names[] = { "pip.conf", "pip.ini", ".condarc",
	    "condarc", ".mambarc", "condarc.d" };
	struct stat st;

	for (size_t i = 0; i < pe->nbinds; i++) {
		for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
			char *h = path_join(pe->binds[i].host, names[k]);
			if (stat(h, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
				free(h);
				continue;
			}
			free(h);
			pe->hides = xrealloc(pe->hides, (pe->nhides + 1) * sizeof *pe->hides);
			pe->hides[pe->nhides].path = path_join(pe->binds[i].sandbox, names[k]);
			pe->hides[pe->nhides].dir = S_ISDIR(st.st_mode);
			pe->nhides++;
		}
	}
}

static int
add_bind(struct rctx *c, const char *dir)
{
	struct pyenv *pe = c->pe;
	static const char *const never[] = { "/proc", "/sys", "/dev", NULL };
	size_t j = 0;

	if (bind_covered(pe, dir))
		return 0;
	if (strcmp(dir, "/") == 0 && c->root_prefix_ok)
		return 0;
	if (strcmp(dir, "/") == 0 || strchr(dir + 1, '/') == NULL) {
		c->err = xasprintf("refusing to bind %s into the sandbox: it is a "
		    "top-level directory; give the environment its own directory "
		    "(python3 -m venv DIR)", dir);
		return -1;
	}
	for (size_t i = 0; never[i]; i++)
		if (path_under(dir, never[i])) {
			c->err = xasprintf("refusing to bind %s into the sandbox: it "
			    "lies under %s", dir, never[i]);
			return -1;
		}
	if (c->home_real != NULL && path_under(c->home_real, dir)) {
		c->err = xasprintf("refusing to bind %s into the sandbox: it holds "
		    "your home directory %s; give the environment its own "
		    "directory (python3 -m venv DIR)", dir, c->home_real);
		return -1;
	}
	if (trust_tree(c, dir) < 0)
		return -1;
	for (size_t i = 0; i < pe->nbinds; i++) {
		if (path_under(pe->binds[i].host, dir)) {
			free(pe->binds[i].host);
			free(pe->binds[i].sandbox);
		} else {
			pe->binds[j++] = pe->binds[i];
		}
	}
	pe->nbinds = j;
	pe->binds = xrealloc(pe->binds, (pe->nbinds + 1) * sizeof *pe->binds);
	pe->binds[pe->nbinds].host = xstrdup(dir);
	pe->binds[pe->nbinds].sandbox = xstrdup(dir);
	pe->nbinds++;
	return 0;
}

/* Keeps the symlinks met that the sandbox would not show otherwise:
 * outside every bind, outside /usr, and not the top-level links to /usr
 * that sandbox.c recreates itself. */
static void
keep_links(struct rctx *c)
{
	static const char *const roots[] = {
		"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", NULL
	};
	struct pyenv *pe = c->pe;

	for (size_t i = 0; i < c->nmet; i++) {
		const char *p = c->met[i].path;
		int skip = bind_covered(pe, p);

		for (size_t r = 0; roots[r] && !skip; r++)
			skip = strcmp(p, roots[r]) == 0;
		for (size_t k = 0; k < pe->nlinks && !skip; k++)
			skip = strcmp(pe->links[k].path, p) == 0;
		if (skip)
			continue;
		pe->links = xrealloc(pe->links, (pe->nlinks + 1) * sizeof *pe->links);
		pe->links[pe->nlinks].path = xstrdup(p);
		pe->links[pe->nlinks].target = xstrdup(c->met[i].target);
		pe->nlinks++;
	}
}

static const char *
source_name(struct rctx *c, enum pyenv_source s)
{
	switch (s) {
	case PYENV_FROM_CHOICE:
		return c->choice->python_from ? c->choice->python_from : "--python";
	case PYENV_FROM_VIRTUAL_ENV:
		return "VIRTUAL_ENV";
	case PYENV_FROM_CONDA_PREFIX:
		return "CONDA_PREFIX";
	case PYENV_FROM_PATH:
		return "python3 on PATH";
	default:
		return "no python3 on PATH";
	}
}

static char *
not_python(const char *p, const char *why)
{
	return xasprintf("%s is not a Python interpreter: %s; pass --python the "
	    "python of the environment you want (e.g. ~/proj/.venv/bin/python)",
	    p, why);
}

static char *
gone(const char *venv, const char *base)
{
	return xasprintf("the virtualenv at %s points to %s, which no longer "
	    "exists: recreate it with python3 -m venv --clear %s", venv, base, venv);
}

/* Describes the interpreter spelled P (absolute, normalized) into c->pe.
 * how: the reason's parenthesis. */
static int
describe(struct rctx *c, const char *P, enum pyenv_source source, const char *how)
{
	struct pyenv *pe = c->pe;
	struct pyvenv_cfg cfg = { 0 };
	char *dir = path_dirname(P), *top = path_dirname(dir);
	char *cfgpath = NULL, *R = NULL, *missing = NULL, *base = NULL;
	char *vreal = NULL, *stdlib = NULL, *s = NULL, *t = NULL;
	char head[4], abi[2] = "";
	int venv, conda, major = 0, minor = 0, rc = -1, fd;
	struct stat st;
	ssize_t hn;

	pe->source = source;
	/* getpath.py reads pyvenv.cfg one level above the executable's
	 * directory first, then beside it; site.py takes the prefix to be
	 * the directory above bin either way. */
	s = path_join(top, "pyvenv.cfg");
	t = path_join(dir, "pyvenv.cfg");
	if (is_file(s)) {
		cfgpath = s;
		s = NULL;
	} else if (is_file(t)) {
		cfgpath = t;
		t = NULL;
	}
	free(s);
	free(t);
	s = t = NULL;
	venv = cfgpath != NULL;
	s = path_join(top, "conda-meta");
	conda = !venv && is_dir(s);
	free(s);
	s = NULL;
	if (venv) {
		size_t len;
		char *text = read_small(cfgpath, CFG_MAX, &len, 0);
		if (text == NULL || pyenv_cfg_parse(text, len, &cfg) < 0) {
			free(text);
			c->err = xasprintf("cannot read %s: %s; recreate the virtualenv "
			    "with python3 -m venv --clear %s", cfgpath,
			    text ? "it is not text" : strerror(errno), top);
			goto out;
		}
		free(text);
	}

	c->record = venv || conda;
	/* The environment's own directory first, so that a refusal names
	 * it rather than the interpreter inside it. */
	if ((venv || conda) && is_dir(top)) {
		if (walk(c, top, &vreal, NULL) < 0) {
			if (c->err == NULL)
				c->err = xasprintf("cannot resolve %s: %s", top, strerror(errno));
			goto out;
		}
		if (trust_one(c, vreal, 0, NULL) < 0)
			goto out;
	}
	if (walk(c, P, &R, &missing) < 0) {
		if (c->err != NULL)
			goto out;
		if (missing == NULL) {
			c->err = xasprintf("cannot resolve %s: %s", P, strerror(errno));
		} else if (venv && strcmp(missing, P) != 0) {
			c->err = gone(top, missing);
		} else if (venv) {
			c->err = xasprintf("the virtualenv at %s has no %s: recreate it "
			    "with python3 -m venv --clear %s", top, path_base(P), top);
		} else if (source == PYENV_FROM_VIRTUAL_ENV || source == PYENV_FROM_CONDA_PREFIX) {
			c->err = xasprintf("%s names %s, which has no bin/%s: "
			    "deactivate that environment, or pass --python",
			    source_name(c, source), top, path_base(P));
		} else if (strcmp(missing, P) == 0) {
			c->err = xasprintf("%s does not exist: check the path given to %s",
			    P, source_name(c, source));
		} else {
			c->err = xasprintf("%s does not exist (%s is missing): check the "
			    "path given to %s", P, missing, source_name(c, source));
		}
		goto out;
	}
	c->record = 0;
	if (stat(R, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
		c->err = not_python(P, "it is not an executable file");
		goto out;
	}
	fd = open(R, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	hn = fd >= 0 ? read(fd, head, sizeof head) : -1;
	if (fd >= 0)
		close(fd);
	if (hn >= 2 && head[0] == '#' && head[1] == '!') {
		c->err = not_python(P, "it is a script, not the interpreter itself");
		goto out;
	}
	if (hn != 4 || memcmp(head, "\177ELF", 4) != 0) {
		c->err = not_python(P, "it is not a program (no ELF header)");
		goto out;
	}
	if (strncmp(path_base(R), "python", 6) != 0 && strncmp(path_base(P), "python", 6) != 0) {
		c->err = not_python(P, "its name does not start with python");
		goto out;
	}
	if (!name_version(path_base(R), &major, &minor, abi))
		name_version(path_base(P), &major, &minor, abi);

	if (venv) {
		char *home;
		if (cfg.home == NULL || cfg.home[0] != '/') {
			c->err = xasprintf("the virtualenv at %s has no absolute home in "
			    "%s: recreate it with python3 -m venv --clear %s", top, cfgpath, top);
			goto out;
		}
		if (!is_dir(cfg.home)) {
			c->err = gone(top, cfg.executable ? cfg.executable : cfg.home);
			goto out;
		}
		if (major == 0)
			text_version(cfg.version, &major, &minor);
		/* 3.11+ search the stdlib upwards from home as written;
		 * 3.8-3.10 from the resolved binary. */
		home = path_normalize(cfg.home, "/");
		base = home ? search_up(home, &major, &minor, abi) : NULL;
		free(home);
		if (base == NULL) {
			s = path_dirname(R);
			base = search_up(s, &major, &minor, abi);
			free(s);
			s = NULL;
		}
		if (base == NULL) {
			c->err = xasprintf("the virtualenv at %s points to %s, where no "
			    "Python standard library is found: recreate it with python3 "
			    "-m venv --clear %s", top, cfg.home, top);
			goto out;
		}
		c->record = 1;
		if (walk(c, base, &s, NULL) < 0) {
			if (c->err == NULL)
				c->err = xasprintf("cannot resolve %s: %s", base, strerror(errno));
			goto out;
		}
		c->record = 0;
		free(base);
		base = s;
		s = NULL;
		pe->system_site = cfg.system_site;
	} else {
		s = path_dirname(R);
		base = search_up(s, &major, &minor, abi);
		free(s);
		s = NULL;
		if (base == NULL) {
			if (major) {
				s = xasprintf("no standard library (lib/python%d.%d%s/os.py) "
				    "in any directory above it", major, minor, abi);
				c->err = not_python(P, s);
			} else {
				c->err = not_python(P, "no lib/pythonX.Y standard library "
				    "above it says which Python it is");
			}
			goto out;
		}
	}
	if (major < PYENV_MIN_MAJOR || (major == PYENV_MIN_MAJOR && minor < PYENV_MIN_MINOR)) {
		c->err = xasprintf("%s is Python %d.%d, older than %d.%d, which terp "
		    "needs: pass --python a newer one (python3 -m venv makes a venv "
		    "from any installed python3.8 or later)", P, major, minor,
		    PYENV_MIN_MAJOR, PYENV_MIN_MINOR);
		goto out;
	}
	pe->major = major;
	pe->minor = minor;
	if (strcmp(base, "/") == 0) {
		/* On a merged-/usr system /lib is usr/lib, so a binary with
		 * no stdlib of its own finds / as its prefix, as getpath.py
		 * would; the sandbox recreates /lib and binds /usr. */
		s = xasprintf("/lib/python%d.%d%s", major, minor, abi);
		t = realpath(s, NULL);
		c->root_prefix_ok = t != NULL && system_path(t);
		free(s);
		free(t);
		s = t = NULL;
	}
	pe->kind = venv ? PYENV_VENV : conda ? PYENV_CONDA
	    : (system_path(base) || c->root_prefix_ok) && system_path(R)
	    ? PYENV_SYSTEM : PYENV_STANDALONE;

	/* What the interpreter reads first: its binary, its config, its
	 * stdlib and site directories, each owned and writable only by
	 * root or the user. */
	if (trust_tree(c, R) < 0)
		goto out;
	if (venv) {
		if (walk(c, cfgpath, &t, NULL) < 0 || trust_one(c, t, 0, NULL) < 0) {
			if (c->err == NULL)
				c->err = xasprintf("cannot resolve %s: %s", cfgpath, strerror(errno));
			goto out;
		}
		free(t);
		t = NULL;
	}
	if (vreal != NULL && (add_bind(c, vreal) < 0 || trust_inner(c, vreal) < 0))
		goto out;
	if (add_bind(c, base) < 0 || trust_inner(c, base) < 0)
		goto out;
	s = path_dirname(R);
	if (!bind_covered(pe, s) && add_bind(c, s) < 0)
		goto out;
	free(s);
	s = xasprintf("%s/lib/python%d.%d%s", strcmp(base, "/") ? base : "", major, minor, abi);
	if (is_dir(s)) {
		if (walk(c, s, &stdlib, NULL) < 0) {
			if (c->err == NULL)
				c->err = xasprintf("cannot resolve %s: %s", s, strerror(errno));
			goto out;
		}
		if (!bind_covered(pe, stdlib) && add_bind(c, stdlib) < 0)
			goto out;
		if (trust_tree(c, stdlib) < 0)
			goto out;
	}
	free(s);
	s = NULL;
	keep_links(c);
	find_hides(pe);

	/* Stamps for the probe's cache: the binary and every site dir the
	 * probe may read, present or not (a new one changes the answer). */
	add_watch(pe, xstrdup(R));
	if (cfgpath != NULL)
		add_watch(pe, xstrdup(cfgpath));
	if (vreal != NULL) {
		s = xasprintf("%s/lib/python%d.%d%s/site-packages", vreal, major, minor, abi);
		if (is_dir(s) && trust_tree(c, s) < 0)
			goto out;
		add_watch(pe, s);
		s = NULL;
	}
	if (!venv || cfg.system_site) {
		const char *b = strcmp(base, "/") ? base : "";
		add_watch(pe, xasprintf("%s/lib/python%d.%d%s/site-packages", b, major, minor, abi));
		add_watch(pe, xasprintf("%s/lib/python%d.%d%s/dist-packages", b, major, minor, abi));
		add_watch(pe, xasprintf("%s/lib/python3/dist-packages", b));
		add_watch(pe, xasprintf("%s/local/lib/python%d.%d%s/dist-packages", b, major, minor, abi));
	}

	pe->real = R;
	R = NULL;
	pe->base_prefix = base;
	base = NULL;
	if (venv || conda) {
		/* The path as spelled: pyvenv.cfg is found from it, and
		 * sys.prefix, VIRTUAL_ENV and shebangs name it. */
		pe->exec = xstrdup(P);
		pe->prefix = xstrdup(top);
		add_env(pe, xasprintf("%s=%s", venv ? "VIRTUAL_ENV" : "CONDA_PREFIX", top));
		add_env(pe, xasprintf("PATH=%s/bin:/usr/bin:/bin", top));
	} else {
		pe->exec = xstrdup(pe->real);
		pe->prefix = xstrdup(pe->base_prefix);
		if (pe->kind == PYENV_STANDALONE) {
			s = path_dirname(pe->real);
			add_env(pe, xasprintf("PATH=%s:/usr/bin:/bin", s));
			free(s);
			s = NULL;
		}
	}
	switch (pe->kind) {
	case PYENV_VENV:
		pe->reason = xasprintf("using the virtualenv %s (%s)", top, how);
		break;
	case PYENV_CONDA:
		pe->reason = xasprintf("using the conda environment %s (%s)", top, how);
		break;
	case PYENV_SYSTEM:
		pe->reason = xasprintf("using the system Python %s (%s)", pe->real, how);
		break;
	default:
		pe->reason = xasprintf("using the Python at %s (%s)", pe->real, how);
		break;
	}
	rc = 0;
out:
	pyenv_cfg_free(&cfg);
	free(dir);
	free(top);
	free(cfgpath);
	free(R);
	free(missing);
	free(base);
	free(vreal);
	free(stdlib);
	free(s);
	free(t);
	return rc;
}

/* ---- pyenv shims -------------------------------------------------- */

static int
is_pyenv_shim(const char *path)
{
	char *text = read_small(path, 16 * 1024, NULL, 0);
	int yes = text && text[0] == '#' && text[1] == '!' &&
	    strstr(text, "pyenv") != NULL && strstr(text, "exec") != NULL;

	free(text);
	return yes;
}

/* Appends the version names in text (words split by white space or
 * ':', # comment lines skipped) to v, at most 16. */
static void
version_words(const char *text, char **v, size_t *n)
{
	const char *p = text;

	while (*p && *n < 16) {
		size_t len;
		while (*p && (isspace((unsigned char)*p) || *p == ':'))
			p++;
		if (*p == '#') {
			while (*p && *p != '\n')
				p++;
			continue;
		}
		len = strcspn(p, " \t\r\n\v\f:");
		if (len > 0)
			v[(*n)++] = xstrndup(p, len);
		p += len;
	}
}

/* pyenv 2.3+: a bare "3.11" means the newest installed 3.11.x. */
static char *
latest_prefix(const char *versions, const char *word)
{
	DIR *d = opendir(versions);
	struct dirent *de;
	char *best = NULL;
	size_t n = strlen(word);

	if (d == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL) {
		const char *r = de->d_name + n;
		if (strncmp(de->d_name, word, n) != 0 || r[0] != '.' || r[1] == '\0' ||
		    strspn(r, "0123456789.") != strlen(r))
			continue;
		if (best == NULL || strverscmp(de->d_name, best) > 0) {
			free(best);
			best = xstrdup(de->d_name);
		}
	}
	closedir(d);
	return best;
}

/* The interpreter a pyenv shim named name would run: PYENV_VERSION,
 * else .python-version from cwd upwards, else $PYENV_ROOT/version, else
 * system. Sets *system when pyenv would fall through to the system's
 * python; else *found (new) and *why. */
static int
shim_resolve(struct rctx *c, const char *shim, const char *name,
    const char *what, char **found, char **why, int *system)
{
	const char *ev = env_lookup(c->envp, "PYENV_VERSION");
	const char *er = env_lookup(c->envp, "PYENV_ROOT");
	char *root, *shims = path_dirname(shim), *origin = NULL, *words[16];
	size_t nw = 0;
	int rc = -1;

	root = er && er[0] == '/' ? xstrdup(er) : path_dirname(shims);
	free(shims);
	*system = 0;
	if (ev != NULL && *ev) {
		version_words(ev, words, &nw);
		origin = xstrdup("PYENV_VERSION");
	} else {
		char *d = xstrdup(c->cwd);
		for (;;) {
			char *f = path_join(d, ".python-version"), *text, *up;
			if ((text = read_small(f, CFG_MAX, NULL, 0)) != NULL) {
				version_words(text, words, &nw);
				free(text);
				origin = f;
				break;
			}
			free(f);
			if (strcmp(d, "/") == 0)
				break;
			up = path_dirname(d);
			free(d);
			d = up;
		}
		free(d);
		if (origin == NULL) {
			char *f = path_join(root, "version"), *text;
			if ((text = read_small(f, CFG_MAX, NULL, 0)) != NULL) {
				version_words(text, words, &nw);
				free(text);
				origin = f;
			} else {
				free(f);
			}
		}
	}
	if (nw == 0) {
		*system = 1;
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < nw; i++) {
		char *vdir, *latest = NULL, *p;
		if (strcmp(words[i], "system") == 0) {
			*system = 1;
			rc = 0;
			goto out;
		}
		if (words[i][0] == '/' || strstr(words[i], "..") != NULL)
			continue;
		vdir = xasprintf("%s/versions/%s", root, words[i]);
		if (!is_dir(vdir)) {
			char *vs = path_join(root, "versions");
			latest = latest_prefix(vs, words[i]);
			free(vs);
			free(vdir);
			vdir = latest ? xasprintf("%s/versions/%s", root, latest) : NULL;
		}
		p = vdir ? xasprintf("%s/bin/%s", vdir, name) : NULL;
		free(vdir);
		if (p != NULL && is_exec_file(p)) {
			*found = p;
			*why = xasprintf("%s is a pyenv shim; pyenv selects %s "
			    "from %s", what, latest ? latest : words[i], origin);
			free(latest);
			rc = 0;
			goto out;
		}
		free(p);
		free(latest);
	}
	c->err = xasprintf("%s is a pyenv shim, and pyenv selects Python "
	    "%s (from %s), which is not installed: run pyenv install %s, or pass "
	    "--python", what, words[0], origin, words[0]);
out:
	for (size_t i = 0; i < nw; i++)
		free(words[i]);
	free(origin);
	free(root);
	return rc;
}

/* Finds name on PATH as a shell would, but: only absolute entries count
 * (a "." in PATH would pick up whatever is in terp's working directory),
 * a pyenv shim is resolved the way pyenv would, and other scripts are
 * passed over (the sandbox runs an interpreter, not a wrapper). 0 with
 * *found NULL when there is none; -1 on an error in c->err. */
static int
path_search(struct rctx *c, const char *name, int skip_shims, char **found,
    char **why)
{
	const char *path = env_lookup(c->envp, "PATH");
	char *copy, *save = NULL;

	*found = NULL;
	*why = NULL;
	if (path == NULL)
		return 0;
	copy = xstrdup(path);
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p;
		int system;

		if (d[0] != '/')
			continue;
		p = path_join(d, name);
		if (!is_exec_file(p)) {
			free(p);
			continue;
		}
		if (is_pyenv_shim(p)) {
			if (skip_shims) {
				free(p);
				continue;
			}
			char *what = xasprintf("%s on PATH", name);
			int r = shim_resolve(c, p, name, what, found, why, &system);
			free(what);
			if (r < 0) {
				free(p);
				free(copy);
				return -1;
			}
			free(p);
			if (system) {
				skip_shims = 1;
				continue;
			}
			break;
		}
		{
			char h[2] = { 0 };
			int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			ssize_t n = fd >= 0 ? read(fd, h, 2) : -1;
			if (fd >= 0)
				close(fd);
			if (n == 2 && h[0] == '#' && h[1] == '!') {
				free(p);
				continue;
			}
		}
		*found = p;
		break;
	}
	free(copy);
	return 0;
}

int
pyenv_resolve(const struct pyenv_choice *choice, struct pyenv *out, char **err)
{
	static const struct pyenv_choice none;
	struct rctx c = { 0 };
	const char *py, *home, *v;
	char *P = NULL, *spelled = NULL, *why = NULL, *buf = NULL;
	enum pyenv_source source;
	int rc = -1;

	memset(out, 0, sizeof *out);
	*err = NULL;
	c.choice = choice ? choice : &none;
	c.envp = c.choice->envp;
	c.pe = out;
	c.me = geteuid();
	c.mygid = getegid();
	if (c.choice->cwd != NULL && c.choice->cwd[0] == '/') {
		c.cwd = xstrdup(c.choice->cwd);
	} else {
		char cwd[PATH_MAX];
		c.cwd = xstrdup(getcwd(cwd, sizeof cwd) ? cwd : "/");
	}
	home = env_lookup(c.envp, "HOME");
	if (home == NULL || home[0] != '/') {
		struct passwd *pw = getpwuid(c.me);
		home = pw != NULL ? pw->pw_dir : NULL;
	}
	if (home != NULL && home[0] == '/' && (buf = realpath(home, NULL)) != NULL) {
		c.home_real = xstrdup(buf);
		free(buf);
		buf = NULL;
	}

	py = c.choice->python;
	if (py != NULL && *py) {
		source = PYENV_FROM_CHOICE;
		if (py[0] == '~' && py[1] == '/' && home != NULL && home[0] == '/') {
			spelled = path_join(home, py + 2);
		} else if (strchr(py, '/') == NULL && !(buf = path_join(c.cwd, py),
		    is_dir(buf))) {
			/* A bare name is a command, as in a shell, unless
			 * it is a directory here: --python .venv. */
			if (path_search(&c, py, 0, &spelled, &why) < 0)
				goto out;
			if (spelled == NULL) {
				c.err = xasprintf("there is no %s on PATH: give %s its full "
				    "path", py, source_name(&c, source));
				goto out;
			}
		} else {
			spelled = xstrdup(py);
		}
		free(buf);
		buf = NULL;
		P = path_normalize(spelled, c.cwd);
		if (P != NULL && why == NULL && is_pyenv_shim(P)) {
			/* --python ~/.pyenv/shims/python3: what it would run. */
			char *name = xstrdup(path_base(P)), *found = NULL;
			int system = 0;
			char *what = xasprintf("%s %s", source_name(&c, source), P);
			int r = shim_resolve(&c, P, name, what, &found, &why, &system);
			free(what);
			if (r < 0) {
				free(name);
				goto out;
			}
			if (system && path_search(&c, name, 1, &found, &why) < 0) {
				free(name);
				goto out;
			}
			free(name);
			if (found == NULL) {
				c.err = xasprintf("%s is a pyenv shim for the system's "
				    "python, and there is none on PATH: pass --python "
				    "the interpreter itself", P);
				goto out;
			}
			free(P);
			P = found;
		}
		if (P != NULL && is_dir(P)) {
			/* An environment's directory stands for its python. */
			char *a = path_join(P, "bin/python"), *b = path_join(P, "bin/python3");
			struct stat st;
			if (lstat(a, &st) == 0) {
				free(P);
				P = a;
				free(b);
			} else if (lstat(b, &st) == 0) {
				free(P);
				P = b;
				free(a);
			} else {
				free(a);
				free(b);
				c.err = xasprintf("%s is a directory with no bin/python: pass "
				    "an environment's directory or its interpreter", P);
				goto out;
			}
		}
	} else if ((v = env_lookup(c.envp, "VIRTUAL_ENV")) != NULL && *v) {
		source = PYENV_FROM_VIRTUAL_ENV;
		spelled = path_join(v, "bin/python");
		P = v[0] == '/' ? path_normalize(spelled, "/") : NULL;
		if (v[0] != '/') {
			c.err = xasprintf("VIRTUAL_ENV is %s, not an absolute path: "
			    "deactivate the environment, or pass --python", v);
			goto out;
		}
	} else if ((v = env_lookup(c.envp, "CONDA_PREFIX")) != NULL && *v) {
		source = PYENV_FROM_CONDA_PREFIX;
		spelled = path_join(v, "bin/python");
		P = v[0] == '/' ? path_normalize(spelled, "/") : NULL;
		if (v[0] != '/') {
			c.err = xasprintf("CONDA_PREFIX is %s, not an absolute path: "
			    "deactivate the environment, or pass --python", v);
			goto out;
		}
	} else {
		source = PYENV_FROM_PATH;
		if (path_search(&c, "python3", 0, &spelled, &why) < 0)
			goto out;
		if (spelled == NULL) {
			source = PYENV_FROM_DEFAULT;
			spelled = xstrdup("/usr/bin/python3");
		}
		P = path_normalize(spelled, c.cwd);
	}
	if (P == NULL) {
		c.err = xasprintf("%s: the path is too long", spelled);
		goto out;
	}
	rc = describe(&c, P, source, why ? why : source_name(&c, source));
out:
	if (rc < 0) {
		*err = c.err ? c.err : xstrdup("cannot resolve the Python interpreter");
		c.err = NULL;
	}
	free(c.err);
	free(buf);
	free(P);
	free(spelled);
	free(why);
	free(c.cwd);
	free(c.home_real);
	for (size_t i = 0; i < c.nok; i++)
		free(c.ok[i]);
	free(c.ok);
	for (size_t i = 0; i < c.nmet; i++) {
		free(c.met[i].path);
		free(c.met[i].target);
	}
	free(c.met);
	return rc;
}

void
pyenv_free(struct pyenv *pe)
{
	for (size_t i = 0; i < pe->nhides; i++)
		free(pe->hides[i].path);
	free(pe->hides);
	free(pe->exec);
	free(pe->real);
	free(pe->prefix);
	free(pe->base_prefix);
	free(pe->reason);
	for (size_t i = 0; i < pe->nbinds; i++) {
		free(pe->binds[i].host);
		free(pe->binds[i].sandbox);
	}
	free(pe->binds);
	for (size_t i = 0; i < pe->nlinks; i++) {
		free(pe->links[i].path);
		free(pe->links[i].target);
	}
	free(pe->links);
	for (size_t i = 0; pe->env && pe->env[i]; i++)
		free(pe->env[i]);
	free(pe->env);
	for (size_t i = 0; pe->watch && pe->watch[i]; i++)
		free(pe->watch[i]);
	free(pe->watch);
	memset(pe, 0, sizeof *pe);
}

/* The problem into *err and its chmod into *fix: the caller puts the
 * safe fix (another interpreter) first, as the chmod opens the folder
 * to every user. */
static int
reach_one(const char *path, const char *what, int need_read, char **err, char **fix)
{
	struct stat st;
	unsigned want = S_IXOTH | (need_read ? S_IROTH : 0);

	if (stat(path, &st) < 0) {
		*err = xasprintf("cannot check %s: %s", path, strerror(errno));
		*fix = NULL;
		return -1;
	}
	if (S_ISREG(st.st_mode))
		want = S_IROTH | (st.st_mode & 0111 ? S_IXOTH : 0);
	if ((st.st_mode & want) == want)
		return 0;
	if (!need_read) {
		*err = xasprintf("the sandbox's own user cannot reach %s (%s is mode %04o)",
		    what, path, (unsigned)(st.st_mode & 07777));
		*fix = xasprintf("chmod o+x %s", path);
	} else {
		*err = xasprintf("the sandbox's own user cannot read %s (%s is mode %04o)",
		    what, path, (unsigned)(st.st_mode & 07777));
		*fix = xasprintf("chmod -R o+rX %s", what);
	}
	return -1;
}

/* Every directory between top and path (both excluded; top "": from /)
 * searchable by others. */
static int
reach_between(const char *top, const char *path, char **err, char **fix)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + strlen(top) + 1; *s && rc == 0; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		rc = reach_one(p, path, 0, err, fix);
		*s = '/';
	}
	free(p);
	return rc;
}

/* The bind that holds path (or is it), or NULL. */
static const char *
bind_holding(const struct pyenv *pe, const char *path)
{
	for (size_t i = 0; i < pe->nbinds; i++) {
		const char *b = pe->binds[i].host;
		size_t n = strlen(b);
		if (strncmp(path, b, n) == 0 && (path[n] == '/' || path[n] == '\0'))
			return b;
	}
	return NULL;
}

int
pyenv_check_reach(const struct pyenv *pe, char **err, char **fix)
{
	const char *in;

	*err = *fix = NULL;
	/* The folders above a bind need not let others through: the
	 * launcher binds the environment by the fd terp opened (see
	 * sandbox_launcher.c, py_reach). What is inside must be readable. */
	for (size_t i = 0; i < pe->nbinds; i++) {
		const char *b = pe->binds[i].host;
		char *bin = path_join(b, "bin");
		int rc = reach_one(b, b, 1, err, fix);
		if (rc == 0 && is_dir(bin))
			rc = reach_one(bin, b, 1, err, fix);
		free(bin);
		if (rc < 0)
			return -1;
	}
	in = bind_holding(pe, pe->real);
	if (reach_between(in ? in : "", pe->real, err, fix) < 0)
		return -1;
	return reach_one(pe->real, pe->real, 1, err, fix);
}

const char *
pyenv_kind_name(enum pyenv_kind k)
{
	switch (k) {
	case PYENV_VENV:
		return "virtualenv";
	case PYENV_CONDA:
		return "conda environment";
	case PYENV_STANDALONE:
		return "Python build";
	default:
		return "system Python";
	}
}

/* ---- The probe ---------------------------------------------------- */

/* Import names, in the order the prompt lists them; the probe script
 * has the same list with each one's distribution name. */
static const char *const pkgs[PYENV_NPKGS] = {
	"pandas", "numpy", "polars", "pyarrow", "duckdb", "scipy", "sklearn",
	"statsmodels", "matplotlib", "seaborn", "openpyxl",
};

const char *
pyenv_pkg_name(size_t i)
{
	return i < PYENV_NPKGS ? pkgs[i] : NULL;
}

/* Runs on Python 3.8 and later. site.py's venv() and getsitepackages
 * rebuilt without addsitedir, which would run .pth files. Versions come
 * from the names of the *.dist-info / *.egg-info entries, first on
 * sys.path wins: importlib.metadata would cost its import (email, re,
 * csv), 70 ms idle and 200 ms on a loaded machine, for the same answer.
 * A spec without an origin is a namespace package: a stray directory
 * named numpy, not numpy. */
static const char probe_script[] =
"import sys, os\n"
"def main():\n"
"    import importlib.util, site, json\n"
"    exe = os.path.abspath(sys.executable)\n"
"    d = os.path.dirname(exe)\n"
"    top = os.path.dirname(d)\n"
"    cfgs = [c for c in (os.path.join(d, 'pyvenv.cfg'),\n"
"                        os.path.join(top, 'pyvenv.cfg')) if os.path.isfile(c)]\n"
"    prefixes = [sys.prefix, sys.exec_prefix]\n"
"    if cfgs:\n"
"        system = 'true'\n"
"        with open(cfgs[0], encoding='utf-8') as f:\n"
"            for line in f:\n"
"                k, eq, v = line.partition('=')\n"
"                if eq and k.strip().lower() == 'include-system-site-packages':\n"
"                    system = v.strip().lower()\n"
"        sys.prefix = sys.exec_prefix = top\n"
"        prefixes = [top] + ([sys.base_prefix] if system == 'true' else [])\n"
"    for p in site.getsitepackages(prefixes):\n"
"        if os.path.isdir(p) and p not in sys.path:\n"
"            sys.path.append(p)\n"
"    dists = {}\n"
"    for p in sys.path:\n"
"        try:\n"
"            names = os.listdir(p)\n"
"        except OSError:\n"
"            continue\n"
"        for e in names:\n"
"            for suf in ('.dist-info', '.egg-info'):\n"
"                if e.endswith(suf):\n"
"                    n, _, v = e[:-len(suf)].partition('-')\n"
"                    n = n.lower().replace('-', '_').replace('.', '_')\n"
"                    dists.setdefault(n, v.split('-')[0])\n"
"    found = {}\n"
"    for mod, dist in PKGS:\n"
"        try:\n"
"            spec = importlib.util.find_spec(mod)\n"
"            ok = spec is not None and spec.origin is not None\n"
"        except Exception:\n"
"            ok = False\n"
"        found[mod] = dists.get(dist, '') if ok else None\n"
"    sys.stdout.write(json.dumps({'terp_pyenv_probe': 1,\n"
"        'version': sys.version.split()[0], 'packages': found}))\n"
"PKGS = [('pandas', 'pandas'), ('numpy', 'numpy'), ('polars', 'polars'),\n"
"        ('pyarrow', 'pyarrow'), ('duckdb', 'duckdb'), ('scipy', 'scipy'),\n"
"        ('sklearn', 'scikit_learn'), ('statsmodels', 'statsmodels'),\n"
"        ('matplotlib', 'matplotlib'), ('seaborn', 'seaborn'),\n"
"        ('openpyxl', 'openpyxl')]\n"
"main()\n";

const char *
pyenv_probe_script(void)
{
	return probe_script;
}

/* A version as the prompt may show it: 1 to 31 characters of
 * [0-9A-Za-z.+!_-], nothing the sandbox could use to talk to the model. */
static int
version_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > 31)
		return 0;
	for (const char *s = v; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(".+!_-", *s))
			return 0;
	return 1;
}

static int
probe_from_json(const cJSON *j, struct pyenv_probe *out, char **err)
{
	const cJSON *tag = cJSON_GetObjectItemCaseSensitive(j, "terp_pyenv_probe");
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "version");
	const cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "packages");

	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(j) || !cJSON_IsNumber(tag) || tag->valuedouble != 1 ||
	    !cJSON_IsString(ver) || !version_ok(ver->valuestring) ||
	    !isdigit((unsigned char)ver->valuestring[0]) || !cJSON_IsObject(pk)) {
		*err = xstrdup("its answer to the probe was not understood");
		return -1;
	}
	snprintf(out->version, sizeof out->version, "%s", ver->valuestring);
	for (size_t i = 0; i < PYENV_NPKGS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(pk, pkgs[i]);
		if (!cJSON_IsString(v))
			continue;	/* null or absent: not installed */
		out->pkg[i].present = 1;
		if (version_ok(v->valuestring))
			snprintf(out->pkg[i].version, sizeof out->pkg[i].version,
			    "%s", v->valuestring);
	}
	return 0;
}

int
pyenv_probe_parse(const char *text, size_t len, struct pyenv_probe *out,
    char **err)
{
	cJSON *j;
	int rc;

	*err = NULL;
	if (len > PYENV_PROBE_MAX) {
		*err = xstrdup("its answer to the probe was too long");
		return -1;
	}
	j = cJSON_ParseWithLength(text, len);
	if (j == NULL) {
		memset(out, 0, sizeof *out);
		*err = xstrdup("its answer to the probe was not JSON");
		return -1;
	}
	rc = probe_from_json(j, out, err);
	cJSON_Delete(j);
	return rc;
}

/* The last non-empty line of s, cleaned of controls, at most 200 bytes.
 * New string. */
static char *
last_line(const char *s, size_t n)
{
	const char *e = s + n, *b;
	char *r;

	while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '))
		e--;
	b = e;
	while (b > s && b[-1] != '\n')
		b--;
	if (e - b > 200)
		e = b + 200;
	r = xstrndup(b, (size_t)(e - b));
	for (char *p = r; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return r;
}

int
pyenv_run_direct(void *ctx, char *const argv[], size_t max, char **out,
    size_t *outlen, char **err)
{
	static char *const envp[] = { "PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	int ms = ctx ? *(const int *)ctx : PYENV_PROBE_TIMEOUT_MS;
	int op[2] = { -1, -1 }, ep[2] = { -1, -1 }, status = 0, timed_out = 0;
	struct buf ob, eb;
	pid_t pid;
	int64_t deadline;
	int rc = -1;

	*out = NULL;
	*err = NULL;
	buf_init(&ob, max);
	buf_init(&eb, 64 * 1024);
	if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		*err = xasprintf("cannot run %s: %s", argv[0], strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		*err = xasprintf("cannot run %s: %s", argv[0], strerror(errno));
		goto out;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		setpgid(0, 0);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(op[1], 1) < 0 ||
		    dup2(ep[1], 2) < 0 || chdir("/") < 0)
			_exit(127);
		closefrom(3);
		execve(argv[0], argv, envp);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(op[1]);
	close(ep[1]);
	op[1] = ep[1] = -1;
	deadline = now_ms() + ms;
	while (op[0] >= 0 || ep[0] >= 0) {
		struct pollfd pf[2] = { { op[0], POLLIN, 0 }, { ep[0], POLLIN, 0 } };
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		r = poll(pf, 2, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		for (int i = 0; i < 2; i++) {
			char chunk[4096];
			ssize_t n;
			int *fd = i ? &ep[0] : &op[0];
			if (*fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(*fd, chunk, sizeof chunk);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (i == 0 && buf_add(&ob, chunk, (size_t)n) < 0) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				*err = xasprintf("%s printed more than %zu bytes", argv[0], max);
				goto out;
			}
			if (i == 1) {
				/* Keep the tail: the exception is the last line. */
				if (buf_add(&eb, chunk, (size_t)n) < 0) {
					buf_consume(&eb, eb.len / 2 + (size_t)n);
					buf_add(&eb, chunk, (size_t)n);
				}
			}
		}
	}
	if (timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		*err = xasprintf("%s did not answer within %d ms", argv[0], ms);
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (outlen != NULL)
			*outlen = ob.len;
		*out = buf_take(&ob);
		rc = 0;
	} else {
		char *line = last_line(buf_str(&eb), eb.len);
		if (WIFSIGNALED(status))
			*err = xasprintf("it was killed by signal %d%s%s", WTERMSIG(status),
			    *line ? ": " : "", line);
		else
			*err = xasprintf("it exited with status %d%s%s", WEXITSTATUS(status),
			    *line ? ": " : "", line);
		free(line);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (op[i] >= 0)
			close(op[i]);
		if (ep[i] >= 0)
			close(ep[i]);
	}
	buf_free(&ob);
	buf_free(&eb);
	return rc;
}

char *
pyenv_cache_dir(const char *const *envp)
{
	const char *x = env_lookup(envp, "XDG_CACHE_HOME");
	const char *h = env_lookup(envp, "HOME");

	if (x != NULL && x[0] == '/')
		return path_join(x, "terp/pyenv");
	if (h != NULL && h[0] == '/')
		return path_join(h, ".cache/terp/pyenv");
	return NULL;
}

/* The stat of everything the answer depends on, as text: equal stamps,
 * same answer. */
static char *
cache_stamp(const struct pyenv *pe)
{
	struct buf b;

	buf_init(&b, CACHE_MAX / 2);
	buf_printf(&b, "format %d\nexec %s\nreal %s\n", PROBE_FORMAT, pe->exec, pe->real);
	for (size_t i = 0; pe->watch && pe->watch[i]; i++) {
		struct stat st;
		if (stat(pe->watch[i], &st) < 0)
			buf_printf(&b, "%s -\n", pe->watch[i]);
		else
			buf_printf(&b, "%s %lld.%09ld %lld %llu:%llu %llu\n", pe->watch[i],
			    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			    (long long)st.st_size, (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino, (unsigned long long)st.st_nlink);
	}
	return buf_take(&b);
}

static char *
cache_file(const struct pyenv *pe, const char *dir)
{
	struct sha256 s;
	unsigned char d[32];
	char hex[65];

	sha256_init(&s);
	sha256_add(&s, pe->exec, strlen(pe->exec) + 1);
	sha256_add(&s, pe->real, strlen(pe->real));
	sha256_done(&s, d);
	sha256_hex(d, hex);
	hex[32] = '\0';
	return xasprintf("%s/%s.json", dir, hex);
}

static int
cache_load(const char *file, const char *stamp, struct pyenv_probe *out)
{
	size_t len;
	char *text = read_small(file, CACHE_MAX, &len, RS_NOFOLLOW | RS_OWN);
	char *e = NULL;
	cJSON *j, *st;
	int rc = -1;

	if (text == NULL)
		return -1;
	j = cJSON_ParseWithLength(text, len);
	free(text);
	st = cJSON_GetObjectItemCaseSensitive(j, "stamp");
	if (cJSON_IsString(st) && strcmp(st->valuestring, stamp) == 0 &&
	    probe_from_json(cJSON_GetObjectItemCaseSensitive(j, "probe"), out, &e) == 0)
		rc = 0;
	free(e);
	cJSON_Delete(j);
	return rc;
}

/* Writes the answer beside its stamp, atomically; failures are not
 * reported (the next session probes again). */
static void
cache_store(const char *dir, const char *file, const char *stamp,
    const char *answer, size_t len)
{
	cJSON *j = cJSON_CreateObject(), *probe = cJSON_ParseWithLength(answer, len);
	char *text, *tmp;
	int fd;

	if (probe == NULL || mkdir_p(dir, 0700) < 0) {
		cJSON_Delete(probe);
		cJSON_Delete(j);
		return;
	}
	cJSON_AddNumberToObject(j, "terp_pyenv_cache", 1);
	cJSON_AddStringToObject(j, "stamp", stamp);
	cJSON_AddItemToObject(j, "probe", probe);
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (text == NULL)
		return;
	tmp = xasprintf("%s.%ld.tmp", file, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		int ok = write_all(fd, text, strlen(text)) == 0;
		ok = close(fd) == 0 && ok;
		if (!ok || rename(tmp, file) < 0)
			unlink(tmp);
	}
	free(tmp);
	free(text);
}

int
pyenv_probe(const struct pyenv *pe, const char *cache_dir, pyenv_runner run,
    void *ctx, struct pyenv_probe *out, char **err)
{
	char *argv[] = { pe->exec, "-I", "-S", "-c", (char *)probe_script, NULL };
	char *stamp = NULL, *file = NULL, *text = NULL, *e = NULL;
	size_t len = 0;
	int major, minor, rc = -1;

	*err = NULL;
	memset(out, 0, sizeof *out);
	if (cache_dir != NULL) {
		stamp = cache_stamp(pe);
		file = cache_file(pe, cache_dir);
		if (cache_load(file, stamp, out) == 0) {
			out->from_cache = 1;
			rc = 0;
			goto out;
		}
	}
	if (run == NULL)
		run = pyenv_run_direct;
	if (run(ctx, argv, PYENV_PROBE_MAX, &text, &len, &e) < 0) {
		*err = xasprintf("%s is not a working Python interpreter: %s",
		    pe->exec, e ? e : "the probe failed");
		goto out;
	}
	if (pyenv_probe_parse(text, len, out, &e) < 0) {
		*err = xasprintf("%s is not a Python interpreter: %s", pe->exec, e);
		goto out;
	}
	if (text_version(out->version, &major, &minor) &&
	    (major < PYENV_MIN_MAJOR || (major == PYENV_MIN_MAJOR && minor < PYENV_MIN_MINOR))) {
		*err = xasprintf("%s is Python %s, older than %d.%d, which terp needs: "
		    "pass --python a newer one", pe->exec, out->version,
		    PYENV_MIN_MAJOR, PYENV_MIN_MINOR);
		goto out;
	}
	if (cache_dir != NULL)
		cache_store(cache_dir, file, stamp, text, len);
	rc = 0;
out:
	if (rc < 0)
		memset(out, 0, sizeof *out);
	free(stamp);
	free(file);
	free(text);
	free(e);
	return rc;
}

int
pyenv_probe_charts(const struct pyenv_probe *p)
{
	for (size_t i = 0; i < PYENV_NPKGS; i++)
		if (strcmp(pkgs[i], "matplotlib") == 0)
			return p->pkg[i].present;
	return 0;
}

char *
pyenv_prompt_line(const struct pyenv_probe *p)
{
	struct buf b;
	size_t have = 0, lack = 0;

	buf_init(&b, 4096);
	buf_printf(&b, "Python %s", p->version[0] ? p->version : "3");
	for (size_t i = 0; i < PYENV_NPKGS; i++) {
		if (!p->pkg[i].present)
			continue;
		buf_adds(&b, have++ ? ", " : " with ");
		buf_adds(&b, pkgs[i]);
		if (p->pkg[i].version[0])
			buf_printf(&b, " %s", p->pkg[i].version);
	}
	if (have == 0)
		buf_adds(&b, " with none of the common data packages; use the "
		    "standard library (csv, statistics, json)");
	for (size_t i = 0; i < PYENV_NPKGS; i++) {
		if (p->pkg[i].present)
			continue;
		buf_adds(&b, lack++ ? ", " : "; not installed: ");
		buf_adds(&b, pkgs[i]);
	}
	buf_adds(&b, lack ? " (do not import these)." : ".");
	if (!pyenv_probe_charts(p))
		buf_adds(&b, " Charts are unavailable: matplotlib is not installed, "
		    "so do not plot; show numbers and tables instead.");
	return buf_take(&b);
}

char *
pyenv_label(const struct pyenv *pe, const struct pyenv_probe *p)
{
	char v[40];

	if (p != NULL && p->version[0])
		snprintf(v, sizeof v, "%s", p->version);
	else
		snprintf(v, sizeof v, "%d.%d", pe->major, pe->minor);
	switch (pe->kind) {
	case PYENV_VENV:
	case PYENV_CONDA:
		return xasprintf("Python %s (%s %s)", v, pyenv_kind_name(pe->kind), pe->prefix);
	default:
		return xasprintf("Python %s (%s)", v, pe->real);
	}
}
