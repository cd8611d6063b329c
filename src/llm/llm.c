/* llm: the provider table and the interface of llm.h (what the codecs
 * and the configuration share below it is in llm_common.c). Each provider is
 * a backend (llm_http.c, llm_demo.c) and, over HTTP, a codec; this file
 * only picks one, keeps one request at a time and relays what the
 * backend reports, so that the caller never sees the request busy once
 * it heard the end, and never sees more text than LLM_REPLY_TEXT_MAX. */
#include "terp/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/llm_cache.h"
#include "terp/llm_provider.h"
#include "terp/util.h"

static const struct llm_provider providers[] = {
	{ "openai", &llm_http_backend, &llm_openai_codec },
	{ "azure", &llm_http_backend, &llm_azure_codec },
	{ "anthropic", &llm_http_backend, &llm_anthropic_codec },
	{ "ollama", &llm_http_backend, &llm_ollama_codec },
	{ "demo", &llm_demo_backend, NULL },
};
#define NPROVIDERS	(sizeof providers / sizeof providers[0])

struct llm {
	struct llm_config		 cfg;
	const struct llm_provider	*prov;
	void				*backend;
	int				 busy;
	struct llm_cbs			 cbs;
	void				*arg;
	size_t				 text_len;	/* of this reply */
	size_t				 reasoning_len;	/* its reasoning's */
	uint64_t			 stamp;		/* llm_vouch's, for the next request */
};

static const char *const err_names[] = {
	[LLM_ERR_NET] = "net",
	[LLM_ERR_HTTP] = "http",
	[LLM_ERR_AUTH] = "auth",
	[LLM_ERR_RATE] = "rate",
	[LLM_ERR_QUOTA] = "quota",
	[LLM_ERR_SERVER] = "server",
	[LLM_ERR_CONTEXT] = "context",
	[LLM_ERR_CUT] = "cut",
	[LLM_ERR_BAD_REPLY] = "bad_reply",
	[LLM_ERR_CANCELLED] = "cancelled",
};

const char *
llm_err_name(enum llm_err kind)
{
	if ((size_t)kind >= sizeof err_names / sizeof err_names[0] ||
	    err_names[kind] == NULL)
		return "unknown";
	return err_names[kind];
}

/* What the backend reports, relayed. */

static void
r_text(void *arg, const char *s, size_t n)
{
	struct llm *m = arg;
	struct llm_error e;
	char msg[96];

	if (!m->busy)
		return;
	if (n > LLM_REPLY_TEXT_MAX - m->text_len) {
		/* Stop reading rather than show what cannot be kept. */
		m->prov->backend->cancel(m->backend);
		m->busy = 0;
		snprintf(msg, sizeof msg, "the model's reply passed %u MiB of "
		    "text; terp stopped reading it", LLM_REPLY_TEXT_MAX >> 20);
		e.kind = LLM_ERR_BAD_REPLY;
		e.http_status = 0;
		e.msg = msg;
		e.retryable = 0;
		if (m->cbs.error != NULL)
			m->cbs.error(m->arg, &e);
		return;
	}
	m->text_len += n;
	if (m->cbs.text != NULL)
		m->cbs.text(m->arg, s, n);
}

/* Reasoning is bounded like the text: the agent keeps all of it. */
static void
r_reasoning(void *arg, const char *s, size_t n)
{
	struct llm *m = arg;

	if (!m->busy || m->cbs.reasoning == NULL)
		return;
	if (n > LLM_REPLY_TEXT_MAX - m->reasoning_len)
		return;	/* shown up to the bound; the items still come whole */
	m->reasoning_len += n;
	m->cbs.reasoning(m->arg, s, n);
}

static void
r_reasoning_item(void *arg, const char *json)
{
	struct llm *m = arg;

	if (m->busy && m->cbs.reasoning_item != NULL)
		m->cbs.reasoning_item(m->arg, json);
}

static void
r_tool_call(void *arg, const char *id, const char *name, const char *args)
{
	struct llm *m = arg;

	if (m->busy && m->cbs.tool_call != NULL)
		m->cbs.tool_call(m->arg, id, name, args);
}

static void
r_tool_code(void *arg, int call, const char *code, size_t len)
{
	struct llm *m = arg;

	if (m->busy && m->cbs.tool_code != NULL)
		m->cbs.tool_code(m->arg, call, code, len);
}

static void
r_usage(void *arg, const struct usage *u)
{
	struct llm *m = arg;

	if (m->busy && m->cbs.usage != NULL)
		m->cbs.usage(m->arg, u);
}

static void
r_sent(void *arg, const char *what, const char *body, size_t len)
{
	struct llm *m = arg;

	if (m->busy && m->cbs.sent != NULL)
		m->cbs.sent(m->arg, what, body, len);
}

static void
r_notice(void *arg, const char *msg)
{
	struct llm *m = arg;

	if (m->busy && m->cbs.notice != NULL)
		m->cbs.notice(m->arg, msg);
}

static void
r_done(void *arg, const char *stop)
{
	struct llm *m = arg;

	if (!m->busy)
		return;
	m->busy = 0;
	if (m->cbs.done != NULL)
		m->cbs.done(m->arg, stop);
}

static void
r_error(void *arg, const struct llm_error *e)
{
	struct llm *m = arg;

	if (!m->busy)
		return;
	m->busy = 0;
	if (m->cbs.error != NULL)
		m->cbs.error(m->arg, e);
}

static const struct llm_cbs relay = {
	.text = r_text, .tool_call = r_tool_call, .usage = r_usage,
	.reasoning = r_reasoning, .reasoning_item = r_reasoning_item,
	.tool_code = r_tool_code, .sent = r_sent, .notice = r_notice, .done = r_done, .error = r_error,
};

long
llm_reasoning_reserve(const struct llm_config *cfg)
{
	if (cfg->provider != NULL && strcmp(cfg->provider, "anthropic") == 0)
		return llm_thinking_budget(cfg);
	/* OpenAI counts reasoning in max_completion_tokens; the effort has
	 * no token figure, so the same scale stands for it. */
	if (cfg->reasoning == LLM_REASONING_DEFAULT ||
	    cfg->reasoning == LLM_REASONING_OFF)
		return 0;
	return llm_thinking_budget(cfg);
}

/* The public interface. */

static void
cfg_copy(struct llm_config *d, const struct llm_config *s)
{
	*d = *s;
	d->provider = s->provider ? xstrdup(s->provider) : NULL;
	d->model = s->model ? xstrdup(s->model) : NULL;
	d->base_url = s->base_url ? xstrdup(s->base_url) : NULL;
	d->api_key = s->api_key ? xstrdup(s->api_key) : NULL;
	d->api_version = s->api_version ? xstrdup(s->api_version) : NULL;
	d->demo_script = s->demo_script ? xstrdup(s->demo_script) : NULL;
	d->base_url_from = s->base_url_from ? xstrdup(s->base_url_from) : NULL;
	d->api_key_from = s->api_key_from ? xstrdup(s->api_key_from) : NULL;
}

struct llm *
llm_new(struct loop *l, const struct llm_config *cfg, char **err)
{
	struct llm *m;
	size_t i;

	for (i = 0; i < NPROVIDERS; i++)
		if (cfg->provider && strcmp(cfg->provider, providers[i].name) == 0)
			break;
	if (i == NPROVIDERS) {
		*err = xasprintf("unknown provider '%s' (use openai, azure, "
		    "anthropic, ollama or demo)",
		    cfg->provider ? cfg->provider : "");
		return NULL;
	}
	m = xcalloc(1, sizeof *m);
	cfg_copy(&m->cfg, cfg);
	if (m->cfg.max_retries < 0)
		m->cfg.max_retries = 0;
	m->prov = &providers[i];
	m->backend = m->prov->backend->open(l, &m->cfg, m->prov->codec, err);
	if (m->backend == NULL) {
		llm_free(m);
		return NULL;
	}
	return m;
}

void
llm_free(struct llm *m)
{
	if (m == NULL)
		return;
	if (m->backend != NULL)
		m->prov->backend->close(m->backend);
	llm_config_free(&m->cfg);
	free(m);
}

int
llm_request(struct llm *m, const char *system, const cJSON *messages,
    const struct llm_cbs *cbs, void *arg, char **err)
{
	int r;

	if (m->busy) {
		m->stamp = 0;
		*err = xstrdup("a model request is already running");
		return -1;
	}
	m->cbs = *cbs;
	m->arg = arg;
	m->text_len = 0;
	m->reasoning_len = 0;
	/* the body is encoded inside request(): the promise goes to the
	 * encoders' cache for that one encoding only */
	llm_cache_vouch(m->stamp);
	m->stamp = 0;
	r = m->prov->backend->request(m->backend, system, messages, &relay, m, err);
	llm_cache_vouch(0);
	if (r < 0)
		return -1;
	m->busy = 1;
	return 0;
}

void
llm_vouch(struct llm *m, uint64_t stamp)
{
	m->stamp = stamp;
}

void
llm_cancel(struct llm *m)
{
	if (!m->busy)
		return;
	m->prov->backend->cancel(m->backend);
	m->busy = 0;
}

int
llm_busy(const struct llm *m)
{
	return m->busy;
}

const char *
llm_provider(const struct llm *m)
{
	return m->cfg.provider;
}

char *
llm_sent_body_take(struct llm *m, size_t *shared, uint64_t *tag)
{
	*shared = 0;
	*tag = 0;
	if (m == NULL || m->backend == NULL || m->prov->backend->take_body == NULL)
		return NULL;
	return m->prov->backend->take_body(m->backend, shared, tag);
}

const char *
llm_suggest(const struct llm *m, int i)
{
	if (m->prov->backend->suggest == NULL)
		return NULL;
	return m->prov->backend->suggest(m->backend, i);
}

const char *
llm_model(const struct llm *m)
{
	return m->cfg.model ? m->cfg.model : "";
}

const char *
llm_base_url(const struct llm *m)
{
	return m->cfg.base_url;
}

int
llm_set_model(struct llm *m, const char *model)
{
	if (m->busy || model == NULL || *model == '\0')
		return -1;
	free(m->cfg.model);
	m->cfg.model = xstrdup(model);
	return 0;
}

const struct llm_config *
llm_config_of(const struct llm *m)
{
	return &m->cfg;
}
