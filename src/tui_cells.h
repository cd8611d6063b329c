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
/* Forgets every cached body (the terminal changed size). */
void tui_cells_invalidate(struct tui *t);
/* Appends c's header ("[3] model · ok · 0.42s") to l. */
void tui_cells_header(struct tui *t, struct tline *l, const struct cell *c);
/* Appends the conversation's link to cell n ("▸ ran cell [n] · ok ...")
 * to l. */
void tui_cells_link(struct tui *t, struct tline *l, int n);
/* Expands or collapses cell n (the pane stops following new output). */
void tui_cells_toggle(struct tui *t, int n);
void tui_cells_free(struct tui *t);

#endif
