/* tui_pics: the cell pane's inline charts in real pixels where the
 * terminal can place them in a grid reliably: kitty (Unicode
 * placeholders: the picture is transmitted once and drawn by U+10EEEE
 * cells that curses writes and scrolls as text, inside tmux too) and
 * sixel outside tmux (drawn after each update at the picture's rows,
 * redrawn when they move, the rows it left repainted by curses). Block
 * characters (tui_thumbs) stay the fallback. */
#ifndef TERP_TUI_PICS_H
#define TERP_TUI_PICS_H

#include "terp/tui_tlines.h"

#include "tui_priv.h"

/* Whether inline pictures go out in pixels on this terminal. */
int tui_pics_on(const struct tui *t);
/* Appends the picture of the PNG at path, within cols x rows_max cells
 * after indent spaces, as lines tagged tag. Returns 0, or -1 when it
 * cannot be shown in pixels (not a PNG, too big): the caller draws
 * blocks. */
int tui_pics_lines(struct tui *t, struct tlines *ls, const char *path,
    int cols, int rows_max, int indent, int tag);
/* The frame's drawing: begin before the panes are drawn, seen for each
 * line drawn (at screen row y, the pane's left column x), then
 * before_update ahead of doupdate (the rows of pictures moved or gone
 * are repainted) and after_update after it (sixel drawn, kitty
 * pictures transmitted). */
void tui_pics_begin(struct tui *t);
void tui_pics_seen(struct tui *t, const struct tline *l, int y, int x);
void tui_pics_before_update(struct tui *t);
void tui_pics_after_update(struct tui *t);
/* The terminal lost what was drawn (a cleared screen: sixel drawn
 * again) or, images set, what was transmitted too (a full-pane kitty
 * preview's delete of every placement: kitty's sent again). */
void tui_pics_lost(struct tui *t, int images);
/* Deletes kitty's pictures and frees the slots (at exit). */
void tui_pics_free(struct tui *t);

#endif
