/* context: the window table, the token estimate (with the provider's
 * reported count for what was sent) and the compaction plan over a real
 * notebook: oldest tool outputs elided first, never the current
 * question or the latest results, summaries cut at question starts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convo.h"
#include "terp/buf.h"
#include "terp/context.h"
#include "terp/notebook.h"
#include "terp/util.h"

/* ---------------------------------------------------------------- table */

Test(context, table_matches_by_prefix_and_ignores_tags)
{
	cr_assert_eq(context_window_of("openai", "gpt-4o-mini-2024-07-18"), 128000);
	cr_assert_eq(context_window_of("openai", "gpt-4o"), 128000);
	cr_assert_eq(context_window_of("openai", "gpt-4"), 8192);
	cr_assert_eq(context_window_of("openai", "gpt-4-turbo"), 128000);
	cr_assert_eq(context_window_of("openai", "gpt-4.1-mini"), 1047576);
	cr_assert_eq(context_window_of("azure", "gpt-5-mini"), 400000);
	cr_assert_eq(context_window_of("anthropic", "claude-sonnet-4-20250514"), 200000);
	cr_assert_eq(context_window_of("ollama", "llama3.1:8b"), 131072);
	cr_assert_eq(context_window_of("ollama", "llama3:8b"), 8192);
	cr_assert_eq(context_window_of("ollama", "library/qwen2.5:7b"), 32768);
	cr_assert_eq(context_window_of("openai", "no-such-model"), 0);
	cr_assert_eq(context_window_of("openai", NULL), 0);
	/* A tag is not part of the name: "gpt" alone matches nothing. */
	cr_assert_eq(context_window_of("ollama", "gpt:4o"), 0);
}

Test(context, window_sources_in_order)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 0, NULL, NULL);

	context_set_model(cx, "openai", "gpt-4o");
	cr_assert_eq(context_window(cx), 128000);
	cr_assert_str_eq(context_window_source(cx), "table " CONTEXT_TABLE_DATE);
	context_set_model(cx, "openai", "mystery");
	cr_assert_eq(context_window(cx), 8192);
	cr_assert_str_eq(context_window_source(cx), "default");
	/* A local server's own size, whatever the model could take. */
	context_set_model(cx, "ollama", "llama3.1:8b");
	cr_assert_eq(context_window(cx), CONTEXT_OLLAMA_DEFAULT);
	context_set_server_window(cx, 32768);
	cr_assert_eq(context_window(cx), 32768);
	cr_assert_str_eq(context_window_source(cx), "server");
	context_free(cx);

	/* --context-window wins over everything. */
	cx = context_new(nb, NULL, 6000, NULL, NULL);
	context_set_model(cx, "ollama", "llama3.1:8b");
	context_set_server_window(cx, 32768);
	cr_assert_eq(context_window(cx), 6000);
	cr_assert_str_eq(context_window_source(cx), "--context-window");
	cr_assert(context_reserve(cx) >= 256 && context_reserve(cx) <= 6000 / 4);
	context_free(cx);
	notebook_free(nb);
}

/* ---------------------------------------------------------------- estimate */

Test(context, estimate_text)
{
	char big[4001];

	cr_assert_eq(context_estimate_text("", 0), 0);
	cr_assert_eq(context_estimate_text("1234567", 7), 3);		/* 3 digits a token */
	cr_assert_eq(context_estimate_text("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 9), 3);
	cr_assert_eq(context_estimate_text("a,b", 3), 3);
	cr_assert_eq(context_estimate_text("    x", 5), 2);		/* indentation */
	/* English prose: a little over bytes/4 (the leaning-high side of
	 * the real ~4.5 bytes a token), never under bytes/5. */
	for (size_t i = 0; i < 4000; i += 40)
		memcpy(big + i, "The revenue per dollar of spend rose by ", 40);
	big[4000] = '\0';
	{
		long t = context_estimate_text(big, 4000);
		cr_assert(t >= 4000 / 5 && t <= 4000 / 3, "prose estimate %ld", t);
	}
	/* Tables of numbers cost more than bytes/4. */
	for (size_t i = 0; i < 4000; i += 20)
		memcpy(big + i, "2024-03  1234.56  7\n", 20);
	big[4000] = '\0';
	cr_assert(context_estimate_text(big, 4000) > 4000 / 4);
}

/* A 4 KB output of 100 lines whose first line names the question. */
static char *
output(int q)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_printf(&b, "status: ok (0.01 s)\nstdout:\nresult of question %d\n", q);
	for (int i = 0; i < 97; i++)
		buf_printf(&b, "row %03d  %10.3f  %7d  north\n", i, i * 1.5 + q, i * q);
	return buf_take(&b);
}

/* q questions, each: the question, one cell, its 4 KB output, the
 * answer; then the current question with one finished cell. */
static void
session(struct notebook *nb, int nq)
{
	char id[32], text[128];

	for (int q = 1; q <= nq + 1; q++) {
		char *out = output(q);
		struct cell *c;
		snprintf(id, sizeof id, "call_%d", q);
		snprintf(text, sizeof text, "Question %d: what is the total of block %d?", q, q);
		convo_add(nb, convo_msg("user", text));
		convo_add(nb, convo_call(id, "print(df.sum())"));
		c = notebook_add_cell(nb, CELL_BY_MODEL, "print(df.sum())", id);
		c->status = CELL_OK;
		convo_add(nb, convo_tool(id, out));
		free(out);
		if (q <= nq) {
			snprintf(text, sizeof text, "The total of block %d is %d.", q, 1000 + q);
			convo_add(nb, convo_msg("assistant", text));
		}
	}
}

Test(context, estimate_uses_the_reported_count_for_what_was_sent)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 100000, NULL, NULL);
	struct usage u = { .input_tokens = 5000 };
	long raw_sent, est, new_part;
	cJSON *extra;

	session(nb, 2);
	raw_sent = context_estimate(cx, "You are terse.");
	cr_assert(raw_sent > 3 * 1000, "%ld", raw_sent);
	context_messages(cx, "You are terse.");
	/* Before the usage came: the estimate. */
	cr_assert_eq(context_estimate(cx, "You are terse."), raw_sent);
	notebook_add_usage(nb, &u);
	cr_assert_eq(context_estimate(cx, "You are terse."), 5000);
	extra = convo_msg("assistant", "The total of block 3 is 1003.");
	new_part = context_estimate_message(extra);
	convo_add(nb, extra);
	est = context_estimate(cx, "You are terse.");
	/* The provider counted 5000 for what was sent, more than terp's
	 * estimate, so the new part is scaled up the same way. */
	cr_assert(est >= 5000 + new_part && est <= 5000 + 2 * new_part + 1,
	    "est %ld new %ld raw %ld", est, new_part, raw_sent);
	cr_assert_eq(context_percent(cx), (5000 * 100 + 50000) / 100000);
	context_free(cx);
	notebook_free(nb);
}

/* ---------------------------------------------------------------- plan */

static int
last_user(const cJSON *msgs)
{
	int i = 0, q = -1;
	const cJSON *m;

	cJSON_ArrayForEach(m, msgs) {
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(m, "role")), "user") == 0)
			q = i;
		i++;
	}
	return q;
}

Test(context, plan_elides_oldest_tool_outputs_first)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 8192, NULL, NULL);
	struct context_plan p;
	const cJSON *v, *m;
	char *err = NULL;
	int i = 0, nelided = 0, q;

	session(nb, 6);	/* 7 x 4 KB: well over 8k tokens */
	context_plan(cx, "sys", 0, &p);
	cr_assert(!p.fits || p.elide_upto > 0);
	cr_assert(p.before > 8192 - context_reserve(cx), "before %ld", p.before);
	cr_assert(p.after <= 8192 - context_reserve(cx), "after %ld", p.after);
	cr_assert_eq(p.summarise_to, 0, "eliding is enough here");
	q = last_user(notebook_messages(nb));
	cr_assert(p.elide_upto <= q, "the current question's results stay");

	cr_assert_eq(context_prepare(cx, "sys", 0, NULL, NULL, &err), 0);
	v = context_messages(cx, "sys");
	cr_assert_eq(cJSON_GetArraySize(v), cJSON_GetArraySize(notebook_messages(nb)));
	cJSON_ArrayForEach(m, v) {
		const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(m, "role"));
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
		if (strcmp(role, "tool") == 0 && strstr(c, "elided")) {
			char want[96];
			int cell = i / 4 + 1;
			nelided++;
			/* Oldest first: elided ones form a prefix. */
			cr_assert_eq(i, (nelided - 1) * 4 + 2);
			snprintf(want, sizeof want, "[elided: cell [%d], 100 lines, still in the notebook]", cell);
			cr_assert(strstr(c, want), "%s", c);
			cr_assert(strncmp(c, "status: ok (0.01 s)\nstdout:\nresult of question", 46) == 0, "%s", c);
			cr_assert(strlen(c) < 300);
		}
		i++;
	}
	cr_assert(nelided >= 1 && nelided < 7, "%d", nelided);
	/* The latest result goes whole. */
	m = cJSON_GetArrayItem(v, cJSON_GetArraySize(v) - 1);
	cr_assert(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")), "row 096"));
	/* The notebook itself is untouched. */
	m = cJSON_GetArrayItem(notebook_messages(nb), 2);
	cr_assert(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")), "row 096"));
	cr_assert(context_estimate(cx, "sys") <= 8192 - context_reserve(cx));
	context_free(cx);
	notebook_free(nb);
}

Test(context, plan_summarises_whole_questions_when_eliding_is_not_enough)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 8192, NULL, NULL);
	struct context_plan p;
	const cJSON *msgs = notebook_messages(nb);
	int q;

	session(nb, 60);
	q = last_user(msgs);
	context_plan(cx, "sys", 0, &p);
	cr_assert(p.summarise_to > 0);
	cr_assert(p.summarise_to <= q, "the current question is never summarised");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(msgs, p.summarise_to), "role")), "user",
	    "a summary ends where a question starts");
	cr_assert(p.fits, "after %ld", p.after);
	/* The fewest questions: one question less would not fit. */
	cr_assert(p.summarise_to >= 4);
	context_free(cx);
	notebook_free(nb);
}

Test(context, plan_keeps_the_current_question_and_latest_results)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 2000, NULL, NULL);
	struct context_plan p;
	int q, n;
	char *out = output(9);

	/* Only the current question, with three cells of 4 KB each. */
	convo_add(nb, convo_msg("user", "the current question"));
	for (int i = 1; i <= 3; i++) {
		char id[16];
		snprintf(id, sizeof id, "c%d", i);
		convo_add(nb, convo_call(id, "print(1)"));
		notebook_add_cell(nb, CELL_BY_MODEL, "print(1)", id);
		convo_add(nb, convo_tool(id, out));
	}
	free(out);
	n = cJSON_GetArraySize(notebook_messages(nb));
	q = last_user(notebook_messages(nb));
	context_plan(cx, "sys", 0, &p);
	cr_assert_eq(q, 0);
	cr_assert_eq(p.summarise_to, 0, "nothing before the question to summarise");
	/* The two earlier results of this question may go, the latest
	 * (after the last assistant message) never. */
	cr_assert_eq(p.elide_upto, n - 2, "elide_upto %d n %d", p.elide_upto, n);
	cr_assert(!p.fits, "a result too large for the window stays whole");
	context_free(cx);
	notebook_free(nb);
}

Test(context, parts_list_what_is_sent)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 8192, NULL, NULL);
	struct context_part *parts;
	char *err = NULL;
	int n, nelided = 0, ncells = 0, nq = 0;
	long sum = 0;

	session(nb, 4);
	cr_assert_eq(context_prepare(cx, "You are a careful analyst.", 0, NULL, NULL, &err), 0);
	n = context_parts(cx, NULL, &parts);
	cr_assert_eq(n, 1 + cJSON_GetArraySize(notebook_messages(nb)));
	cr_assert_eq(parts[0].kind, CONTEXT_SYSTEM);
	for (int i = 0; i < n; i++) {
		sum += parts[i].tokens;
		nelided += parts[i].kind == CONTEXT_ELIDED;
		ncells += parts[i].kind == CONTEXT_CELL;
		nq += parts[i].kind == CONTEXT_QUESTION;
		if (parts[i].kind == CONTEXT_ELIDED || parts[i].kind == CONTEXT_CELL)
			cr_assert(parts[i].cell >= 1 && parts[i].cell <= 5);
	}
	cr_assert_eq(nq, 5);
	cr_assert(nelided >= 1 && ncells >= 1);
	cr_assert_eq(nelided + ncells, 5);
	cr_assert(labs(sum - context_estimate(cx, NULL)) <= 2, "%ld vs %ld", sum,
	    context_estimate(cx, NULL));
	free(parts);
	context_free(cx);
	notebook_free(nb);
}

Test(context, summary_replaces_whole_questions_in_the_view)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 8192, NULL, NULL);
	struct context_plan p;
	const cJSON *v, *first;
	const char *c;
	char *err = NULL;
	long before;
	int upto;

	session(nb, 20);
	cr_assert_eq(context_set_summary(cx, 1, "no: not a question"), -1);
	cr_assert_eq(context_set_summary(cx, 0, "no: nothing before it"), -1);
	context_plan(cx, "sys", 1500, &p);
	cr_assert(p.summarise_to > 0);
	before = context_estimate(cx, "sys");
	cr_assert_eq(context_set_summary(cx, p.summarise_to, "Totals: block 1 = 1001."), 0);
	cr_assert_str_eq(context_summary(cx, &upto), "Totals: block 1 = 1001.");
	cr_assert_eq(upto, p.summarise_to);
	cr_assert(context_estimate(cx, "sys") < before);
	/* m is NULL here: prepare elides what else is needed, no call. */
	cr_assert_eq(context_prepare(cx, "sys", 0, NULL, NULL, &err), 0);
	v = context_messages(cx, "sys");
	cr_assert_eq(cJSON_GetArraySize(v), cJSON_GetArraySize(notebook_messages(nb)) - upto);
	first = cJSON_GetArrayItem(v, 0);
	c = cJSON_GetStringValue(cJSON_GetObjectItem(first, "content"));
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(first, "role")), "user");
	cr_assert(strstr(c, "Summary of the earlier conversation (questions 1-") == c, "%s", c);
	cr_assert(strstr(c, "Totals: block 1 = 1001.\n"), "%s", c);
	/* the question itself follows the summary, whole */
	cr_assert(strstr(c, "what is the total of block"), "%s", c);
	cr_assert(context_estimate(cx, "sys") <= 8192 - context_reserve(cx));
	context_free(cx);
	notebook_free(nb);
}

Test(context, a_refusal_names_the_window)
{
	static const struct { const char *msg; long want; } c[] = {
		{ "400 Bad Request: This model's maximum context length is 8192 tokens. "
		  "However, your messages resulted in 8871 tokens.", 8192 },
		{ "400 Bad Request: prompt is too long: 208310 tokens > 200000 maximum", 200000 },
		{ "400 Bad Request: request (4476 tokens) exceeds the available context "
		  "size (4096 tokens), try increasing it", 4096 },
		{ "400 Bad Request: This model's maximum context length is 2048 tokens. "
		  "However, you requested 2100 tokens", 2048 },
	};
	struct notebook *nb = notebook_new();

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct context *cx = context_new(nb, NULL, 1000000, NULL, NULL);
		context_refused(cx, c[i].msg);
		cr_assert_eq(context_window(cx), c[i].want, "%s", c[i].msg);
		cr_assert_str_eq(context_window_source(cx), "server refusal");
		context_free(cx);
	}
	{
		/* No number: 90% of what was sent. */
		struct context *cx = context_new(nb, NULL, 1000000, NULL, NULL);
		convo_add(nb, convo_msg("user", "a question of some length, to count"));
		context_messages(cx, "system");
		context_refused(cx, "the input length exceeds the context length");
		cr_assert(context_window(cx) > 0 && context_window(cx) < 1000, "%ld",
		    context_window(cx));
		context_free(cx);
	}
	notebook_free(nb);
}

/* context_stamp: the same from one view to the next while the
 * conversation only grows; another after an elision, a summary, or a
 * change to a message already there; never a notebook's generation. */
Test(context, stamp_follows_the_view_and_the_notebook)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 8192, NULL, NULL);
	struct context_plan p;
	char *err = NULL;
	uint64_t s, t;

	cr_assert_eq(context_stamp(cx), 0, "no view yet");
	session(nb, 3);
	context_messages(cx, "sys");
	s = context_stamp(cx);
	cr_assert_neq(s, 0);
	cr_assert_neq(s, notebook_gen(nb));
	notebook_add_question(nb, "and now?", NULL);
	context_messages(cx, "sys");
	cr_assert_eq(context_stamp(cx), s, "only grown");
	notebook_insert_tool_result(nb, 2, "x", "inserted", 0);
	context_messages(cx, "sys");
	t = context_stamp(cx);
	cr_assert_neq(t, s, "a message inserted before the end");
	/* elided to fit: the view changed */
	session(nb, 20);
	context_messages(cx, "sys");
	t = context_stamp(cx);
	cr_assert_eq(context_prepare(cx, "sys", 0, NULL, NULL, &err), 0);
	context_plan(cx, "sys", 0, &p);
	context_messages(cx, "sys");
	cr_assert_neq(context_stamp(cx), t, "elided");
	t = context_stamp(cx);
	context_plan(cx, "sys", 1500, &p);
	cr_assert(p.summarise_to > 0);
	cr_assert_eq(context_set_summary(cx, p.summarise_to, "Totals."), 0);
	context_messages(cx, "sys");
	cr_assert_neq(context_stamp(cx), t, "summarised");
	context_free(cx);
	notebook_free(nb);
}

/* The view grows with the conversation: its earlier items are kept (not
 * made again every turn), and it is the view a fresh context makes of
 * the same notebook, however it changed: grown, elided, summarised, a
 * message inserted before the end. */
static void
view_as_fresh(struct notebook *nb, struct context *cx, int line)
{
	struct context *fresh = context_new(nb, NULL, 8192, NULL, NULL);
	int upto;
	const char *s = context_summary(cx, &upto);
	char *a, *b;

	if (s != NULL)
		cr_assert_eq(context_set_summary(fresh, upto, s), 0);
	/* the same elision: the fresh one plans it alike */
	context_prepare(fresh, "sys", 0, NULL, NULL, &(char *){ NULL });
	a = cJSON_PrintUnformatted(context_messages(cx, "sys"));
	b = cJSON_PrintUnformatted(context_messages(fresh, "sys"));
	cr_assert_str_eq(a, b, "line %d", line);
	free(a);
	free(b);
	context_free(fresh);
}

Test(context, the_view_grows_and_stays_the_fresh_one)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 8192, NULL, NULL);
	struct context_plan p;
	const cJSON *v, *first;
	char *err = NULL;

	notebook_add_question(nb, "q1", NULL);
	notebook_add_reply(nb, "a1", NULL);
	v = context_messages(cx, "sys");
	first = v->child;
	for (int i = 0; i < 5; i++) {
		notebook_add_question(nb, "more?", NULL);
		view_as_fresh(nb, cx, __LINE__);
		notebook_add_reply(nb, "yes", NULL);
		view_as_fresh(nb, cx, __LINE__);
	}
	cr_assert_eq(context_messages(cx, "sys")->child, first, "kept, not made again");
	notebook_insert_tool_result(nb, 1, "x", "inserted", 0);
	view_as_fresh(nb, cx, __LINE__);
	notebook_add_question(nb, "next", NULL);
	view_as_fresh(nb, cx, __LINE__);
	session(nb, 20);
	cr_assert_eq(context_prepare(cx, "sys", 0, NULL, NULL, &err), 0);
	view_as_fresh(nb, cx, __LINE__);
	context_plan(cx, "sys", 1500, &p);
	cr_assert(p.summarise_to > 0);
	cr_assert_eq(context_set_summary(cx, p.summarise_to, "Totals."), 0);
	view_as_fresh(nb, cx, __LINE__);
	notebook_add_question(nb, "after the summary", NULL);
	view_as_fresh(nb, cx, __LINE__);
	context_free(cx);
	notebook_free(nb);
}

/* --reasoning: the thinking budget is output too, kept free in the
 * window beside the answer's reserve, but never more than half of it. */
#include "terp/llm.h"
#include "terp/loop.h"

Test(context, reasoning_budget_is_reserved)
{
	struct notebook *nb = notebook_new();
	struct loop *l = loop_new();
	struct llm_config cfg = { .provider = "anthropic", .model = "claude-x",
	    .max_tokens = 4096, .reasoning = LLM_REASONING_MEDIUM };
	char *err = NULL;
	struct llm *m = llm_new(l, &cfg, &err);
	struct context *cx;

	cr_assert_not_null(m, "%s", err ? err : "");
	cx = context_new(nb, m, 100000, NULL, NULL);
	cr_assert_eq(context_reserve(cx), 4096 + 8192);
	context_free(cx);
	cx = context_new(nb, m, 20000, NULL, NULL);
	cr_assert_eq(context_reserve(cx), 10000);	/* half the window */
	context_free(cx);
	llm_free(m);
	cfg.reasoning = LLM_REASONING_DEFAULT;	/* Anthropic's default: none */
	m = llm_new(l, &cfg, &err);
	cx = context_new(nb, m, 100000, NULL, NULL);
	cr_assert_eq(context_reserve(cx), 4096);
	context_free(cx);
	llm_free(m);
	loop_free(l);
	notebook_free(nb);
}

/* The status bar's percentage takes the provider's count as soon as it
 * came, not at the next estimate (a /context, the next question). */
Test(context, percent_takes_the_reported_count_when_it_comes)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 100000, NULL, NULL);
	struct usage u = { .input_tokens = 20000 };
	long est;

	session(nb, 2);
	context_messages(cx, "You are terse.");
	est = context_estimate(cx, "You are terse.");
	cr_assert_eq(context_percent(cx), (int)((est * 100 + 50000) / 100000));
	notebook_add_usage(nb, &u);
	cr_assert_eq(context_percent(cx), 20, "%d", context_percent(cx));
	context_estimate(cx, "You are terse.");
	cr_assert_eq(context_percent(cx), 20);
	context_free(cx);
	notebook_free(nb);
}

/* The estimate sums the cached messages from where the last one left
 * off (all but the last message stay as they were): through growth, a
 * result inserted in the middle and elision, it is what a context made
 * afresh on the same notebook estimates (the same view: nothing elided
 * in a big window, or the same plan applied). */
Test(context, the_estimate_from_the_last_sum_is_the_whole_one)
{
	struct notebook *nb = notebook_new();
	struct context *cx = context_new(nb, NULL, 1000000, NULL, NULL), *fresh;
	struct context_plan p;
	char *err = NULL;

	for (int i = 0; i < 30; i++) {
		notebook_add_question(nb, "a question of some words", NULL);
		(void)context_estimate(cx, "sys");
		notebook_add_reply(nb, i % 2 ? "yes" : "a longer answer of more words", NULL);
		if (i == 10)
			notebook_insert_tool_result(nb, 3, "x", "inserted, and long enough", 0);
		fresh = context_new(nb, NULL, 1000000, NULL, NULL);
		cr_assert_eq(context_estimate(cx, "sys"), context_estimate(fresh, "sys"),
		    "step %d", i);
		context_free(fresh);
	}
	/* a small window elides: the same plan on both */
	context_free(cx);
	session(nb, 6);
	cx = context_new(nb, NULL, 8192, NULL, NULL);
	cr_assert_eq(context_prepare(cx, "sys", 0, NULL, NULL, &err), 0);
	(void)context_estimate(cx, "sys");
	notebook_add_question(nb, "one more", NULL);
	fresh = context_new(nb, NULL, 8192, NULL, NULL);
	cr_assert_eq(context_prepare(fresh, "sys", 0, NULL, NULL, &err), 0);
	context_plan(cx, "sys", 0, &p);
	cr_assert_eq(context_estimate(cx, "sys"), context_estimate(fresh, "sys"));
	context_free(fresh);
	context_free(cx);
	notebook_free(nb);
}
