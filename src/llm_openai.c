/* llm_openai: OpenAI Chat Completions, Azure OpenAI (classic deployment
 * URLs and the v1 API) and OpenAI-compatible local servers (Ollama,
 * llama.cpp, vLLM). Pure encode and decode; llm.c does the transport.
 * The decoder follows PROTOCOLS.md 1.5 and tolerates 4.4's quirks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/buf.h"
#include "terp/llm_provider.h"
#include "terp/util.h"

#define ARGS_MAX	(4 * 1024 * 1024)	/* one tool call's arguments */
#define MAX_CALLS	64

static const cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = get(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static cJSON *
tool_json(enum llm_openai_flavor f)
{
	cJSON *t = cJSON_CreateObject(), *fn, *p, *props, *code, *req;

	(void)f;
	cJSON_AddStringToObject(t, "type", "function");
	fn = cJSON_AddObjectToObject(t, "function");
	cJSON_AddStringToObject(fn, "name", LLM_TOOL_NAME);
	cJSON_AddStringToObject(fn, "description", llm_tool_description);
	p = cJSON_AddObjectToObject(fn, "parameters");
	cJSON_AddStringToObject(p, "type", "object");
	props = cJSON_AddObjectToObject(p, "properties");
	code = cJSON_AddObjectToObject(props, "code");
	cJSON_AddStringToObject(code, "type", "string");
	cJSON_AddStringToObject(code, "description", llm_code_description);
	req = cJSON_AddArrayToObject(p, "required");
	cJSON_AddItemToArray(req, cJSON_CreateString("code"));
	return t;
}

static int
valid_json(const char *s)
{
	cJSON *j = cJSON_Parse(s);
	int ok = j != NULL;
	cJSON_Delete(j);
	return ok;
}

cJSON *
llm_openai_encode(enum llm_openai_flavor f, const char *model,
    const char *system, const cJSON *messages)
{
	cJSON *body = cJSON_CreateObject(), *msgs, *tools, *so;
	const cJSON *m;

	if (model != NULL && *model != '\0')
		cJSON_AddStringToObject(body, "model", model);
	msgs = cJSON_AddArrayToObject(body, "messages");
	if (system != NULL && *system != '\0') {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "role", "system");
		cJSON_AddStringToObject(s, "content", system);
		cJSON_AddItemToArray(msgs, s);
	}
	cJSON_ArrayForEach(m, messages) {
		const char *role = str(m, "role");
		cJSON *o;

		if (role == NULL)
			continue;
		o = cJSON_CreateObject();
		if (strcmp(role, "tool") == 0) {
			const char *c = str(m, "content");
			cJSON_AddStringToObject(o, "role", "tool");
			cJSON_AddStringToObject(o, "tool_call_id",
			    str(m, "tool_call_id") ? str(m, "tool_call_id") : "");
			/* Chat Completions has no error flag: say it. */
			if (cJSON_IsTrue(get(m, "is_error")) && c != NULL &&
			    strncasecmp(c, "error", 5) != 0) {
				char *e = xasprintf("Error: %s", c);
				cJSON_AddStringToObject(o, "content", e);
				free(e);
			} else
				cJSON_AddStringToObject(o, "content", c ? c : "");
		} else if (strcmp(role, "assistant") == 0) {
			const cJSON *calls = get(m, "tool_calls"), *c;
			const char *content = str(m, "content");
			int ncalls = cJSON_GetArraySize(calls);

			cJSON_AddStringToObject(o, "role", "assistant");
			if (content != NULL && *content != '\0')
				cJSON_AddStringToObject(o, "content", content);
			else if (ncalls > 0)
				cJSON_AddNullToObject(o, "content");
			else
				cJSON_AddStringToObject(o, "content", "");
			if (ncalls > 0) {
				cJSON *tc = cJSON_AddArrayToObject(o, "tool_calls");
				cJSON_ArrayForEach(c, calls) {
					cJSON *t = cJSON_CreateObject(), *fn;
					const char *args = str(c, "arguments");
					if (args == NULL || *args == '\0')
						args = "{}";
					/* Ollama rejects a history whose arguments
					 * are not JSON (400); the tool result
					 * already told the model what went wrong. */
					if (f == LLM_LOCAL && !valid_json(args))
						args = "{}";
					cJSON_AddStringToObject(t, "id",
					    str(c, "id") ? str(c, "id") : "");
					cJSON_AddStringToObject(t, "type", "function");
					fn = cJSON_AddObjectToObject(t, "function");
					cJSON_AddStringToObject(fn, "name",
					    str(c, "name") ? str(c, "name") : "");
					cJSON_AddStringToObject(fn, "arguments", args);
					cJSON_AddItemToArray(tc, t);
				}
			}
		} else {
			const char *c = str(m, "content");
			cJSON_AddStringToObject(o, "role", "user");
			cJSON_AddStringToObject(o, "content", c ? c : "");
		}
		cJSON_AddItemToArray(msgs, o);
	}
	tools = cJSON_AddArrayToObject(body, "tools");
	cJSON_AddItemToArray(tools, tool_json(f));
	/* Ollama ignores tool_choice and some vLLM setups reject "auto"
	 * without extra flags: only the hosted APIs get it. */
	if (f != LLM_LOCAL)
		cJSON_AddStringToObject(body, "tool_choice", "auto");
	cJSON_AddTrueToObject(body, "stream");
	so = cJSON_AddObjectToObject(body, "stream_options");
	cJSON_AddTrueToObject(so, "include_usage");
	return body;
}

static char *
trim_slash(const char *s)
{
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		n--;
	return xstrndup(s, n);
}

char *
llm_openai_url(enum llm_openai_flavor f, const struct llm_config *cfg,
    char **err)
{
	char *base, *url;

	if (f == LLM_AZURE) {
		if (cfg->base_url == NULL || *cfg->base_url == '\0') {
			*err = xstrdup("azure: no endpoint (set AZURE_OPENAI_ENDPOINT "
			    "or base_url)");
			return NULL;
		}
		base = trim_slash(cfg->base_url);
		/* v1 style: .../openai/v1, the deployment goes in "model". */
		if (strstr(base, "/openai/v1") != NULL)
			url = xasprintf("%s/chat/completions", base);
		else {
			if (cfg->model == NULL || *cfg->model == '\0') {
				free(base);
				*err = xstrdup("azure: no deployment (set "
				    "AZURE_OPENAI_DEPLOYMENT or --model)");
				return NULL;
			}
			/* Classic: the endpoint may already end in /openai. */
			{
				size_t n = strlen(base);
				if (n >= 7 && strcmp(base + n - 7, "/openai") == 0)
					base[n - 7] = '\0';
			}
			url = xasprintf("%s/openai/deployments/%s/chat/completions"
			    "?api-version=%s", base, cfg->model,
			    cfg->api_version && *cfg->api_version ?
			    cfg->api_version : "2024-10-21");
		}
		free(base);
		return url;
	}
	if (cfg->base_url != NULL && *cfg->base_url != '\0')
		base = trim_slash(cfg->base_url);
	else
		base = xstrdup(f == LLM_LOCAL ? "http://localhost:11434/v1" :
		    "https://api.openai.com/v1");
	if (strlen(base) > 17 &&
	    strcmp(base + strlen(base) - 17, "/chat/completions") == 0)
		url = xstrdup(base);
	else
		url = xasprintf("%s/chat/completions", base);
	free(base);
	return url;
}

static int
prepare(enum llm_openai_flavor f, const struct llm_config *cfg,
    const char *system, const cJSON *messages, struct llm_wire *w, char **err)
{
	cJSON *body;
	int classic_azure;

	w->url = llm_openai_url(f, cfg, err);
	if (w->url == NULL)
		return -1;
	classic_azure = f == LLM_AZURE && strstr(w->url, "/deployments/") != NULL;
	body = llm_openai_encode(f, classic_azure ? NULL : cfg->model, system,
	    messages);
	w->body = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	if (w->body == NULL)
		fatal("out of memory");
	w->body_len = strlen(w->body);
	llm_wire_header(w, "Content-Type: application/json");
	llm_wire_header(w, "Accept: text/event-stream");
	if (cfg->api_key != NULL && *cfg->api_key != '\0') {
		if (f == LLM_AZURE)
			llm_wire_header(w, "api-key: %s", cfg->api_key);
		else
			llm_wire_header(w, "Authorization: Bearer %s", cfg->api_key);
	}
	w->what = xasprintf("%s %s", f == LLM_AZURE ? "azure" :
	    f == LLM_LOCAL ? "local" : "openai", cfg->model ? cfg->model : "");
	return 0;
}

static int
prep_openai(const struct llm_config *c, const char *s, const cJSON *m,
    struct llm_wire *w, char **e)
{
	return prepare(LLM_OPENAI, c, s, m, w, e);
}

static int
prep_azure(const struct llm_config *c, const char *s, const cJSON *m,
    struct llm_wire *w, char **e)
{
	return prepare(LLM_AZURE, c, s, m, w, e);
}

static int
prep_local(const struct llm_config *c, const char *s, const cJSON *m,
    struct llm_wire *w, char **e)
{
	return prepare(LLM_LOCAL, c, s, m, w, e);
}

/* The decoder. Tool calls are kept in slots until the reply ends:
 * arguments come in fragments cut anywhere (inside escapes, inside
 * UTF-8 sequences), so they are only handed over whole. */

struct slot {
	int		 index;		/* -1 when the server sent none */
	char		*id, *name;
	struct buf	 args;
};

struct dec {
	const struct llm_sink	*sink;
	void			*arg;
	struct slot		 slots[MAX_CALLS];
	int			 nslots;
	char			*finish;
	char			*err;
	int			 retryable;
	int			 have_usage;
	struct usage		 usage;
	int			 ended;
};

static void *
dec_new(const struct llm_sink *sink, void *arg)
{
	struct dec *d = xcalloc(1, sizeof *d);
	d->sink = sink;
	d->arg = arg;
	return d;
}

static void
dec_free(void *p)
{
	struct dec *d = p;

	if (d == NULL)
		return;
	for (int i = 0; i < d->nslots; i++) {
		free(d->slots[i].id);
		free(d->slots[i].name);
		buf_free(&d->slots[i].args);
	}
	free(d->finish);
	free(d->err);
	free(d);
}

static enum llm_dec_status
dec_fail(struct dec *d, int retryable, const char *fmt, const char *arg)
{
	free(d->err);
	d->err = xasprintf(fmt, arg);
	llm_one_line(d->err, 400);
	d->retryable = retryable;
	return LLM_DEC_ERROR;
}

static struct slot *
new_slot(struct dec *d, int index)
{
	struct slot *s;

	if (d->nslots == MAX_CALLS)
		return NULL;
	s = &d->slots[d->nslots++];
	memset(s, 0, sizeof *s);
	s->index = index;
	buf_init(&s->args, ARGS_MAX);
	return s;
}

/* Finds the slot a tool call delta belongs to (PROTOCOLS.md 6.3). */
static struct slot *
find_slot(struct dec *d, int index, const char *id, const char *name)
{
	struct slot *s = NULL;

	if (index >= 0) {
		for (int i = d->nslots - 1; i >= 0; i--)
			if (d->slots[i].index == index) {
				s = &d->slots[i];
				break;
			}
		/* A different id (or name) under a used index: servers that
		 * number every call 0. */
		if (s != NULL && ((id != NULL && s->id != NULL &&
		    strcmp(id, s->id) != 0) || (id == NULL && name != NULL &&
		    s->name != NULL && strcmp(name, s->name) != 0 &&
		    s->args.len > 0)))
			s = NULL;
		return s != NULL ? s : new_slot(d, index);
	}
	if (id != NULL) {
		for (int i = 0; i < d->nslots; i++)
			if (d->slots[i].id && strcmp(d->slots[i].id, id) == 0)
				return &d->slots[i];
		return new_slot(d, -1);
	}
	/* Neither index nor id: a fragment of the last call, unless that
	 * call is already whole and this delta names a tool again (old
	 * Ollama sent whole calls without index or id). */
	if (d->nslots > 0) {
		s = &d->slots[d->nslots - 1];
		if (name == NULL || s->args.len == 0 || !valid_json(buf_str(&s->args)))
			return s;
	}
	return new_slot(d, -1);
}

static const char *
nonempty(const char *s)
{
	return s != NULL && *s != '\0' ? s : NULL;
}

static enum llm_dec_status
tool_delta(struct dec *d, const cJSON *t)
{
	const cJSON *idx = get(t, "index"), *fn = get(t, "function"), *a;
	const char *id = nonempty(str(t, "id")), *name = NULL;
	struct slot *s;

	if (fn != NULL) {
		name = nonempty(str(fn, "name"));
		if (id == NULL)		/* old llama.cpp put it here */
			id = nonempty(str(fn, "id"));
	}
	s = find_slot(d, cJSON_IsNumber(idx) ? idx->valueint : -1, id, name);
	if (s == NULL)
		return dec_fail(d, 0, "too many tool calls in one reply%s", "");
	if (id != NULL && s->id == NULL)
		s->id = xstrdup(id);
	if (name != NULL && s->name == NULL)
		s->name = xstrdup(name);
	a = fn != NULL ? get(fn, "arguments") : NULL;
	if (cJSON_IsString(a)) {
		if (buf_adds(&s->args, a->valuestring) < 0)
			return dec_fail(d, 0, "tool call arguments too big%s", "");
	} else if (cJSON_IsObject(a)) {
		/* Non-conformant proxies send an object. */
		char *p = cJSON_PrintUnformatted(a);
		int r = buf_adds(&s->args, p);
		free(p);
		if (r < 0)
			return dec_fail(d, 0, "tool call arguments too big%s", "");
	}
	return LLM_DEC_MORE;
}

static void
take_usage(struct dec *d, const cJSON *u)
{
	const cJSON *v, *det;

	if (!cJSON_IsObject(u))
		return;
	d->have_usage = 1;
	if (cJSON_IsNumber(v = get(u, "prompt_tokens")))
		d->usage.input_tokens = (long)v->valuedouble;
	if (cJSON_IsNumber(v = get(u, "completion_tokens")))
		d->usage.output_tokens = (long)v->valuedouble;
	det = get(u, "prompt_tokens_details");
	if (cJSON_IsObject(det) && cJSON_IsNumber(v = get(det, "cached_tokens")))
		d->usage.cached_tokens = (long)v->valuedouble;
}

/* The reply is over: hand over the tool calls, whole, in order. */
static enum llm_dec_status
finalize(struct dec *d)
{
	if (d->ended)
		return LLM_DEC_END;
	d->ended = 1;
	for (int i = 0; i < d->nslots; i++) {
		struct slot *s = &d->slots[i];
		char idbuf[32];
		const char *id = s->id;
		if (id == NULL) {
			snprintf(idbuf, sizeof idbuf, "call_%d", i + 1);
			id = idbuf;
		}
		d->sink->tool_call(d->arg, id, s->name ? s->name : "",
		    s->args.len ? buf_str(&s->args) : "{}");
	}
	if (d->have_usage && d->sink->usage != NULL)
		d->sink->usage(d->arg, &d->usage);
	return LLM_DEC_END;
}

/* An error object of any shape: {"error":{...}}, {"error":"..."},
 * {"object":"error",...}. */
static enum llm_dec_status
stream_error(struct dec *d, const cJSON *j, const char *raw, size_t len)
{
	char *type = NULL, *msg;
	int retry = 0;
	enum llm_dec_status st;

	msg = llm_error_body_message(raw, len, &type);
	(void)j;
	if (type != NULL)
		retry = strstr(type, "overloaded") || strstr(type, "server_error") ||
		    strstr(type, "unavailable") || strcmp(type, "500") == 0 ||
		    strcmp(type, "502") == 0 || strcmp(type, "503") == 0;
	st = dec_fail(d, retry, "the model's stream reported an error: %s", msg);
	free(msg);
	free(type);
	return st;
}

static enum llm_dec_status
dec_event(void *p, const char *type, const char *data, size_t len)
{
	struct dec *d = p;
	const char *s = data;
	cJSON *j;
	const cJSON *choices, *c, *e;
	enum llm_dec_status st = LLM_DEC_MORE;

	if (d->ended)
		return LLM_DEC_END;
	while (len > 0 && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
		s++;
		len--;
	}
	if (strcmp(type, "error") == 0)
		return stream_error(d, NULL, s, len);
	if (len == 0)
		return LLM_DEC_MORE;
	if (len >= 6 && strncmp(s, "[DONE]", 6) == 0)
		return finalize(d);
	j = cJSON_ParseWithLength(s, len);
	if (j == NULL)
		return dec_fail(d, 0, "the model's stream is not JSON: %.80s", s);
	e = get(j, "error");
	if ((e != NULL && !cJSON_IsNull(e) && !cJSON_IsFalse(e)) ||
	    (str(j, "object") && strcmp(str(j, "object"), "error") == 0)) {
		st = stream_error(d, j, s, len);
		cJSON_Delete(j);
		return st;
	}
	take_usage(d, get(j, "usage"));
	choices = get(j, "choices");
	cJSON_ArrayForEach(c, (cJSON_IsArray(choices) ? choices : NULL)) {
		const cJSON *delta = get(c, "delta"), *tcs, *t, *fr, *idx;
		const char *txt;

		idx = get(c, "index");
		if (cJSON_IsNumber(idx) && idx->valueint != 0)
			continue;	/* n is 1: only choice 0 */
		if (cJSON_IsObject(delta)) {
			if ((txt = str(delta, "content")) != NULL && *txt)
				d->sink->text(d->arg, txt, strlen(txt));
			if ((txt = str(delta, "refusal")) != NULL && *txt)
				d->sink->text(d->arg, txt, strlen(txt));
			tcs = get(delta, "tool_calls");
			cJSON_ArrayForEach(t, (cJSON_IsArray(tcs) ? tcs : NULL)) {
				if ((st = tool_delta(d, t)) != LLM_DEC_MORE)
					goto out;
			}
		}
		fr = get(c, "finish_reason");
		if (cJSON_IsString(fr) && *fr->valuestring) {
			free(d->finish);
			d->finish = xstrdup(fr->valuestring);
		}
	}
out:
	cJSON_Delete(j);
	return st;
}

static enum llm_dec_status
dec_eof(void *p)
{
	struct dec *d = p;

	if (d->ended)
		return LLM_DEC_END;
	/* A finish_reason came but no [DONE]: complete enough. */
	if (d->finish != NULL)
		return finalize(d);
	return dec_fail(d, 1, "the stream ended before the reply was complete%s",
	    "");
}

static const char *
dec_stop_reason(void *p)
{
	struct dec *d = p;
	return d->finish ? d->finish : "stop";
}

static const char *
dec_error(void *p, int *retryable)
{
	struct dec *d = p;
	if (retryable != NULL)
		*retryable = d->retryable;
	return d->err ? d->err : "unknown stream error";
}

const struct llm_provider llm_openai_provider = {
	"openai", prep_openai, dec_new, dec_event, dec_eof, dec_stop_reason,
	dec_error, dec_free,
};

const struct llm_provider llm_azure_provider = {
	"azure", prep_azure, dec_new, dec_event, dec_eof, dec_stop_reason,
	dec_error, dec_free,
};

const struct llm_provider llm_ollama_provider = {
	"ollama", prep_local, dec_new, dec_event, dec_eof, dec_stop_reason,
	dec_error, dec_free,
};
