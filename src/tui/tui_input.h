/* tui_input: keys, mouse and the readline input line of the notebook
 * UI (tui_input.c). */
#ifndef TERP_TUI_INPUT_H
#define TERP_TUI_INPUT_H

#include "terp/loop.h"

#include "tui_priv.h"

/* Once the screen is up: readline in callback mode on a byte queue,
 * the history loaded (t->o.history_path, else
 * $XDG_STATE_HOME/terp/history). */
void tui_input_start(struct tui *t);
/* Saves the history and lets readline go. */
void tui_input_end(struct tui *t);

/* Captures the mouse (clicks and the wheel go to the panes) or lets
 * the terminal have it (its own text selection). */
void tui_input_mouse(struct tui *t, int on);
/* Once the screen is up: the Home and End sequences terminals send
 * that TERM's terminfo may not name (tmux with TERM=xterm-256color). */
void tui_input_define_keys(void);

/* The loop's callback for the terminal (arg: the struct tui): reads
 * every key ncurses has, then hands the queued bytes to readline. */
void tui_input_on_tty(struct loop *l, int fd, int revents, void *arg);

#endif
