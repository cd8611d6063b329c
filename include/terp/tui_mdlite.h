/* tui_mdlite: the Markdown the models write, rendered to styled, wrapped
 * lines (tui_span.h) for a terminal: headings, **bold**, *italic*, `code`,
 * fenced code blocks (Python highlighted), bullet and numbered lists,
 * block quotes, rules and pipe tables laid out as tables. Pure. */
#ifndef TERP_TUI_MDLITE_H
#define TERP_TUI_MDLITE_H

#include <stddef.h>

#include "terp/tui_span.h"

#define MDLITE_MAX_INPUT	(1024 * 1024)	/* bytes; the rest is cut */

/* Appends text[0..len) rendered for width columns (>= 10 is sensible)
 * to out. Text is assumed sanitized (sanitize.h). */
void tui_mdlite_render(struct span_doc *out, const char *text, size_t len,
    int width);

#endif
