/* llm_anthropic: the codec of the Anthropic Messages API: the request
 * (tool_use and tool_result blocks, strict role alternation, prompt
 * caching marks) and the reading of its named SSE events: message_start,
 * then per content block content_block_start, _delta..., _stop, then
 * message_delta and message_stop, with ping anywhere. What all APIs
 * share is in llm_decode.c; llm_http.c does the transport. */
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/llm_cache.h"
#include "terp/llm_provider.h"
#include "terp/util.h"

#define MAX_BLOCKS	LLM_DEC_SLOTS	/* text, thinking and tool_use blocks of one reply */

/* Appends block to the last message when it has the same role (the API
 * wants user and assistant to alternate), else to a new message. */
static void
add_block(cJSON *msgs, const char *role, cJSON *block)
{
	cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
	cJSON *content;

	if (last == NULL || strcmp(json_str(last, "role"), role) != 0) {
		last = cJSON_CreateObject();
		cJSON_AddStringToObject(last, "role", role);
		cJSON_AddArrayToObject(last, "content");
		cJSON_AddItemToArray(msgs, last);
	}
	content = cJSON_GetObjectItemCaseSensitive(last, "content");
	/* tool_result blocks must open the user message. */
	if (strcmp(json_str(block, "type"), "tool_result") == 0) {
		int i = 0;
		const cJSON *b;
		cJSON_ArrayForEach(b, content) {
			if (strcmp(json_str(b, "type"), "tool_result") != 0)
				break;
			i++;
		}
		json_array_insert(content, i, block);
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

/* Where a message's blocks go: into the tree (llm_anthropic_encode) or
 * into the text cache (entry_encode). emit owns the block. */
typedef void block_emit(void *arg, const char *role, cJSON *block);

/* One message's blocks in the API's shape: a tool message is a
 * tool_result in a user message, an assistant's text and tool calls are
 * text and tool_use blocks (empty text blocks are rejected), anything
 * else a user text block. */
static void
message_blocks(const cJSON *m, block_emit *emit, void *arg)
{
	const char *role = json_str(m, "role"), *c = json_str(m, "content");

	if (role == NULL)
		return;
	if (strcmp(role, "tool") == 0) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "tool_result");
		cJSON_AddStringToObject(b, "tool_use_id",
		    json_str(m, "tool_call_id") ? json_str(m, "tool_call_id") : "");
		cJSON_AddStringToObject(b, "content", c ? c : "");
		if (cJSON_IsTrue(json_get(m, "is_error")))
			cJSON_AddTrueToObject(b, "is_error");
		emit(arg, "user", b);
	} else if (strcmp(role, "assistant") == 0) {
		const cJSON *call, *r;
		/* Thinking blocks exactly as they came, before the text and
		 * the tool_use they led to, as the API wants them back. */
		cJSON_ArrayForEach(r, json_get(m, "reasoning")) {
			const char *rt = json_str(r, "type");
			if (rt != NULL && (strcmp(rt, "thinking") == 0 ||
			    strcmp(rt, "redacted_thinking") == 0))
				emit(arg, "assistant", cJSON_Duplicate(r, 1));
		}
		if (c != NULL && *c != '\0')
			emit(arg, "assistant", text_block(c));
		cJSON_ArrayForEach(call, json_get(m, "tool_calls")) {
			cJSON *b = cJSON_CreateObject(), *in;
			const char *args = json_str(call, "arguments");
			in = args ? cJSON_Parse(args) : NULL;
			if (!cJSON_IsObject(in)) {
				cJSON_Delete(in);
				in = cJSON_CreateObject();
			}
			cJSON_AddStringToObject(b, "type", "tool_use");
			cJSON_AddStringToObject(b, "id", json_str(call, "id") ? json_str(call, "id") : "");
			cJSON_AddStringToObject(b, "name",
			    json_str(call, "name") ? json_str(call, "name") : "");
			cJSON_AddItemToObject(b, "input", in);
			emit(arg, "assistant", b);
		}
	} else if (c != NULL && *c != '\0') {
		emit(arg, "user", text_block(c));
	}
}

static int
is_thinking(const cJSON *block)
{
	const char *t = json_str(block, "type");
	return t != NULL && (strcmp(t, "thinking") == 0 ||
	    strcmp(t, "redacted_thinking") == 0);
}

/* The tree being built, and whether thinking blocks go in it: only
 * with thinking on (a request without it carries none). */
struct tree {
	cJSON	*msgs;
	int	 thinking;
};

static void
tree_emit(void *arg, const char *role, cJSON *block)
{
	struct tree *t = arg;

	if (!t->thinking && is_thinking(block)) {
		cJSON_Delete(block);
		return;
	}
	add_block(t->msgs, role, block);
}

cJSON *
llm_anthropic_encode(const char *model, int max_tokens, const char *system,
    const cJSON *messages)
{
	return llm_anthropic_encode_thinking(model, max_tokens, 0, system,
	    messages);
}

/* With thinking on, max_tokens is the answer's plus the budget: the
 * budget counts in it and must stay below it. */
static cJSON *
thinking_param(int budget)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", "enabled");
	cJSON_AddNumberToObject(t, "budget_tokens", budget);
	return t;
}

cJSON *
llm_anthropic_encode_thinking(const char *model, int max_tokens, int budget,
    const char *system, const cJSON *messages)
{
	struct tree tr;
	cJSON *body = cJSON_CreateObject(), *msgs, *tools, *t, *tc, *last;
	const cJSON *m;

	cJSON_AddStringToObject(body, "model", model ? model : "");
	cJSON_AddNumberToObject(body, "max_tokens",
	    (max_tokens > 0 ? max_tokens : 4096) + (budget > 0 ? budget : 0));
	if (budget > 0)
		cJSON_AddItemToObject(body, "thinking", thinking_param(budget));
	if (system != NULL && *system != '\0') {
		/* An array so that it can carry a cache mark. */
		cJSON *sys = cJSON_AddArrayToObject(body, "system");
		cJSON *b = text_block(system);
		cJSON_AddItemToObject(b, "cache_control", cache_mark());
		cJSON_AddItemToArray(sys, b);
	}
	msgs = cJSON_AddArrayToObject(body, "messages");
	tr.msgs = msgs;
	tr.thinking = budget > 0;
	cJSON_ArrayForEach(m, messages)
		message_blocks(m, tree_emit, &tr);
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
	cJSON_AddItemToObject(t, "input_schema", llm_tool_schema());
	cJSON_AddItemToArray(tools, t);
	tc = cJSON_AddObjectToObject(body, "tool_choice");
	cJSON_AddStringToObject(tc, "type", "auto");
	cJSON_AddTrueToObject(body, "stream");
	return body;
}

/* ---- The body as text --------------------------------------------
 *
 * The same body written as text, byte for byte what printing the tree
 * above gives (a unit test holds them equal), without building the
 * whole history as a tree (and parsing every tool call's arguments
 * again) on every turn: each message's blocks are encoded once and
 * reused while it stays the same (llm_cache.h); a turn joins them. */

#define BODY_MAX	((size_t)1 << 31)

/* A block in a cache entry: its role ('u' or 'a'), whether it is a
 * tool_result ('r'), a thinking block ('t', left out without thinking)
 * or another ('o'), its length, its JSON text. */
struct block_head {
	char	role, kind;
	size_t	len;
};

static void
entry_block(struct buf *e, const char *role, cJSON *block)
{
	struct block_head h = { role[0] == 'a' ? 'a' : 'u', 'o', 0 };
	struct buf t;

	if (strcmp(json_str(block, "type"), "tool_result") == 0)
		h.kind = 'r';
	else if (is_thinking(block))
		h.kind = 't';
	buf_init(&t, BODY_MAX);
	if (json_text(&t, block) < 0)
		fatal("out of memory (request body)");
	cJSON_Delete(block);
	h.len = t.len;
	buf_add(e, &h, sizeof h);
	buf_add(e, t.data, t.len);
	buf_free(&t);
}

static void
text_emit(void *arg, const char *role, cJSON *block)
{
	entry_block(arg, role, block);
}

/* A message's blocks, as llm_anthropic_encode makes them. */
static void
entry_encode(struct buf *e, const cJSON *m)
{
	message_blocks(m, text_emit, e);
}

/* One API message being joined: its blocks, tool_results first (they
 * must open a user message), each group in order. */
struct joined {
	char		 role;
	const char	**blk;
	size_t		 *len;
	int		  n, cap, nres;
};

static const char cache_mark_text[] = ",\"cache_control\":{\"type\":\"ephemeral\"}}";

/* Writes the message held in j (the last one carries the cache mark on
 * its last block) and empties j. */
static void
joined_put(struct buf *b, struct joined *j, int *first, int last)
{
	if (j->n == 0)
		return;
	if (!*first)
		buf_addc(b, ',');
	*first = 0;
	buf_adds(b, j->role == 'a' ? "{\"role\":\"assistant\",\"content\":[" :
	    "{\"role\":\"user\",\"content\":[");
	for (int i = 0; i < j->n; i++) {
		if (i > 0)
			buf_addc(b, ',');
		if (last && i == j->n - 1) {
			/* the block's text less its '}', then the mark */
			buf_add(b, j->blk[i], j->len[i] - 1);
			buf_adds(b, cache_mark_text);
		} else
			buf_add(b, j->blk[i], j->len[i]);
	}
	buf_adds(b, "]}");
	j->n = j->nres = 0;
}

static void
joined_add(struct joined *j, const struct block_head *h, const char *p)
{
	int at = j->n;

	if (j->n == j->cap) {
		j->cap = j->cap ? 2 * j->cap : 16;
		j->blk = xrealloc(j->blk, (size_t)j->cap * sizeof *j->blk);
		j->len = xrealloc(j->len, (size_t)j->cap * sizeof *j->len);
	}
	if (h->kind == 'r') {
		at = j->nres++;
		memmove(j->blk + at + 1, j->blk + at, (size_t)(j->n - at) * sizeof *j->blk);
		memmove(j->len + at + 1, j->len + at, (size_t)(j->n - at) * sizeof *j->len);
	}
	j->blk[at] = p;
	j->len[at] = h->len;
	j->n++;
}

/* The tools and what follows them, the same for every request. */
static const char *
tail_text(void)
{
	static char *tail;

	if (tail == NULL) {
		cJSON *o = llm_anthropic_encode("", 1, NULL, NULL);
		struct buf b;
		buf_init(&b, BODY_MAX);
		buf_adds(&b, ",\"tools\":");
		json_text(&b, cJSON_GetObjectItemCaseSensitive(o, "tools"));
		buf_adds(&b, ",\"tool_choice\":");
		json_text(&b, cJSON_GetObjectItemCaseSensitive(o, "tool_choice"));
		buf_adds(&b, ",\"stream\":true}");
		cJSON_Delete(o);
		tail = buf_take(&b);
	}
	return tail;
}

char *
llm_anthropic_body(const char *model, int max_tokens, const char *system,
    const cJSON *messages, size_t *len)
{
	return llm_anthropic_body_thinking(model, max_tokens, 0, system,
	    messages, len);
}

char *
llm_anthropic_body_thinking(const char *model, int max_tokens, int budget,
    const char *system, const cJSON *messages, size_t *len)
{
	static struct llm_cache *cache;
	struct joined j = { 0 };
	struct buf b, e;
	const cJSON *m;
	cJSON *v;
	int i, n, first = 1;

	if (cache == NULL)
		cache = llm_cache_new();
	i = llm_cache_sync(cache, 0, messages, &m);
	buf_init(&e, BODY_MAX);
	for (; m != NULL; m = m->next) {
		buf_reset(&e);
		entry_encode(&e, m);
		llm_cache_add(cache, m, e.data, e.len);
	}
	buf_free(&e);

	buf_init(&b, BODY_MAX);
	buf_adds(&b, "{\"model\":");
	v = cJSON_CreateString(model ? model : "");
	json_text(&b, v);
	cJSON_Delete(v);
	buf_adds(&b, ",\"max_tokens\":");
	v = cJSON_CreateNumber((max_tokens > 0 ? max_tokens : 4096) +
	    (budget > 0 ? budget : 0));
	json_text(&b, v);
	cJSON_Delete(v);
	if (budget > 0) {
		buf_adds(&b, ",\"thinking\":");
		v = thinking_param(budget);
		json_text(&b, v);
		cJSON_Delete(v);
	}
	if (system != NULL && *system != '\0') {
		buf_adds(&b, ",\"system\":[{\"type\":\"text\",\"text\":");
		v = cJSON_CreateString(system);
		json_text(&b, v);
		cJSON_Delete(v);
		buf_adds(&b, cache_mark_text);
		buf_addc(&b, ']');
	}
	buf_adds(&b, ",\"messages\":[");
	n = cJSON_GetArraySize(messages);
	for (i = 0; i < n; i++) {
		size_t elen, off = 0;
		const char *p = llm_cache_get(cache, i, &elen);
		while (p != NULL && off + sizeof(struct block_head) <= elen) {
			struct block_head h;
			memcpy(&h, p + off, sizeof h);
			off += sizeof h;
			if (h.kind == 't' && budget <= 0) {
				off += h.len;
				continue;
			}
			if (j.n > 0 && j.role != h.role)
				joined_put(&b, &j, &first, 0);
			j.role = h.role;
			joined_add(&j, &h, p + off);
			off += h.len;
		}
	}
	joined_put(&b, &j, &first, 1);
	free(j.blk);
	free(j.len);
	buf_addc(&b, ']');
	buf_adds(&b, tail_text());
	*len = b.len;
	return buf_take(&b);
}

static int
prepare(const struct llm_config *cfg, const char *system,
    const cJSON *messages, struct llm_wire *w, char **err)
{
	const char *base = cfg->base_url && *cfg->base_url ? cfg->base_url :
	    "https://api.anthropic.com";
	size_t n = strlen(base);
	int budget = llm_thinking_budget(cfg);

	(void)err;
	while (n > 0 && base[n - 1] == '/')
		n--;
	if (n >= 3 && strncmp(base + n - 3, "/v1", 3) == 0)
		w->url = xasprintf("%.*s/messages", (int)n, base);
	else
		w->url = xasprintf("%.*s/v1/messages", (int)n, base);
	w->body = llm_anthropic_body_thinking(cfg->model, cfg->max_tokens,
	    budget, system, messages, &w->body_len);
	llm_wire_header(w, "Content-Type: application/json");
	llm_wire_header(w, "Accept: text/event-stream");
	llm_wire_header(w, "anthropic-version: 2023-06-01");
	/* thinking between tool calls, not only before the first */
	if (budget > 0)
		llm_wire_header(w, "anthropic-beta: interleaved-thinking-2025-05-14");
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
	llm_json_long(json_get(u, "input_tokens"), &t->in);
	llm_json_long(json_get(u, "cache_read_input_tokens"), &t->cache_read);
	llm_json_long(json_get(u, "cache_creation_input_tokens"), &t->cache_write);
	llm_json_long(json_get(u, "output_tokens"), &out->output_tokens);
	/* Each is below 2^53: the sum cannot overflow a 64-bit long. */
	out->input_tokens = t->in + t->cache_read + t->cache_write;
	out->cached_tokens = t->cache_read;
}

/* A thinking block's signature arrives in pieces (signature_delta);
 * it is kept in the slot's id, which a non-tool slot does not use. */
static void
sig_add(struct llm_slot *s, const char *p)
{
	size_t had = s->id ? strlen(s->id) : 0, n = strlen(p);

	if (had + n > LLM_DEC_ARGS_MAX)
		return;
	s->id = xrealloc(s->id, had + n + 1);
	memcpy(s->id + had, p, n + 1);
}

/* A thinking block is done: it goes to the notebook whole, as the API
 * wants it back (its text and signature unchanged). */
static void
thinking_done(struct llm_dec *d, struct llm_slot *s)
{
	cJSON *b = cJSON_CreateObject();

	cJSON_AddStringToObject(b, "type", s->name);
	if (strcmp(s->name, "thinking") == 0) {
		cJSON_AddStringToObject(b, "thinking", buf_str(&s->args));
		cJSON_AddStringToObject(b, "signature", s->id ? s->id : "");
	} else
		cJSON_AddStringToObject(b, "data", buf_str(&s->args));
	llm_dec_reasoning_item(d, b);
	cJSON_Delete(b);
}

static void
block_start(struct llm_dec *d, int index, const cJSON *cb)
{
	const char *bt = json_str(cb, "type");
	int tool = bt != NULL && strcmp(bt, "tool_use") == 0;
	struct llm_slot *s = llm_dec_slot_new(d, index, tool);

	if (s == NULL) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0, "too many content blocks");
		return;
	}
	if (bt != NULL && (strcmp(bt, "thinking") == 0 ||
	    strcmp(bt, "redacted_thinking") == 0)) {
		const char *tx = json_str(cb, strcmp(bt, "thinking") == 0 ?
		    "thinking" : "data");
		s->name = xstrdup(bt);
		if (tx != NULL && llm_dec_slot_args(d, s, tx, strlen(tx)) == 0 &&
		    strcmp(bt, "thinking") == 0)
			llm_dec_reasoning(d, tx, strlen(tx));
		if (json_str(cb, "signature") != NULL)
			sig_add(s, json_str(cb, "signature"));
	} else if (tool) {
		/* The empty "input": {} here is a placeholder. A missing id
		 * stays empty (the agent names it), not numbered. */
		llm_dec_slot_names(s, json_str(cb, "id"), json_str(cb, "name"));
		if (s->id == NULL)
			s->id = xstrdup("");
	} else if (bt != NULL && strcmp(bt, "text") == 0) {
		const char *tx = json_str(cb, "text");
		if (tx != NULL)
			llm_dec_text(d, tx, strlen(tx));
	}
}

static void
block_delta(struct llm_dec *d, struct llm_slot *s, const cJSON *delta)
{
	const char *dt = json_str(delta, "type"), *p;

	if (dt == NULL)
		return;
	if (strcmp(dt, "text_delta") == 0 && (p = json_str(delta, "text")) != NULL)
		llm_dec_text(d, p, strlen(p));
	else if (strcmp(dt, "thinking_delta") == 0 && s->name != NULL &&
	    strcmp(s->name, "thinking") == 0 && (p = json_str(delta, "thinking")) != NULL) {
		if (llm_dec_slot_args(d, s, p, strlen(p)) == 0)
			llm_dec_reasoning(d, p, strlen(p));
	} else if (strcmp(dt, "signature_delta") == 0 && s->name != NULL &&
	    !s->tool && (p = json_str(delta, "signature")) != NULL)
		sig_add(s, p);
	else if (strcmp(dt, "input_json_delta") == 0 && s->tool &&
	    (p = json_str(delta, "partial_json")) != NULL)
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
	t = json_str(j, "type");
	if (t == NULL)
		t = type;
	idx = json_get(j, "index");
	if (strcmp(t, "message_start") == 0) {
		const cJSON *m = json_get(j, "message");
		if (cJSON_IsObject(m))
			take_usage(d, json_get(m, "usage"));
	} else if (strcmp(t, "content_block_start") == 0 && cJSON_IsNumber(idx)) {
		block_start(d, idx->valueint, json_get(j, "content_block"));
	} else if (strcmp(t, "content_block_delta") == 0 && cJSON_IsNumber(idx)) {
		if ((s = llm_dec_slot_find(d, idx->valueint)) != NULL)
			block_delta(d, s, json_get(j, "delta"));
	} else if (strcmp(t, "content_block_stop") == 0 && cJSON_IsNumber(idx)) {
		if ((s = llm_dec_slot_find(d, idx->valueint)) != NULL) {
			if (!s->tool && s->name != NULL && s->open)
				thinking_done(d, s);
			llm_dec_slot_close(d, s);
		}
	} else if (strcmp(t, "message_delta") == 0) {
		llm_dec_set_stop(d, json_str(json_get(j, "delta"), "stop_reason"));
		take_usage(d, json_get(j, "usage"));
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
	prepare, dec_event, dec_eof, "end_turn", MAX_BLOCKS, sizeof(struct tally), NULL,
};
