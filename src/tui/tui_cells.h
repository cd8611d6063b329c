/* tui_cells: the cell pane's lines for each cell (tui_cells.c). */
#ifndef TERP_TUI_CELLS_H
#define TERP_TUI_CELLS_H

#include "terp/notebook.h"
#include "terp/tui_tlines.h"

#include "tui_priv.h"

/* Everything of cell c below its header, w columns wide, tagged with
 * the cell's number; cached (the cache owns the lines, valid until the
 * next call for the same cell). */
const struct tlines *tui_cells_body(struct tui *t, const struct cell *c,
    int w);
/* The lines cell c takes in the pane: its header, its body and the
 * blank line after it. */
int tui_cells_span(struct tui *t, const struct cell *c, int w);
/* Whether cell n is expanded (Enter), and whether the user wrote it. */
int tui_cells_expanded(const struct tui *t, int n);
int tui_cells_by_user(const struct tui *t, int n);
/* Output of stream st (0 stdout, 1 stderr) came for cell c (already in
 * c->out): the pane shows the two streams in the order they came. */
void tui_cells_note_output(struct tui *t, const struct cell *c, int st);
/* Appends c's header ("[3] model · ok · 0.42s") to l. */
void tui_cells_header(struct tui *t, struct tline *l, const struct cell *c);
/* Appends the conversation's link to cell n to l: "▸ ran cell [n] · ok
 * ..." for the model's, "› you ran cell [n] (re-run of [m]) · ok ..."
 * for the user's. */
void tui_cells_link(struct tui *t, struct tline *l, int n);
/* Expands or collapses cell n (the pane stops following new output). */
void tui_cells_toggle(struct tui *t, int n);
/* Appends the code's lines as a cell shows them (highlighted, "  │ "
 * in front, long lines wrapped), all of them when expanded, tagged. */
void tui_cells_code(struct tlines *ls, const char *code, int w, int expanded,
    int tag);
/* The lines of the cells the model is still writing or that wait to
 * run (the conversation's pending items), for the end of the cells
 * pane: a header "[n] model · the model writes it…" (or "· not run
 * yet"), the code highlighted as the cell will show it, a blank line;
 * tagged -1. Cached until the items change; empty when there are none. */
const struct tlines *tui_cells_pending(struct tui *t, int w);
/* How many charts (PNG files) cell n wrote. */
int tui_cells_charts(struct tui *t, int n);
void tui_cells_free(struct tui *t);

#endif
