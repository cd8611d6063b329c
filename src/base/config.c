/* config: the `key = value` settings file. Strict on purpose: a typo in
 * a key is reported with its line rather than silently ignored. */
#include "terp/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/util.h"

#define LINE_MAX_LEN	4096

/* Model settings (llm_config.c) first, then the frontends' and the
 * sandbox's (main.c applies those). Add a key here to allow it. */
const char *const config_keys[] = {
	"provider", "model", "base_url", "api_key_cmd", "api_version",
	"max_retries", "max_tokens", "connect_timeout", "idle_timeout",
	"demo_script", "reasoning", "api",
	"theme", "images", "background", "memory", "disk", "timeout", "max_turns", "tool_output_limit",
	"context_window", "model_input", "ask",
	"network", "out", "python", "allow_hosts", "egress_max",
	"price", "builtin_prices", "max_cost",
	"sandbox", "sandbox_token_cmd", "sandbox_token_env", "jupyter_kernel",
	"ssh_terp", "ssh_command",
	NULL,
};

static int
known(const char *k, size_t n)
{
	for (int i = 0; config_keys[i] != NULL; i++)
		if (strlen(config_keys[i]) == n && memcmp(config_keys[i], k, n) == 0)
			return 1;
	return 0;
}

/* The key nearest to the n bytes typed (at most 2 edits, 1 for what is
 * 5 characters or shorter, as for options), or NULL. */
static const char *
nearest_key(const char *k, size_t n)
{
	const char *best = NULL;
	int bd = 3;

	for (int i = 0; config_keys[i] != NULL; i++) {
		int d = edit_distance(k, n, config_keys[i]);
		if (d < bd && d <= (n <= 5 ? 1 : 2)) {
			bd = d;
			best = config_keys[i];
		}
	}
	return best;
}

static int
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int
config_parse(struct config *c, const char *text, size_t len, const char *name,
    char **err)
{
	size_t pos = 0;
	int lineno = 0;

	while (pos < len) {
		const char *s = text + pos, *e, *eq, *k, *ke, *v, *ve;
		size_t n;

		e = memchr(s, '\n', len - pos);
		n = e ? (size_t)(e - s) : len - pos;
		pos += n + (e != NULL);
		lineno++;
		if (n > LINE_MAX_LEN) {
			*err = xasprintf("%s:%d: line too long", name, lineno);
			return -1;
		}
		if (memchr(s, '\0', n) != NULL) {
			*err = xasprintf("%s:%d: NUL byte", name, lineno);
			return -1;
		}
		k = s;
		ke = s + n;
		while (k < ke && is_space(*k))
			k++;
		if (k == ke || *k == '#')
			continue;
		eq = memchr(k, '=', (size_t)(ke - k));
		if (eq == NULL) {
			*err = xasprintf("%s:%d: expected `key = value`", name, lineno);
			return -1;
		}
		v = eq + 1;
		ve = ke;
		while (eq > k && is_space(eq[-1]))
			eq--;
		if (eq == k) {
			*err = xasprintf("%s:%d: missing key before '='", name, lineno);
			return -1;
		}
		if (!known(k, (size_t)(eq - k))) {
			char *key = xstrndup(k, (size_t)(eq - k));
			const char *near = nearest_key(k, (size_t)(eq - k));
			*err = xasprintf("%s:%d: unknown key '%s'%s%s%s", name, lineno,
			    key, near ? "; did you mean " : "", near ? near : "",
			    near ? "?" : "");
			free(key);
			return -1;
		}
		while (v < ve && is_space(*v))
			v++;
		while (ve > v && is_space(ve[-1]))
			ve--;
		if (ve - v >= 2 && *v == '"' && ve[-1] == '"') {
			v++;
			ve--;
		}
		c->e = xrealloc(c->e, (size_t)(c->n + 1) * sizeof *c->e);
		c->e[c->n].key = xstrndup(k, (size_t)(eq - k));
		c->e[c->n].value = xstrndup(v, (size_t)(ve - v));
		c->e[c->n].line = lineno;
		c->n++;
	}
	return 0;
}

char *
config_default_path(void)
{
	char *dir = xdg_config_home(), *p = xasprintf("%s/terp/config", dir);

	free(dir);
	return p;
}

int
config_load(struct config *c, const char *path, char **err)
{
	char *p, *text, *why;
	size_t len;
	int r;

	p = path != NULL ? xstrdup(path) : config_default_path();
	text = read_trusted_file(p, CONFIG_MAX, &len, &why);
	if (text == NULL) {
		if (why != NULL) {
			*err = why;
			free(p);
			return -1;
		}
		if (errno == ENOENT) {
			free(p);
			return 0;
		}
		*err = xasprintf("%s: %s", p, errno == EFBIG ? "too big" :
		    strerror(errno));
		free(p);
		return -1;
	}
	r = config_parse(c, text, len, p, err);
	free(text);
	if (r == 0)
		c->path = p;
	else
		free(p);
	return r;
}

const char *
config_get(const struct config *c, const char *key)
{
	for (int i = c->n - 1; i >= 0; i--)
		if (strcmp(c->e[i].key, key) == 0)
			return c->e[i].value;
	return NULL;
}

void
config_free(struct config *c)
{
	for (int i = 0; i < c->n; i++) {
		free(c->e[i].key);
		free(c->e[i].value);
	}
	free(c->e);
	free(c->path);
	memset(c, 0, sizeof *c);
}
