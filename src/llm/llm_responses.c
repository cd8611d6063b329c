/* llm_responses: the codec of OpenAI's Responses API (POST /responses),
 * for OpenAI and Azure OpenAI, chosen by `api = responses` or, without
 * it, for the reasoning model families (o1, o3, o4, gpt-5, codex).
 *
 * Request: the conversation as input items: user messages, the
 * assistant's reasoning items (kept whole, their encrypted_content
 * included), its text as an assistant message, its tool calls as
 * function_call items, the results as function_call_output items. With
 * store: false nothing is kept on the server, so the reasoning comes
 * back encrypted (include: ["reasoning.encrypted_content"]) and goes out
 * again with the next turn.
 *
 * Stream: typed events, each "event: T" with data {"type": T, ...}:
 * response.created, response.output_item.added / .done (per output
 * item, by output_index), response.output_text.delta,
 * response.function_call_arguments.delta / .done,
 * response.reasoning_summary_text.delta, then response.completed (or
 * response.incomplete, response.failed); "error" events are handled in
 * llm_decode.c. There is no [DONE]. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/json_text.h"
#include "terp/llm_provider.h"
#include "terp/llm_url.h"
#include "terp/util.h"

#define MAX_ITEMS	LLM_DEC_SLOTS	/* output items of one reply */

int
llm_responses_reasoning_model(const char *model)
{
	static const char *const fam[] = { "o1", "o3", "o4", "gpt-5", "codex", NULL };

	if (model == NULL)
		return 0;
	for (int i = 0; fam[i] != NULL; i++)
		if (strncmp(model, fam[i], strlen(fam[i])) == 0)
			return 1;
	return 0;
}

int
llm_responses_wanted(const struct llm_config *cfg)
{
	if (cfg->api == LLM_API_RESPONSES)
		return 1;
	if (cfg->api == LLM_API_CHAT)
		return 0;
	/* the reasoning families: their reasoning survives between tool
	 * calls only here (an Azure deployment is judged by its name) */
	return llm_responses_reasoning_model(cfg->model);
}

/* Whether the request asks for reasoning (effort, encrypted content):
 * a model that does not reason refuses both. */
static int
reasons(const struct llm_config *cfg)
{
	if (cfg->reasoning == LLM_REASONING_OFF)
		return llm_responses_reasoning_model(cfg->model) &&
		    cfg->model && strncmp(cfg->model, "gpt-5", 5) == 0;
	return llm_responses_reasoning_model(cfg->model) ||
	    cfg->reasoning >= LLM_REASONING_LOW;
}

static const char *
effort(const struct llm_config *cfg)
{
	switch (cfg->reasoning) {
	case LLM_REASONING_OFF:		return "minimal";
	case LLM_REASONING_LOW:		return "low";
	case LLM_REASONING_MEDIUM:	return "medium";
	case LLM_REASONING_HIGH:	return "high";
	default:			return NULL;
	}
}

static cJSON *
tool_json(void)
{
	cJSON *t = cJSON_CreateObject();

	cJSON_AddStringToObject(t, "type", "function");
	cJSON_AddStringToObject(t, "name", LLM_TOOL_NAME);
	cJSON_AddStringToObject(t, "description", llm_tool_description);
	cJSON_AddItemToObject(t, "parameters", llm_tool_schema());
	return t;
}

static void
add_message(cJSON *input, const char *role, const char *text)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "role", role);
	cJSON_AddStringToObject(m, "content", text);
	cJSON_AddItemToArray(input, m);
}

/* One neutral message as input items. */
static void
message_items(cJSON *input, const cJSON *m, int send_reasoning)
{
	const char *role = json_str(m, "role"), *c = json_str(m, "content");
	const cJSON *it;

	if (role == NULL)
		return;
	if (strcmp(role, "tool") == 0) {
		cJSON *o = cJSON_CreateObject();
		char *e = NULL;
		/* no error flag in the item: say it, as on the Chat path */
		if (cJSON_IsTrue(json_get(m, "is_error")) && c != NULL &&
		    strncasecmp(c, "error", 5) != 0)
			e = xasprintf("Error: %s", c);
		cJSON_AddStringToObject(o, "type", "function_call_output");
		cJSON_AddStringToObject(o, "call_id",
		    json_str(m, "tool_call_id") ? json_str(m, "tool_call_id") : "");
		cJSON_AddStringToObject(o, "output", e ? e : c ? c : "");
		free(e);
		cJSON_AddItemToArray(input, o);
	} else if (strcmp(role, "assistant") == 0) {
		/* the reasoning items first, whole, as they came */
		cJSON_ArrayForEach(it, json_get(m, "reasoning")) {
			if (send_reasoning && json_str(it, "type") != NULL &&
			    strcmp(json_str(it, "type"), "reasoning") == 0 &&
			    json_str(it, "encrypted_content") != NULL)
				cJSON_AddItemToArray(input, cJSON_Duplicate(it, 1));
		}
		if (c != NULL && *c != '\0')
			add_message(input, "assistant", c);
		cJSON_ArrayForEach(it, json_get(m, "tool_calls")) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "type", "function_call");
			cJSON_AddStringToObject(o, "call_id", json_str(it, "id") ? json_str(it, "id") : "");
			cJSON_AddStringToObject(o, "name", json_str(it, "name") ? json_str(it, "name") : "");
			cJSON_AddStringToObject(o, "arguments",
			    json_str(it, "arguments") ? json_str(it, "arguments") : "{}");
			cJSON_AddItemToArray(input, o);
		}
	} else if (c != NULL) {
		add_message(input, "user", c);
	}
}

cJSON *
llm_responses_encode(const struct llm_config *cfg, const char *model,
    const char *system, const cJSON *messages)
{
	cJSON *body = cJSON_CreateObject(), *input, *tools, *inc, *r;
	const cJSON *m;
	int think = reasons(cfg);

	if (model != NULL && *model != '\0')
		cJSON_AddStringToObject(body, "model", model);
	if (system != NULL && *system != '\0')
		cJSON_AddStringToObject(body, "instructions", system);
	input = cJSON_AddArrayToObject(body, "input");
	cJSON_ArrayForEach(m, messages)
		message_items(input, m, think);
	tools = cJSON_AddArrayToObject(body, "tools");
	cJSON_AddItemToArray(tools, tool_json());
	cJSON_AddStringToObject(body, "tool_choice", "auto");
	cJSON_AddTrueToObject(body, "stream");
	/* nothing kept on the server: the reasoning travels encrypted */
	cJSON_AddFalseToObject(body, "store");
	if (think) {
		inc = cJSON_AddArrayToObject(body, "include");
		cJSON_AddItemToArray(inc, cJSON_CreateString("reasoning.encrypted_content"));
		r = cJSON_AddObjectToObject(body, "reasoning");
		if (effort(cfg) != NULL)
			cJSON_AddStringToObject(r, "effort", effort(cfg));
		cJSON_AddStringToObject(r, "summary", "auto");
	}
	return body;
}

char *
llm_responses_url(const struct llm_config *cfg, int azure, char **err)
{
	char *base, *url;

	/* Azure serves the Responses API on its v1 path, the deployment
	 * named in "model". */
	if (azure)
		return llm_url_azure(cfg, "responses", 0, err);
	base = cfg->base_url && *cfg->base_url ? llm_url_trim(cfg->base_url) :
	    xstrdup("https://api.openai.com/v1");
	if (strlen(base) > 10 && strcmp(base + strlen(base) - 10, "/responses") == 0)
		url = xstrdup(base);
	else
		url = xasprintf("%s/responses", base);
	free(base);
	return url;
}

static int
prepare(int azure, const struct llm_config *cfg, const char *system,
    const cJSON *messages, struct llm_wire *w, char **err)
{
	cJSON *body;
	char *t;

	if ((w->url = llm_responses_url(cfg, azure, err)) == NULL)
		return -1;
	body = llm_responses_encode(cfg, cfg->model, system, messages);
	t = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	if (t == NULL)
		fatal("out of memory (request body)");
	w->body = t;
	w->body_len = strlen(t);
	llm_wire_header(w, "Content-Type: application/json");
	llm_wire_header(w, "Accept: text/event-stream");
	if (cfg->api_key != NULL && *cfg->api_key != '\0') {
		if (azure)
			llm_wire_header(w, "api-key: %s", cfg->api_key);
		else
			llm_wire_header(w, "Authorization: Bearer %s", cfg->api_key);
	}
	w->what = xasprintf("%s %s (responses)", azure ? "azure" : "openai",
	    cfg->model ? cfg->model : "");
	return 0;
}

static int
prep_openai(const struct llm_config *c, const char *s, const cJSON *m,
    struct llm_wire *w, char **e)
{
	return prepare(0, c, s, m, w, e);
}

static int
prep_azure(const struct llm_config *c, const char *s, const cJSON *m,
    struct llm_wire *w, char **e)
{
	return prepare(1, c, s, m, w, e);
}

/* ---- the stream */

static void
take_usage(struct llm_dec *d, const cJSON *u)
{
	struct usage *t;
	const cJSON *det;

	if (!cJSON_IsObject(u))
		return;
	t = llm_dec_usage(d);
	llm_json_long(json_get(u, "input_tokens"), &t->input_tokens);
	llm_json_long(json_get(u, "output_tokens"), &t->output_tokens);
	if (cJSON_IsObject(det = json_get(u, "input_tokens_details")))
		llm_json_long(json_get(det, "cached_tokens"), &t->cached_tokens);
	if (cJSON_IsObject(det = json_get(u, "output_tokens_details")))
		llm_json_long(json_get(det, "reasoning_tokens"), &t->reasoning_tokens);
}

static int
out_index(const cJSON *j)
{
	const cJSON *i = json_get(j, "output_index");
	return cJSON_IsNumber(i) && i->valuedouble >= 0 &&
	    i->valuedouble < 1e6 ? i->valueint : -1;
}

static void
item_added(struct llm_dec *d, int idx, const cJSON *item)
{
	const char *t = json_str(item, "type");
	int tool = t != NULL && strcmp(t, "function_call") == 0;
	struct llm_slot *s;

	if (t == NULL || (!tool && strcmp(t, "reasoning") != 0))
		return;	/* messages need no slot: their text streams */
	if ((s = llm_dec_slot_new(d, idx, tool)) == NULL) {
		llm_dec_fail(d, LLM_ERR_BAD_REPLY, 0, "too many output items");
		return;
	}
	if (tool) {
		/* call_id is what function_call_output answers */
		llm_dec_slot_names(s, json_str(item, "call_id"), json_str(item, "name"));
		if (json_str(item, "arguments") != NULL)
			llm_dec_slot_args(d, s, json_str(item, "arguments"),
			    strlen(json_str(item, "arguments")));
	}
}

static void
item_done(struct llm_dec *d, int idx, const cJSON *item)
{
	struct llm_slot *s = llm_dec_slot_find(d, idx);
	const char *t = json_str(item, "type");

	if (t != NULL && strcmp(t, "reasoning") == 0) {
		/* kept whole: its encrypted_content goes back next turn */
		llm_dec_reasoning_item(d, item);
		if (s != NULL)
			llm_dec_slot_close(d, s);
		return;
	}
	if (s == NULL || !s->tool)
		return;
	llm_dec_slot_names(s, json_str(item, "call_id"), json_str(item, "name"));
	/* the done item has the whole arguments: they win over deltas */
	if (json_str(item, "arguments") != NULL) {
		buf_reset(&s->args);
		if (llm_dec_slot_args(d, s, json_str(item, "arguments"),
		    strlen(json_str(item, "arguments"))) < 0)
			return;
	}
	llm_dec_slot_close(d, s);
}

/* A failed or incomplete response: the error as an error body, so that
 * its kind (context, rate...) is read as on the Chat path. */
static void
response_failed(struct llm_dec *d, const cJSON *resp)
{
	const cJSON *e = json_get(resp, "error");
	cJSON *w = cJSON_CreateObject();
	char *t;

	if (cJSON_IsObject(e))
		cJSON_AddItemToObject(w, "error", cJSON_Duplicate(e, 1));
	else {
		cJSON *o = cJSON_AddObjectToObject(w, "error");
		cJSON_AddStringToObject(o, "message", "the response failed");
	}
	t = cJSON_PrintUnformatted(w);
	cJSON_Delete(w);
	cJSON_Delete(llm_dec_json(d, t, strlen(t)));	/* fails the reply */
	free(t);
}

static void
dec_event(struct llm_dec *d, const char *type, const char *data, size_t len)
{
	cJSON *j;
	const char *t, *p;
	const cJSON *resp;

	if ((j = llm_dec_json(d, data, len)) == NULL)
		return;
	t = json_str(j, "type");
	if (t == NULL)
		t = type;
	if (strcmp(t, "response.output_item.added") == 0) {
		item_added(d, out_index(j), json_get(j, "item"));
	} else if (strcmp(t, "response.output_item.done") == 0) {
		item_done(d, out_index(j), json_get(j, "item"));
	} else if (strcmp(t, "response.output_text.delta") == 0 ||
	    strcmp(t, "response.refusal.delta") == 0) {
		if ((p = json_str(j, "delta")) != NULL)
			llm_dec_text(d, p, strlen(p));
	} else if (strcmp(t, "response.function_call_arguments.delta") == 0) {
		struct llm_slot *s = llm_dec_slot_find(d, out_index(j));
		if (s != NULL && s->tool && s->open && (p = json_str(j, "delta")) != NULL)
			llm_dec_slot_args(d, s, p, strlen(p));
	} else if (strcmp(t, "response.reasoning_summary_text.delta") == 0 ||
	    strcmp(t, "response.reasoning_text.delta") == 0) {
		if ((p = json_str(j, "delta")) != NULL)
			llm_dec_reasoning(d, p, strlen(p));
	} else if (strcmp(t, "response.reasoning_summary_part.done") == 0) {
		llm_dec_reasoning(d, "\n", 1);
	} else if (strcmp(t, "response.completed") == 0) {
		resp = json_get(j, "response");
		take_usage(d, json_get(resp, "usage"));
		llm_dec_end(d, 1);
	} else if (strcmp(t, "response.incomplete") == 0) {
		resp = json_get(j, "response");
		take_usage(d, json_get(resp, "usage"));
		p = json_str(json_get(resp, "incomplete_details"), "reason");
		/* cut by max_output_tokens: "length", as the agent knows it;
		 * an unfinished call is dropped, never run */
		llm_dec_set_stop(d, p && strcmp(p, "max_output_tokens") == 0 ?
		    "length" : p ? p : "incomplete");
		llm_dec_end(d, 0);
	} else if (strcmp(t, "response.failed") == 0) {
		response_failed(d, json_get(j, "response"));
	}
	/* response.created, .in_progress, content parts, the .done events
	 * of text and arguments, and new event types: nothing to do */
	cJSON_Delete(j);
}

static void
dec_eof(struct llm_dec *d)
{
	llm_dec_fail(d, LLM_ERR_CUT, 1, "the stream ended before response.completed");
}

const struct llm_codec llm_responses_codec = {
	prep_openai, dec_event, dec_eof, "stop", MAX_ITEMS, 0, NULL,
};

const struct llm_codec llm_azure_responses_codec = {
	prep_azure, dec_event, dec_eof, "stop", MAX_ITEMS, 0, NULL,
};
