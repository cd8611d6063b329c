/* Unit tests of the notebook's message bookkeeping: the kept length and
 * last message follow every way the conversation changes; a tool result
 * inserted in the middle (the loader's repair) is there. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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

static struct net_attempt
net_att(int cell, uint64_t id, const char *host, int open, uint64_t up)
{
	struct net_attempt a = { .cell = cell, .id = id, .port = 443, .open = open,
	    .up = up, .verdict = NETLOG_ALLOWED };
	snprintf(a.host, sizeof a.host, "%s", host);
	snprintf(a.code, sizeof a.code, "%s", open ? "ok" : "done");
	return a;
}

/* Each cell's ledger summary is kept as reports come: an open attempt's
 * later reports update its entry and the summary, the session's total
 * counts every entry once (issue 22: they were recomputed from the
 * whole ledger). */
Test(notebook, net_summaries_kept_per_cell_and_session)
{
	struct notebook *nb = notebook_new();
	struct net_attempt a;
	const struct netlog_sum *s;
	size_t n;
	char *t;

	cr_assert_null(notebook_net_sum(nb, 1));
	cr_assert_null(notebook_net_total(nb));
	a = net_att(1, 7, "index.example.invalid", 1, 0);
	notebook_add_net(nb, &a);
	a = net_att(2, 8, "other.example.invalid", 0, 5);
	notebook_add_net(nb, &a);
	a = net_att(1, 7, "index.example.invalid", 1, 100);
	notebook_add_net(nb, &a);
	s = notebook_net_sum(nb, 1);
	uint64_t g = s->gen;
	a = net_att(1, 7, "index.example.invalid", 0, 2048);
	notebook_add_net(nb, &a);
	cr_assert_gt(s->gen, g);
	notebook_nets(nb, &n, NULL);
	cr_assert_eq(n, 2, "the open attempt's reports are one entry");
	cr_assert_eq(s->attempts, 1);
	cr_assert_eq(s->up, 2048);
	t = netlog_sum_text(s, NETLOG_ASCII);
	cr_assert_str_eq(t, "index.example.invalid ok 0 B down 2 KiB up");
	free(t);
	/* ended: a later report of the same id is a new attempt */
	a = net_att(1, 7, "index.example.invalid", 0, 1);
	notebook_add_net(nb, &a);
	cr_assert_eq(s->attempts, 2);
	cr_assert_eq(notebook_net_sum(nb, 2)->attempts, 1);
	cr_assert_eq(notebook_net_total(nb)->attempts, 3);
	cr_assert_eq(notebook_net_total(nb)->up, 2048 + 5 + 1);
	cr_assert_null(notebook_net_sum(nb, 3));
	notebook_free(nb);
}

/* A flood of refused attempts to distinct hosts, over many cells (a
 * journal's cell numbers are any up to 1e9): kept up to the cap, each
 * cell's summary bounded, the rest counted. */
Test(notebook, net_flood_of_distinct_hosts)
{
	struct notebook *nb = notebook_new();
	uint64_t dropped;
	size_t n;
	char *t;

	for (int i = 0; i < NOTEBOOK_NET_MAX + 5; i++) {
		struct net_attempt a = { .cell = i < 1000 ? 1000000000 - i % 3 : 1,
		    .id = (uint64_t)i + 1, .port = 443, .verdict = NETLOG_REFUSED };
		snprintf(a.host, sizeof a.host, "h%d.example.invalid", i);
		snprintf(a.reason, sizeof a.reason, "not allowed");
		notebook_add_net(nb, &a);
	}
	notebook_nets(nb, &n, &dropped);
	cr_assert_eq(n, NOTEBOOK_NET_MAX);
	cr_assert_eq(dropped, 5);
	cr_assert_eq(notebook_net_total(nb)->bad, NOTEBOOK_NET_MAX);
	cr_assert_eq(notebook_net_sum(nb, 1)->attempts, NOTEBOOK_NET_MAX - 1000);
	cr_assert_eq(notebook_net_sum(nb, 1000000000)->attempts, 334);
	t = netlog_sum_text(notebook_net_sum(nb, 1), NETLOG_ASCII);
	cr_assert(strstr(t, " and 18992 more") != NULL, "%s", t);
	free(t);
	notebook_free(nb);
}

static int drops_told;

static void
count_drops(void *arg, const struct nb_change *ch)
{
	(void)arg;
	if (ch->kind == NB_DROP)
		drops_told += ch->cell->n;
}

/* `d`: the dropped cell's call and result stay, as a line each; the
 * other call and the cell itself are untouched; a running cell and a
 * second drop are refused. */
Test(notebook, drop_cell_rewrites_its_call_and_result_only)
{
	struct notebook *nb = notebook_new();
	struct cell_result ok = { .status = CELL_OK };
	uint64_t gen;
	char *all;

	notebook_observe(nb, count_drops, NULL);
	notebook_add_question(nb, "q", NULL);
	notebook_add_reply(nb, NULL, cJSON_Parse("[{\"id\":\"a\",\"name\":\"python_exec\","
	    "\"arguments\":\"{\\\"code\\\": \\\"print('keep')\\\"}\"},{\"id\":\"b\","
	    "\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\": \\\"print('zap')\\\"}\"}]"));
	notebook_add_cell(nb, CELL_BY_MODEL, "print('keep')", "a");
	notebook_cell_result(nb, 1, &ok);
	notebook_add_tool_result(nb, "a", "keep", 0);
	notebook_add_cell(nb, CELL_BY_MODEL, "print('zap')", "b");
	cr_assert_eq(notebook_drop_cell(nb, 2), -1, "running: refused");
	notebook_cell_result(nb, 2, &ok);
	notebook_add_tool_result(nb, "b", "zap", 1);
	gen = notebook_gen(nb);
	cr_assert_eq(notebook_drop_cell(nb, 2), 0);
	cr_assert_neq(notebook_gen(nb), gen, "the earlier messages changed");
	cr_assert_eq(notebook_drop_cell(nb, 2), -1, "dropped already");
	cr_assert_eq(notebook_drop_cell(nb, 9), -1);
	cr_assert_eq(drops_told, 2);
	cr_assert(notebook_cell(nb, 2)->dropped && !notebook_cell(nb, 1)->dropped);
	cr_assert_str_eq(notebook_cell(nb, 2)->code, "print('zap')", "kept in the notebook");
	all = cJSON_PrintUnformatted(notebook_messages(nb));
	cr_assert_null(strstr(all, "zap"), "%s", all);
	cr_assert_not_null(strstr(all, "keep"), "%s", all);
	cr_assert_not_null(strstr(all, "\"tool_call_id\":\"b\""), "the pair stays: %s", all);
	cr_assert_not_null(strstr(all, "dropped this cell"), "%s", all);
	cr_assert_eq(cJSON_GetArraySize(notebook_messages(nb)), 4);
	free(all);
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

/* notebook_add_sent_keep keeps the caller's body itself (no copy of the
 * whole conversation per request), and hands back the storage of the one
 * that leaves the window. */
Test(notebook, a_kept_body_is_the_callers_and_comes_back_when_it_leaves)
{
	struct notebook *nb = notebook_new();
	char *first = strdup("{\"body\":0}"), *back = NULL;
	const char *what;
	size_t len;

	cr_assert_null(notebook_add_sent_keep(nb, "fake", first, strlen(first)));
	cr_assert_eq(notebook_sent(nb, 0, &what, &len), first, "kept, not copied");
	cr_assert_eq(len, strlen(first));
	cr_assert_str_eq(what, "fake");
	for (int i = 1; i <= NOTEBOOK_SENT_KEEP; i++) {
		char *b = strdup("{\"body\":1}");
		back = notebook_add_sent_keep(nb, "fake", b, strlen(b));
		if (i < NOTEBOOK_SENT_KEEP)
			cr_assert_null(back, "request %d", i);
	}
	cr_assert_eq(back, first, "the oldest body's storage comes back");
	cr_assert_null(notebook_sent(nb, 0, NULL, &len), "no longer kept");
	cr_assert_eq(len, strlen("{\"body\":0}"), "its size stays");
	free(back);
	/* the copying form still copies, and frees what leaves */
	notebook_add_sent(nb, "fake", "{\"body\":2}", 10);
	cr_assert_str_eq(notebook_sent(nb, NOTEBOOK_SENT_KEEP + 1, NULL, NULL), "{\"body\":2}");
	notebook_free(nb);
}

static size_t seen_shared;

static void
note_shared(void *arg, const struct nb_change *ch)
{
	(void)arg;
	if (ch->kind == NB_SENT)
		seen_shared = ch->shared;
}

/* A kept body's tag (what its builder says its storage holds) comes back
 * with its storage when it leaves the window, and what it shares with
 * the request before goes to the observer (the journal, whose delta then
 * compares from there). A copy's storage is nobody's word: tag 0. */
Test(notebook, a_kept_bodys_tag_comes_back_with_its_storage)
{
	struct notebook *nb = notebook_new();
	char *first = strdup("{\"body\":0}"), *back = NULL;
	uint64_t tag = 99;

	notebook_observe(nb, note_shared, NULL);
	cr_assert_null(notebook_add_sent_tagged(nb, "fake", first, strlen(first),
	    0, 7, &tag));
	cr_assert_eq(tag, 0);
	for (int i = 1; i <= NOTEBOOK_SENT_KEEP; i++) {
		char *b = strdup("{\"body\":1}");
		back = notebook_add_sent_tagged(nb, "fake", b, strlen(b), 8,
		    (uint64_t)(7 + i), &tag);
		cr_assert_eq(seen_shared, 8);
	}
	cr_assert_eq(back, first);
	cr_assert_eq(tag, 7, "the oldest body's tag with its storage");
	free(back);
	/* a copy's shared is not the builder's: the journal compares all */
	notebook_add_sent(nb, "fake", "{\"body\":2}", 10);
	cr_assert_eq(seen_shared, 0);
	/* storage a copy was written into comes back untagged */
	for (int i = 0; i < NOTEBOOK_SENT_KEEP; i++) {
		char *b = strdup("{\"body\":3}");
		back = notebook_add_sent_tagged(nb, "fake", b, strlen(b), 0, 50, &tag);
		if (i < NOTEBOOK_SENT_KEEP - 1) {
			cr_assert_neq(tag, 0, "a kept one's, request %d", i);
			free(back);
		}
	}
	cr_assert_eq(tag, 0, "the copy's storage: nobody vouches for it");
	free(back);
	notebook_free(nb);
}
