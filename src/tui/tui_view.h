/* tui_view: a cell's output (a DataFrame's table, long printouts) in the
 * full-pane view, lines whole, scrolled both ways as less -S shows them
 * (tui_view.c; drawn by tui_draw.c's overlay, keys in tui_input.c). */
#ifndef TERP_TUI_VIEW_H
#define TERP_TUI_VIEW_H

#include "tui_priv.h"

/* Opens cell n's stdout, value and stderr in the view; a flash when
 * the cell printed nothing. */
void tui_view_output(struct tui *t, int n);
/* The columns a horizontal step moves: half the screen. */
int tui_view_hstep(const struct tui *t);

#endif
