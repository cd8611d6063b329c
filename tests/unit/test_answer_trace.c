/* Unit tests of answer_trace: a session's cells indexed once each, the
 * answer's numbers with the question's left out, and the forms the
 * frontends show (the -p summary, --json's numbers, the exports' list). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/answer_trace.h"

static struct cell *
cell(struct notebook *nb, enum cell_author who, enum cell_status st,
    const char *out, const char *err, const char *value)
{
	struct cell *c = notebook_add_cell(nb, who, "x", NULL);

	c->status = st;
	if (out)
		outcap_add(&c->out[0], out, strlen(out));
	if (err)
		outcap_add(&c->out[1], err, strlen(err));
	if (value)
		c->value = strdup(value);
	return c;
}

static char *
where_all(const struct answer_trace *tr)
{
	struct buf b;
	char w[64];

	buf_init(&b, 1 << 16);
	for (size_t i = 0; i < tr->n; i++)
		buf_printf(&b, "%s%.*s=%s", i ? " | " : "", (int)tr->hits[i].len,
		    tr->answer + tr->hits[i].off,
		    answer_trace_where(&tr->hits[i], w, sizeof w));
	return buf_take(&b);
}

Test(answer_trace, streams_lines_and_the_question)
{
	struct notebook *nb = notebook_new();
	struct answer_tracer *t = answer_tracer_new();
	struct answer_trace tr;
	char *s;

	cell(nb, CELL_BY_MODEL, CELL_OK, "rows 178\nmean 13.7448\n", NULL, NULL);
	cell(nb, CELL_BY_USER, CELL_OK, NULL, "warning: 7 rows dropped\n",
	    "count    178.000000\nmean     746.893258");
	answer_tracer_sync(t, nb, 0);
	answer_tracer_trace(t, "Of the top 3, 178 wines; mean 13.74 and 746.9; "
	    "7 dropped; 12.5% invented.", "the top 3?", &tr);
	s = where_all(&tr);
	cr_assert_str_eq(s, "178=cell [2], value | 13.74=cell [1], line 2 | "
	    "746.9=cell [2], value line 2 | 7=cell [2], stderr line 1 | "
	    "12.5%=not in any output");
	free(s);
	cr_assert_eq(tr.n, 5);
	cr_assert_eq(tr.traced, 4);
	s = answer_trace_summary(&tr);
	cr_assert_str_eq(s, "4 of 5 numbers traced; 1 not in any output: 12.5%");
	free(s);
	answer_trace_free(&tr);
	answer_tracer_free(t);
	notebook_free(nb);
}

Test(answer_trace, running_cells_are_indexed_when_they_finish)
{
	struct notebook *nb = notebook_new();
	struct answer_tracer *t = answer_tracer_new();
	struct answer_trace tr;
	struct cell *c;

	c = cell(nb, CELL_BY_USER, CELL_RUNNING, "41.5\n", NULL, NULL);
	cell(nb, CELL_BY_MODEL, CELL_OK, "1203455\n", NULL, NULL);
	answer_tracer_sync(t, nb, 0);
	answer_tracer_trace(t, "1.2M and 41.5", NULL, &tr);
	cr_assert_eq(tr.traced, 1);
	cr_assert_eq(tr.hits[0].cell, 2);
	answer_trace_free(&tr);
	c->status = CELL_OK;
	answer_tracer_sync(t, nb, 0);
	answer_tracer_sync(t, nb, 0);	/* twice: still indexed once */
	answer_tracer_trace(t, "1.2M and 41.5", NULL, &tr);
	cr_assert_eq(tr.traced, 2);
	cr_assert_eq(tr.hits[1].cell, 1);
	answer_trace_free(&tr);
	answer_tracer_free(t);
	notebook_free(nb);
}

Test(answer_trace, a_sync_takes_up_from_the_first_cell_not_indexed)
{
	struct notebook *nb = notebook_new();
	struct answer_tracer *t = answer_tracer_new();
	struct answer_trace tr;
	struct cell *c;

	cell(nb, CELL_BY_MODEL, CELL_OK, "11\n", NULL, NULL);
	c = cell(nb, CELL_BY_MODEL, CELL_RUNNING, "22\n", NULL, NULL);
	cell(nb, CELL_BY_MODEL, CELL_OK, "33\n", NULL, NULL);
	answer_tracer_sync(t, nb, 0);
	cell(nb, CELL_BY_MODEL, CELL_OK, "44\n", NULL, NULL);
	answer_tracer_sync(t, nb, 0);
	answer_tracer_trace(t, "11 22 33 44", NULL, &tr);
	cr_assert_eq(tr.traced, 3);
	cr_assert_eq(tr.hits[3].cell, 4);
	answer_trace_free(&tr);
	/* the running cell held the mark back: it is indexed when done,
	 * and the cells after it are not indexed twice */
	c->status = CELL_OK;
	cell(nb, CELL_BY_MODEL, CELL_OK, "55\n", NULL, NULL);
	answer_tracer_sync(t, nb, 0);
	answer_tracer_trace(t, "11 22 33 44 55", NULL, &tr);
	cr_assert_eq(tr.traced, 5);
	cr_assert_eq(tr.hits[1].cell, 2);
	cr_assert_eq(tr.hits[4].cell, 5);
	answer_trace_free(&tr);
	answer_tracer_free(t);
	notebook_free(nb);
}

Test(answer_trace, upto_leaves_later_cells_out)
{
	struct notebook *nb = notebook_new();
	struct answer_tracer *t = answer_tracer_new();
	struct answer_trace tr;

	cell(nb, CELL_BY_MODEL, CELL_OK, "10\n", NULL, NULL);
	cell(nb, CELL_BY_MODEL, CELL_OK, "20\n", NULL, NULL);
	answer_tracer_sync(t, nb, 1);
	answer_tracer_trace(t, "10 then 20", NULL, &tr);
	cr_assert_eq(tr.traced, 1);
	cr_assert_eq(tr.hits[1].line, 0);
	answer_trace_free(&tr);
	answer_tracer_free(t);
	notebook_free(nb);
}

Test(answer_trace, json_and_footnotes)
{
	struct notebook *nb = notebook_new();
	struct answer_tracer *t = answer_tracer_new();
	struct answer_trace tr;
	struct buf b;
	char *s;
	cJSON *j;

	cell(nb, CELL_BY_MODEL, CELL_OK, "share 0.4812\n", NULL, NULL);
	answer_tracer_sync(t, nb, 0);
	answer_tracer_trace(t, "48% of sales, up 3.5 pp", NULL, &tr);
	j = answer_trace_json(&tr);
	s = cJSON_PrintUnformatted(j);
	cr_assert_str_eq(s, "[{\"text\":\"48%\",\"value\":48,\"cell\":1,"
	    "\"stream\":\"stdout\",\"line\":1},"
	    "{\"text\":\"3.5 pp\",\"value\":3.5,\"untraced\":true}]");
	free(s);
	cJSON_Delete(j);
	buf_init(&b, 1 << 16);
	answer_trace_footnotes(&tr, &b);
	cr_assert_str_eq(buf_str(&b), "\nNumbers: 1 of 2 traced\n"
	    "- 48%: cell [1], line 1\n- 3.5 pp: not in any output\n");
	buf_free(&b);
	answer_trace_free(&tr);

	/* no numbers: no summary, an empty list, no footnotes */
	answer_tracer_trace(t, "East leads.", NULL, &tr);
	cr_assert_null(answer_trace_summary(&tr));
	buf_init(&b, 1 << 16);
	answer_trace_footnotes(&tr, &b);
	cr_assert_eq(b.len, 0);
	buf_free(&b);
	j = answer_trace_json(&tr);
	cr_assert_eq(cJSON_GetArraySize(j), 0);
	cJSON_Delete(j);
	answer_trace_free(&tr);
	answer_tracer_free(t);
	notebook_free(nb);
}

Test(answer_trace, summary_names_a_few_untraced)
{
	struct answer_tracer *t = answer_tracer_new();
	struct answer_trace tr;
	char *s;

	answer_tracer_trace(t, "11 12 13 14 15 16 17 18", NULL, &tr);
	s = answer_trace_summary(&tr);
	cr_assert_str_eq(s, "0 of 8 numbers traced; 8 not in any output: "
	    "11, 12, 13, 14, 15 and 3 more");
	free(s);
	answer_trace_free(&tr);
	answer_tracer_free(t);
}
