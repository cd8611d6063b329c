/* llm_openai: the codec of OpenAI Chat Completions, Azure OpenAI
 * (classic deployment URLs and the v1 API) and OpenAI-compatible local
 * servers (Ollama, llama.cpp, vLLM): the request body, URL and headers,
 * and the reading of the streamed chunks. What all APIs share (slots,
 * usage, errors, UTF-8) is in llm_decode.c; llm_http.c does the
 * transport. The chunk reader tolerates what real servers send besides
 * the documented shape: tool calls without index or id, several calls
 * numbered 0, names and ids repeated on every delta, arguments as a JSON
 * object, choices that are null or empty, deltas missing (Azure's filter
 * annotations), and a finish reason without the final [DONE]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/llm_cache.h"
#include "terp/llm_provider.h"
#include "terp/llm_url.h"
#include "terp/util.h"

#define MAX_CALLS	LLM_DEC_SLOTS

static cJSON *
tool_json(enum llm_openai_flavor f)
{
	cJSON *t = cJSON_CreateObject(), *fn;

	(void)f;
	cJSON_AddStringToObject(t, "type", "function");
	fn = cJSON_AddObjectToObject(t, "function");
	cJSON_AddStringToObject(fn, "name", LLM_TOOL_NAME);
	cJSON_AddStringToObject(fn, "description", llm_tool_description);
	cJSON_AddItemToObject(fn, "parameters", llm_tool_schema());
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
		const char *role = json_str(m, "role");
		cJSON *o;

		if (role == NULL)
			continue;
		o = cJSON_CreateObject();
		if (strcmp(role, "tool") == 0) {
			const char *c = json_str(m, "content");
			cJSON_AddStringToObject(o, "role", "tool");
			cJSON_AddStringToObject(o, "tool_call_id",
			    json_str(m, "tool_call_id") ? json_str(m, "tool_call_id") : "");
			/* Chat Completions has no error flag: say it. */
			if (cJSON_IsTrue(json_get(m, "is_error")) && c != NULL &&
			    strncasecmp(c, "error", 5) != 0) {
				char *e = xasprintf("Error: %s", c);
				cJSON_AddStringToObject(o, "content", e);
				free(e);
			} else
				cJSON_AddStringToObject(o, "content", c ? c : "");
		} else if (strcmp(role, "assistant") == 0) {
			const cJSON *calls = json_get(m, "tool_calls"), *c;
			const char *content = json_str(m, "content");
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
					const char *args = json_str(c, "arguments");
					if (args == NULL || *args == '\0')
						args = "{}";
					/* Ollama rejects a history whose arguments
					 * are not JSON (400); the tool result
					 * already told the model what went wrong. */
					if (f == LLM_LOCAL && !valid_json(args))
						args = "{}";
					cJSON_AddStringToObject(t, "id",
					    json_str(c, "id") ? json_str(c, "id") : "");
					cJSON_AddStringToObject(t, "type", "function");
					fn = cJSON_AddObjectToObject(t, "function");
					cJSON_AddStringToObject(fn, "name",
					    json_str(c, "name") ? json_str(c, "name") : "");
					cJSON_AddStringToObject(fn, "arguments", args);
					cJSON_AddItemToArray(tc, t);
				}
			}
		} else {
			const char *c = json_str(m, "content");
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

/* ---- The body as text --------------------------------------------
 *
 * The request body is written straight from the conversation, byte for
 * byte what cJSON_PrintUnformatted(llm_openai_encode(...)) gives (a unit
 * test holds them equal), without building and freeing a copy of the
 * whole history as a cJSON tree on every turn: that tree was most of
 * terp's own CPU per turn in a long session. */

#define BODY_MAX	((size_t)1 << 31)

/* Strings as cJSON prints them (json_text_str). A body stays far below
 * BODY_MAX (the context window bounds it long before), so an append
 * past it is not checked for. */
static void
put_str(struct buf *b, const char *s)
{
	(void)json_text_str(b, s);
}

/* "key":"value" with the comma before it unless first. */
static void
put_kv(struct buf *b, int first, const char *key, const char *val)
{
	if (!first)
		buf_addc(b, ',');
	put_str(b, key);
	buf_addc(b, ':');
	put_str(b, val);
}

static void
put_message(struct buf *b, enum llm_openai_flavor f, const cJSON *m)
{
	const char *role = json_str(m, "role");

	buf_addc(b, '{');
	if (strcmp(role, "tool") == 0) {
		const char *c = json_str(m, "content");
		put_kv(b, 1, "role", "tool");
		put_kv(b, 0, "tool_call_id", json_str(m, "tool_call_id") ? json_str(m, "tool_call_id") : "");
		/* Chat Completions has no error flag: say it. */
		if (cJSON_IsTrue(json_get(m, "is_error")) && c != NULL &&
		    strncasecmp(c, "error", 5) != 0) {
			char *e = xasprintf("Error: %s", c);
			put_kv(b, 0, "content", e);
			free(e);
		} else
			put_kv(b, 0, "content", c ? c : "");
	} else if (strcmp(role, "assistant") == 0) {
		const cJSON *calls = json_get(m, "tool_calls"), *c;
		const char *content = json_str(m, "content");
		int ncalls = cJSON_GetArraySize(calls), first = 1;

		put_kv(b, 1, "role", "assistant");
		if (content != NULL && *content != '\0')
			put_kv(b, 0, "content", content);
		else if (ncalls > 0)
			buf_adds(b, ",\"content\":null");
		else
			put_kv(b, 0, "content", "");
		if (ncalls > 0) {
			buf_adds(b, ",\"tool_calls\":[");
			cJSON_ArrayForEach(c, calls) {
				const char *args = json_str(c, "arguments");
				if (args == NULL || *args == '\0')
					args = "{}";
				/* Ollama rejects a history whose arguments are
				 * not JSON (400). */
				if (f == LLM_LOCAL && !valid_json(args))
					args = "{}";
				if (!first)
					buf_addc(b, ',');
				first = 0;
				buf_addc(b, '{');
				put_kv(b, 1, "id", json_str(c, "id") ? json_str(c, "id") : "");
				put_kv(b, 0, "type", "function");
				buf_adds(b, ",\"function\":{");
				put_kv(b, 1, "name", json_str(c, "name") ? json_str(c, "name") : "");
				put_kv(b, 0, "arguments", args);
				buf_adds(b, "}}");
			}
			buf_addc(b, ']');
		}
	} else {
		const char *c = json_str(m, "content");
		put_kv(b, 1, "role", "user");
		put_kv(b, 0, "content", c ? c : "");
	}
	buf_addc(b, '}');
}

/* The messages' bytes, each followed by a comma (none for a message
 * without a role: it is left out), encoded once and reused while they
 * stay the same (llm_cache.h). One cache for the process: requests are
 * made from the loop's thread, one at a time. */
static struct llm_cache *cache;

static const char *
cache_encode(enum llm_openai_flavor f, const cJSON *messages, size_t *len)
{
	const cJSON *m;
	struct buf b;

	if (cache == NULL)
		cache = llm_cache_new();
	(void)llm_cache_sync(cache, (int)f, messages, &m);
	buf_init(&b, BODY_MAX);
	for (; m != NULL; m = m->next) {
		buf_reset(&b);
		if (json_str(m, "role") != NULL) {
			put_message(&b, f, m);
			buf_addc(&b, ',');
		}
		llm_cache_add(cache, m, b.data, b.len);
	}
	buf_free(&b);
	return llm_cache_all(cache, len);
}

/* What the last bodies were built from, by their tags (llm_cache.h's
 * body storage; llm_openai_body_info's id): a body is its head (up to
 * the first message's bytes), the cache's bytes of generation gen's
 * first n entries less the last comma, and a tail. Two bodies of one
 * head version then begin alike over the head and the entries the cache
 * kept since the older one (llm_cache_same): so much of a body need not
 * be compared with it (the journal's delta) nor written over it (the
 * storage it comes back in holds it). A ring: a tag not found is a body
 * nobody knows, compared and written whole. */
#define BUILT_KEEP	16

struct built {
	uint64_t id;
	uint64_t gen;
	int	 n;
	uint64_t head_ver;
	size_t	 head_len;
};

static struct built built[BUILT_KEEP];
static uint64_t last_built;	/* the id of the last body built */
static struct buf head;		/* its head's bytes */
static uint64_t head_ver;	/* changes with them */

/* How many leading bytes the body being built (its entries added, its
 * head in head) shares with the body tagged id, by what both were built
 * from; 0 when unknown. */
static size_t
shared_with(uint64_t id)
{
	const struct built *r = &built[id % BUILT_KEEP];
	size_t enc;

	if (id == 0 || r->id != id || r->head_ver != head_ver)
		return 0;
	enc = llm_cache_same(cache, r->gen, r->n);
	/* the comma after the last of them may be either body's end */
	return r->head_len + (enc > 0 ? enc - 1 : 0);
}

/* The body's head: its first bytes, before the messages' */
static void
put_head(struct buf *b, const char *model, const char *system, int any)
{
	buf_addc(b, '{');
	if (model != NULL && *model != '\0') {
		put_kv(b, 1, "model", model);
		buf_addc(b, ',');
	}
	buf_adds(b, "\"messages\":[");
	if (system != NULL && *system != '\0') {
		/* the same prompt every turn: escaped once */
		static char *sys_src, *sys_enc;
		if (sys_src == NULL || strcmp(sys_src, system) != 0) {
			struct buf s;
			buf_init(&s, BODY_MAX);
			put_str(&s, system);
			free(sys_src);
			free(sys_enc);
			sys_src = xstrdup(system);
			sys_enc = buf_take(&s);
		}
		buf_adds(b, "{\"role\":\"system\",\"content\":");
		buf_adds(b, sys_enc);
		buf_addc(b, '}');
		if (any)
			buf_addc(b, ',');
	}
}

char *
llm_openai_body_info(enum llm_openai_flavor f, const char *model,
    const char *system, const cJSON *messages, size_t *len,
    struct llm_body_info *info)
{
	struct buf b, h;
	size_t enc_len, from = 0;
	uint64_t tag;
	const char *enc = cache_encode(f, messages, &enc_len);
	struct built *r;
	/* the tool's definition, the same for every flavour and turn */
	static char *tools;
	static uint64_t ids;

	if (tools == NULL) {
		cJSON *tool = tool_json(f);
		tools = cJSON_PrintUnformatted(tool);
		cJSON_Delete(tool);
		if (tools == NULL)
			fatal("out of memory");
	}
	buf_init(&h, BODY_MAX);
	put_head(&h, model, system, enc_len > 0);
	if (head.data == NULL || h.len != head.len || memcmp(h.data, head.data, h.len) != 0) {
		buf_free(&head);
		head = h;
		head_ver++;
	} else {
		buf_free(&h);
	}
	buf_init(&b, BODY_MAX);
	/* the messages' bytes and room for the rest in the last body's
	 * storage: no doubling copies, no fresh pages (llm_cache.h); what
	 * it still holds of this one is not written again */
	b.data = llm_cache_body_take_tagged(enc_len + 256 + strlen(tools) +
	    head.len, &b.cap, &tag);
	if (enc_len > 0)
		from = shared_with(tag);
	if (from >= head.len) {
		b.len = from;
	} else {
		b.data[0] = '\0';
		buf_add(&b, head.data, head.len);
		from = head.len;
	}
	if (enc_len > 0)	/* not the last comma */
		buf_add(&b, enc + (from - head.len), enc_len - 1 - (from - head.len));
	buf_adds(&b, "],\"tools\":[");
	buf_adds(&b, tools);
	buf_addc(&b, ']');
	/* Ollama ignores tool_choice and some vLLM setups reject "auto"
	 * without extra flags: only the hosted APIs get it. */
	if (f != LLM_LOCAL)
		buf_adds(&b, ",\"tool_choice\":\"auto\"");
	buf_adds(&b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	if (info != NULL) {
		info->ref = last_built;
		info->shared = shared_with(last_built);
	}
	r = &built[++ids % BUILT_KEEP];
	*r = (struct built){ ids, llm_cache_gen(cache), llm_cache_count(cache),
	    head_ver, head.len };
	last_built = ids;
	if (info != NULL)
		info->id = ids;
	*len = b.len;
	return buf_take(&b);
}

char *
llm_openai_body(enum llm_openai_flavor f, const char *model, const char *system,
    const cJSON *messages, size_t *len)
{
	return llm_openai_body_info(f, model, system, messages, len, NULL);
}

char *
llm_openai_url(enum llm_openai_flavor f, const struct llm_config *cfg,
    char **err)
{
	char *base, *url;

	if (f == LLM_AZURE)
		return llm_url_azure(cfg, "chat/completions", 1, err);
	if (cfg->base_url != NULL && *cfg->base_url != '\0')
		base = llm_url_trim(cfg->base_url);
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

/* --reasoning as Chat Completions' reasoning_effort, or NULL to send
 * none (the server's default; a model that does not reason rejects the
 * field, so it goes only when asked for). Off: Ollama's "none", the
 * gpt-5 family's "minimal"; other OpenAI models cannot stop reasoning. */
static const char *
effort(enum llm_openai_flavor f, const struct llm_config *cfg)
{
	switch (cfg->reasoning) {
	case LLM_REASONING_OFF:
		if (f == LLM_LOCAL)
			return "none";
		return cfg->model && strncmp(cfg->model, "gpt-5", 5) == 0 ?
		    "minimal" : NULL;
	case LLM_REASONING_LOW:		return "low";
	case LLM_REASONING_MEDIUM:	return "medium";
	case LLM_REASONING_HIGH:	return "high";
	default:			return NULL;
	}
}

/* Adds "reasoning_effort" as the body's last member. */
static void
add_effort(struct llm_wire *w, const char *e)
{
	char *nb;

	if (e == NULL || w->body_len == 0 || w->body[w->body_len - 1] != '}')
		return;
	nb = xasprintf("%.*s,\"reasoning_effort\":\"%s\"}",
	    (int)(w->body_len - 1), w->body, e);
	free(w->body);
	w->body = nb;
	w->body_len = strlen(nb);
}

static int
prepare(enum llm_openai_flavor f, const struct llm_config *cfg,
    const char *system, const cJSON *messages, struct llm_wire *w, char **err)
{
	int classic_azure;

	w->url = llm_openai_url(f, cfg, err);
	if (w->url == NULL)
		return -1;
	classic_azure = f == LLM_AZURE && strstr(w->url, "/deployments/") != NULL;
	w->body = llm_openai_body_info(f, classic_azure ? NULL : cfg->model,
	    system, messages, &w->body_len, &w->body_info);
	add_effort(w, effort(f, cfg));
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

/* The decoder. Tool calls live in slots until the reply ends, keyed by
 * index, but servers disagree on indexes, hence find_slot. */

/* The slot a tool call delta belongs to. */
static struct llm_slot *
find_slot(struct llm_dec *d, int index, const char *id, const char *name)
{
	struct llm_slot *s;

	if (index >= 0) {
		s = llm_dec_slot_find(d, index);
		/* A different id (or name) under a used index: servers that
		 * number every call 0. */
		if (s != NULL && ((id != NULL && s->id != NULL &&
		    strcmp(id, s->id) != 0) || (id == NULL && name != NULL &&
		    s->name != NULL && strcmp(name, s->name) != 0 &&
		    s->args.len > 0)))
			s = NULL;
		return s != NULL ? s : llm_dec_slot_new(d, index, 1);
	}
	if (id != NULL) {
		for (int i = 0; i < d->nslots; i++)
			if (d->slot[i].id && strcmp(d->slot[i].id, id) == 0)
				return &d->slot[i];
		return llm_dec_slot_new(d, -1, 1);
	}
	/* Neither index nor id: a fragment of the last call, unless that
	 * call is already whole and this delta names a tool again (old
	 * Ollama sent whole calls without index or id). */
	if (d->nslots > 0) {
		s = &d->slot[d->nslots - 1];
		if (name == NULL || s->args.len == 0 || !valid_json(buf_str(&s->args)))
			return s;
	}
	return llm_dec_slot_new(d, -1, 1);
}

static const char *
nonempty(const char *s)
{
	return s != NULL && *s != '\0' ? s : NULL;
}

static void
tool_delta(struct llm_dec *d, const cJSON *t)
{
	const cJSON *idx = json_get(t, "index"), *fn = json_get(t, "function"), *a;
	const char *id = nonempty(json_str(t, "id")), *name = NULL;
	struct llm_slot *s;

	if (fn != NULL) {
		name = nonempty(json_str(fn, "name"));
		if (id == NULL)		/* old llama.cpp put it here */
			id = nonempty(json_str(fn, "id"));
	}
	s = find_slot(d, cJSON_IsNumber(idx) ? idx->valueint : -1, id, name);
	if (s == NULL) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0,
		    "too many tool calls in one reply (over %d)", LLM_DEC_SLOTS);
		return;
	}
	llm_dec_slot_names(s, id, name);
	a = fn != NULL ? json_get(fn, "arguments") : NULL;
	if (cJSON_IsString(a)) {
		llm_dec_slot_args(d, s, a->valuestring, strlen(a->valuestring));
	} else if (cJSON_IsObject(a)) {
		/* Non-conformant proxies send an object. */
		char *p = cJSON_PrintUnformatted(a);
		llm_dec_slot_args(d, s, p, strlen(p));
		free(p);
	}
}

static void
take_usage(struct llm_dec *d, const cJSON *u)
{
	const cJSON *det;
	struct usage *t;

	if (!cJSON_IsObject(u))
		return;
	t = llm_dec_usage(d);
	llm_json_long(json_get(u, "prompt_tokens"), &t->input_tokens);
	llm_json_long(json_get(u, "completion_tokens"), &t->output_tokens);
	det = json_get(u, "prompt_tokens_details");
	if (cJSON_IsObject(det))
		llm_json_long(json_get(det, "cached_tokens"), &t->cached_tokens);
	det = json_get(u, "completion_tokens_details");
	if (cJSON_IsObject(det))
		llm_json_long(json_get(det, "reasoning_tokens"), &t->reasoning_tokens);
}

static void
dec_event(struct llm_dec *d, const char *type, const char *data, size_t len)
{
	cJSON *j;
	const cJSON *choices, *c;
	(void)type;

	if (len >= 6 && strncmp(data, "[DONE]", 6) == 0) {
		/* The reply is over: the tool calls go, whole, in order. */
		llm_dec_end(d, 1);
		return;
	}
	if ((j = llm_dec_json(d, data, len)) == NULL)
		return;
	take_usage(d, json_get(j, "usage"));
	choices = json_get(j, "choices");
	cJSON_ArrayForEach(c, (cJSON_IsArray(choices) ? choices : NULL)) {
		const cJSON *delta = json_get(c, "delta"), *tcs, *t, *idx;
		const char *txt;

		idx = json_get(c, "index");
		if (cJSON_IsNumber(idx) && idx->valueint != 0)
			continue;	/* n is 1: only choice 0 */
		if (cJSON_IsObject(delta)) {
			if ((txt = json_str(delta, "content")) != NULL)
				llm_dec_text(d, txt, strlen(txt));
			if ((txt = json_str(delta, "refusal")) != NULL)
				llm_dec_text(d, txt, strlen(txt));
			/* local servers' thinking: shown apart, never the
			 * answer (Ollama: reasoning; llama.cpp, vLLM:
			 * reasoning_content) */
			if ((txt = json_str(delta, "reasoning")) != NULL ||
			    (txt = json_str(delta, "reasoning_content")) != NULL ||
			    (txt = json_str(delta, "thinking")) != NULL)
				llm_dec_reasoning(d, txt, strlen(txt));
			tcs = json_get(delta, "tool_calls");
			cJSON_ArrayForEach(t, (cJSON_IsArray(tcs) ? tcs : NULL)) {
				tool_delta(d, t);
				if (d->st != LLM_DEC_MORE)
					goto out;
			}
		}
		/* Recorded, not obeyed: the usage chunk and [DONE] follow. */
		llm_dec_set_stop(d, json_str(c, "finish_reason"));
	}
out:
	cJSON_Delete(j);
}

static void
dec_eof(struct llm_dec *d)
{
	/* A finish_reason came but no [DONE] (llama.cpp): complete enough.
	 * Without one the reply was cut (llm_dec_eof says so). */
	if (d->stop != NULL)
		llm_dec_end(d, 1);
}

static const struct llm_codec *
pick_openai(const struct llm_config *cfg)
{
	return llm_responses_wanted(cfg) ? &llm_responses_codec : &llm_openai_codec;
}

static const struct llm_codec *
pick_azure(const struct llm_config *cfg)
{
	return llm_responses_wanted(cfg) ? &llm_azure_responses_codec :
	    &llm_azure_codec;
}

const struct llm_codec llm_openai_codec = {
	prep_openai, dec_event, dec_eof, "stop", MAX_CALLS, 0, pick_openai,
};

const struct llm_codec llm_azure_codec = {
	prep_azure, dec_event, dec_eof, "stop", MAX_CALLS, 0, pick_azure,
};

const struct llm_codec llm_ollama_codec = {
	prep_local, dec_event, dec_eof, "stop", MAX_CALLS, 0, NULL,
};
