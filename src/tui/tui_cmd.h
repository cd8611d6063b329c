/* tui_cmd: the notebook UI's slash commands and the lines typed at the
 * prompt (tui_cmd.c). */
#ifndef TERP_TUI_CMD_H
#define TERP_TUI_CMD_H

#include "tui_priv.h"

/* A line typed at the prompt (blanks skipped): a question, or a
 * command. Questions and the commands that run code wait while a
 * replay or a question runs (held, with a notice) and run in order
 * after it. */
void tui_cmd_submit(struct tui *t, const char *s);
/* Runs the oldest held line when nothing runs; once per loop turn. */
void tui_cmd_held_run(struct tui *t);
/* Ctrl-C: the lines queued behind a question are dropped (not those
 * held for a replay). Returns how many. */
int tui_cmd_held_drop(struct tui *t);

/* The help overlay: the keys and the commands. */
void tui_cmd_help(struct tui *t);
/* Quits, or asks first (M_CONFIRM_QUIT) when the agent is busy. */
void tui_cmd_quit(struct tui *t);
/* Ctrl-D on an empty input line: quits, asking first (M_CONFIRM_QUIT)
 * when something runs or when the cells' variables would be lost. */
void tui_cmd_quit_eof(struct tui *t);
/* The y/n question M_CONFIRM_QUIT shows (a static buffer). */
const char *tui_cmd_quit_prompt(struct tui *t);

/* Readline's completion: /commands, file names after /load, /export and
 * /save, nothing else. */
char **tui_cmd_complete(const char *text, int start, int end);
/* Shows readline's list of matches on the status bar. */
void tui_cmd_show_matches(struct tui *t, char **matches, int num, int max);

void tui_cmd_free(struct tui *t);

#endif
