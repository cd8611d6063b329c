/* tui_items: the conversation's items and the status bar's transient
 * message (tui_items.c). Every change marks the screen dirty. */
#ifndef TERP_TUI_ITEMS_H
#define TERP_TUI_ITEMS_H

#include <stddef.h>

#include "terp/tui_tlines.h"

#include "tui_flash.h"
#include "tui_priv.h"

/* A new empty item at the end (the oldest goes beyond ITEMS_MAX); the
 * conversation owns it, and the pointer is valid until the next new
 * item. */
struct item *tui_item_new(struct tui *t, enum item_kind k);
/* Appends s[0..n) (from the model, the sandbox or the user: sanitized
 * here) to the item's text. */
void tui_item_add(struct tui *t, struct item *it, const char *s, size_t n);
/* tui_item_new with text s. */
struct item *tui_item_text(struct tui *t, enum item_kind k, const char *s);
/* The item's lines at width w, cached until its text or w changes (the
 * item owns them). */
const struct tlines *tui_item_lines(struct tui *t, struct item *it, int w);

/* The answer being streamed: the last item when it is an open answer,
 * else a new one. */
struct item *tui_items_answer(struct tui *t);
/* The reasoning being streamed: the last item when it is reasoning,
 * else a new one (above the answer that follows). */
struct item *tui_items_reasoning(struct tui *t);
/* r in the conversation: every reasoning item unfolded, or folded. */
void tui_items_toggle_reasoning(struct tui *t);
/* No more text goes to the last answer. */
void tui_items_answer_close(struct tui *t);
/* The answer to the last question just ended: the pane will show its
 * start when it is taller than the pane (t->conv.anchor). */
void tui_items_anchor_answer(struct tui *t);
/* The code of part n of the reply as it streams (EV_CODE): all of it
 * so far, shown in a pending cell at the end of the conversation. */
void tui_items_pending_code(struct tui *t, int n, const char *code, size_t len);
/* A call came whole: the oldest pending cell not yet claimed is its. */
void tui_items_pending_claim(struct tui *t);
/* Cell n started: the pending cell last claimed becomes its link;
 * returns 0 when there was none. */
int tui_items_pending_ran(struct tui *t, int n);
/* --ask: the claimed pending cell (made when none is) shows the whole
 * code that waits; _skipped: the user said no, it is a notice now. */
void tui_items_pending_show(struct tui *t, const char *code, size_t len);
void tui_items_pending_skipped(struct tui *t);
/* The question is over: the pending cells left go. */
void tui_items_pending_drop(struct tui *t);
/* Whether the user scrolled the conversation away from where terp put
 * it (the bottom, or the start of a tall answer). */
int tui_items_user_scrolled(const struct tui *t);
/* A new reply begins (a question is sent): the conversation follows it
 * unless the user scrolled; an older answer's anchor no longer holds. */
void tui_items_follow_newest(struct tui *t);
/* Whether the conversation links to cell n (among the last items). */
int tui_items_has_cell(struct tui *t, int n);
/* /clear: empties the pane (the notebook keeps everything). */
void tui_items_clear(struct tui *t);
void tui_items_free(struct tui *t);

/* Shows "what: err" in the conversation and on the status bar; frees
 * err (NULL: "failed"). */
void tui_show_err(struct tui *t, const char *what, char *err);

#endif
