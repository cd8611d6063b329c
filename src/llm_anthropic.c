/* llm_anthropic: the Anthropic Messages API. Pure encode (tool_use and
 * tool_result blocks, strict role alternation, prompt caching marks)
 * and a decoder for its named SSE events (PROTOCOLS.md 3.4). */
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/llm_provider.h"
#include "terp/util.h"

#define ARGS_MAX	(4 * 1024 * 1024)
#define MAX_BLOCKS	128

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

/* Appends block to the last message when it has the same role (the API
 * wants user and assistant to alternate), else to a new message. */
static void
add_block(cJSON *msgs, const char *role, cJSON *block)
{
	cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	cJSON *content;

	if (last == NULL || strcmp(str(last, "role"), role) != 0) {
		last = cJSON_CreateObject();
		cJSON_AddStringToObject(last, "role", role);
		cJSON_AddArrayToObject(last, "content");
		cJSON_AddItemToArray(msgs, last);
	}
	content = cJSON_GetObjectItemCaseSensitive(last, "content");
	/* tool_result blocks must open the user message. */
	if (strcmp(str(block, "type"), "tool_result") == 0) {
		int i = 0;
		const cJSON *b;
		cJSON_ArrayForEach(b, content) {
			if (strcmp(str(b, "type"), "tool_result") != 0)
				break;
			i++;
		}
		cJSON_InsertItemInArray(content, i, block);
	} else
		cJSON_AddItemToArray(content, block);
}

static cJSON *
text_block(const char *text)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	return b;
}

static cJSON *
cache_mark(void)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "ephemeral");
	return c;
}

cJSON *
llm_anthropic_encode(const char *model, int max_tokens, const char *system,
    const cJSON *messages)
{
	cJSON *body = cJSON_CreateObject(), *msgs, *tools, *t, *schema, *props,
	    *code, *req, *tc, *last;
	const cJSON *m;

	cJSON_AddStringToObject(body, "model", model ? model : "");
	cJSON_AddNumberToObject(body, "max_tokens", max_tokens > 0 ? max_tokens : 4096);
	if (system != NULL && *system != '\0') {
		/* An array so that it can carry a cache mark. */
		cJSON *sys = cJSON_AddArrayToObject(body, "system");
		cJSON *b = text_block(system);
		cJSON_AddItemToObject(b, "cache_control", cache_mark());
		cJSON_AddItemToArray(sys, b);
	}
	msgs = cJSON_AddArrayToObject(body, "messages");
	cJSON_ArrayForEach(m, messages) {
		const char *role = str(m, "role"), *c = str(m, "content");

		if (role == NULL)
			continue;
		if (strcmp(role, "tool") == 0) {
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "type", "tool_result");
			cJSON_AddStringToObject(b, "tool_use_id",
			    str(m, "tool_call_id") ? str(m, "tool_call_id") : "");
			cJSON_AddStringToObject(b, "content", c ? c : "");
			if (cJSON_IsTrue(get(m, "is_error")))
				cJSON_AddTrueToObject(b, "is_error");
			add_block(msgs, "user", b);
		} else if (strcmp(role, "assistant") == 0) {
			const cJSON *call;
			/* Empty text blocks are rejected. */
			if (c != NULL && *c != '\0')
				add_block(msgs, "assistant", text_block(c));
			cJSON_ArrayForEach(call, get(m, "tool_calls")) {
				cJSON *b = cJSON_CreateObject(), *in;
				const char *args = str(call, "arguments");
				in = args ? cJSON_Parse(args) : NULL;
				if (!cJSON_IsObject(in)) {
					cJSON_Delete(in);
					in = cJSON_CreateObject();
				}
				cJSON_AddStringToObject(b, "type", "tool_use");
				cJSON_AddStringToObject(b, "id",
				    str(call, "id") ? str(call, "id") : "");
				cJSON_AddStringToObject(b, "name",
				    str(call, "name") ? str(call, "name") : "");
				cJSON_AddItemToObject(b, "input", in);
				add_block(msgs, "assistant", b);
			}
		} else if (c != NULL && *c != '\0') {
			add_block(msgs, "user", text_block(c));
		}
	}
	/* Cache the conversation so far: the next turn re-reads it. */
	last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	if (last != NULL) {
		cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
		cJSON *b = cJSON_GetArrayItem(content,
		    cJSON_GetArraySize(content) - 1);
		if (b != NULL)
			cJSON_AddItemToObject(b, "cache_control", cache_mark());
	}
	tools = cJSON_AddArrayToObject(body, "tools");
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "name", LLM_TOOL_NAME);
	cJSON_AddStringToObject(t, "description", llm_tool_description);
	schema = cJSON_AddObjectToObject(t, "input_schema");
	cJSON_AddStringToObject(schema, "type", "object");
	props = cJSON_AddObjectToObject(schema, "properties");
	code = cJSON_AddObjectToObject(props, "code");
	cJSON_AddStringToObject(code, "type", "string");
	cJSON_AddStringToObject(code, "description", llm_code_description);
	req = cJSON_AddArrayToObject(schema, "required");
	cJSON_AddItemToArray(req, cJSON_CreateString("code"));
	cJSON_AddItemToArray(tools, t);
	tc = cJSON_AddObjectToObject(body, "tool_choice");
	cJSON_AddStringToObject(tc, "type", "auto");
	cJSON_AddTrueToObject(body, "stream");
	return body;
}

static int
prepare(const struct llm_config *cfg, const char *system,
    const cJSON *messages, struct llm_wire *w, char **err)
{
	const char *base = cfg->base_url && *cfg->base_url ? cfg->base_url :
	    "https://api.anthropic.com";
	size_t n = strlen(base);
	cJSON *body;

	(void)err;
	while (n > 0 && base[n - 1] == '/')
		n--;
	if (n >= 3 && strncmp(base + n - 3, "/v1", 3) == 0)
		w->url = xasprintf("%.*s/messages", (int)n, base);
	else
		w->url = xasprintf("%.*s/v1/messages", (int)n, base);
	body = llm_anthropic_encode(cfg->model, cfg->max_tokens, system, messages);
	w->body = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	if (w->body == NULL)
		fatal("out of memory");
	w->body_len = strlen(w->body);
	llm_wire_header(w, "Content-Type: application/json");
	llm_wire_header(w, "Accept: text/event-stream");
	llm_wire_header(w, "anthropic-version: 2023-06-01");
	if (cfg->api_key != NULL && *cfg->api_key != '\0')
		llm_wire_header(w, "x-api-key: %s", cfg->api_key);
	w->what = xasprintf("anthropic %s", cfg->model ? cfg->model : "");
	return 0;
}

/* The decoder: blocks by index; a tool_use block's input arrives as
 * partial_json fragments and is handed over at content_block_stop. */

struct block {
	int		 index;
	int		 tool;		/* a tool_use block */
	int		 open;
	char		*id, *name;
	struct buf	 json;
};

struct dec {
	const struct llm_sink	*sink;
	void			*arg;
	struct block		 b[MAX_BLOCKS];
	int			 nb;
	char			*stop;
	char			*err;
	int			 retryable;
	struct usage		 usage;
	long			 in, cache_read, cache_write;
	int			 have_usage;
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
	for (int i = 0; i < d->nb; i++) {
		free(d->b[i].id);
		free(d->b[i].name);
		buf_free(&d->b[i].json);
	}
	free(d->stop);
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

static struct block *
find_block(struct dec *d, int index)
{
	for (int i = 0; i < d->nb; i++)
		if (d->b[i].index == index)
			return &d->b[i];
	return NULL;
}

static void
take_usage(struct dec *d, const cJSON *u)
{
	const cJSON *v;

	if (!cJSON_IsObject(u))
		return;
	d->have_usage = 1;
	/* Cumulative numbers: overwrite, never add. */
	if (cJSON_IsNumber(v = get(u, "input_tokens")))
		d->in = (long)v->valuedouble;
	if (cJSON_IsNumber(v = get(u, "cache_read_input_tokens")))
		d->cache_read = (long)v->valuedouble;
	if (cJSON_IsNumber(v = get(u, "cache_creation_input_tokens")))
		d->cache_write = (long)v->valuedouble;
	if (cJSON_IsNumber(v = get(u, "output_tokens")))
		d->usage.output_tokens = (long)v->valuedouble;
	d->usage.input_tokens = d->in + d->cache_read + d->cache_write;
	d->usage.cached_tokens = d->cache_read;
}

static void
close_block(struct dec *d, struct block *b)
{
	if (!b->open)
		return;
	b->open = 0;
	if (b->tool)
		d->sink->tool_call(d->arg, b->id ? b->id : "", b->name ? b->name : "",
		    b->json.len ? buf_str(&b->json) : "{}");
}

static enum llm_dec_status
finalize(struct dec *d)
{
	d->ended = 1;
	/* A block never closed was cut by max_tokens: its input is
	 * incomplete, so it is dropped rather than run. */
	if (d->have_usage && d->sink->usage != NULL)
		d->sink->usage(d->arg, &d->usage);
	return LLM_DEC_END;
}

static enum llm_dec_status
dec_event(void *p, const char *type, const char *data, size_t len)
{
	struct dec *d = p;
	cJSON *j;
	const char *t;
	enum llm_dec_status st = LLM_DEC_MORE;
	const cJSON *idx;

	if (d->ended)
		return LLM_DEC_END;
	if (strcmp(type, "ping") == 0)
		return LLM_DEC_MORE;
	j = cJSON_ParseWithLength(data, len);
	if (j == NULL) {
		if (len == 0)
			return LLM_DEC_MORE;
		return dec_fail(d, 0, "the model's stream is not JSON: %.80s", data);
	}
	t = str(j, "type");
	if (t == NULL)
		t = type;
	idx = get(j, "index");
	if (strcmp(t, "error") == 0 || strcmp(type, "error") == 0) {
		char *etype = NULL, *msg = llm_error_body_message(data, len, &etype);
		int retry = etype != NULL && (strcmp(etype, "overloaded_error") == 0 ||
		    strcmp(etype, "api_error") == 0 ||
		    strcmp(etype, "rate_limit_error") == 0);
		st = dec_fail(d, retry, "the model's stream reported an error: %s", msg);
		free(msg);
		free(etype);
	} else if (strcmp(t, "message_start") == 0) {
		const cJSON *m = get(j, "message");
		if (cJSON_IsObject(m))
			take_usage(d, get(m, "usage"));
	} else if (strcmp(t, "content_block_start") == 0 && cJSON_IsNumber(idx)) {
		const cJSON *cb = get(j, "content_block");
		const char *bt = str(cb, "type");
		struct block *b;
		if (d->nb == MAX_BLOCKS) {
			st = dec_fail(d, 0, "too many content blocks%s", "");
			goto out;
		}
		b = &d->b[d->nb++];
		memset(b, 0, sizeof *b);
		b->index = idx->valueint;
		b->open = 1;
		buf_init(&b->json, ARGS_MAX);
		if (bt != NULL && strcmp(bt, "tool_use") == 0) {
			b->tool = 1;
			b->id = xstrdup(str(cb, "id") ? str(cb, "id") : "");
			b->name = xstrdup(str(cb, "name") ? str(cb, "name") : "");
			/* The empty "input": {} here is a placeholder. */
		} else if (bt != NULL && strcmp(bt, "text") == 0) {
			const char *tx = str(cb, "text");
			if (tx != NULL && *tx)
				d->sink->text(d->arg, tx, strlen(tx));
		}
	} else if (strcmp(t, "content_block_delta") == 0 && cJSON_IsNumber(idx)) {
		struct block *b = find_block(d, idx->valueint);
		const cJSON *delta = get(j, "delta");
		const char *dt = str(delta, "type"), *s;
		if (b == NULL || dt == NULL)
			goto out;
		if (strcmp(dt, "text_delta") == 0 && (s = str(delta, "text")) && *s)
			d->sink->text(d->arg, s, strlen(s));
		else if (strcmp(dt, "input_json_delta") == 0 && b->tool &&
		    (s = str(delta, "partial_json")) != NULL &&
		    buf_adds(&b->json, s) < 0)
			st = dec_fail(d, 0, "tool input too big%s", "");
	} else if (strcmp(t, "content_block_stop") == 0 && cJSON_IsNumber(idx)) {
		struct block *b = find_block(d, idx->valueint);
		if (b != NULL)
			close_block(d, b);
	} else if (strcmp(t, "message_delta") == 0) {
		const cJSON *delta = get(j, "delta");
		const char *sr = str(delta, "stop_reason");
		if (sr != NULL) {
			free(d->stop);
			d->stop = xstrdup(sr);
		}
		take_usage(d, get(j, "usage"));
	} else if (strcmp(t, "message_stop") == 0) {
		st = finalize(d);
	}
	/* Unknown event types are ignored: new ones may be added. */
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
	return dec_fail(d, 1, "the stream ended before message_stop%s", "");
}

static const char *
dec_stop_reason(void *p)
{
	struct dec *d = p;
	return d->stop ? d->stop : "end_turn";
}

static const char *
dec_error(void *p, int *retryable)
{
	struct dec *d = p;
	if (retryable != NULL)
		*retryable = d->retryable;
	return d->err ? d->err : "unknown stream error";
}

const struct llm_provider llm_anthropic_provider = {
	"anthropic", prepare, dec_new, dec_event, dec_eof, dec_stop_reason,
	dec_error, dec_free,
};
