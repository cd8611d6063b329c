/* llm_config: chooses the provider and fills its settings from, in this
 * order of precedence, the command line (already in cfg), the config
 * file, the environment and built-in defaults. The api key itself may
 * come from a command (api_key_cmd) so that it never sits in a file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/config.h"
#include "terp/llm.h"
#include "terp/secret.h"
#include "terp/util.h"

#ifndef TERP_DATADIR
#define TERP_DATADIR "/usr/local/share/terp"
#endif

#define KEY_MAX	4096

static const char *
env(const char *k)
{
	const char *v = getenv(k);
	return v != NULL && *v != '\0' ? v : NULL;
}

static void
set(char **dst, const char *v)
{
	if (*dst == NULL && v != NULL && *v != '\0')
		*dst = xstrdup(v);
}

/* set, and *from names where the value came from when it was taken. */
static void
set_from(char **dst, const char *v, char **from, const char *name)
{
	if (*dst == NULL && v != NULL && *v != '\0') {
		*dst = xstrdup(v);
		free(*from);
		*from = xstrdup(name);
	}
}

/* $OLLAMA_HOST as Ollama's own client reads it ("host", "host:port",
 * "http://host:port/"; the port 11434 when none) as the OpenAI-style
 * base URL, or NULL when unset. Caller frees. */
static char *
ollama_host_url(void)
{
	const char *v = getenv("OLLAMA_HOST");
	const char *hp;
	char *url;
	size_t n;

	if (v == NULL || *v == '\0')
		return NULL;
	hp = strstr(v, "://") ? strstr(v, "://") + 3 : v;
	n = strlen(v);
	while (n > 0 && v[n - 1] == '/')
		n--;
	/* a port after the host (not inside an [IPv6] address) */
	const char *colon = strrchr(hp, ':'), *bracket = strrchr(hp, ']');
	int port = colon != NULL && (bracket == NULL || colon > bracket);
	url = xasprintf("%s%.*s%s/v1", hp == v ? "http://" : "", (int)n, v,
	    port ? "" : ":11434");
	return url;
}

/* "KEY in PATH" (a config file's key, for messages). */
static char *
in_file(const struct config *c, const char *key)
{
	return xasprintf("%s in %s", key, c->path ? c->path : "the config file");
}

/* "ollama:llama3.1:8b" -> provider ollama, model llama3.1:8b; a model
 * whose prefix is not a provider name is left alone. */
static void
split_model(struct llm_config *cfg)
{
	char *colon;

	if (cfg->model == NULL || (colon = strchr(cfg->model, ':')) == NULL ||
	    !llm_is_provider(cfg->model, (size_t)(colon - cfg->model)))
		return;
	if (cfg->provider == NULL)
		cfg->provider = xstrndup(cfg->model, (size_t)(colon - cfg->model));
	memmove(cfg->model, colon + 1, strlen(colon + 1) + 1);
	if (*cfg->model == '\0') {
		free(cfg->model);
		cfg->model = NULL;
	}
}

/* Runs cmd with the shell; its trimmed stdout is the key. */
static char *
key_from_cmd(const char *cmd, char **err)
{
	char *key;
	int code;

	switch (secret_from_cmd(cmd, KEY_MAX, SECRET_ONE_LINE, &key, &code)) {
	case SECRET_OK:
		return key;
	case SECRET_NO_RUN:
		*err = xasprintf("api_key_cmd: %s", strerror(errno));
		break;
	case SECRET_FAILED:
		*err = xasprintf("api_key_cmd failed (exit status %d)", code);
		break;
	case SECRET_EMPTY:
		*err = xstrdup("api_key_cmd printed no key (or more than one line)");
		break;
	}
	return NULL;
}

static int
num(const char *key, const char *v, long lo, long hi, long *out, char **err)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end != '\0' || n < lo || n > hi) {
		*err = xasprintf("config: %s must be a number from %ld to %ld, not '%s'",
		    key, lo, hi, v);
		return -1;
	}
	*out = n;
	return 0;
}

static int
dur(const char *key, const char *v, long *out, char **err)
{
	int64_t ms;

	if (parse_duration_ms(v, &ms) < 0 || ms <= 0) {
		*err = xasprintf("config: %s must be a duration like 30s or 2m, "
		    "not '%s'", key, v);
		return -1;
	}
	*out = (long)ms;
	return 0;
}

static int
from_file(struct llm_config *cfg, const struct config *c, char **key_cmd,
    char **err)
{
	const char *v;
	long n;

	set(&cfg->provider, config_get(c, "provider"));
	if (cfg->model == NULL && (v = config_get(c, "model")) != NULL) {
		set(&cfg->model, v);
		split_model(cfg);
	}
	if (cfg->base_url != NULL && cfg->base_url_from == NULL)
		cfg->base_url_from = xstrdup("--base-url");
	if (cfg->base_url == NULL && config_get(c, "base_url") != NULL) {
		char *from = in_file(c, "base_url");
		set_from(&cfg->base_url, config_get(c, "base_url"),
		    &cfg->base_url_from, from);
		free(from);
	}
	set(&cfg->api_version, config_get(c, "api_version"));
	set(&cfg->demo_script, config_get(c, "demo_script"));
	set(key_cmd, config_get(c, "api_key_cmd"));
	if (cfg->max_retries == 0 && (v = config_get(c, "max_retries")) != NULL) {
		if (num("max_retries", v, 0, 20, &n, err) < 0)
			return -1;
		cfg->max_retries = n == 0 ? -1 : (int)n;
	}
	if (cfg->max_tokens == 0 && (v = config_get(c, "max_tokens")) != NULL) {
		if (num("max_tokens", v, 1, 1000000, &n, err) < 0)
			return -1;
		cfg->max_tokens = (int)n;
	}
	if (cfg->reasoning == LLM_REASONING_DEFAULT &&
	    (v = config_get(c, "reasoning")) != NULL &&
	    (cfg->reasoning = llm_reasoning_parse(v)) < 0) {
		char *where = in_file(c, "reasoning");
		*err = xasprintf("invalid %s: '%s' (use off, low, medium or "
		    "high)", where, v);
		free(where);
		cfg->reasoning = LLM_REASONING_DEFAULT;
		return -1;
	}
	if (cfg->api == LLM_API_AUTO && (v = config_get(c, "api")) != NULL) {
		if (strcmp(v, "chat") == 0)
			cfg->api = LLM_API_CHAT;
		else if (strcmp(v, "responses") == 0)
			cfg->api = LLM_API_RESPONSES;
		else {
			char *where = in_file(c, "api");
			*err = xasprintf("invalid %s: '%s' (use responses or chat)",
			    where, v);
			free(where);
			return -1;
		}
	}
	if (cfg->connect_timeout_ms == 0 &&
	    (v = config_get(c, "connect_timeout")) != NULL &&
	    dur("connect_timeout", v, &cfg->connect_timeout_ms, err) < 0)
		return -1;
	if (cfg->idle_timeout_ms == 0 &&
	    (v = config_get(c, "idle_timeout")) != NULL &&
	    dur("idle_timeout", v, &cfg->idle_timeout_ms, err) < 0)
		return -1;
	return 0;
}

/* A binary in a checkout: examples/ next to it (found through
 * /proc/self/exe, so any working directory will do), so that it never
 * replays an older installed recording; installed: ../share/terp next
 * to the binary (so that `make install PREFIX=...` after a build for
 * another prefix finds its own), then DATADIR; last, ./examples. The
 * path found, or NULL with every path looked at in *tried (caller
 * frees). */
static char *
default_demo_script(char **tried)
{
	char exe[4096], *slash, *cand[4] = { 0 };
	struct buf b;
	ssize_t n;
	int nc = 0;
	char *found = NULL;

	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			cand[nc++] = xasprintf("%s/examples/demo.json", exe);
			cand[nc++] = xasprintf("%s/../share/terp/demo.json", exe);
		}
	}
	cand[nc++] = xstrdup(TERP_DATADIR "/demo.json");
	cand[nc++] = xstrdup("examples/demo.json");
	buf_init(&b, 1 << 16);
	for (int i = 0; i < nc; i++) {
		if (found == NULL && access(cand[i], R_OK) == 0) {
			found = cand[i];
			continue;
		}
		buf_printf(&b, "%s%s", b.len ? ", " : "", cand[i]);
		free(cand[i]);
	}
	*tried = found ? NULL : xstrdup(b.data ? b.data : "");
	buf_free(&b);
	return found;
}

int
llm_config_resolve(struct llm_config *cfg, char **err)
{
	struct config file;
	char *key_cmd = NULL;
	const char *p;
	int r = -1;

	memset(&file, 0, sizeof file);
	split_model(cfg);
	if (config_load(&file, NULL, err) < 0)
		return -1;
	if (from_file(cfg, &file, &key_cmd, err) < 0)
		goto out;
	if (cfg->provider == NULL) {
		if (env("ANTHROPIC_API_KEY"))
			cfg->provider = xstrdup("anthropic");
		else if (env("OPENAI_API_KEY"))
			cfg->provider = xstrdup("openai");
		else if (env("AZURE_OPENAI_API_KEY") && env("AZURE_OPENAI_ENDPOINT"))
			cfg->provider = xstrdup("azure");
		else {
			*err = xstrdup("no model configured: set ANTHROPIC_API_KEY, "
			    "OPENAI_API_KEY or AZURE_OPENAI_API_KEY with "
			    "AZURE_OPENAI_ENDPOINT, or use --provider ollama for a "
			    "local server, or --provider demo for the recorded demo "
			    "(see terp(1), FILES for the config file)");
			goto out;
		}
	}
	p = cfg->provider;
	if (!llm_is_provider(p, strlen(p))) {
		*err = xasprintf("unknown provider '%s' (use openai, azure, "
		    "anthropic, ollama or demo)", p);
		goto out;
	}
	if (key_cmd != NULL && cfg->api_key == NULL && strcmp(p, "demo") != 0) {
		if ((cfg->api_key = key_from_cmd(key_cmd, err)) == NULL)
			goto out;
		free(cfg->api_key_from);
		cfg->api_key_from = in_file(&file, "api_key_cmd");
	}
	if (strcmp(p, "openai") == 0) {
		set_from(&cfg->api_key, env("OPENAI_API_KEY"), &cfg->api_key_from,
		    "OPENAI_API_KEY");
		set_from(&cfg->base_url, env("OPENAI_BASE_URL"), &cfg->base_url_from,
		    "OPENAI_BASE_URL");
		set(&cfg->model, "gpt-4.1");
	} else if (strcmp(p, "azure") == 0) {
		set_from(&cfg->api_key, env("AZURE_OPENAI_API_KEY"),
		    &cfg->api_key_from, "AZURE_OPENAI_API_KEY");
		set_from(&cfg->base_url, env("AZURE_OPENAI_ENDPOINT"),
		    &cfg->base_url_from, "AZURE_OPENAI_ENDPOINT");
		set(&cfg->model, env("AZURE_OPENAI_DEPLOYMENT"));
		set(&cfg->api_version, env("AZURE_OPENAI_API_VERSION"));
		/* the openai SDK's AzureOpenAI reads this one */
		set(&cfg->api_version, env("OPENAI_API_VERSION"));
		set(&cfg->api_version, "2024-10-21");
		if (cfg->base_url == NULL) {
			*err = xstrdup("azure: no endpoint; set AZURE_OPENAI_ENDPOINT "
			    "or base_url");
			goto out;
		}
		if (cfg->model == NULL) {
			*err = xstrdup("azure: no deployment; set "
			    "AZURE_OPENAI_DEPLOYMENT or --model");
			goto out;
		}
	} else if (strcmp(p, "anthropic") == 0) {
		set_from(&cfg->api_key, env("ANTHROPIC_API_KEY"), &cfg->api_key_from,
		    "ANTHROPIC_API_KEY");
		set_from(&cfg->base_url, env("ANTHROPIC_BASE_URL"),
		    &cfg->base_url_from, "ANTHROPIC_BASE_URL");
		set(&cfg->model, "claude-sonnet-4-5");
	} else if (strcmp(p, "ollama") == 0) {
		char *oh = ollama_host_url();
		set_from(&cfg->base_url, oh, &cfg->base_url_from, "OLLAMA_HOST");
		free(oh);
		set_from(&cfg->base_url, "http://localhost:11434/v1",
		    &cfg->base_url_from, "the default");
		set(&cfg->model, "llama3.1");
	} else {
		set(&cfg->model, "recorded");
		if (cfg->demo_script == NULL) {
			char *tried = NULL;
			if ((cfg->demo_script = default_demo_script(&tried)) == NULL) {
				*err = xasprintf("demo: no recording found; looked for %s "
				    "(make install puts it in PREFIX/share/terp)", tried);
				free(tried);
				goto out;
			}
		}
	}
	if (cfg->api_key == NULL && (strcmp(p, "openai") == 0 ||
	    strcmp(p, "azure") == 0 || strcmp(p, "anthropic") == 0)) {
		char *cf = file.path ? xstrdup(file.path) : config_default_path();
		*err = xasprintf("%s: no API key; set %s or api_key_cmd in %s", p,
		    strcmp(p, "openai") == 0 ? "OPENAI_API_KEY" :
		    strcmp(p, "azure") == 0 ? "AZURE_OPENAI_API_KEY" :
		    "ANTHROPIC_API_KEY", cf);
		free(cf);
		goto out;
	}
	if (cfg->max_retries == 0)
		cfg->max_retries = 4;
	else if (cfg->max_retries < 0)
		cfg->max_retries = 0;
	if (cfg->connect_timeout_ms == 0)
		cfg->connect_timeout_ms = 10000;
	if (cfg->idle_timeout_ms == 0)
		cfg->idle_timeout_ms = 120000;
	if (cfg->max_tokens == 0)
		cfg->max_tokens = 4096;
	r = 0;
out:
	free(key_cmd);
	config_free(&file);
	return r;
}

void
llm_config_free(struct llm_config *cfg)
{
	free(cfg->provider);
	free(cfg->model);
	free(cfg->base_url);
	if (cfg->api_key != NULL) {
		explicit_bzero(cfg->api_key, strlen(cfg->api_key));
		free(cfg->api_key);
	}
	free(cfg->api_version);
	free(cfg->demo_script);
	free(cfg->base_url_from);
	free(cfg->api_key_from);
	memset(cfg, 0, sizeof *cfg);
}
