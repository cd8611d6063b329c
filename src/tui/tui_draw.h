/* tui_draw: layout and drawing of the notebook UI (tui_draw.c). */
#ifndef TERP_TUI_DRAW_H
#define TERP_TUI_DRAW_H

#include "tui_flash.h"
#include "tui_priv.h"

/* Once the screen is up: the first layout and its windows. */
void tui_draw_start(struct tui *t);
void tui_draw_end(struct tui *t);

/* Composes the whole screen from the state and updates the terminal
 * once; a new terminal size (t->lay.rows set to -1 forces it) makes
 * new windows first. Clears t->dirty. */
void tui_draw(struct tui *t);

/* The pane a compact screen shows (the focused one, else the last). */
enum pane tui_draw_shown_pane(const struct tui *t);
/* The pane whose tab is at column x of a compact screen's tab strip,
 * or -1. */
int tui_draw_tab_at(const struct tui *t, int x);

void tui_overlay_close(struct tui *t);
void tui_overlay_free(struct tui *t);

#endif
