/* Unit tests for llm_openai_body: the request body written as text is
 * byte for byte the cJSON tree llm_openai_encode builds, printed, for
 * every flavour, with and without model and system prompt, and with
 * strings that need every kind of escape. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/llm_cache.h"
#include "terp/llm_provider.h"

static const char conv[] = "["
    "{\"role\":\"user\",\"content\":\"Best month? \\\"quoted\\\" back\\\\slash\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
    " {\"id\":\"c1\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\":\\\"1/0\\\\n\\\"}\"},"
    " {\"id\":\"c2\",\"name\":\"python_exec\",\"arguments\":\"{bad\"},"
    " {\"name\":\"python_exec\"}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ZeroDivisionError\",\"is_error\":true},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"error: said so\",\"is_error\":true},"
    "{\"role\":\"tool\",\"content\":\"\\u0001\\u001f\\b\\f\\n\\r\\t caf\\u00e9 \\u2603\"},"
    "{\"content\":\"no role: left out\"},"
    "{\"role\":\"user\",\"content\":\"\"},"
    "{\"role\":\"user\"},"
    "{\"role\":\"assistant\",\"content\":\"\"},"
    "{\"role\":\"assistant\",\"content\":\"March.\"},"
    "{\"role\":\"system\",\"content\":\"odd role: a user\"}]";

static void
same(enum llm_openai_flavor f, const char *model, const char *system, const cJSON *msgs)
{
	cJSON *tree = llm_openai_encode(f, model, system, msgs);
	char *want = cJSON_PrintUnformatted(tree), *got;
	size_t len = 0;

	got = llm_openai_body(f, model, system, msgs, &len);
	cr_assert_str_eq(got, want, "flavour %d model %s system %s", (int)f,
	    model ? model : "(null)", system ? system : "(null)");
	cr_assert_eq(len, strlen(want));
	free(got);
	free(want);
	cJSON_Delete(tree);
}

Test(body, text_equals_the_printed_tree)
{
	cJSON *msgs = cJSON_Parse(conv), *empty = cJSON_CreateArray();
	enum llm_openai_flavor fl[] = { LLM_OPENAI, LLM_AZURE, LLM_LOCAL };

	cr_assert_not_null(msgs);
	for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
		same(fl[i], "gpt-x", "SYS \"with\" quotes\n", msgs);
		same(fl[i], NULL, NULL, msgs);
		same(fl[i], "", "", msgs);
		same(fl[i], "m", "S", empty);
	}
	cJSON_Delete(msgs);
	cJSON_Delete(empty);
}

/* The messages are encoded once and their bytes reused while they stay
 * the same: a conversation that grows, a message edited in place (same
 * address, new text), one deleted in the middle, one replaced by a new
 * object, a change of flavour: every body is still the printed tree. */
Test(body, reused_bytes_follow_every_change)
{
	cJSON *msgs = cJSON_Parse(conv), *m;
	char text[64];

	cr_assert_not_null(msgs);
	same(LLM_OPENAI, "m", "S", msgs);
	for (int i = 0; i < 40; i++) {
		m = cJSON_CreateObject();
		snprintf(text, sizeof text, "turn %d \"q\"\n", i);
		cJSON_AddStringToObject(m, "role", i % 2 ? "tool" : "user");
		cJSON_AddStringToObject(m, "content", text);
		cJSON_AddItemToArray(msgs, m);
		same(LLM_OPENAI, "m", "S", msgs);
	}
	/* edited where it is: same object, same length, other bytes */
	m = cJSON_GetArrayItem(msgs, 20);
	cJSON_SetValuestring(cJSON_GetObjectItem(m, "content"), "turn X \"q\"\n");
	same(LLM_OPENAI, "m", "S", msgs);
	/* a number that changes (no string does) */
	cJSON_AddNumberToObject(cJSON_GetArrayItem(msgs, 25), "n", 1);
	same(LLM_OPENAI, "m", "S", msgs);
	cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 25), "n")->valuedouble = 2;
	same(LLM_OPENAI, "m", "S", msgs);
	/* a role that changes: the message goes out otherwise */
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 30), "role"),
	    "user");
	same(LLM_OPENAI, "m", "S", msgs);
	/* one deleted in the middle, one replaced, then freed and made anew */
	cJSON_DeleteItemFromArray(msgs, 5);
	same(LLM_OPENAI, "m", "S", msgs);
	m = cJSON_Parse("{\"role\":\"user\",\"content\":\"replaced\"}");
	cJSON_ReplaceItemInArray(msgs, 7, m);
	same(LLM_OPENAI, "m", NULL, msgs);
	for (int i = 0; i < 3; i++) {
		cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddStringToObject(m, "content", i == 1 ? "again" : "anew");
		cJSON_AddItemToArray(msgs, m);
		same(LLM_OPENAI, "m", "S", msgs);
	}
	/* Ollama's flavour writes bad arguments otherwise */
	same(LLM_LOCAL, "m", "S", msgs);
	same(LLM_OPENAI, "m", "S", msgs);
	/* a tool call's arguments edited deep inside */
	m = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "tool_calls");
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "arguments"),
	    "{\"code\":\"2/0\"}");
	same(LLM_OPENAI, "m", "S", msgs);
	cJSON_Delete(msgs);
}

/* Anthropic's body as text equals its printed tree: the conversation
 * above (tool results gathered at the start of a user message, empty
 * texts left out, bad arguments as {}), growing, edited, cut. */
static void
same_anthropic(const char *model, int max_tokens, const char *system,
    const cJSON *msgs)
{
	cJSON *tree = llm_anthropic_encode(model, max_tokens, system, msgs);
	char *want = cJSON_PrintUnformatted(tree), *got;
	size_t len = 0;

	got = llm_anthropic_body(model, max_tokens, system, msgs, &len);
	cr_assert_str_eq(got, want);
	cr_assert_eq(len, strlen(want));
	free(got);
	free(want);
	cJSON_Delete(tree);
}

Test(body, anthropic_text_equals_the_printed_tree)
{
	cJSON *msgs = cJSON_Parse(conv), *empty = cJSON_CreateArray(), *m;
	char text[64];

	cr_assert_not_null(msgs);
	same_anthropic("claude-x", 1000, "SYS \"q\"\n", msgs);
	same_anthropic(NULL, 0, NULL, msgs);
	same_anthropic("m", 5, "", empty);
	for (int i = 0; i < 30; i++) {
		m = cJSON_CreateObject();
		snprintf(text, sizeof text, "turn %d \u00e9\t", i);
		cJSON_AddStringToObject(m, "role", i % 3 == 0 ? "user" :
		    i % 3 == 1 ? "tool" : "assistant");
		cJSON_AddStringToObject(m, "content", text);
		if (i % 3 == 1)
			cJSON_AddStringToObject(m, "tool_call_id", "c1");
		cJSON_AddItemToArray(msgs, m);
		same_anthropic("claude-x", 1000, "SYS", msgs);
	}
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 14), "content"),
	    "edited");
	same_anthropic("claude-x", 1000, "SYS", msgs);
	cJSON_DeleteItemFromArray(msgs, 3);
	same_anthropic("claude-x", 1000, "SYS", msgs);
	m = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "tool_calls");
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "arguments"),
	    "{\"code\": \"2/0\", \"n\": 1.50}");
	same_anthropic("claude-x", 1000, "SYS", msgs);
	cJSON_Delete(msgs);
	cJSON_Delete(empty);
}

/* A tool result after a note in the same user message still opens it,
 * after the results before it (the insert Debian's cJSON does not do). */
Test(body, anthropic_tool_results_open_the_user_message)
{
	cJSON *msgs = cJSON_Parse("["
	    "{\"role\":\"user\",\"content\":\"q\"},"
	    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
	    "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"python_exec\",\"arguments\":\"{}\"}},"
	    "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"python_exec\",\"arguments\":\"{}\"}}]},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1\"},"
	    "{\"role\":\"user\",\"content\":\"note\"},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"r2\"}]");
	cJSON *tree, *content;

	cr_assert_not_null(msgs);
	tree = llm_anthropic_encode("m", 10, NULL, msgs);
	content = cJSON_GetObjectItem(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(tree, "messages"), 2), "content");
	cr_assert_eq(cJSON_GetArraySize(content), 3);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 0),
	    "tool_use_id")->valuestring, "c1");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 1),
	    "tool_use_id")->valuestring, "c2");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 2),
	    "type")->valuestring, "text");
	same_anthropic("m", 10, NULL, msgs);
	cJSON_Delete(tree);
	cJSON_Delete(msgs);
}

/* llm_cache_vouch: a sync vouched with the last sync's stamp takes the
 * messages sent then as they were (an edit behind the promise's back
 * goes unseen: what is not compared), compares the last of them and
 * the new ones; another stamp, none, or a promise used up compares
 * everything again. */
Test(body, a_vouched_sync_compares_only_the_last_and_new_messages)
{
	cJSON *msgs = cJSON_Parse(conv), *m;
	char *got;
	size_t len;

	cr_assert_not_null(msgs);
	llm_cache_vouch(7);
	same(LLM_OPENAI, "m", "S", msgs);
	/* message 0 edited in place, the last one too, one added */
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0),
	    "content"), "EDITED-FIRST");
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs,
	    cJSON_GetArraySize(msgs) - 1), "content"), "EDITED-LAST");
	m = cJSON_Parse("{\"role\":\"user\",\"content\":\"NEW\"}");
	cJSON_AddItemToArray(msgs, m);
	llm_cache_vouch(7);
	got = llm_openai_body(LLM_OPENAI, "m", "S", msgs, &len);
	cr_assert_null(strstr(got, "EDITED-FIRST"), "vouched for: not compared");
	cr_assert_not_null(strstr(got, "EDITED-LAST"), "the last one is compared");
	cr_assert_not_null(strstr(got, "NEW"));
	free(got);
	/* the promise was used up: this one compares all */
	same(LLM_OPENAI, "m", "S", msgs);
	/* another stamp after a first one: compared too */
	llm_cache_vouch(8);
	same(LLM_OPENAI, "m", "S", msgs);
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0),
	    "content"), "EDITED-AGAIN");
	llm_cache_vouch(9);
	same(LLM_OPENAI, "m", "S", msgs);
	/* a vouched sync of fewer messages than kept: no entry past them */
	cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);
	cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);
	llm_cache_vouch(9);
	same(LLM_OPENAI, "m", "S", msgs);
	cJSON_Delete(msgs);
}

/* With thinking on, the text body still equals the printed tree, the
 * messages' thinking blocks go first in their assistant message exactly
 * as kept; with thinking off they are left out. */
Test(body, anthropic_thinking_blocks_kept_and_text_equals_tree)
{
	cJSON *msgs = cJSON_Parse("["
	    "{\"role\":\"user\",\"content\":\"q\"},"
	    "{\"role\":\"assistant\",\"content\":\"look\",\"tool_calls\":["
	    "{\"id\":\"t1\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\":\\\"1\\\"}\"}],"
	    "\"reasoning\":[{\"type\":\"thinking\",\"thinking\":\"hm \\u00e9\","
	    "\"signature\":\"EqQB/+=\"},{\"type\":\"redacted_thinking\",\"data\":\"Zm9v\"},"
	    "{\"type\":\"text\",\"text\":\"local, never sent\"}]},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"t1\",\"content\":\"1\"}]");
	cJSON *tree, *content;
	char *want, *got, *s;
	size_t len;

	cr_assert_not_null(msgs);
	tree = llm_anthropic_encode_thinking("m", 100, 2048, "S", msgs);
	cr_assert_eq(cJSON_GetObjectItem(tree, "max_tokens")->valueint, 2148);
	cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(tree, "thinking"),
	    "budget_tokens")->valueint, 2048);
	content = cJSON_GetObjectItem(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(tree, "messages"), 1), "content");
	cr_assert_eq(cJSON_GetArraySize(content), 4);
	s = cJSON_PrintUnformatted(cJSON_GetArrayItem(content, 0));
	cr_assert_str_eq(s, "{\"type\":\"thinking\",\"thinking\":\"hm \xc3\xa9\","
	    "\"signature\":\"EqQB/+=\"}");
	free(s);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 1),
	    "type")->valuestring, "redacted_thinking");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(content, 3),
	    "type")->valuestring, "tool_use");
	want = cJSON_PrintUnformatted(tree);
	got = llm_anthropic_body_thinking("m", 100, 2048, "S", msgs, &len);
	cr_assert_str_eq(got, want);
	free(got);
	free(want);
	cJSON_Delete(tree);
	/* off: the same cached entries, the thinking blocks left out */
	got = llm_anthropic_body_thinking("m", 100, 0, "S", msgs, &len);
	cr_assert_null(strstr(got, "thinking"));
	cr_assert_null(strstr(got, "local, never sent"));
	free(got);
	same_anthropic("m", 100, "S", msgs);
	cJSON_Delete(msgs);
}

/* A vouched sync does not walk the messages it trusts from the list's
 * head (a pointer chase per message, every request: most of a long
 * session's cost per question) but finds the last of them from the
 * tail. Seen here by a head whose next skips the list: a walk from the
 * head would find too few messages and leave the new one out. */
Test(body, a_vouched_sync_does_not_walk_from_the_head)
{
	cJSON *msgs = cJSON_Parse(conv), *bogus = cJSON_CreateObject(), *second;
	char *got;
	size_t len;

	cr_assert_not_null(msgs);
	llm_cache_vouch(21);
	same(LLM_OPENAI, "m", "S", msgs);
	cJSON_AddItemToArray(msgs, cJSON_Parse("{\"role\":\"user\",\"content\":\"NEWEST\"}"));
	second = msgs->child->next;
	msgs->child->next = bogus;	/* bogus->next is NULL */
	llm_cache_vouch(21);
	got = llm_openai_body(LLM_OPENAI, "m", "S", msgs, &len);
	msgs->child->next = second;
	cr_assert_not_null(strstr(got, "NEWEST"), "%s", got);
	cr_assert_not_null(strstr(got, "March."), "%s", got);
	free(got);
	same(LLM_OPENAI, "m", "S", msgs);
	cJSON_Delete(bogus);
	cJSON_Delete(msgs);
}

/* A body given back lends its storage to the next one: a body of the
 * whole conversation in fresh memory every turn is a page fault per
 * 4 KiB, or a hole in the heap that the next, longer body does not
 * fit. */
Test(body, the_next_body_reuses_the_last_ones_storage)
{
	cJSON *msgs = cJSON_Parse(conv);
	char *a, *b;
	size_t len;

	cr_assert_not_null(msgs);
	a = llm_openai_body(LLM_OPENAI, "m", "S", msgs, &len);
	llm_cache_body_give(a);
	b = llm_openai_body(LLM_OPENAI, "m", "S", msgs, &len);
	cr_assert_eq(a, b, "a body given back is the next one's storage");
	cr_assert_eq(strlen(b), len);
	free(b);
	cJSON_Delete(msgs);
}

/* The bytes two bodies surely begin with alike, by how they were built,
 * must not be more than they do. */
static size_t
real_prefix(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] != '\0' && a[i] == b[i])
		i++;
	return i;
}

/* A body built in storage given back with its tag keeps what the tag
 * says the storage still holds of it, and writes only the rest: through
 * growth, an edit in the middle, a new system prompt, another model and
 * another flavour, each body is the printed tree byte for byte, and
 * what it says it shares with the one before is never more than they
 * do (the journal compares only from there). */
Test(body, a_body_over_its_tagged_storage_is_the_whole_one)
{
	cJSON *msgs = cJSON_Parse(conv);
	struct llm_body_info in, last = { 0 };
	char *prev = NULL, *got;
	size_t len;
	const char *sys = "S", *model = "m";
	enum llm_openai_flavor f = LLM_OPENAI;

	cr_assert_not_null(msgs);
	for (int step = 0; step < 12; step++) {
		cJSON *tree, *m;
		char *want;

		if (step == 4)	/* an edit in the middle */
			cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 2),
			    "content"), "EDITED");
		else if (step == 6)
			sys = "another prompt";
		else if (step == 8)
			model = "other";
		else if (step == 10)
			f = LLM_LOCAL;
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", step % 2 ? "assistant" : "user");
		cJSON_AddStringToObject(m, "content", step % 3 ? "more" : "caf\xc3\xa9");
		cJSON_AddItemToArray(msgs, m);
		got = llm_openai_body_info(f, model, sys, msgs, &len, &in);
		tree = llm_openai_encode(f, model, sys, msgs);
		want = cJSON_PrintUnformatted(tree);
		cr_assert_str_eq(got, want, "step %d", step);
		cr_assert_eq(len, strlen(want));
		cr_assert_neq(in.id, 0);
		if (prev != NULL) {
			cr_assert_eq(in.ref, last.id, "step %d", step);
			cr_assert_leq(in.shared, real_prefix(prev, got), "step %d", step);
			if (step != 6 && step != 8 && step != 10)
				cr_assert_gt(in.shared, 100, "step %d: the head and more", step);
			free(prev);
		}
		prev = strdup(got);
		last = in;
		llm_cache_body_give_tagged(got, in.id);
		free(want);
		cJSON_Delete(tree);
	}
	free(prev);
	cJSON_Delete(msgs);
}

/* What the tag vouches for is not written again: seen by storage
 * changed behind the tag's back (which nobody does: llm_cache.h), whose
 * change stays. A body built whole would have overwritten it. */
Test(body, the_bytes_a_tag_vouches_for_are_not_written_again)
{
	cJSON *msgs = cJSON_Parse(conv);
	struct llm_body_info in;
	char *a, *b;
	size_t len;

	cr_assert_not_null(msgs);
	a = llm_openai_body_info(LLM_OPENAI, "m", "S", msgs, &len, &in);
	cr_assert_eq(a[1], '"');
	a[1] = '#';
	llm_cache_body_give_tagged(a, in.id);
	cJSON_AddItemToArray(msgs, cJSON_Parse("{\"role\":\"user\",\"content\":\"NEW\"}"));
	b = llm_openai_body_info(LLM_OPENAI, "m", "S", msgs, &len, &in);
	/* its storage (moved by realloc when too small: bytes and all) */
	cr_assert_eq(b[1], '#', "kept, not written again");
	cr_assert_not_null(strstr(b, "NEW"));
	b[1] = '"';
	free(b);
	/* untagged storage is written whole */
	a = llm_openai_body(LLM_OPENAI, "m", "S", msgs, &len);
	a[1] = '#';
	llm_cache_body_give(a);
	b = llm_openai_body(LLM_OPENAI, "m", "S", msgs, &len);
	cr_assert_eq(b[1], '"');
	free(b);
	cJSON_Delete(msgs);
}
