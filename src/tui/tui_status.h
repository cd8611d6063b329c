/* tui_status: the notebook UI's status bar line (tui_status.c). */
#ifndef TERP_TUI_STATUS_H
#define TERP_TUI_STATUS_H

#include "terp/tui_tlines.h"

#include "tui_priv.h"

/* The status bar as one line cols wide at most, into *l (empty before;
 * the caller frees it with tui_tline_free). Sets t->st.ticking when the
 * bar must be drawn again each second (the idle countdown shows). */
void tui_status_line(struct tui *t, struct tline *l);

#endif
