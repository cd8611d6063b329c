/* tui_event: the core's events turned into the notebook UI's state
 * (tui_event.c). */
#ifndef TERP_TUI_EVENT_H
#define TERP_TUI_EVENT_H

#include "terp/event.h"
#include "terp/notebook.h"

#include "tui_priv.h"

/* Applies one event: conversation items, the status bar's state, the
 * panes that follow new output. Never draws: it marks the screen dirty.
 * Works before the screen is up (tui_on_event). */
void tui_event_apply(struct tui *t, const struct event *ev);

/* Puts a resumed notebook's questions, answers and cells back in the
 * conversation, and its token totals on the status bar (tui_restore). */
void tui_event_restore(struct tui *t, const struct notebook *nb);

#endif
