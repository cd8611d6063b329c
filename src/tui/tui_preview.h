/* tui_preview: the preview overlay's picture in pixels (tui_preview.c). */
#ifndef TERP_TUI_PREVIEW_H
#define TERP_TUI_PREVIEW_H

#include "tui_priv.h"

/* Whether the preview's PNG (t->ov.png) goes out in pixels rather than
 * block characters: a pixel protocol, and a file of at most 8 MB. */
int tui_preview_in_pixels(const struct tui *t);
/* After doupdate: draws the open preview's picture in pixels, once per
 * picture and size (t->ov.shown remembers which); a picture that cannot
 * be sent says why on the status bar. */
void tui_preview_pixels(struct tui *t);
/* Leaving a preview drawn in pixels: kitty's image deleted, the screen
 * repainted, t->ov.shown freed. */
void tui_preview_pixels_gone(struct tui *t);

#endif
