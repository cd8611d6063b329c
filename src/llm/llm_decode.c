/* llm_decode: what the providers' stream decoders share. A codec
 * (llm_openai.c, llm_anthropic.c) reads its API's events and calls the
 * helpers here, which own the reply being assembled: text passed on in
 * whole UTF-8 sequences, tool calls kept in slots until their arguments
 * are complete (fragments are cut anywhere, inside escapes and inside
 * characters, so they are only handed over whole), usage and the stop
 * reason kept until the end, and a typed error when the stream fails.
 * Also the reading of error bodies of every shape servers send and
 * their classification into kinds. No network, no files. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/json_text.h"
#include "terp/llm_argcode.h"
#include "terp/llm_provider.h"
#include "terp/sanitize.h"
#include "terp/util.h"

/* ------------------------------------------------------------ text */

void
llm_one_line(char *s, size_t max)
{
	char *w = s;
	int space = 0;

	for (char *r = s; *r != '\0'; r++) {
		unsigned char c = (unsigned char)*r;
		if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
			space = w != s;
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			continue;
		if (space) {
			*w++ = ' ';
			space = 0;
		}
		*w++ = (char)c;
	}
	*w = '\0';
	if (strlen(s) > max) {
		size_t n = utf8_complete_prefix(s, max - 3);
		memcpy(s + n, "...", 4);
	}
}

int
llm_json_long(const cJSON *v, long *out)
{
	/* A cast of a double out of long's range is undefined: the bound
	 * is checked on the double first (2^53: still exact). */
	if (!cJSON_IsNumber(v) || !(v->valuedouble > -9007199254740992.0 &&
	    v->valuedouble < 9007199254740992.0))
		return -1;
	*out = (long)v->valuedouble;
	return 0;
}

/* A code of any JSON type as text (new string), or NULL. */
static char *
jcode(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	long n;

	if (cJSON_IsString(v))
		return xstrdup(v->valuestring);
	if (llm_json_long(v, &n) == 0)
		return xasprintf("%ld", n);
	if (cJSON_IsNumber(v))
		return xasprintf("%g", v->valuedouble);
	return NULL;
}

/* ------------------------------------------------------------ error bodies */

/* An error body taken apart. Strings are new or NULL. */
struct ebody {
	char	*msg;
	char	*type;		/* error.type (flat bodies: type) */
	char	*code;		/* error.code, of any JSON type */
	char	*detail;	/* error.details.error_code (Anthropic) */
};

static void
ebody_free(struct ebody *b)
{
	free(b->msg);
	free(b->type);
	free(b->code);
	free(b->detail);
}

/* The shapes: {"error":{...}} (OpenAI, Anthropic, Ollama, llama.cpp),
 * {"error":"text"}, flat {"object":"error","message":...} (old vLLM),
 * {"detail":...} (FastAPI servers), and text or HTML from a proxy. */
static void
ebody_parse(const char *body, size_t len, struct ebody *b)
{
	cJSON *j = body != NULL && len > 0 ? cJSON_ParseWithLength(body, len) : NULL;

	memset(b, 0, sizeof *b);
	if (cJSON_IsObject(j)) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		const cJSON *det = cJSON_GetObjectItemCaseSensitive(j, "detail");
		if (cJSON_IsObject(e)) {
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "details");
			if (json_str(e, "message"))
				b->msg = xstrdup(json_str(e, "message"));
			b->type = jcode(e, "type");
			b->code = jcode(e, "code");
			b->detail = jcode(d, "error_code");
		} else if (cJSON_IsString(e)) {
			b->msg = xstrdup(e->valuestring);
		} else if (json_str(j, "message")) {
			b->msg = xstrdup(json_str(j, "message"));
			b->type = jcode(j, "type");
			b->code = jcode(j, "code");
		} else if (cJSON_IsString(det)) {
			b->msg = xstrdup(det->valuestring);
		} else if (det != NULL) {
			b->msg = cJSON_PrintUnformatted(det);
		}
	}
	cJSON_Delete(j);
	if (b->msg == NULL && body != NULL && len > 0) {
		/* Text or HTML from a proxy: its <title>, else the start. */
		const char *t = memmem(body, len, "<title>", 7);
		if (t != NULL) {
			const char *e = memmem(t, len - (size_t)(t - body), "</title>", 8);
			if (e != NULL)
				b->msg = xstrndup(t + 7, (size_t)(e - t - 7));
		}
		if (b->msg == NULL)
			b->msg = xstrndup(body, len < 300 ? len : 300);
	}
}

char *
llm_error_body_message(const char *body, size_t len, char **type)
{
	struct ebody b;
	char *msg, *clean;

	ebody_parse(body, len, &b);
	/* The type, else the code; but insufficient_quota may hide in the
	 * code under another type. */
	if (b.type != NULL && b.code != NULL &&
	    strcmp(b.code, "insufficient_quota") == 0) {
		free(b.type);
		b.type = b.code;
		b.code = NULL;
	} else if (b.type == NULL) {
		b.type = b.code;
		b.code = NULL;
	}
	*type = b.type;
	b.type = NULL;
	msg = b.msg != NULL ? b.msg : xstrdup("no details");
	b.msg = NULL;
	ebody_free(&b);
	/* Whitespace to spaces and controls out, then the rest made safe
	 * (invalid UTF-8, C1 controls, bidi overrides). */
	llm_one_line(msg, 300);
	clean = sanitize_str(msg, strlen(msg), 0);
	free(msg);
	return clean;
}

static int
is_any(const char *s, const char *const *list)
{
	if (s == NULL)
		return 0;
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static int
says_any(const char *s, const char *const *list)
{
	if (s == NULL)
		return 0;
	for (; *list != NULL; list++)
		if (strcasestr(s, *list) != NULL)
			return 1;
	return 0;
}

/* Billing, not load: retrying cannot help. */
static int
is_quota(const struct ebody *b)
{
	static const char *const ids[] = {
		"insufficient_quota",		/* OpenAI, in type or code */
		"billing_hard_limit_reached",	/* OpenAI, older */
		"enforced_spend_limit_reached",	/* Anthropic spend caps */
		NULL,
	};
	static const char *const says[] = {
		"credit balance is too low",	/* Anthropic, as a 400 */
		NULL,
	};
	return is_any(b->type, ids) || is_any(b->code, ids) ||
	    is_any(b->detail, ids) || says_any(b->msg, says);
}

/* The conversation does not fit the model. Only some servers give it a
 * code, so the messages of the others are recognised too. */
static int
is_context(const struct ebody *b)
{
	static const char *const ids[] = {
		"context_length_exceeded",	/* OpenAI, Azure */
		"exceed_context_size_error",	/* llama.cpp */
		NULL,
	};
	static const char *const says[] = {
		"prompt is too long",		/* Anthropic */
		"maximum context length",	/* OpenAI, Azure, vLLM */
		"context length exceeded",
		"exceeds the available context size",	/* llama.cpp */
		"exceeds the context length",	/* Ollama */
		NULL,
	};
	return is_any(b->type, ids) || is_any(b->code, ids) ||
	    says_any(b->msg, says);
}

/* Inside a 200 stream only the body tells what went wrong. */
static enum llm_err
stream_kind(const struct ebody *b)
{
	static const char *const auth[] = {
		"authentication_error", "permission_error", "invalid_api_key",
		NULL,
	};
	static const char *const rate[] = {
		"rate_limit_error", "rate_limit_exceeded", "429", NULL,
	};
	static const char *const server[] = {
		"overloaded_error", "api_error", "server_error", "unavailable_error",
		"500", "502", "503", "529", NULL,
	};
	static const char *const server_says[] = {
		"overloaded", "server_error", "unavailable", NULL,
	};

	if (is_any(b->type, auth) || is_any(b->code, auth))
		return LLM_ERR_AUTH;
	if (is_any(b->type, rate) || is_any(b->code, rate))
		return LLM_ERR_RATE;
	if (is_any(b->type, server) || is_any(b->code, server) ||
	    says_any(b->type, server_says) || says_any(b->code, server_says))
		return LLM_ERR_SERVER;
	return LLM_ERR_HTTP;
}

enum llm_err
llm_error_kind(long status, const char *body, size_t len)
{
	struct ebody b;
	enum llm_err k;

	ebody_parse(body, len, &b);
	if (status == 401 || status == 403)
		k = LLM_ERR_AUTH;
	else if (is_quota(&b))
		k = LLM_ERR_QUOTA;
	else if (status == 429)
		k = LLM_ERR_RATE;
	else if (is_context(&b))
		k = LLM_ERR_CONTEXT;
	else if (status >= 500)
		k = LLM_ERR_SERVER;
	else if (status >= 200 && status < 300)
		k = stream_kind(&b);
	else
		k = LLM_ERR_HTTP;
	ebody_free(&b);
	return k;
}

static const char *
status_name(long status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 529: return "Overloaded";
	}
	return "HTTP error";
}

char *
llm_status_message(const struct llm_config *cfg, long status, const char *body,
    size_t len)
{
	char *type = NULL, *msg = llm_error_body_message(body, len, &type), *r;
	const char *prov = cfg->provider ? cfg->provider : "";
	const char *model = cfg->model ? cfg->model : "";

	if (status == 401 && cfg->api_key_from != NULL)
		r = xasprintf("401 Unauthorized: the API key from %s was rejected "
		    "by %s (%s)", cfg->api_key_from, prov, msg);
	else if (status == 401)
		r = xasprintf("401 Unauthorized: the API key was rejected by %s (%s)",
		    prov, msg);
	else if (status == 404 && strcmp(prov, "azure") == 0)
		r = xasprintf("404 Not Found: no deployment '%s' at that endpoint, "
		    "or a wrong api-version (%s)", model, msg);
	else if (status == 404)
		r = xasprintf("404 Not Found: %s has no model '%s' at that URL (%s)",
		    prov, model, msg);
	else if (status == 429 && type != NULL &&
	    strcmp(type, "insufficient_quota") == 0)
		r = xasprintf("429 Too Many Requests: quota exhausted; check the "
		    "account's plan and billing (%s)", msg);
	else
		r = xasprintf("%ld %s: %s", status, status_name(status), msg);
	free(msg);
	free(type);
	llm_one_line(r, 400);
	return r;
}

char *
llm_unreachable_hint(const struct llm_config *cfg)
{
	const char *prov = cfg->provider ? cfg->provider : "";
	const char *var = strcmp(prov, "openai") == 0 ? "OPENAI_BASE_URL" :
	    strcmp(prov, "azure") == 0 ? "AZURE_OPENAI_ENDPOINT" :
	    strcmp(prov, "anthropic") == 0 ? "ANTHROPIC_BASE_URL" :
	    "base_url in the config";
	char *r = xasprintf("is the %s running? check --base-url / %s%s%s%s",
	    strcmp(prov, "ollama") == 0 ? "ollama server" : "server", var,
	    cfg->base_url_from ? " (this URL is from " : "",
	    cfg->base_url_from ? cfg->base_url_from : "",
	    cfg->base_url_from ? ")" : "");

	llm_one_line(r, 400);
	return r;
}

/* ------------------------------------------------------------ decoder */

static void stream_error(struct llm_dec *d, const char *data, size_t len);

struct llm_dec *
llm_dec_new(const struct llm_codec *c, const struct llm_sink *sink, void *arg)
{
	struct llm_dec *d = xcalloc(1, sizeof *d);

	assert(c->max_slots > 0 && c->max_slots <= LLM_DEC_SLOTS);
	d->codec = c;
	d->sink = sink;
	d->arg = arg;
	if (c->priv_size > 0)
		d->priv = xcalloc(1, c->priv_size);
	d->st = LLM_DEC_MORE;
	return d;
}

void
llm_dec_free(struct llm_dec *d)
{
	if (d == NULL)
		return;
	for (int i = 0; i < d->nslots; i++) {
		free(d->slot[i].id);
		free(d->slot[i].name);
		buf_free(&d->slot[i].args);
		if (d->slot[i].code != NULL)
			llm_argcode_free(d->slot[i].code);
		free(d->slot[i].code);
	}
	free(d->priv);
	free(d->stop);
	free((char *)d->err.msg);
	free(d);
}

enum llm_dec_status
llm_dec_event(struct llm_dec *d, const char *type, const char *data, size_t len)
{
	if (d->st != LLM_DEC_MORE)
		return d->st;
	while (len > 0 && (*data == ' ' || *data == '\t' || *data == '\n' ||
	    *data == '\r')) {
		data++;
		len--;
	}
	while (len > 0 && (data[len - 1] == ' ' || data[len - 1] == '\t' ||
	    data[len - 1] == '\n' || data[len - 1] == '\r'))
		len--;
	/* Anthropic's error event, old llama.cpp's "error:" field. */
	if (strcmp(type, "error") == 0)
		stream_error(d, data, len);
	else
		d->codec->event(d, type, data, len);
	return d->st;
}

enum llm_dec_status
llm_dec_eof(struct llm_dec *d)
{
	if (d->st != LLM_DEC_MORE)
		return d->st;
	d->codec->eof(d);
	if (d->st == LLM_DEC_MORE)
		llm_dec_fail(d, LLM_ERR_CUT, 1,
		    "the stream ended before the reply was complete");
	return d->st;
}

const char *
llm_dec_stop_reason(const struct llm_dec *d)
{
	return d->stop != NULL ? d->stop : d->codec->default_stop;
}

const struct llm_error *
llm_dec_error(const struct llm_dec *d)
{
	return &d->err;
}

static void
pass_text(void *arg, const char *s, size_t n)
{
	struct llm_dec *d = arg;
	d->sink->text(d->arg, s, n);
}

void
llm_dec_text(struct llm_dec *d, const char *s, size_t n)
{
	if (d->st != LLM_DEC_MORE || n == 0)
		return;
	utf8carry_feed(&d->carry, s, n, pass_text, d);
}

void
llm_dec_reasoning(struct llm_dec *d, const char *s, size_t n)
{
	if (d->st != LLM_DEC_MORE || n == 0 || d->sink->reasoning == NULL)
		return;
	d->sink->reasoning(d->arg, s, n);
}

void
llm_dec_reasoning_item(struct llm_dec *d, const cJSON *item)
{
	char *t;

	if (d->st != LLM_DEC_MORE || d->sink->reasoning_item == NULL ||
	    !cJSON_IsObject(item))
		return;
	if ((t = cJSON_PrintUnformatted(item)) == NULL)
		fatal("out of memory (reasoning)");
	d->sink->reasoning_item(d->arg, t);
	free(t);
}

struct llm_slot *
llm_dec_slot_new(struct llm_dec *d, int index, int tool)
{
	struct llm_slot *s;

	if (d->nslots >= d->codec->max_slots)
		return NULL;
	s = &d->slot[d->nslots++];
	memset(s, 0, sizeof *s);
	s->index = index;
	s->tool = tool;
	s->open = 1;
	buf_init(&s->args, LLM_DEC_ARGS_MAX);
	return s;
}

struct llm_slot *
llm_dec_slot_find(struct llm_dec *d, int index)
{
	for (int i = d->nslots - 1; i >= 0; i--)
		if (d->slot[i].index == index)
			return &d->slot[i];
	return NULL;
}

void
llm_dec_slot_names(struct llm_slot *s, const char *id, const char *name)
{
	if (id != NULL && *id != '\0' && s->id == NULL)
		s->id = xstrdup(id);
	if (name != NULL && *name != '\0' && s->name == NULL)
		s->name = xstrdup(name);
}

/* The code of a python_exec call as its arguments stream, for the
 * frontends to show before the call is whole. */
static void
slot_code(struct llm_dec *d, struct llm_slot *s, const char *p, size_t n)
{
	const char *code;
	size_t len;

	if (!s->tool || d->sink->tool_code == NULL)
		return;
	if (s->code == NULL) {
		s->code = xmalloc(sizeof *s->code);
		llm_argcode_init(s->code, LLM_DEC_ARGS_MAX);
	}
	if (s->args.len == n)	/* the arguments (re)started with p */
		llm_argcode_reset(s->code);
	if (llm_argcode_feed(s->code, p, n) == 0)
		return;
	code = llm_argcode_text(s->code, &len);
	d->sink->tool_code(d->arg, (int)(s - d->slot), code, len);
}

int
llm_dec_slot_args(struct llm_dec *d, struct llm_slot *s, const char *p, size_t n)
{
	if (d->st != LLM_DEC_MORE)
		return -1;
	if (n > LLM_DEC_ARGS_TOTAL - d->args_total) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0,
		    "tool call arguments too big (over %u MiB in one reply)",
		    LLM_DEC_ARGS_TOTAL >> 20);
		return -1;
	}
	d->args_total += n;
	if (buf_add(&s->args, p, n) < 0) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0,
		    "tool call arguments too big (over %u MiB)",
		    LLM_DEC_ARGS_MAX >> 20);
		return -1;
	}
	slot_code(d, s, p, n);
	return 0;
}

void
llm_dec_slot_close(struct llm_dec *d, struct llm_slot *s)
{
	char idbuf[32];
	const char *id = s->id;

	if (d->st != LLM_DEC_MORE || !s->open)
		return;
	s->open = 0;
	if (!s->tool)
		return;
	if (id == NULL) {
		/* Some servers send no id: one per position in the reply. */
		snprintf(idbuf, sizeof idbuf, "call_%d", (int)(s - d->slot) + 1);
		id = idbuf;
	}
	utf8carry_flush(&d->carry, pass_text, d);
	d->sink->tool_call(d->arg, id, s->name ? s->name : "",
	    s->args.len ? buf_str(&s->args) : "{}");
}

struct usage *
llm_dec_usage(struct llm_dec *d)
{
	d->have_usage = 1;
	return &d->usage;
}

void
llm_dec_set_stop(struct llm_dec *d, const char *reason)
{
	if (d->st != LLM_DEC_MORE || reason == NULL || *reason == '\0')
		return;
	free(d->stop);
	d->stop = xstrdup(reason);
}

void
llm_dec_end(struct llm_dec *d, int close_open)
{
	if (d->st != LLM_DEC_MORE)
		return;
	utf8carry_flush(&d->carry, pass_text, d);
	for (int i = 0; i < d->nslots && d->st == LLM_DEC_MORE; i++) {
		if (close_open)
			llm_dec_slot_close(d, &d->slot[i]);
		else
			d->slot[i].open = 0;	/* cut short: never run */
	}
	d->st = LLM_DEC_END;
	if (d->have_usage && d->sink->usage != NULL)
		d->sink->usage(d->arg, &d->usage);
}

void
llm_dec_fail(struct llm_dec *d, enum llm_err kind, int retryable,
    const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (d->st != LLM_DEC_MORE)
		return;
	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	llm_one_line(msg, 400);
	d->st = LLM_DEC_ERROR;
	d->err.kind = kind;
	d->err.http_status = 0;
	d->err.msg = msg;
	d->err.retryable = retryable;
}

/* An error the stream itself reported (body of any known shape). */
static void
stream_error(struct llm_dec *d, const char *data, size_t len)
{
	char *type = NULL, *msg = llm_error_body_message(data, len, &type);
	enum llm_err k = llm_error_kind(200, data, len);

	/* Before any output a transient error is worth another try. */
	llm_dec_fail(d, k, k == LLM_ERR_SERVER || k == LLM_ERR_RATE,
	    "the model's stream reported an error: %s", msg);
	free(msg);
	free(type);
}

cJSON *
llm_dec_json(struct llm_dec *d, const char *data, size_t len)
{
	cJSON *j;
	const cJSON *e, *o, *t;

	if (d->st != LLM_DEC_MORE || len == 0)
		return NULL;
	j = cJSON_ParseWithLength(data, len);
	if (j == NULL) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0,
		    "the model's stream is not JSON: %.*s",
		    (int)(len < 80 ? len : 80), data);
		return NULL;
	}
	/* An error in any of its shapes, checked before anything else. */
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	o = cJSON_GetObjectItemCaseSensitive(j, "object");
	t = cJSON_GetObjectItemCaseSensitive(j, "type");
	if ((e != NULL && !cJSON_IsNull(e) && !cJSON_IsFalse(e)) ||
	    (cJSON_IsString(o) && strcmp(o->valuestring, "error") == 0) ||
	    (cJSON_IsString(t) && strcmp(t->valuestring, "error") == 0)) {
		stream_error(d, data, len);
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}
