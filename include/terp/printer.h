/* printer: the human-readable frontend of `terp exec` and `terp -p`.
 * Cell output streams to stdout/stderr (sanitized, bounded by the
 * notebook's head cap, then the tail at the result); statuses, cells and
 * model progress go to stderr; a question's final answer goes to stdout,
 * so `terp -p ... > answer.md` captures just the answer. */
#ifndef TERP_PRINTER_H
#define TERP_PRINTER_H

#include <stdio.h>

#include "terp/event.h"

enum printer_mode {
	PRINTER_EXEC,		/* cells only: output as a script's */
	PRINTER_PROMPT,		/* turns, code heads, output heads, answer */
};

/* out and err are borrowed. Free with free(). */
struct printer *printer_new(FILE *out, FILE *err, enum printer_mode mode);
void printer_event(void *arg, const struct event *ev);
/* --show-reasoning: the model's reasoning goes to stderr, marked and
 * apart from the answer (off: it is not shown at all). */
void printer_show_reasoning(struct printer *p, int on);
/* -p on a terminal: redraws the line under a running cell (its time, its
 * latest output line once the output is cut); call it a few times a
 * second. Nothing elsewhere. */
void printer_tick(struct printer *p);
/* Takes that line away before the caller prints (the run is over). */
void printer_done(struct printer *p);

#endif
