/* pyenv_shim: finding python on PATH as a shell would, and seeing
 * through pyenv's shims to the interpreter they would run
 * (pyenv_shim.h). */
#include "pyenv_shim.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/util.h"

#include "pyenv_util.h"

int
pyenv_is_shim(const char *path)
{
	char *text = pyenv_read_small(path, 16 * 1024, NULL, 0);
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
int
pyenv_shim_resolve(const char *const *envp, const char *cwd, const char *shim,
    const char *name, const char *what, char **found, char **why, int *system,
    char **err)
{
	const char *ev = env_lookup(envp, "PYENV_VERSION");
	const char *er = env_lookup(envp, "PYENV_ROOT");
	char *root, *shims = pyenv_dirname(shim), *origin = NULL, *words[16];
	size_t nw = 0;
	int rc = -1;

	root = er && er[0] == '/' ? xstrdup(er) : pyenv_dirname(shims);
	free(shims);
	*system = 0;
	if (ev != NULL && *ev) {
		version_words(ev, words, &nw);
		origin = xstrdup("PYENV_VERSION");
	} else {
		char *d = xstrdup(cwd);
		for (;;) {
			char *f = pyenv_path_join(d, ".python-version"), *text, *up;
			if ((text = pyenv_read_small(f, PYENV_CFG_MAX, NULL, 0)) != NULL) {
				version_words(text, words, &nw);
				free(text);
				origin = f;
				break;
			}
			free(f);
			if (strcmp(d, "/") == 0)
				break;
			up = pyenv_dirname(d);
			free(d);
			d = up;
		}
		free(d);
		if (origin == NULL) {
			char *f = pyenv_path_join(root, "version"), *text;
			if ((text = pyenv_read_small(f, PYENV_CFG_MAX, NULL, 0)) != NULL) {
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
		if (!pyenv_is_dir(vdir)) {
			char *vs = pyenv_path_join(root, "versions");
			latest = latest_prefix(vs, words[i]);
			free(vs);
			free(vdir);
			vdir = latest ? xasprintf("%s/versions/%s", root, latest) : NULL;
		}
		p = vdir ? xasprintf("%s/bin/%s", vdir, name) : NULL;
		free(vdir);
		if (p != NULL && pyenv_is_exec(p)) {
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
	*err = xasprintf("%s is a pyenv shim, and pyenv selects Python "
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
 * *found NULL when there is none; -1 on an error in *err. */
int
pyenv_path_search(const char *const *envp, const char *cwd, const char *name,
    int skip_shims, char **found, char **why, char **err)
{
	const char *path = env_lookup(envp, "PATH");
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
		p = pyenv_path_join(d, name);
		if (!pyenv_is_exec(p)) {
			free(p);
			continue;
		}
		if (pyenv_is_shim(p)) {
			if (skip_shims) {
				free(p);
				continue;
			}
			char *what = xasprintf("%s on PATH", name);
			int r = pyenv_shim_resolve(envp, cwd, p, name, what, found, why, &system,
			    err);
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
