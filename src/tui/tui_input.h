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

/* A cell asks for a line (EV_INPUT): the input line shows its prompt
 * (already safe to show) and Enter answers it (Ctrl-D: end of file,
 * Ctrl-C: interrupts the cell); what was typed before comes back after.
 * tui_input_ask_done: the cell ended, the question goes if still open. */
void tui_input_ask(struct tui *t, int cell, const char *prompt, int password);
void tui_input_ask_done(struct tui *t, int cell);

/* The loop's callback for the terminal (arg: the struct tui): reads
 * every key ncurses has, then hands the queued bytes to readline. */
void tui_input_on_tty(struct loop *l, int fd, int revents, void *arg);
/* Feeds the keys typed while the terminal was asked (t->in.typeahead,
 * tui_termquery) to the input, in order, as tui_input_on_tty feeds what
 * curses reads: a question typed and entered before the screen was up
 * is asked, not lost. */
void tui_input_typeahead(struct tui *t);

#endif
