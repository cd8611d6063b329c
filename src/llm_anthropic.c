/* llm_anthropic: the codec of the Anthropic Messages API: the request
 * (tool_use and tool_result blocks, strict role alternation, prompt
 * caching marks) and the reading of its named SSE events: message_start,
 * then per content block content_block_start, _delta..., _stop, then
 * message_delta and message_stop, with ping anywhere. What all APIs
 * share is in llm_decode.c; llm_http.c does the transport. */
#include <stdlib.h>
#include <string.h>

#include "terp/llm_provider.h"
#include "terp/util.h"

#define MAX_BLOCKS	128	/* text and tool_use blocks of one reply */

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

/* The decoder: content blocks are slots by index; a tool_use block's
 * input arrives as partial_json fragments and is handed over at its
 * content_block_stop. */

/* Input token counts, kept apart: each event may update one of them
 * (they are totals so far: overwrite, never add). */
struct tally {
	long	in, cache_read, cache_write;
};

static void
take_usage(struct llm_dec *d, const cJSON *u)
{
	struct tally *t = d->priv;
	struct usage *out;

	if (!cJSON_IsObject(u))
		return;
	out = llm_dec_usage(d);
	llm_json_long(get(u, "input_tokens"), &t->in);
	llm_json_long(get(u, "cache_read_input_tokens"), &t->cache_read);
	llm_json_long(get(u, "cache_creation_input_tokens"), &t->cache_write);
	llm_json_long(get(u, "output_tokens"), &out->output_tokens);
	/* Each is below 2^53: the sum cannot overflow a 64-bit long. */
	out->input_tokens = t->in + t->cache_read + t->cache_write;
	out->cached_tokens = t->cache_read;
}

static void
block_start(struct llm_dec *d, int index, const cJSON *cb)
{
	const char *bt = str(cb, "type");
	int tool = bt != NULL && strcmp(bt, "tool_use") == 0;
	struct llm_slot *s = llm_dec_slot_new(d, index, tool);

	if (s == NULL) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0, "too many content blocks");
		return;
	}
	if (tool) {
		/* The empty "input": {} here is a placeholder. A missing id
		 * stays empty (the agent names it), not numbered. */
		llm_dec_slot_names(s, str(cb, "id"), str(cb, "name"));
		if (s->id == NULL)
			s->id = xstrdup("");
	} else if (bt != NULL && strcmp(bt, "text") == 0) {
		const char *tx = str(cb, "text");
		if (tx != NULL)
			llm_dec_text(d, tx, strlen(tx));
	}
}

static void
block_delta(struct llm_dec *d, struct llm_slot *s, const cJSON *delta)
{
	const char *dt = str(delta, "type"), *p;

	if (dt == NULL)
		return;
	if (strcmp(dt, "text_delta") == 0 && (p = str(delta, "text")) != NULL)
		llm_dec_text(d, p, strlen(p));
	else if (strcmp(dt, "input_json_delta") == 0 && s->tool &&
	    (p = str(delta, "partial_json")) != NULL)
		llm_dec_slot_args(d, s, p, strlen(p));
}

static void
dec_event(struct llm_dec *d, const char *type, const char *data, size_t len)
{
	cJSON *j;
	const char *t;
	const cJSON *idx;
	struct llm_slot *s;

	if (strcmp(type, "ping") == 0)
		return;
	if ((j = llm_dec_json(d, data, len)) == NULL)
		return;
	t = str(j, "type");
	if (t == NULL)
		t = type;
	idx = get(j, "index");
	if (strcmp(t, "message_start") == 0) {
		const cJSON *m = get(j, "message");
		if (cJSON_IsObject(m))
			take_usage(d, get(m, "usage"));
	} else if (strcmp(t, "content_block_start") == 0 && cJSON_IsNumber(idx)) {
		block_start(d, idx->valueint, get(j, "content_block"));
	} else if (strcmp(t, "content_block_delta") == 0 && cJSON_IsNumber(idx)) {
		if ((s = llm_dec_slot_find(d, idx->valueint)) != NULL)
			block_delta(d, s, get(j, "delta"));
	} else if (strcmp(t, "content_block_stop") == 0 && cJSON_IsNumber(idx)) {
		if ((s = llm_dec_slot_find(d, idx->valueint)) != NULL)
			llm_dec_slot_close(d, s);
	} else if (strcmp(t, "message_delta") == 0) {
		llm_dec_set_stop(d, str(get(j, "delta"), "stop_reason"));
		take_usage(d, get(j, "usage"));
	} else if (strcmp(t, "message_stop") == 0) {
		/* A block never closed was cut by max_tokens: its input is
		 * incomplete, so it is dropped rather than run. */
		llm_dec_end(d, 0);
	}
	/* Unknown event types are ignored: new ones may be added. */
	cJSON_Delete(j);
}

static void
dec_eof(struct llm_dec *d)
{
	llm_dec_fail(d, LLM_ERR_CUT, 1, "the stream ended before message_stop");
}

const struct llm_codec llm_anthropic_codec = {
	prepare, dec_event, dec_eof, "end_turn", MAX_BLOCKS, sizeof(struct tally),
};
