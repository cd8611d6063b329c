/* tui_tracestyle: traced numbers styled in an answer's rendered lines
 * (tui_tracestyle.c). */
#ifndef TERP_TUI_TRACESTYLE_H
#define TERP_TUI_TRACESTYLE_H

#include "tui_priv.h"

struct span_doc;
/* Styles in d, the rendered lines of item it, each of its marks found
 * as written (a number wrapped across lines stays unstyled). */
void tui_trace_style(struct span_doc *d, const struct item *it);

#endif
