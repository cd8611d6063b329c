/* pyhl: a small Python syntax highlighter for cells and fenced code:
 * keywords, builtins, strings (triple-quoted ones across lines),
 * comments, numbers and decorators, as span lines (span.h). Pure. */
#ifndef TERP_PYHL_H
#define TERP_PYHL_H

#include <stddef.h>

#include "terp/span.h"

/* Appends the highlighted code[0..len) to out, one span line per source
 * line (tabs expanded to 4 columns), each cut into pieces of at most
 * width columns when width > 0. Plain text gets base_role. */
void pyhl_highlight(struct span_doc *out, const char *code, size_t len,
    int width, int base_role);

#endif
