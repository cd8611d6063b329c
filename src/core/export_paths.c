/* export_paths: where the exported notebook finds what the cells named
 * in terp's sandbox, and the lexical path arithmetic both exports use.
 * Only export.c uses it (private header, beside it). */
#include "export_paths.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/export.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define SANDBOX_ROOT	"/workspace"	/* the local sandbox's (sandbox.c) */

/* Characters a path name goes on with: a match must end before them. */
static int
path_char(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' ||
	    ch == '~';
}

/* A replacement that can stand in a Python string literal and a comment
 * line as it is: valid UTF-8, no quote, backslash, or control character. */
static int
literal_safe(const char *s)
{
	size_t n = strlen(s), k;
	unsigned cp;

	for (size_t i = 0; i < n; i += k) {
		if ((unsigned char)s[i] >= 0x80) {
			if ((k = utf8_decode(s + i, n - i, &cp)) == 0 ||
			    (cp >= 0x80 && cp <= 0x9f))
				return 0;
			continue;
		}
		k = 1;
		if (s[i] == '\'' || s[i] == '"' || s[i] == '\\' ||
		    (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	}
	return 1;
}

static void
paths_add(struct export_paths *p, const char *from, char *to, int folder)
{
	if (from == NULL || !literal_safe(to)) {
		free(to);
		return;
	}
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->v[i].from, from) == 0) {
			free(to);
			return;
		}
	p->v = xrealloc(p->v, (size_t)(p->n + 1) * sizeof *p->v);
	p->v[p->n].from = xstrdup(from);
	p->v[p->n].to = to;
	p->v[p->n].folder = folder;
	p->v[p->n].used = 0;
	p->n++;
}

/* host (absolute) as the notebook in dir names it. */
static char *
host_for(const char *dir, const char *host)
{
	char *rel = export_relpath(dir, host);

	if (strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0) {
		free(rel);
		return xstrdup(host);
	}
	return rel;
}

/* A name terp stages as it is: letters, digits, '.', '-', '_'. */
static int
plain_name(const char *s)
{
	if (*s == '\0' || *s == '.' || *s == '-')
		return 0;
	for (; *s != '\0'; s++)
		if (!path_char((unsigned char)*s) || *s == '~')
			return 0;
	return 1;
}

static int
by_length(const void *a, const void *b)
{
	size_t x = strlen(((const struct export_pathmap *)a)->from);
	size_t y = strlen(((const struct export_pathmap *)b)->from);

	return x < y ? 1 : x > y ? -1 : 0;
}

void
export_paths_init(struct export_paths *p, const struct notebook *nb,
    const char *dir)
{
	char *common = NULL;
	int same = 1, any = 0;

	memset(p, 0, sizeof *p);
	for (int i = 0; i < notebook_nfiles(nb); i++) {
		const struct datafile *f = notebook_file(nb, i);
		const char *names[2] = { f->sandbox, f->recorded };
		const char *slash = strrchr(f->path, '/');
		char *guess = NULL;
		if (f->path[0] != '/' || slash == NULL)
			continue;
		if (names[0] == NULL && names[1] == NULL && plain_name(slash + 1)) {
			/* a journal older than the record of where it was:
			 * staged under its own name, as terp does when the
			 * name is plain and no other file took it */
			guess = xasprintf(SANDBOX_ROOT "/data/%s", slash + 1);
			names[0] = guess;
		}
		for (int k = 0; k < 2; k++) {
			if (names[k] == NULL)
				continue;
			paths_add(p, names[k], host_for(dir, f->path), 0);
			/* all under /workspace/data by their own names, from
			 * one folder: that folder is /workspace/data */
			any = 1;
			if (strncmp(names[k], SANDBOX_ROOT "/data/", 16) != 0 ||
			    strcmp(names[k] + 16, slash + 1) != 0)
				same = 0;
			else if (common == NULL)
				common = xstrndup(f->path, (size_t)(slash - f->path));
			else if (strlen(common) != (size_t)(slash - f->path) ||
			    strncmp(common, f->path, (size_t)(slash - f->path)) != 0)
				same = 0;
		}
		free(guess);
	}
	if (any && same && common != NULL)
		paths_add(p, SANDBOX_ROOT "/data",
		    host_for(dir, *common ? common : "/"), 1);
	free(common);
	paths_add(p, SANDBOX_ROOT "/out", xstrdup("out"), 1);
	paths_add(p, SANDBOX_ROOT, xstrdup("."), 1);
	qsort(p->v, (size_t)p->n, sizeof *p->v, by_length);
}

void
export_paths_free(struct export_paths *p)
{
	for (int i = 0; i < p->n; i++) {
		free(p->v[i].from);
		free(p->v[i].to);
	}
	free(p->v);
}

/* code with the sandbox's paths rewritten (a new string), or NULL when
 * it has none. A path is matched where it starts a name (not inside
 * "/x/workspace") and ends one ("/workspace/data/a.csv" is not
 * "/workspace/data/a.csv2"); a folder's path may go on with "/". */
char *
export_paths_rewrite(struct export_paths *p, const char *code)
{
	struct buf b;
	int changed = 0;

	for (const char *q = code; (q = strstr(q, "out/")) != NULL; q++)
		if (q > code && (q[-1] == '\'' || q[-1] == '"'))
			p->out_rel = 1;
	buf_init(&b, (size_t)-1);
	for (size_t i = 0; code[i] != '\0'; i++) {
		int hit = -1;
		if (code[i] == '/' && (i == 0 || (!path_char((unsigned char)code[i - 1]) &&
		    code[i - 1] != '/'))) {
			for (int k = 0; k < p->n && hit < 0; k++) {
				size_t n = strlen(p->v[k].from);
				unsigned char after = (unsigned char)code[i + n];
				if (strncmp(code + i, p->v[k].from, n) == 0 &&
				    !path_char(after) && (after != '/' || p->v[k].folder))
					hit = k;
			}
		}
		if (hit < 0) {
			buf_addc(&b, code[i]);
			continue;
		}
		buf_adds(&b, p->v[hit].to);
		p->v[hit].used = 1;
		i += strlen(p->v[hit].from) - 1;
		changed = 1;
	}
	if (!changed) {
		buf_free(&b);
		return NULL;
	}
	return buf_take(&b);
}

/* The first cell's code: what was rewritten, and the out/ folder the
 * cells save to. NULL when no cell needs it. */
char *
export_paths_setup(const struct export_paths *p)
{
	struct buf b;
	int any = 0;

	for (int i = 0; i < p->n; i++)
		any |= p->v[i].used;
	if (!any && !p->out_rel)
		return NULL;
	buf_init(&b, (size_t)-1);
	buf_adds(&b, "# terp: these cells ran in terp's sandbox. To run them here, "
	    "its paths\n# are rewritten to where this notebook finds the same "
	    "files (relative\n# paths: to this notebook's folder; each cell's "
	    "metadata keeps its code\n# as it ran, in terp.sandbox_source)");
	buf_adds(&b, any ? ":\n" : ".\n");
	for (int i = 0; i < p->n; i++)
		if (p->v[i].used)
			buf_printf(&b, "#   %s -> %s\n", p->v[i].from, p->v[i].to);
	buf_adds(&b, "import os\nos.makedirs(\"out\", exist_ok=True)\n");
	return buf_take(&b);
}

/* An absolute path with "." and ".." resolved lexically. */
char *
export_paths_absolute(const char *p)
{
	char cwd[PATH_MAX];
	char *full, *out, *save = NULL, *tok;
	size_t o = 0;

	if (p[0] == '/')
		full = xstrdup(p);
	else {
		if (getcwd(cwd, sizeof cwd) == NULL)
			strcpy(cwd, "/");
		full = xasprintf("%s/%s", cwd, p);
	}
	out = xmalloc(strlen(full) + 2);
	out[0] = '\0';
	for (tok = strtok_r(full, "/", &save); tok != NULL;
	    tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			out[o] = '\0';
			continue;
		}
		out[o++] = '/';
		strcpy(out + o, tok);
		o += strlen(tok);
	}
	if (o == 0)
		strcpy(out, "/");
	free(full);
	return out;
}

char *
export_relpath(const char *base_dir, const char *target)
{
	struct buf b;
	size_t i = 0, common = 0;
	const char *rest;

	/* the longest common prefix that ends at a component boundary */
	for (;;) {
		if (base_dir[i] == '\0' && (target[i] == '/' || target[i] == '\0')) {
			common = i;
			break;
		}
		if (base_dir[i] == '/' && target[i] == '/')
			common = i;
		if (base_dir[i] == '\0' || base_dir[i] != target[i])
			break;
		i++;
	}
	buf_init(&b, (size_t)-1);
	/* one "../" per component of base_dir past the common part */
	for (const char *p = base_dir + common; *p != '\0'; p++)
		if (*p != '/' && (p == base_dir || p[-1] == '/'))
			buf_adds(&b, "../");
	for (rest = target + common; *rest == '/'; rest++)
		;
	buf_adds(&b, rest);
	if (b.len == 0)
		buf_addc(&b, '.');
	return buf_take(&b);
}
