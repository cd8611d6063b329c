/* pyenv: choosing the Python the sandbox runs, what to bind for it, and
 * what it has installed. Resolution mirrors CPython's own rules (getpath
 * for pyvenv.cfg and the stdlib landmark, site.py for
 * include-system-site-packages) without running the interpreter. The
 * trust checks are in pyenv_trust.c, PATH and pyenv's shims in
 * pyenv_shim.c, the probe of what is installed in pyenv_probe.c. */
#include "terp/pyenv.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "terp/util.h"

#include "pyenv_shim.h"
#include "pyenv_trust.h"
#include "pyenv_util.h"

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

/* ---- Resolution --------------------------------------------------- */

struct rctx {
	const struct pyenv_choice *choice;
	const char *const *envp;
	char		*cwd;
	struct pyenv_walk w;		/* the trust checks, and err */
	char		*home_real;	/* realpath($HOME), or NULL */
	int		 root_prefix_ok;	/* prefix / with its stdlib in /usr */
	struct pyenv	*pe;
};

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
		if (pyenv_is_file(p))
			return 1;
		strcat(p, "c");
		if (pyenv_is_file(p))
			return 1;
		snprintf(p, sizeof p, "%s/%s/python%d%d%s.zip",
		    strcmp(prefix, "/") ? prefix : "", libs[i], major, minor, abi);
		if (pyenv_is_file(p))
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
		up = pyenv_dirname(p);
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
	return pyenv_path_under(real, "/usr");
}

static int
bind_covered(const struct pyenv *pe, const char *real)
{
	if (system_path(real))
		return 1;
	for (size_t i = 0; i < pe->nbinds; i++)
		if (pyenv_path_under(real, pe->binds[i].host))
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
			char *h = pyenv_path_join(pe->binds[i].host, names[k]);
			if (stat(h, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
				free(h);
				continue;
			}
			free(h);
			pe->hides = xrealloc(pe->hides, (pe->nhides + 1) * sizeof *pe->hides);
			pe->hides[pe->nhides].path = pyenv_path_join(pe->binds[i].sandbox, names[k]);
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
		c->w.err = xasprintf("refusing to bind %s into the sandbox: it is a "
		    "top-level directory; give the environment its own directory "
		    "(python3 -m venv DIR)", dir);
		return -1;
	}
	for (size_t i = 0; never[i]; i++)
		if (pyenv_path_under(dir, never[i])) {
			c->w.err = xasprintf("refusing to bind %s into the sandbox: it "
			    "lies under %s", dir, never[i]);
			return -1;
		}
	if (c->home_real != NULL && pyenv_path_under(c->home_real, dir)) {
		c->w.err = xasprintf("refusing to bind %s into the sandbox: it holds "
		    "your home directory %s; give the environment its own "
		    "directory (python3 -m venv DIR)", dir, c->home_real);
		return -1;
	}
	if (pyenv_trust_tree(&c->w, dir) < 0)
		return -1;
	for (size_t i = 0; i < pe->nbinds; i++) {
		if (pyenv_path_under(pe->binds[i].host, dir)) {
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

	for (size_t i = 0; i < c->w.nmet; i++) {
		const char *p = c->w.met[i].path;
		int skip = bind_covered(pe, p);

		for (size_t r = 0; roots[r] && !skip; r++)
			skip = strcmp(p, roots[r]) == 0;
		for (size_t k = 0; k < pe->nlinks && !skip; k++)
			skip = strcmp(pe->links[k].path, p) == 0;
		if (skip)
			continue;
		pe->links = xrealloc(pe->links, (pe->nlinks + 1) * sizeof *pe->links);
		pe->links[pe->nlinks].path = xstrdup(p);
		pe->links[pe->nlinks].target = xstrdup(c->w.met[i].target);
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
	char *dir = pyenv_dirname(P), *top = pyenv_dirname(dir);
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
	s = pyenv_path_join(top, "pyvenv.cfg");
	t = pyenv_path_join(dir, "pyvenv.cfg");
	if (pyenv_is_file(s)) {
		cfgpath = s;
		s = NULL;
	} else if (pyenv_is_file(t)) {
		cfgpath = t;
		t = NULL;
	}
	free(s);
	free(t);
	s = t = NULL;
	venv = cfgpath != NULL;
	s = pyenv_path_join(top, "conda-meta");
	conda = !venv && pyenv_is_dir(s);
	free(s);
	s = NULL;
	if (venv) {
		size_t len;
		char *text = pyenv_read_small(cfgpath, PYENV_CFG_MAX, &len, 0);
		if (text == NULL || pyenv_cfg_parse(text, len, &cfg) < 0) {
			free(text);
			c->w.err = xasprintf("cannot read %s: %s; recreate the virtualenv "
			    "with python3 -m venv --clear %s", cfgpath,
			    text ? "it is not text" : strerror(errno), top);
			goto out;
		}
		free(text);
	}

	c->w.record = venv || conda;
	/* The environment's own directory first, so that a refusal names
	 * it rather than the interpreter inside it. */
	if ((venv || conda) && pyenv_is_dir(top)) {
		if (pyenv_walk(&c->w, top, &vreal, NULL) < 0) {
			if (c->w.err == NULL)
				c->w.err = xasprintf("cannot resolve %s: %s", top, strerror(errno));
			goto out;
		}
		if (pyenv_trust_one(&c->w, vreal, 0, NULL) < 0)
			goto out;
	}
	if (pyenv_walk(&c->w, P, &R, &missing) < 0) {
		if (c->w.err != NULL)
			goto out;
		if (missing == NULL) {
			c->w.err = xasprintf("cannot resolve %s: %s", P, strerror(errno));
		} else if (venv && strcmp(missing, P) != 0) {
			c->w.err = gone(top, missing);
		} else if (venv) {
			c->w.err = xasprintf("the virtualenv at %s has no %s: recreate it "
			    "with python3 -m venv --clear %s", top, pyenv_basename(P), top);
		} else if (source == PYENV_FROM_VIRTUAL_ENV || source == PYENV_FROM_CONDA_PREFIX) {
			c->w.err = xasprintf("%s names %s, which has no bin/%s: "
			    "deactivate that environment, or pass --python",
			    source_name(c, source), top, pyenv_basename(P));
		} else if (strcmp(missing, P) == 0) {
			c->w.err = xasprintf("%s does not exist: check the path given to %s",
			    P, source_name(c, source));
		} else {
			c->w.err = xasprintf("%s does not exist (%s is missing): check the "
			    "path given to %s", P, missing, source_name(c, source));
		}
		goto out;
	}
	c->w.record = 0;
	if (stat(R, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
		c->w.err = not_python(P, "it is not an executable file");
		goto out;
	}
	fd = open(R, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	hn = fd >= 0 ? read(fd, head, sizeof head) : -1;
	if (fd >= 0)
		close(fd);
	if (hn >= 2 && head[0] == '#' && head[1] == '!') {
		c->w.err = not_python(P, "it is a script, not the interpreter itself");
		goto out;
	}
	if (hn != 4 || memcmp(head, "\177ELF", 4) != 0) {
		c->w.err = not_python(P, "it is not a program (no ELF header)");
		goto out;
	}
	if (strncmp(pyenv_basename(R), "python", 6) != 0 && strncmp(pyenv_basename(P), "python", 6) != 0) {
		c->w.err = not_python(P, "its name does not start with python");
		goto out;
	}
	if (!name_version(pyenv_basename(R), &major, &minor, abi))
		name_version(pyenv_basename(P), &major, &minor, abi);

	if (venv) {
		char *home;
		if (cfg.home == NULL || cfg.home[0] != '/') {
			c->w.err = xasprintf("the virtualenv at %s has no absolute home in "
			    "%s: recreate it with python3 -m venv --clear %s", top, cfgpath, top);
			goto out;
		}
		if (!pyenv_is_dir(cfg.home)) {
			c->w.err = gone(top, cfg.executable ? cfg.executable : cfg.home);
			goto out;
		}
		if (major == 0)
			pyenv_text_version(cfg.version, &major, &minor);
		/* 3.11+ search the stdlib upwards from home as written;
		 * 3.8-3.10 from the resolved binary. */
		home = pyenv_normalize(cfg.home, "/");
		base = home ? search_up(home, &major, &minor, abi) : NULL;
		free(home);
		if (base == NULL) {
			s = pyenv_dirname(R);
			base = search_up(s, &major, &minor, abi);
			free(s);
			s = NULL;
		}
		if (base == NULL) {
			c->w.err = xasprintf("the virtualenv at %s points to %s, where no "
			    "Python standard library is found: recreate it with python3 "
			    "-m venv --clear %s", top, cfg.home, top);
			goto out;
		}
		c->w.record = 1;
		if (pyenv_walk(&c->w, base, &s, NULL) < 0) {
			if (c->w.err == NULL)
				c->w.err = xasprintf("cannot resolve %s: %s", base, strerror(errno));
			goto out;
		}
		c->w.record = 0;
		free(base);
		base = s;
		s = NULL;
		pe->system_site = cfg.system_site;
	} else {
		s = pyenv_dirname(R);
		base = search_up(s, &major, &minor, abi);
		free(s);
		s = NULL;
		if (base == NULL) {
			if (major) {
				s = xasprintf("no standard library (lib/python%d.%d%s/os.py) "
				    "in any directory above it", major, minor, abi);
				c->w.err = not_python(P, s);
			} else {
				c->w.err = not_python(P, "no lib/pythonX.Y standard library "
				    "above it says which Python it is");
			}
			goto out;
		}
	}
	if (major < PYENV_MIN_MAJOR || (major == PYENV_MIN_MAJOR && minor < PYENV_MIN_MINOR)) {
		c->w.err = xasprintf("%s is Python %d.%d, older than %d.%d, which terp "
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
	if (pyenv_trust_tree(&c->w, R) < 0)
		goto out;
	if (venv) {
		if (pyenv_walk(&c->w, cfgpath, &t, NULL) < 0 || pyenv_trust_one(&c->w, t, 0, NULL) < 0) {
			if (c->w.err == NULL)
				c->w.err = xasprintf("cannot resolve %s: %s", cfgpath, strerror(errno));
			goto out;
		}
		free(t);
		t = NULL;
	}
	if (vreal != NULL && (add_bind(c, vreal) < 0 || pyenv_trust_inner(&c->w, vreal) < 0))
		goto out;
	if (add_bind(c, base) < 0 || pyenv_trust_inner(&c->w, base) < 0)
		goto out;
	s = pyenv_dirname(R);
	if (!bind_covered(pe, s) && add_bind(c, s) < 0)
		goto out;
	free(s);
	s = xasprintf("%s/lib/python%d.%d%s", strcmp(base, "/") ? base : "", major, minor, abi);
	if (pyenv_is_dir(s)) {
		if (pyenv_walk(&c->w, s, &stdlib, NULL) < 0) {
			if (c->w.err == NULL)
				c->w.err = xasprintf("cannot resolve %s: %s", s, strerror(errno));
			goto out;
		}
		if (!bind_covered(pe, stdlib) && add_bind(c, stdlib) < 0)
			goto out;
		if (pyenv_trust_tree(&c->w, stdlib) < 0)
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
		if (pyenv_is_dir(s) && pyenv_trust_tree(&c->w, s) < 0)
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
			s = pyenv_dirname(pe->real);
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
	c.w.me = geteuid();
	c.w.mygid = getegid();
	if (c.choice->cwd != NULL && c.choice->cwd[0] == '/') {
		c.cwd = xstrdup(c.choice->cwd);
	} else {
		char cwd[PATH_MAX];
		c.cwd = xstrdup(getcwd(cwd, sizeof cwd) ? cwd : "/");
	}
	home = env_lookup(c.envp, "HOME");
	if (home == NULL || home[0] != '/') {
		struct passwd *pw = getpwuid(c.w.me);
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
			spelled = pyenv_path_join(home, py + 2);
		} else if (strchr(py, '/') == NULL && !(buf = pyenv_path_join(c.cwd, py),
		    pyenv_is_dir(buf))) {
			/* A bare name is a command, as in a shell, unless
			 * it is a directory here: --python .venv. */
			if (pyenv_path_search(c.envp, c.cwd, py, 0, &spelled, &why,
			    &c.w.err) < 0)
				goto out;
			if (spelled == NULL) {
				c.w.err = xasprintf("there is no %s on PATH: give %s its full "
				    "path", py, source_name(&c, source));
				goto out;
			}
		} else {
			spelled = xstrdup(py);
		}
		free(buf);
		buf = NULL;
		P = pyenv_normalize(spelled, c.cwd);
		if (P != NULL && why == NULL && pyenv_is_shim(P)) {
			/* --python ~/.pyenv/shims/python3: what it would run. */
			char *name = xstrdup(pyenv_basename(P)), *found = NULL;
			int system = 0;
			char *what = xasprintf("%s %s", source_name(&c, source), P);
			int r = pyenv_shim_resolve(c.envp, c.cwd, P, name, what, &found,
			    &why, &system, &c.w.err);
			free(what);
			if (r < 0) {
				free(name);
				goto out;
			}
			if (system && pyenv_path_search(c.envp, c.cwd, name, 1,
			    &found, &why, &c.w.err) < 0) {
				free(name);
				goto out;
			}
			free(name);
			if (found == NULL) {
				c.w.err = xasprintf("%s is a pyenv shim for the system's "
				    "python, and there is none on PATH: pass --python "
				    "the interpreter itself", P);
				goto out;
			}
			free(P);
			P = found;
		}
		if (P != NULL && pyenv_is_dir(P)) {
			/* An environment's directory stands for its python. */
			char *a = pyenv_path_join(P, "bin/python"), *b = pyenv_path_join(P, "bin/python3");
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
				c.w.err = xasprintf("%s is a directory with no bin/python: pass "
				    "an environment's directory or its interpreter", P);
				goto out;
			}
		}
	} else if ((v = env_lookup(c.envp, "VIRTUAL_ENV")) != NULL && *v) {
		source = PYENV_FROM_VIRTUAL_ENV;
		spelled = pyenv_path_join(v, "bin/python");
		P = v[0] == '/' ? pyenv_normalize(spelled, "/") : NULL;
		if (v[0] != '/') {
			c.w.err = xasprintf("VIRTUAL_ENV is %s, not an absolute path: "
			    "deactivate the environment, or pass --python", v);
			goto out;
		}
	} else if ((v = env_lookup(c.envp, "CONDA_PREFIX")) != NULL && *v) {
		source = PYENV_FROM_CONDA_PREFIX;
		spelled = pyenv_path_join(v, "bin/python");
		P = v[0] == '/' ? pyenv_normalize(spelled, "/") : NULL;
		if (v[0] != '/') {
			c.w.err = xasprintf("CONDA_PREFIX is %s, not an absolute path: "
			    "deactivate the environment, or pass --python", v);
			goto out;
		}
	} else {
		source = PYENV_FROM_PATH;
		if (pyenv_path_search(c.envp, c.cwd, "python3", 0, &spelled,
		    &why, &c.w.err) < 0)
			goto out;
		if (spelled == NULL) {
			source = PYENV_FROM_DEFAULT;
			spelled = xstrdup("/usr/bin/python3");
		}
		P = pyenv_normalize(spelled, c.cwd);
	}
	if (P == NULL) {
		c.w.err = xasprintf("%s: the path is too long", spelled);
		goto out;
	}
	rc = describe(&c, P, source, why ? why : source_name(&c, source));
out:
	if (rc < 0) {
		*err = c.w.err ? c.w.err : xstrdup("cannot resolve the Python interpreter");
		c.w.err = NULL;
	}
	free(c.w.err);
	free(buf);
	free(P);
	free(spelled);
	free(why);
	free(c.cwd);
	free(c.home_real);
	pyenv_walk_done(&c.w);
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
		char *bin = pyenv_path_join(b, "bin");
		int rc = reach_one(b, b, 1, err, fix);
		if (rc == 0 && pyenv_is_dir(bin))
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

