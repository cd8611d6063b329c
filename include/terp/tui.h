/* tui: terp's terminal notebook (ncursesw + GNU readline in callback
 * mode), one of the frontends of DESIGN.md. It renders the core's event
 * stream and the notebook, and calls the session (session.h) for
 * everything it does: it never sees the agent, the kernel or the
 * model's requests. */
#ifndef TERP_TUI_H
#define TERP_TUI_H

#include "terp/event.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/tui_gfx.h"

struct session;

struct tui_opts {
	const char	*theme;		/* theme name or path; NULL: default */
	int		 no_color;	/* also when $NO_COLOR is set */
	/* TUI_BG_AUTO asks the terminal (OSC 11, else $COLORFGBG); light
	 * picks the light theme when no theme is named, and keeps every
	 * colour visible on white at 8 and 16 colours */
	enum { TUI_BG_AUTO, TUI_BG_DARK, TUI_BG_LIGHT } background;
	const char	*provider_label;	/* "openai", "demo"... for the status bar */
	const char	*history_path;	/* NULL: $XDG_STATE_HOME/terp/history */
	const char	*out_dir;	/* where artifacts land (for /files) */
	int		 mouse;		/* 1: enable mouse (default in tui_opts_default) */
	enum tui_gfx_mode images;	/* --images: real pixels or blocks */
};

void tui_opts_default(struct tui_opts *o);

/* The event sink to pass to agent_new as emit, with arg NULL (the TUI
 * owns the one terminal, so its state is a single static instance).
 * Events that arrive before tui_run (the session starting) are kept and
 * shown once the screen is up. Never draws: it only marks what changed. */
void tui_on_event(void *arg, const struct event *ev);

/* Before tui_run, for a resumed session: puts the notebook's questions,
 * answers and cells back in the conversation pane in reading order,
 * and its token totals on the status bar (the cell and file panes read
 * the notebook itself). nb is read during the call only. */
void tui_restore(const struct notebook *nb);

/* Takes over the terminal and runs the notebook UI in the session's
 * loop until the user quits (/quit, Ctrl-D on an empty line). The
 * session (borrowed, required: NULL is refused) is the UI's one door to
 * the core: questions, cells, Ctrl-C, /model, /load, /reset, /replay...
 * all go through it, so what changes the session is journaled. (Events
 * that arrive before tui_run are shown without it.)
 * Always leaves the terminal sane (endwin, history saved, stderr that
 * was produced meanwhile re-emitted). Returns 0, the signal that ended it
 * (SIGTERM, SIGHUP), or -1 with *err (caller frees) when the terminal
 * cannot be used (not a tty, too small...). */
int tui_run(struct session *s, const struct tui_opts *o, char **err);

struct cli;

/* The whole `terp [DATA_FILE...]` session for main: the model client,
 * the notebook, the agent and the sandbox around tui_run. Returns the
 * exit status (0, 1 when the session could not start, 128+N when signal
 * N ended it, as -p does). */
int tui_session_run(struct cli *c);

#endif
