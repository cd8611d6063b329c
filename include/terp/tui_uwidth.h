/* tui_uwidth: the display width of UTF-8 text in terminal columns, the one
 * width function terp lays text out with (wide CJK and emoji count 2,
 * combining marks 0). Independent of the process locale. Pure. */
#ifndef TERP_TUI_UWIDTH_H
#define TERP_TUI_UWIDTH_H

#include <stddef.h>

/* Columns for code point cp: 0 (combining, zero-width, controls), 1
 * or 2. */
int tui_uwidth_cp(unsigned cp);

/* Columns of s[0..n); invalid bytes count 1 each (shown as U+FFFD). */
size_t tui_uwidth_str(const char *s, size_t n);

/* The byte length of the longest prefix of s[0..n) that fits in maxcols
 * columns without splitting a character (zero-width marks after the
 * last fitting character are included). *cols (may be NULL) gets its
 * width. */
size_t tui_uwidth_prefix(const char *s, size_t n, size_t maxcols, size_t *cols);

#endif
