/* pipindex: the index URLs the user configured for pip on the host, so
 * that terp can name the --allow-host that lets pip in the sandbox use
 * them (pipindex.h). */
#include "terp/pipindex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/buf.h"
#include "terp/util.h"

extern char **environ;

#define CONF_MAX	(64 * 1024)
#define URL_MAX		2048

/* Key names as pip compares them: '_' and '-' alike, no case. */
static int
key_eq(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b);

	if (an != bn)
		return 0;
	for (size_t i = 0; i < an; i++) {
		char x = a[i] == '_' ? '-' : (char)tolower((unsigned char)a[i]);
		char y = b[i] == '_' ? '-' : (char)tolower((unsigned char)b[i]);
		if (x != y)
			return 0;
	}
	return 1;
}

static void
trim(const char **s, const char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

char *
pipindex_conf_value(const char *text, size_t len, const char *key)
{
	const char *p = text, *end = text + len;
	char *global = NULL, *install = NULL, **cur = NULL;
	int section = 0;	/* 1 global, 2 install, 0 other */

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *s = p, *e = le, *eq;

		p = nl ? nl + 1 : end;
		if (s < e && isspace((unsigned char)*s) && cur != NULL && *cur != NULL) {
			/* A continuation line: more of the last value. */
			trim(&s, &e);
			if (s < e && *s != '#' && *s != ';') {
				char *v = xasprintf("%s %.*s", *cur, (int)(e - s), s);
				free(*cur);
				*cur = v;
			}
			continue;
		}
		trim(&s, &e);
		if (s == e || *s == '#' || *s == ';') {
			continue;
		}
		cur = NULL;
		if (*s == '[') {
			const char *rb = memchr(s, ']', (size_t)(e - s));
			size_t n = rb ? (size_t)(rb - s - 1) : 0;
			section = rb && n == 6 && memcmp(s + 1, "global", 6) == 0 ? 1 :
			    rb && n == 7 && memcmp(s + 1, "install", 7) == 0 ? 2 : 0;
			continue;
		}
		eq = memchr(s, '=', (size_t)(e - s));
		if (eq == NULL)
			eq = memchr(s, ':', (size_t)(e - s));
		if (eq == NULL || section == 0) {
			continue;
		}
		{
			const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
			char **slot = section == 1 ? &global : &install;
			trim(&ks, &ke);
			trim(&vs, &ve);
			if (!key_eq(ks, (size_t)(ke - ks), key))
				continue;
			free(*slot);
			*slot = xstrndup(vs, (size_t)(ve - vs));
			cur = slot;
		}
	}
	if (install != NULL) {
		free(global);
		return install;
	}
	return global;
}

static void
add(struct pipindex *p, const char *url, size_t n, const char *from, int extra)
{
	if (p->n >= PIPINDEX_MAX || n == 0 || n > URL_MAX)
		return;
	p->u[p->n].url = xstrndup(url, n);
	p->u[p->n].from = xstrdup(from);
	p->u[p->n].extra = extra;
	p->n++;
}

/* Replaces the index (extra 0) or the extra ones with the URLs in list
 * (separated by white space). */
static void
set_urls(struct pipindex *p, const char *list, const char *from, int extra)
{
	size_t j = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->u[i].extra == extra) {
			free(p->u[i].url);
			free(p->u[i].from);
		} else {
			p->u[j++] = p->u[i];
		}
	}
	p->n = j;
	for (const char *s = list; *s; ) {
		size_t n;
		while (*s && isspace((unsigned char)*s))
			s++;
		n = strcspn(s, " \t\r\n");
		add(p, s, n, from, extra);
		s += n;
		if (!extra)
			break;	/* one index */
	}
}

static void
from_file(struct pipindex *p, const char *path)
{
	size_t len;
	char *text = read_file(path, CONF_MAX, &len), *v;

	if (text == NULL)
		return;
	if ((v = pipindex_conf_value(text, len, "index-url")) != NULL)
		set_urls(p, v, path, 0);
	free(v);
	if ((v = pipindex_conf_value(text, len, "extra-index-url")) != NULL)
		set_urls(p, v, path, 1);
	free(v);
	free(text);
}

void
pipindex_find(const char *const *envp, const char *venv, struct pipindex *out)
{
	const char *cf = env_lookup(envp, "PIP_CONFIG_FILE");
	const char *home = env_lookup(envp, "HOME");
	const char *xdg = env_lookup(envp, "XDG_CONFIG_HOME");
	const char *v;
	char *path;

	memset(out, 0, sizeof *out);
	if (cf != NULL && *cf) {
		if (strcmp(cf, "/dev/null") != 0)
			from_file(out, cf);
	} else {
		from_file(out, "/etc/xdg/pip/pip.conf");
		from_file(out, "/etc/pip.conf");
		if (home != NULL && *home == '/') {
			path = xasprintf("%s/.pip/pip.conf", home);
			from_file(out, path);
			free(path);
		}
		if (xdg != NULL && *xdg == '/')
			path = xasprintf("%s/pip/pip.conf", xdg);
		else if (home != NULL && *home == '/')
			path = xasprintf("%s/.config/pip/pip.conf", home);
		else
			path = NULL;
		if (path != NULL)
			from_file(out, path);
		free(path);
		if (venv != NULL) {
			path = xasprintf("%s/pip.conf", venv);
			from_file(out, path);
			free(path);
		}
	}
	if ((v = env_lookup(envp, "PIP_INDEX_URL")) != NULL && *v)
		set_urls(out, v, "PIP_INDEX_URL", 0);
	if ((v = env_lookup(envp, "PIP_EXTRA_INDEX_URL")) != NULL && *v)
		set_urls(out, v, "PIP_EXTRA_INDEX_URL", 1);
}

void
pipindex_free(struct pipindex *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->u[i].url);
		free(p->u[i].from);
	}
	memset(p, 0, sizeof *p);
}

/* Whether the path or query of a URL (from p to its end) carries what
 * reads as a secret: a segment of 16 or more letters, digits, '-' and
 * '_' that mixes letters and digits (the token some hosted indexes put
 * in the path, /TOKEN/org/simple/), or a query key that names one
 * (token=, key=, secret=, password=, auth...). */
static int
path_has_token(const char *p)
{
	static const char *const keys[] = { "token", "key", "secret", "password",
	    "passwd", "auth", "sig", NULL };

	while (*p != '\0') {
		size_t n = strcspn(p, "/?&=#;");
		int alpha = 0, digit = 0, ok = n >= 16;

		for (size_t i = 0; i < n && ok; i++) {
			unsigned char ch = (unsigned char)p[i];
			alpha |= isalpha(ch) != 0;
			digit |= isdigit(ch) != 0;
			ok = isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~';
		}
		if (ok && alpha && digit)
			return 1;
		if (p[n] == '=' )
			for (const char *const *k = keys; *k != NULL; k++)
				if (n >= strlen(*k) && strncasecmp(p + n - strlen(*k), *k,
				    strlen(*k)) == 0)
					return 1;
		p += n + (p[n] != '\0');
	}
	return 0;
}

int
pipindex_url_host(const char *url, char *host, size_t hostlen, unsigned *port,
    int *has_cred)
{
	const char *s, *e, *at, *h, *he;
	unsigned p;
	size_t n;

	if (strncmp(url, "https://", 8) == 0) {
		s = url + 8;
		p = 443;
	} else if (strncmp(url, "http://", 7) == 0) {
		s = url + 7;
		p = 80;
	} else {
		return -1;
	}
	e = s + strcspn(s, "/?#");
	at = NULL;
	for (const char *q = s; q < e; q++)
		if (*q == '@')
			at = q;
	*has_cred = at != NULL || path_has_token(e);
	h = at ? at + 1 : s;
	if (*h == '[') {
		he = memchr(h, ']', (size_t)(e - h));
		if (he == NULL)
			return -1;
		h++;
		n = (size_t)(he - h);
		he++;
	} else {
		he = memchr(h, ':', (size_t)(e - h));
		if (he == NULL)
			he = e;
		n = (size_t)(he - h);
	}
	if (n == 0 || n >= hostlen)
		return -1;
	if (he < e) {
		char *end;
		unsigned long v;
		if (*he != ':' || he + 1 == e)
			return -1;
		v = strtoul(he + 1, &end, 10);
		if (end != e || v == 0 || v > 65535)
			return -1;
		p = (unsigned)v;
	}
	for (size_t i = 0; i < n; i++)
		host[i] = (char)tolower((unsigned char)h[i]);
	host[n] = '\0';
	*port = p;
	return 0;
}

int
pipindex_word_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 100)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr(".-_+!", *s)))
			return 0;
	return 1;
}

char *
pipindex_reinstall_code(const char *const *specs)
{
	struct buf b;
	int n = 0;

	buf_init(&b, 1 << 20);
	buf_adds(&b, "# terp: the packages this session installed, again (--replay)\n"
	    "import importlib.metadata as _tm, subprocess as _ts, sys as _tsys\n"
	    "_tw = [");
	for (int i = 0; specs != NULL && specs[i] != NULL; i++) {
		const char *eq = strstr(specs[i], "==");
		char *name, *ver;
		if (eq == NULL)
			continue;
		name = xstrndup(specs[i], (size_t)(eq - specs[i]));
		ver = xstrdup(eq + 2);
		/* only pip's characters: nothing here can close the quotes */
		if (pipindex_word_ok(name) && pipindex_word_ok(ver))
			buf_printf(&b, "%s(\"%s\", \"%s\")", n++ ? ", " : "", name, ver);
		free(name);
		free(ver);
	}
	if (n == 0) {
		buf_free(&b);
		return NULL;
	}
	buf_adds(&b, "]\n"
	    "_tmiss = []\n"
	    "for _tn, _tv in _tw:\n"
	    "    try:\n"
	    "        if _tm.version(_tn) == _tv:\n"
	    "            continue\n"
	    "    except _tm.PackageNotFoundError:\n"
	    "        pass\n"
	    "    _tmiss.append(_tn + \"==\" + _tv)\n"
	    "if _tmiss:\n"
	    "    _tr = _ts.run([_tsys.executable, \"-m\", \"pip\", \"install\", "
	    "\"--no-deps\"] + _tmiss)\n"
	    "    if _tr.returncode != 0:\n"
	    "        raise RuntimeError(\"pip could not install again: \" + \" \".join(_tmiss))\n"
	    "    print(\"installed again: \" + \" \".join(_tmiss))\n"
	    "else:\n"
	    "    print(\"already there: \" + \" \".join(n + \"==\" + v for n, v in _tw))\n"
	    "del _tm, _ts, _tsys, _tw, _tmiss\n");
	return buf_take(&b);
}
