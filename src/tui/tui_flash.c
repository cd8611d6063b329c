/* tui_flash: the two ways any part of the TUI tells the user something
 * outside the panes: the status bar's flash and the overlay a command
 * opens for its text. Below every pane's file, which all call them, so
 * that none calls back up into tui_items.c or tui_draw.c for it. */
#include "tui_flash.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/sanitize.h"
#include "terp/util.h"

void
tui_flash(struct tui *t, const char *fmt, ...)
{
	va_list ap;
	char tmp[512];

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	free(t->st.flash);
	t->st.flash = sanitize_str(tmp, strlen(tmp), 0);
	t->st.flash_until = now_ms() + 4000;
	tui_mark(t);
}

void
tui_overlay_open(struct tui *t, const char *title)
{
	tui_tlines_free(&t->ov.lines);
	tui_tlines_init(&t->ov.lines);
	free(t->ov.title);
	t->ov.title = sanitize_str(title, strlen(title), 0);
	free(t->ov.png);
	t->ov.png = NULL;
	t->ov.art = -1;
	t->ov.top = 0;
	t->ov.hscroll = 0;
	t->ov.left = 0;
	t->ov.on = 1;
	tui_mark(t);
}
