/* pyenv_trust: the trust rule of pyenv.h applied to the paths on the
 * way to an interpreter, and the walk that resolves them
 * (pyenv_trust.h). */
#include "terp/pyenv.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

#include "pyenv_trust.h"
#include "pyenv_util.h"

#define MAX_LINKS	40		/* symlinks followed per path, as Linux */

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
int
pyenv_trust_one(struct pyenv_walk *c, const char *real, int ancestor, const char *what)
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
int
pyenv_trust_tree(struct pyenv_walk *c, const char *real)
{
	char *p = xstrdup(real);
	int rc = 0;

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char save = *s;
			if (save == '\0')
				break;
			*s = '\0';
			rc = pyenv_trust_one(c, p, 1, real);
			*s = save;
			if (rc < 0)
				break;
		}
	}
	if (rc == 0 && pyenv_trust_one(c, "/", 1, real) < 0)
		rc = -1;
	if (rc == 0)
		rc = pyenv_trust_one(c, real, 0, NULL);
	free(p);
	return rc;
}

/* A prefix's bin and lib directories, which walks only pass through
 * (where a sticky bit would excuse world-writability): a stranger could
 * add a bin/pip that PATH finds first. */
int
pyenv_trust_inner(struct pyenv_walk *c, const char *prefix)
{
	static const char *const sub[] = { "bin", "lib", NULL };

	for (size_t i = 0; sub[i]; i++) {
		char *p = pyenv_path_join(prefix, sub[i]);
		struct stat st;
		int rc = 0;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rc = pyenv_trust_one(c, p, 0, NULL);
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
int
pyenv_walk(struct pyenv_walk *c, const char *path, char **real, char **missing)
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
		if (pyenv_trust_one(c, cur[0] ? cur : "/", 1, path) < 0) {
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

void
pyenv_walk_done(struct pyenv_walk *c)
{
	for (size_t i = 0; i < c->nok; i++)
		free(c->ok[i]);
	free(c->ok);
	for (size_t i = 0; i < c->nmet; i++) {
		free(c->met[i].path);
		free(c->met[i].target);
	}
	free(c->met);
	c->ok = NULL;
	c->met = NULL;
	c->nok = c->nmet = 0;
}
