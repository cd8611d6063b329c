/* tui_pyhl: a small Python syntax highlighter for cells and fenced code:
 * keywords, builtins, strings (triple-quoted ones across lines),
 * comments, numbers and decorators, as span lines (tui_span.h). Pure. */
#ifndef TERP_TUI_PYHL_H
#define TERP_TUI_PYHL_H

#include <stddef.h>

#include "terp/tui_span.h"

/* Appends the highlighted code[0..len) to out, one span line per source
 * line (tabs expanded to 4 columns), each cut into pieces of at most
 * width columns when width > 0. Plain text gets base_role. */
void tui_pyhl_highlight(struct span_doc *out, const char *code, size_t len,
    int width, int base_role);
/* The same, but a source line longer than width wraps: its rest goes on
 * the next lines, each starting with mark (role mark_role) so a reader
 * tells a wrapped line from a new one (issue 24). */
void tui_pyhl_highlight_wrap(struct span_doc *out, const char *code,
    size_t len, int width, int base_role, const char *mark, int mark_role);

#endif
