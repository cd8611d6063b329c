/* tui_bgquery: asks the terminal for its background colour (OSC 11)
 * before curses takes the screen, so that a light terminal gets the light
 * theme's colours (tui_bgquery.c). */
#ifndef TERP_TUI_BGQUERY_H
#define TERP_TUI_BGQUERY_H

/* Whether the terminal (in_fd and out_fd, ttys) has a light
 * background: 1 light, 0 dark, -1 unknown (no reply within timeout_ms,
 * not a tty). Sends OSC 11 and then DA1, which every terminal answers,
 * so that one that ignores OSC 11 costs one round trip rather than the
 * timeout; $COLORFGBG answers when the terminal does not. Bytes typed
 * meanwhile are dropped. */
int tui_bgquery(int in_fd, int out_fd, int timeout_ms);

#endif
