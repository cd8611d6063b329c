/* tui_trace: the answers' numbers in the notebook UI (issue 11, part
 * 2; issue 24): the answer's words never change; each traced number is
 * drawn in the theme's answer.traced style and each untraced one in
 * answer.untraced, under a line above the answer saying "7 of 8 numbers
 * traced; 1 not in any output: 12.5%", `n` in the conversation pane
 * showing the next number's source (and selecting its cell), `/trace`
 * listing them all with the output line each came from. */
#ifndef TERP_TUI_TRACE_H
#define TERP_TUI_TRACE_H

#include "terp/export.h"

#include "tui_priv.h"

/* Events: the question (its numbers are not claims) and the answer
 * (after on_answer has put its item last). */
void tui_trace_question(struct tui *t, const char *question);
void tui_trace_answer(struct tui *t, const char *answer);
/* A resumed notebook nb (borrowed until tui_trace_restore_end), item
 * by item as export_walk gives them, before the item is shown; then
 * tui_trace_restore_end. A reply is an answer
 * when no cell of the model follows it; it is traced against the cells
 * walked so far, as when it came. */
void tui_trace_restore_begin(struct tui *t, const struct notebook *nb);
void tui_trace_restore(struct tui *t, enum export_item k, const char *text,
    const struct cell *c);
void tui_trace_restore_end(struct tui *t);
/* /trace: the last answer's numbers and their sources, as an item. */
void tui_trace_list(struct tui *t);
/* `n` in the conversation: the next number of the last answer, its
 * source on the status bar and its cell selected. */
void tui_trace_next(struct tui *t);
void tui_trace_free(struct tui *t);
/* Restyles the numbers of a rendered answer (it->marks, in order) in
 * d; a number the rendering changed (wrapped inside it) stays plain. */

#endif
