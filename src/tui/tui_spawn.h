/* tui_spawn: outside programs the notebook UI starts (tui_spawn.c). */
#ifndef TERP_TUI_SPAWN_H
#define TERP_TUI_SPAWN_H

#include "tui_priv.h"

enum tui_spawn_how {
	/* The program gets the terminal (curses leaves it and comes back
	 * after) and is waited for: the event loop pauses meanwhile, so
	 * nothing draws over it and no event is lost, only delayed. */
	TUI_SPAWN_TERMINAL,
	/* input on its stdin, /dev/null for the rest; waited for */
	TUI_SPAWN_PIPE,
	/* its own session, no terminal, never waited for */
	TUI_SPAWN_DETACHED,
};

/* Runs argv[0] (searched in $PATH) with argv. input: for
 * TUI_SPAWN_PIPE, written to its stdin (SIGPIPE ignored meanwhile).
 * Returns the program's exit status, or -1 (errno set) when it could
 * not be started or was killed; TUI_SPAWN_DETACHED returns 0 once
 * started. */
int tui_spawn(struct tui *t, const char *const argv[],
    enum tui_spawn_how how, const char *input);

/* Ctrl-Z: gives the terminal back and stops terp's job (SIGTSTP), as
 * vim and htop do; returns after `fg` (SIGCONT) with the screen to be
 * redrawn in full. The sandbox, in its own session, keeps running. */
void tui_spawn_suspend(struct tui *t);

/* Whether prog is an executable in $PATH. */
int tui_spawn_found(const char *prog);

/* Runs $VISUAL, else $EDITOR, else vi on path, with the terminal.
 * Returns its exit status, or -1 when it could not run. */
int tui_spawn_editor(struct tui *t, const char *path);

/* Pipes text to wl-copy (Wayland), xclip or xsel (X). Returns 0 when
 * one took it, -1 when there is none or it failed. */
int tui_spawn_clipboard(struct tui *t, const char *text);

#endif
