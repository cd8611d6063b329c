/* Unit tests of the notebook's message bookkeeping: the kept length and
 * last message follow every way the conversation changes; a tool result
 * inserted in the middle (the loader's repair) is there. */
#include <criterion/criterion.h>

#include <string.h>

#include "terp/notebook.h"

static void
same_as_the_array_at(const struct notebook *nb, int line)
{
	const cJSON *a = notebook_messages(nb);
	int n = cJSON_GetArraySize(a);

	for (int i = 0; i < n; i++)
		cr_assert_eq(notebook_message(nb, i), cJSON_GetArrayItem(a, i), "%d of %d (line %d)", i, n, line);
	cr_assert_null(notebook_message(nb, n), "n %d (line %d)", n, line);
	cr_assert_null(notebook_message(nb, -1));
}

#define same_as_the_array(nb) same_as_the_array_at(nb, __LINE__)

Test(notebook, message_by_index_follows_every_change)
{
	struct notebook *nb = notebook_new();
	cJSON *calls;

	same_as_the_array(nb);
	notebook_add_question(nb, "how many?", NULL);
	same_as_the_array(nb);
	for (int i = 0; i < 5; i++) {
		calls = cJSON_Parse("[{\"id\":\"c\",\"name\":\"python_exec\",\"arguments\":\"{}\"}]");
		notebook_add_reply(nb, NULL, calls);
		same_as_the_array(nb);
		notebook_add_tool_result(nb, "c", "ok", 0);
		same_as_the_array(nb);
	}
	notebook_insert_tool_result(nb, 2, "x", "inserted", 1);
	same_as_the_array(nb);
	cr_assert_eq(cJSON_GetArraySize(notebook_messages(nb)), 12, "inserted, not lost");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(notebook_message(nb, 2),
	    "content")), "inserted");
	cr_assert_eq(notebook_question(nb, 0)->msg, 0, "before it: not moved");
	notebook_insert_tool_result(nb, 0, "z", "first", 1);
	same_as_the_array(nb);
	cr_assert_eq(notebook_question(nb, 0)->msg, 1, "after it: moved");
	notebook_insert_tool_result(nb, cJSON_GetArraySize(notebook_messages(nb)), "y",
	    "at the end", 0);
	same_as_the_array(nb);
	notebook_replace_message(nb, cJSON_GetArraySize(notebook_messages(nb)) - 1,
	    cJSON_Parse("{\"role\":\"tool\",\"tool_call_id\":\"y\",\"content\":\"new\"}"));
	same_as_the_array(nb);
	notebook_replace_message(nb, 0, cJSON_Parse("{\"role\":\"user\",\"content\":\"q\"}"));
	same_as_the_array(nb);
	notebook_add_reply(nb, "done", NULL);
	same_as_the_array(nb);
	notebook_free(nb);
}

/* notebook_gen: the same while messages are only added at the end;
 * another after an insert before the end or a replacement; never one
 * of another notebook. */
Test(notebook, gen_changes_with_every_change_to_a_message_there)
{
	struct notebook *nb = notebook_new(), *other = notebook_new();
	uint64_t g = notebook_gen(nb), h;

	cr_assert_neq(g, 0);
	cr_assert_neq(notebook_gen(other), g);
	notebook_add_question(nb, "how many?", NULL);
	notebook_add_reply(nb, NULL, cJSON_Parse(
	    "[{\"id\":\"c\",\"name\":\"python_exec\",\"arguments\":\"{}\"}]"));
	notebook_add_tool_result(nb, "c", "ok", 0);
	notebook_insert_tool_result(nb, 3, "d", "at the end", 0);
	notebook_add_reply(nb, "3", NULL);
	cr_assert_eq(notebook_gen(nb), g, "only added at the end");
	notebook_insert_tool_result(nb, 1, "x", "inserted", 1);
	h = notebook_gen(nb);
	cr_assert_neq(h, g);
	cr_assert_neq(h, notebook_gen(other));
	notebook_replace_message(nb, 0, cJSON_Parse("{\"role\":\"user\",\"content\":\"q\"}"));
	cr_assert_neq(notebook_gen(nb), h);
	cr_assert_neq(notebook_gen(nb), g);
	notebook_free(other);
	notebook_free(nb);
}

/* The bodies kept are the last NOTEBOOK_SENT_KEEP, and the one that
 * leaves lends its storage to the new one (not a fresh copy of the
 * whole conversation each turn). */
Test(notebook, a_body_leaving_the_window_is_the_new_ones_storage)
{
	struct notebook *nb = notebook_new();
	char body[600];
	const char *first;
	size_t len;

	memset(body, 'a', sizeof body);
	notebook_add_sent(nb, "x", body, sizeof body);
	first = notebook_sent(nb, 0, NULL, NULL);
	for (int i = 1; i < NOTEBOOK_SENT_KEEP; i++)
		notebook_add_sent(nb, "x", body, sizeof body);
	cr_assert_eq(notebook_sent(nb, 0, NULL, NULL), first);
	body[0] = 'b';
	notebook_add_sent(nb, "x", body, sizeof body);
	cr_assert_null(notebook_sent(nb, 0, NULL, NULL));
	cr_assert_eq(notebook_sent(nb, NOTEBOOK_SENT_KEEP, NULL, &len), first);
	cr_assert_eq(len, sizeof body);
	cr_assert_eq(first[0], 'b');
	cr_assert_eq(first[len], '\0');
	notebook_free(nb);
}
