/* answer_trace: numtrace wired to a session (issue 11, part 2). The
 * frontends keep one tracer per session, sync it with the notebook's
 * finished cells (the model's and the hand-run ones) and trace each
 * final answer against them, leaving out the numbers of its question;
 * the result is printed (-p's summary on stderr), written (--json's
 * `numbers`), annotated (the exports' footnote list) or shown (the
 * TUI). Pure: no I/O, no terminal. */
#ifndef TERP_ANSWER_TRACE_H
#define TERP_ANSWER_TRACE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/notebook.h"
#include "terp/numtrace.h"

/* One answer's numbers. Owns every pointer; free with answer_trace_free. */
struct answer_trace {
	char			*answer;	/* a copy of the answer's text */
	size_t			 len;
	struct numtrace_hit	*hits;		/* in answer order */
	size_t			 n, traced;
};

struct answer_tracer;

struct answer_tracer *answer_tracer_new(void);
void answer_tracer_free(struct answer_tracer *t);

/* Indexes the outputs (stdout, stderr, value) of cells 1..upto of nb
 * (upto <= 0: all) that have finished and are not indexed yet. A cell
 * still pending or running is left for a later sync. */
void answer_tracer_sync(struct answer_tracer *t, const struct notebook *nb,
    int upto);

/* Traces answer (NUL-terminated) against what is indexed, leaving out
 * the numbers in question (may be NULL). Fills *out (zeroed first). */
void answer_tracer_trace(const struct answer_tracer *t, const char *answer,
    const char *question, struct answer_trace *out);
void answer_trace_free(struct answer_trace *tr);

/* "7 of 8 numbers traced; 1 not in any output: 12.5%": a new string, or
 * NULL when the answer has no numbers. Untraced ones are listed as
 * written (sanitized of control bytes), at most a few. */
char *answer_trace_summary(const struct answer_trace *tr);

/* The `numbers` array of --json's answer event: one object per number,
 * {"text","value","cell","stream","line"} when traced, {"text","value",
 * "untraced":true} when not. A new array. */
cJSON *answer_trace_json(const struct answer_trace *tr);

/* Where hit h came from, as a person reads it: "cell [3], line 2",
 * "cell [3], value", "cell [3], stderr line 1", or "not in any output".
 * Writes at most size bytes (NUL included) to buf; returns buf. */
const char *answer_trace_where(const struct numtrace_hit *h, char *buf,
    size_t size);

/* The export's annotation: a Markdown list after the answer,
 *
 *	Numbers: 7 of 8 traced
 *	- 1,203,455: cell [3], line 2
 *	- 12.5%: not in any output
 *
 * appended to b; nothing when the answer has no numbers. */
void answer_trace_footnotes(const struct answer_trace *tr, struct buf *b);

#endif
