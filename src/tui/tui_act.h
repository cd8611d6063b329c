/* tui_act: actions on cells and files (tui_act.c). Cells are numbered
 * from 1, files (artifacts) indexed from 0; a number out of range does
 * nothing. Failures are told on the status bar or in the conversation. */
#ifndef TERP_TUI_ACT_H
#define TERP_TUI_ACT_H

#include "tui_priv.h"

void tui_act_rerun(struct tui *t, int n);
/* Opens cell n's code in $EDITOR (the UI pauses) and runs the edited
 * code as a new cell, unless it is unchanged or the editor failed. */
void tui_act_edit(struct tui *t, int n);
/* Copies cell n's code (y), its output (Y: stdout, stderr, value,
 * error) or the answer in view in the conversation (y there): to the
 * clipboard tool (wl-copy, xclip, xsel), else to the terminal's
 * clipboard with OSC 52 and to a file in the session folder. */
void tui_act_copy(struct tui *t, int n);
void tui_act_copy_output(struct tui *t, int n);
void tui_act_copy_answer(struct tui *t);

/* --ask: the model's cell waits (EV_APPROVE): the input line asks
 * "run? y / e edit / n skip / a always" (M_APPROVE) and each key
 * answers through tui_act_approve_key (1: the key was taken). _end:
 * the question is over, nothing waits any more. */
void tui_act_approve_ask(struct tui *t, const char *code, size_t len);
int tui_act_approve_key(struct tui *t, int c);
void tui_act_approve_end(struct tui *t);

/* `d` on cell n: asks "drop cell [n]...? (y/n)" (M_DROP_CONFIRM);
 * yes drops it (session_drop_cell). */
void tui_act_drop_ask(struct tui *t, int n);
void tui_act_drop_confirm(struct tui *t, int yes);

void tui_act_open(struct tui *t, int i);
/* Whether a file named name (the sandbox chose it) is of a type xdg-open
 * may be handed without asking: images, PDF, CSV and plain text. Any
 * other (.desktop, .jar, .exe, .html with scripts...) asks first,
 * naming the type (M_OPEN_CONFIRM, answered by tui_act_open_confirm). */
int tui_act_open_safe(const char *name);
void tui_act_open_confirm(struct tui *t, int yes);
/* The overlay shows file i: a chart as a thumbnail, text (the first
 * PREVIEW_MAX bytes), or a note that it is binary. */
void tui_act_preview(struct tui *t, int i);
/* Save a copy: puts the input line in M_SAVE_AS with a safe name
 * offered; the line typed goes to tui_act_save_name, which saves or
 * moves to M_SAVE_CONFIRM, answered by tui_act_save_confirm. */
void tui_act_save_ask(struct tui *t, int i);
void tui_act_save_name(struct tui *t, const char *name);
void tui_act_save_confirm(struct tui *t, int yes);

#endif
