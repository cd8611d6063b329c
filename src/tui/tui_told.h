/* tui_told: what the model was told of a cell (issue 24): the cell's
 * line says when the model got a cut version ("model saw 4 KiB of
 * 33.7 KiB"), and `w` on a cell shows the tool result exactly as sent. */
#ifndef TERP_TUI_TOLD_H
#define TERP_TUI_TOLD_H

#include <stddef.h>

#include "tui_priv.h"

/* When the tool result of cell c was cut before it went to the model:
 * 1, with "model saw 4 KiB of 33.7 KiB" in buf (size bytes); else 0. */
int tui_told_cut_note(struct tui *t, const struct cell *c, char *buf,
    size_t size);
/* The overlay shows cell n's tool result as the model got it, or the
 * status bar says why there is none (a cell run by hand, still
 * running). */
void tui_told_show(struct tui *t, int n);

#endif
