/* tui: the terminal notebook. Panes (conversation, cells, artifacts),
 * a status bar and a GNU readline input line in callback mode inside
 * ncursesw, all driven by terp's one poll loop. Event handlers and keys
 * only change state and set `dirty`; one redraw per loop iteration,
 * at most ~60 per second, composes the frame (TUI.md sections 3 and 4).
 *
 * This file is the public side (tui.h): the one instance of the UI's
 * state, the terminal taken and given back, signals, and the frame
 * loop. The rest, each file calling only the ones below it:
 *   tui_input   keys, mouse, readline      -> tui_cmd, tui_act, tui_draw
 *   tui_cmd     slash commands, help       -> tui_act, tui_draw, tui_items
 *   tui_act     actions on cells and files -> tui_spawn, tui_draw, tui_items
 *   tui_draw    layout and drawing         -> tui_items, tui_cells,
 *                                             tui_thumbs, tui_style
 *   tui_event   the core's events          -> tui_items
 *   tui_items   the conversation's items   -> tui_cells
 *   tui_cells   the cell pane's lines      -> tui_thumbs, tui_style
 *   tui_thumbs, tui_style, tui_spawn       leaves */
#include "terp/tui.h"

#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <curses.h>
#include <readline/readline.h>

#include "terp/session.h"
#include "terp/util.h"

/* How long the terminal may take to say its background colour; one
 * that answers DA1 but not OSC 11 ends the wait at once. */
/* How long the start-up questions wait for a terminal that answers
 * nothing (one that answers takes one round trip): longer when the
 * answer picks the image protocol. */
#define TERMQUERY_MS		150
#define TERMQUERY_SIXEL_MS	300

#include "tui_priv.h"
#include "tui_termquery.h"
#include "tui_cells.h"
#include "tui_data.h"
#include "tui_cmd.h"
#include "tui_draw.h"
#include "tui_event.h"
#include "tui_input.h"
#include "tui_items.h"
#include "tui_search.h"
#include "tui_style.h"
#include "tui_thumbs.h"
#include "tui_trace.h"

/* The one terminal, the one UI: the public entry points (tui_on_event
 * with a NULL arg, tui_restore, the fatal hook) have no handle to pass. */
static struct tui tui_one = { .st.kstate = -1, .ov.art = -1,
	.saved_stderr = -1, .err_fd = -1, .conv.anchor = -1, .conv.pin_top = -1, .srch.line = -1 };

void
tui_on_event(void *arg, const struct event *ev)
{
	(void)arg;
	tui_event_apply(&tui_one, ev);
}

void
tui_restore(const struct notebook *nb)
{
	tui_event_restore(&tui_one, nb);
}

void
tui_opts_default(struct tui_opts *o)
{
	memset(o, 0, sizeof *o);
	o->mouse = 1;
}

/* ---- signals ---- */

static void
on_winch(struct loop *l, int signo, void *arg)
{
	struct tui *t = arg;
	struct winsize ws;

	(void)l;
	(void)signo;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0) {
		resizeterm(ws.ws_row, ws.ws_col);
		rl_set_screen_size(1, ws.ws_col);
	}
	t->lay.rows = -1;
	tui_mark(t);
}

/* A SIGINT from outside (the tty's ^C is a key in raw mode) cancels. */
static void
on_sigint(struct loop *l, int signo, void *arg)
{
	struct tui *t = arg;

	(void)l;
	(void)signo;
	if (t->session && session_running(t->session))
		session_cancel(t->session);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	struct tui *t = arg;

	(void)l;
	t->quit = 1;
	t->quit_signo = signo;
}

/* ---- the terminal ---- */

/* While curses owns the screen, stray stderr (library warnings) goes to
 * a memory file and is re-emitted after endwin (htop's CRT.c does this). */
static void
stderr_redirect(struct tui *t)
{
	int fd = memfd_create("terp-stderr", MFD_CLOEXEC);
	if (fd < 0)
		return;
	fflush(stderr);
	t->saved_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (t->saved_stderr < 0 || dup2(fd, 2) < 0) {
		close(fd);
		return;
	}
	t->err_fd = fd;
}

static void
stderr_restore(struct tui *t)
{
	if (t->saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(t->saved_stderr, 2);
	close(t->saved_stderr);
	t->saved_stderr = -1;
	if (t->err_fd >= 0) {
		char b[16384];
		off_t size = lseek(t->err_fd, 0, SEEK_END);
		off_t from = size > (off_t)sizeof b ? size - (off_t)sizeof b : 0;
		ssize_t n = pread(t->err_fd, b, sizeof b, from);
		if (n > 0)
			write_all(2, b, (size_t)n);
		close(t->err_fd);
		t->err_fd = -1;
	}
}

static void
screen_end(struct tui *t)
{
	if (!t->active)
		return;
	t->active = 0;
	fputs("\033[?2004l", stdout);
	fflush(stdout);
	endwin();
	stderr_restore(t);
}

/* fatal() restores the terminal before printing. */
static void
tui_fatal_hook(void)
{
	screen_end(&tui_one);
}

/* Takes the terminal: curses in raw mode, the theme, the first layout,
 * the mouse, bracketed paste. Returns the screen, or NULL with *err. */
static SCREEN *
screen_start(struct tui *t, char **err)
{
	char *terr = NULL;

	stderr_redirect(t);
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		stderr_restore(t);
		*err = xasprintf("cannot use the terminal (TERM=%s)",
		    getenv("TERM") ? getenv("TERM") : "");
		return NULL;
	}
	set_term(scr);
	t->active = 1;
	fatal_set_hook(tui_fatal_hook);
	raw();
	noecho();
	nonl();
	set_escdelay(25);
	if (tui_style_init(t, &terr) < 0) {
		tui_item_text(t, IT_ERROR, terr ? terr : "theme: cannot load");
		free(terr);
	}
	tui_draw_start(t);
	tui_input_define_keys();
	if (t->o.mouse)
		tui_input_mouse(t, 1);
	fputs("\033[?2004h", stdout);	/* bracketed paste */
	fflush(stdout);
	return scr;
}

/* ---- start, the frame loop, stop ---- */

static void
state_init(struct tui *t, struct session *s, const struct tui_opts *o)
{
	t->loop = session_loop(s);
	t->session = s;
	t->nb = session_notebook(s);
	t->o = *o;
	if (getenv("NO_COLOR") && *getenv("NO_COLOR"))
		t->o.no_color = 1;
	t->focus = P_INPUT;
	t->last_pane = P_CONV;
	for (int p = 0; p < P_NPANES; p++)
		t->v[p].follow = 1;
	t->v[P_ARTS].follow = 0;
}

static void
state_free(struct tui *t)
{
	tui_items_free(t);
	tui_trace_free(t);
	tui_cells_free(t);
	tui_thumbs_clear(t);
	tui_overlay_free(t);
	tui_cmd_free(t);
	tui_search_free(t);
	tui_data_free(t);
	t->quit = 0;
	t->quit_signo = 0;
	t->session = NULL;
	t->nb = NULL;
}

/* Draws when something changed, at most one frame per FRAME_MS, and
 * returns how long the loop may wait for events (ms): the status bar's
 * clock and the spinner tick every 100 ms while busy; the idle
 * countdown and the held lines are looked at every 250 ms. */
static int64_t
frame(struct tui *t)
{
	int64_t now = now_ms(), wait = 1000;
	int flash_ends = t->st.flash && now >= t->st.flash_until &&
	    now < t->st.flash_until + 200;

	if (t->st.ticking && now - t->last_draw >= 250)
		t->dirty = 1;
	if ((t->st.busy || flash_ends) && now - t->last_draw >= 100)
		t->dirty = 1;
	if (t->dirty) {
		int64_t since = now - t->last_draw;
		if (since >= FRAME_MS) {
			tui_draw(t);
			wait = t->st.busy ? 100 : 1000;
		} else
			wait = FRAME_MS - since;
	} else if (t->st.busy)
		wait = 100;
	if ((t->st.ticking || t->cmd.nheld > 0) && wait > 250)
		wait = 250;
	/* wake when a flash ends, or the bar keeps it until the next key */
	if (t->st.flash && now < t->st.flash_until && wait > t->st.flash_until - now + 1)
		wait = t->st.flash_until - now + 1;
	return wait;
}

static const char *
gfx_env(const char *k)
{
	return getenv(k);
}

/* The terminal's answers before curses owns it (their bytes must not
 * reach curses as keys): the background when the theme asks, DA1 when
 * sixel could be used (nothing declared, outside tmux). What was typed
 * meanwhile goes to the input line once it is up. Returns the DA1's
 * sixel answer (-1: not asked or none). */
static int
term_query(struct tui *t)
{
	struct tui_termquery q;
	int ask_bg = t->o.background == TUI_BG_AUTO && !t->o.no_color;
	int ask_sixel = 0, pt;
	const char *tm = getenv("TMUX");

	if (t->o.images == TUI_GFX_AUTO && (tm == NULL || *tm == '\0'))
		ask_sixel = tui_gfx_detect(TUI_GFX_AUTO, gfx_env, 0, -1, &pt) ==
		    TUI_GFX_BLOCKS;
	t->sty.light = t->o.background == TUI_BG_LIGHT;
	if (!ask_bg && !ask_sixel)
		return -1;
	tui_termquery(STDIN_FILENO, STDOUT_FILENO, ask_bg,
	    ask_sixel ? TERMQUERY_SIXEL_MS : TERMQUERY_MS, &q);
	if (ask_bg)
		t->sty.light = q.light == 1;
	memcpy(t->in.typeahead, q.keys, q.nkeys);
	t->in.ntypeahead = q.nkeys;
	return ask_sixel ? q.sixel : -1;
}

/* Picks the graphics protocol before curses owns the terminal: the
 * environment first, then (only when nothing is declared, outside
 * tmux) the DA1 answer for sixel. */
static void
gfx_init(struct tui *t, int sixel)
{
	enum tui_gfx_mode want = t->o.images;
	int pass_ok = 0;
	const char *tm = getenv("TMUX");

	if (tm != NULL && *tm != '\0' && want != TUI_GFX_BLOCKS &&
	    want != TUI_GFX_OFF)
		pass_ok = tui_gfx_tmux_passthrough();
	t->gfx.mode = tui_gfx_detect(want, gfx_env, pass_ok, sixel,
	    &t->gfx.passthrough);
	struct winsize ws;
	t->gfx.cellw = 10;
	t->gfx.cellh = 20;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col &&
	    ws.ws_row && ws.ws_xpixel && ws.ws_ypixel) {
		t->gfx.cellw = ws.ws_xpixel / ws.ws_col;
		t->gfx.cellh = ws.ws_ypixel / ws.ws_row;
	}
}

int
tui_run(struct session *s, const struct tui_opts *o, char **err)
{
	struct tui *t = &tui_one;
	struct loop *l;
	int signo;

	/* FIRST, before any other readline call: otherwise readline exports
	 * LINES/COLUMNS and ncurses never sees a resize again (TUI.md 3.2). */
	rl_change_environment = 0;

	if (s == NULL) {	/* the one door to the core (tui.h) */
		*err = xstrdup("the notebook needs a session");
		return -1;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		*err = xstrdup("the notebook needs a terminal (use -p for a one-shot question)");
		return -1;
	}
	setlocale(LC_ALL, "");
	state_init(t, s, o);
	l = t->loop;
	gfx_init(t, term_query(t));
	/* our SIGWINCH handler goes in before curses so ncurses keeps it */
	loop_signal(l, SIGWINCH, on_winch, t);
	loop_signal(l, SIGTERM, on_term, t);
	loop_signal(l, SIGINT, on_sigint, t);
	loop_signal(l, SIGHUP, on_term, t);
	SCREEN *scr = screen_start(t, err);
	if (!scr) {
		state_free(t);
		return -1;
	}
	tui_input_start(t);
	loop_watch(l, STDIN_FILENO, POLLIN, tui_input_on_tty, t);
	t->lay.rows = -1;
	tui_mark(t);
	tui_input_typeahead(t);

	while (!t->quit && !loop_stopped(l)) {
		tui_cmd_held_run(t);
		loop_run_once(l, frame(t));
	}

	loop_unwatch(l, STDIN_FILENO);
	tui_input_end(t);
	tui_draw_end(t);
	screen_end(t);
	delscreen(scr);
	tui_style_free(t);
	fatal_set_hook(NULL);
	signo = t->quit_signo;
	state_free(t);
	return signo;
}
