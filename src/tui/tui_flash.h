/* tui_flash: the status bar's flash and a command's overlay
 * (tui_flash.c). */
#ifndef TERP_TUI_FLASH_H
#define TERP_TUI_FLASH_H

#include "tui_priv.h"

/* A message on the status bar for a few seconds (sanitized). */
void tui_flash(struct tui *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A full-screen overlay titled title (sanitized here), empty: the
 * caller appends to t->ov.lines, or sets t->ov.png to show a chart
 * (tui_draw.c draws and closes it). */
void tui_overlay_open(struct tui *t, const char *title);

#endif
