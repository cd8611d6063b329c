/* tui: the terminal notebook. Panes (conversation, cells, artifacts),
 * a status bar and a GNU readline input line in callback mode inside
 * ncursesw, all driven by terp's one poll loop. Event handlers and keys
 * only change state and set `dirty`; one redraw per loop iteration,
 * at most ~60 per second, composes the frame (TUI.md sections 3 and 4). */
#include "terp/tui.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/colorpair.h"
#include "terp/export.h"
#include "terp/kernel.h"
#include "terp/mdlite.h"
#include "terp/pyhl.h"
#include "terp/span.h"
#include "terp/llm.h"
#include "terp/png.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/theme.h"
#include "terp/thumb.h"
#include "terp/tlines.h"
#include "terp/util.h"

#include "tui_priv.h"
#include "tui_act.h"
#include "tui_cells.h"
#include "tui_draw.h"
#include "tui_event.h"
#include "tui_items.h"
#include "tui_spawn.h"
#include "tui_style.h"
#include "tui_thumbs.h"

/* The one terminal, the one UI: the public entry points (tui_on_event
 * with a NULL arg, tui_restore, the fatal hook) have no handle to pass. */
static struct tui tui_one = { .st.kstate = -1, .ov.art = -1,
	.saved_stderr = -1, .err_fd = -1 };

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

/* ---- readline glue (TUI.md 3.1) ---- */

#ifndef READERR
#define READERR (-2)
#endif

static void
q_push(struct tui *t, int c)
{
	size_t next = (t->in.qt + 1) % sizeof t->in.q;
	if (next == t->in.qh)
		return;		/* full: drop (a human cannot type that fast) */
	t->in.q[t->in.qt] = (unsigned char)c;
	t->in.qt = next;
}

static void
q_push_str(struct tui *t, const char *s)
{
	while (*s)
		q_push(t, (unsigned char)*s++);
}

static int
q_getc(FILE *f)
{
	struct tui *t = &tui_one;
	(void)f;
	if (t->in.qh == t->in.qt)
		return READERR;
	int c = t->in.q[t->in.qh];
	t->in.qh = (t->in.qh + 1) % sizeof t->in.q;
	return c;
}

static int
q_avail(void)
{
	struct tui *t = &tui_one;
	return t->in.qh != t->in.qt;
}

static void
rl_redisplay_mark(void)
{
	struct tui *t = &tui_one;
	tui_mark(t);
}

static int
rl_newline_insert(int count, int key)
{
	(void)count;
	(void)key;
	rl_insert_text("\n");
	return 0;
}

static const char *
skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static void
on_line(char *line)
{
	struct tui *t = &tui_one;
	if (!line) {
		/* Ctrl-D on an empty line */
		if (t->in.modal == M_SAVE_AS)
			t->in.modal = M_NONE;
		else
			tui_cmd_quit(t);
		tui_mark(t);
		return;
	}
	if (t->in.modal == M_SAVE_AS) {
		t->in.modal = M_NONE;
		tui_act_save_name(t, skip_ws(line));
		free(line);
		return;
	}
	const char *s = skip_ws(line);
	if (*s) {
		HIST_ENTRY *last = history_length > 0 ?
		    history_get(history_base + history_length - 1) : NULL;
		if (!last || strcmp(last->line, line) != 0)
			add_history(line);
	}
	if (*s && tui_cmd_holds(t, s)) {
		if (t->cmd.nheld == HELD_MAX)
			tui_flash(t, "too many lines held; wait for the replay to end");
		else {
			t->cmd.held[t->cmd.nheld++] = xstrdup(s);
			char *m = xasprintf("held until the replay is over: %s", s);
			tui_item_text(t, IT_NOTICE, m);
			free(m);
		}
	} else
		tui_cmd_line(t, s);
	free(line);
	tui_mark(t);
}

static void
rl_show_matches(char **matches, int num, int max)
{
	tui_cmd_show_matches(&tui_one, matches, num, max);
}

static void
rl_setup(struct tui *t)
{
	rl_readline_name = "terp";
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	rl_prep_term_function = NULL;
	rl_deprep_term_function = NULL;
	rl_getc_function = q_getc;
	rl_input_available_hook = q_avail;
	rl_redisplay_function = rl_redisplay_mark;
	t->in.rl_null = fopen("/dev/null", "w");
	rl_outstream = t->in.rl_null;
	rl_attempted_completion_function = tui_cmd_complete;
	rl_completion_display_matches_hook = rl_show_matches;
	rl_variable_bind("bell-style", "none");
	rl_variable_bind("enable-bracketed-paste", "off");
	rl_add_funmap_entry("terp-insert-newline", rl_newline_insert);
	rl_bind_keyseq("\\e\\r", rl_newline_insert);
	rl_bind_keyseq("\\e\\n", rl_newline_insert);
	rl_callback_handler_install("", on_line);
	rl_set_screen_size(1, COLS > 0 ? COLS : 80);

	using_history();
	stifle_history(2000);
	read_history(t->in.history);
}

/* Ctrl-C on the input: drop the edit, as a shell does. */
static void
input_cancel(struct tui *t)
{
	t->in.qh = t->in.qt = 0;
	rl_callback_sigcleanup();
	rl_free_line_state();
	rl_replace_line("", 0);
	rl_point = rl_end = 0;
	rl_callback_handler_remove();
	rl_callback_handler_install("", on_line);
	tui_mark(t);
}

/* ---- keys and mouse ---- */

static void
focus_set(struct tui *t, enum pane p)
{
	t->focus = p;
	if (p != P_INPUT)
		t->last_pane = p;
	tui_mark(t);
}

static void
focus_cycle(struct tui *t, int dir)
{
	int p = ((int)t->focus + dir + P_NPANES) % P_NPANES;
	focus_set(t, (enum pane)p);
}

/* The pane PgUp/PgDn and the wheel act on from the input line. */
static enum pane
scroll_target(struct tui *t)
{
	if (t->focus != P_INPUT)
		return t->focus;
	return t->lay.compact ? tui_draw_shown_pane(t) : P_CONV;
}

#define SCROLL_TOP	(INT_MIN / 2)
#define SCROLL_END	(INT_MAX / 2)

static void
pane_scroll(struct tui *t, enum pane p, int d)
{
	struct view *v = &t->v[p];
	int h = t->lay.ph[p] > 2 ? t->lay.ph[p] - 1 : 1;
	if (d == SCROLL_END) {
		v->follow = 1;
		if (p == P_CELLS)
			v->sel = notebook_ncells(t->nb);
		if (p == P_ARTS)
			v->sel = notebook_nartifacts(t->nb) - 1;
	} else if (d == SCROLL_TOP) {
		v->follow = 0;
		v->top = 0;
		if (p == P_CELLS)
			v->sel = 1;
		if (p == P_ARTS)
			v->sel = 0;
	} else {
		if (d == 1000)
			d = h - 1;
		if (d == -1000)
			d = -(h - 1);
		if (p == P_ARTS) {
			v->sel += d > 0 ? 1 : -1;
		} else {
			v->top += d;
			v->follow = 0;
			if (p == P_CELLS)
				v->sel_from_top = 1;
		}
	}
	tui_mark(t);
}

static void
sel_move(struct tui *t, enum pane p, int d)
{
	struct view *v = &t->v[p];
	if (p == P_CELLS) {
		int nc = notebook_ncells(t->nb);
		v->sel += d;
		if (v->sel < 1)
			v->sel = 1;
		if (v->sel > nc)
			v->sel = nc;
		v->ensure_sel = 1;
	} else if (p == P_ARTS) {
		v->sel += d;
	} else
		pane_scroll(t, p, d);
	tui_mark(t);
}

/* A key when a pane (not the input) has the focus. Returns 0 when the
 * key is not the pane's (it then goes to the input line). */
static int
pane_key(struct tui *t, int c)
{
	enum pane p = t->focus;
	int sel = t->v[p].sel;

	switch (c) {
	case KEY_UP: case 'k':		sel_move(t, p, -1); return 1;
	case KEY_DOWN: case 'j':	sel_move(t, p, 1); return 1;
	case KEY_PPAGE: case 'b':	pane_scroll(t, p, -1000); return 1;
	case KEY_NPAGE: case ' ':	pane_scroll(t, p, 1000); return 1;
	case KEY_HOME: case 'g':	pane_scroll(t, p, SCROLL_TOP); return 1;
	case KEY_END: case 'G':		pane_scroll(t, p, SCROLL_END); return 1;
	case 27: case 'i':		focus_set(t, P_INPUT); return 1;
	case '?':			tui_cmd_help(t); return 1;
	case '\r': case '\n': case KEY_ENTER:
		if (p == P_CELLS) {
			tui_cells_toggle(t, sel);
			t->v[p].ensure_sel = 1;
		} else if (p == P_ARTS)
			tui_act_preview(t, sel);
		return 1;
	}
	if (p == P_CELLS && sel > 0) {
		switch (c) {
		case 'e': tui_act_edit(t, sel); return 1;
		case 'r': tui_act_rerun(t, sel); return 1;
		case 'y': tui_act_copy(t, sel); return 1;
		}
	}
	if (p == P_ARTS) {
		switch (c) {
		case 'o': tui_act_open(t, sel); return 1;
		case 's': tui_act_save_ask(t, sel); return 1;
		}
	}
	return 0;
}

static void
overlay_key(struct tui *t, int c)
{
	int h = t->lay.rows - t->lay.inrows - 2;
	switch (c) {
	case KEY_UP: case 'k':		t->ov.top--; break;
	case KEY_DOWN: case 'j':	t->ov.top++; break;
	case KEY_PPAGE: case 'b':	t->ov.top -= h > 1 ? h - 1 : 1; break;
	case KEY_NPAGE: case ' ':	t->ov.top += h > 1 ? h - 1 : 1; break;
	case KEY_HOME: case 'g':	t->ov.top = 0; break;
	case KEY_END: case 'G':		t->ov.top = INT_MAX / 2; break;
	case 'o':
		if (t->ov.art >= 0)
			tui_act_open(t, t->ov.art);
		break;
	case 's':
		if (t->ov.art >= 0) {
			int a = t->ov.art;
			tui_overlay_close(t);
			tui_act_save_ask(t, a);
		}
		break;
	case 'q': case 27: case '?': case KEY_F(1): case '\r': case '\n':
	case KEY_ENTER:
		tui_overlay_close(t);
		break;
	}
	tui_mark(t);
}

/* Keys readline binds by their ANSI sequences (so inputrc applies). */
static int
input_translate(struct tui *t, int c)
{
	switch (c) {
	case KEY_LEFT:		q_push_str(t, "\033[D"); return 1;
	case KEY_RIGHT:		q_push_str(t, "\033[C"); return 1;
	case KEY_UP:		q_push_str(t, "\033[A"); return 1;
	case KEY_DOWN:		q_push_str(t, "\033[B"); return 1;
	case KEY_HOME:		q_push_str(t, "\033[H"); return 1;
	case KEY_END:		q_push_str(t, "\033[F"); return 1;
	case KEY_DC:		q_push_str(t, "\033[3~"); return 1;
	case KEY_BACKSPACE:	q_push(t, 0x7f); return 1;
	case KEY_ENTER:		q_push(t, '\r'); return 1;
	case KEY_SLEFT:		q_push_str(t, "\033[1;2D"); return 1;
	case KEY_SRIGHT:	q_push_str(t, "\033[1;2C"); return 1;
	}
	if (c >= 0 && c < 256) {
		q_push(t, c);
		return 1;
	}
	return 0;
}

static void
mouse_event(struct tui *t)
{
	MEVENT me;
	if (getmouse(&me) != OK)
		return;
	int y = me.y, x = me.x;
	if (t->ov.on) {
		if (me.bstate & BUTTON4_PRESSED)
			t->ov.top -= 3;
#if NCURSES_MOUSE_VERSION > 1
		else if (me.bstate & BUTTON5_PRESSED)
			t->ov.top += 3;
#endif
		tui_mark(t);
		return;
	}
	if (y >= t->lay.rows - t->lay.inrows) {
		if (me.bstate & (BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON1_CLICKED))
			focus_set(t, P_INPUT);
		return;
	}
	for (int p = P_CONV; p < P_NPANES; p++) {
		if (!t->lay.ph[p] || y < t->lay.py[p] || y >= t->lay.py[p] + t->lay.ph[p] ||
		    x < t->lay.px[p] || x >= t->lay.px[p] + t->lay.pw[p])
			continue;
		if (me.bstate & BUTTON4_PRESSED) {
			pane_scroll(t, (enum pane)p, -3);
			return;
		}
#if NCURSES_MOUSE_VERSION > 1
		if (me.bstate & BUTTON5_PRESSED) {
			pane_scroll(t, (enum pane)p, 3);
			return;
		}
#endif
		if (!(me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
			return;
		int row = y - t->lay.py[p] - 1;
		if (row < 0) {
			int q = tui_draw_tab_at(t, x);
			focus_set(t, q >= 0 ? (enum pane)q : (enum pane)p);
			return;
		}
		int tag = row < TAGROWS ? t->lay.tagmap[p][row] : -1;
		if (p == P_CONV && tag > 0) {
			t->v[P_CELLS].sel = tag;
			t->v[P_CELLS].ensure_sel = 1;
			focus_set(t, P_CELLS);
			return;
		}
		focus_set(t, (enum pane)p);
		if (p == P_CELLS && tag > 0) {
			t->v[p].sel = tag;
			t->v[p].follow = 0;
		} else if (p == P_ARTS && tag >= 0)
			t->v[p].sel = tag;
		return;
	}
}

/* Hands the queued bytes to readline, so that a key that looks at the
 * line (Tab, ?) sees what was typed before it in the same batch. */
static void
input_flush(struct tui *t)
{
	while (q_avail() && !t->quit)
		rl_callback_read_char();
}

static void
on_key(struct tui *t, int c)
{
	if (c < 0x80 || c >= 256)
		input_flush(t);
	if (c == KEY_RESIZE) {
		tui_mark(t);
		return;
	}
	if (c == KEY_MOUSE) {
		mouse_event(t);
		return;
	}
	if (t->in.modal == M_CONFIRM_QUIT) {
		if (c == 'y' || c == 'Y') {
			agent_cancel(t->agent);
			t->quit = 1;
		}
		t->in.modal = M_NONE;
		tui_mark(t);
		return;
	}
	if (t->in.modal == M_SAVE_CONFIRM) {
		tui_act_save_confirm(t, c == 'y' || c == 'Y');
		return;
	}
	if (c == 3) {	/* Ctrl-C (raw mode: a byte, not a signal) */
		if (t->agent && agent_busy(t->agent)) {
			agent_cancel(t->agent);
			tui_flash(t, "cancelling…");
		} else if (t->ov.on)
			tui_overlay_close(t);
		else {
			if (t->in.modal == M_SAVE_AS)
				t->in.modal = M_NONE;
			input_cancel(t);
		}
		return;
	}
	if (c == 12) {	/* Ctrl-L */
		clearok(curscr, TRUE);
		tui_mark(t);
		return;
	}
	if (c == KEY_F(1)) {
		if (t->ov.on)
			tui_overlay_close(t);
		else
			tui_cmd_help(t);
		return;
	}
	if (t->ov.on) {
		overlay_key(t, c);
		return;
	}
	if (c == KEY_BTAB) {
		focus_cycle(t, -1);
		return;
	}
	if (c == '\t' && (t->focus != P_INPUT || !rl_line_buffer ||
	    rl_line_buffer[0] != '/')) {
		focus_cycle(t, 1);
		return;
	}
	if (t->focus != P_INPUT) {
		if (pane_key(t, c))
			return;
		/* typing in a pane goes to the input line */
		if (c < 32 && c != 4 && c != 21 && c != 23)
			return;
		if (c >= 256)
			return;
		focus_set(t, P_INPUT);
	}
	if (c == KEY_PPAGE || c == KEY_NPAGE) {
		pane_scroll(t, scroll_target(t), c == KEY_PPAGE ? -1000 : 1000);
		return;
	}
	if (c == '?' && rl_end == 0 && t->in.modal == M_NONE) {
		tui_cmd_help(t);
		return;
	}
	input_translate(t, c);
}

/* Bracketed paste: "\e[200~" ... "\e[201~" arrives byte by byte (ncurses
 * does not know the sequence). Pasted newlines become part of the input
 * instead of sending it. */
static const char paste_start[] = "\033[200~", paste_end[] = "\033[201~";

static void
paste_flush_esc(struct tui *t)
{
	char tmp[8];
	int n = t->in.nesc;
	memcpy(tmp, t->in.esc, (size_t)n);
	t->in.nesc = 0;
	for (int i = 0; i < n; i++) {
		if (t->in.paste)
			buf_addc(&t->in.pastebuf, tmp[i] == '\r' ? '\n' : tmp[i]);
		else
			on_key(t, (unsigned char)tmp[i]);
	}
}

static void
feed_key(struct tui *t, int c)
{
	const char *want = t->in.paste ? paste_end : paste_start;
	if (c < 256 && (t->in.nesc > 0 || c == 27)) {
		if (c == (unsigned char)want[t->in.nesc]) {
			t->in.esc[t->in.nesc++] = (char)c;
			if (t->in.nesc == 6) {
				t->in.nesc = 0;
				if (!t->in.paste) {
					t->in.paste = 1;
					buf_reset(&t->in.pastebuf);
				} else {
					t->in.paste = 0;
					if (t->focus != P_INPUT || t->ov.on) {
						tui_overlay_close(t);
						focus_set(t, P_INPUT);
					}
					if (t->in.modal != M_CONFIRM_QUIT &&
					    t->in.pastebuf.len) {
						char *s = sanitize_str(t->in.pastebuf.data,
						    t->in.pastebuf.len, SANITIZE_KEEP_NL |
						    SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
						rl_insert_text(s);
						free(s);
					}
					tui_mark(t);
				}
			}
			return;
		}
		paste_flush_esc(t);
	}
	if (t->in.paste) {
		if (c < 256)
			buf_addc(&t->in.pastebuf, c == '\r' ? '\n' : (char)c);
		return;
	}
	on_key(t, c);
}

static void
on_tty(struct loop *l, int fd, int revents, void *arg)
{
	struct tui *t = arg;
	(void)l;
	(void)fd;
	int c;
	if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		t->quit = 1;	/* the terminal went away */
		return;
	}
	while ((c = wgetch(t->lay.inw)) != ERR)
		feed_key(t, c);
	if (t->in.nesc > 0 && !t->in.paste)
		paste_flush_esc(t);	/* a lone Esc or Alt key */
	input_flush(t);
	tui_mark(t);
}

static void
on_winch(struct loop *l, int signo, void *arg)
{
	struct tui *t = arg;
	(void)l;
	(void)signo;
	struct winsize ws;
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
	if (t->agent && agent_busy(t->agent))
		agent_cancel(t->agent);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	struct tui *t = arg;
	(void)l;
	(void)signo;
	t->quit = 1;
}

/* ---- start and stop ---- */

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
	struct tui *t = &tui_one;
	screen_end(t);
}

void
tui_opts_default(struct tui_opts *o)
{
	memset(o, 0, sizeof *o);
	o->mouse = 1;
}

static void
state_free(struct tui *t)
{
	tui_items_free(t);
	tui_cells_free(t);
	tui_thumbs_clear(t);
	tlines_free(&t->ov.lines);
	free(t->ov.title);
	t->ov.title = NULL;
	free(t->ov.png);
	t->ov.png = NULL;
	free(t->st.flash);
	t->st.flash = NULL;
	free(t->in.save_name);
	t->in.save_name = NULL;
	free(t->in.history);
	t->in.history = NULL;
	buf_free(&t->in.pastebuf);
	for (int i = 0; i < t->cmd.nheld; i++)
		free(t->cmd.held[i]);
	t->cmd.nheld = 0;
	tui_cmd_free();
}

int
tui_run(struct loop *l, struct agent *a, const struct tui_opts *o, char **err)
{
	struct tui *t = &tui_one;
	/* FIRST, before any other readline call: otherwise readline exports
	 * LINES/COLUMNS and ncurses never sees a resize again (TUI.md 3.2). */
	rl_change_environment = 0;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		*err = xstrdup("the notebook needs a terminal (use -p for a one-shot question)");
		return -1;
	}
	setlocale(LC_ALL, "");
	t->loop = l;
	t->agent = a;
	t->nb = agent_notebook(a);
	t->o = *o;
	if (getenv("NO_COLOR") && *getenv("NO_COLOR"))
		t->o.no_color = 1;
	t->focus = P_INPUT;
	t->last_pane = P_CONV;
	for (int p = 0; p < P_NPANES; p++)
		t->v[p].follow = 1;
	t->v[P_ARTS].follow = 0;
	buf_init(&t->in.pastebuf, 1024 * 1024);
	if (o->history_path)
		t->in.history = xstrdup(o->history_path);
	else {
		char *st = xdg_state_home();
		char *dir = xasprintf("%s/terp", st);
		mkdir_p(dir, 0700);
		t->in.history = xasprintf("%s/history", dir);
		free(dir);
		free(st);
	}

	/* our SIGWINCH handler goes in before curses so ncurses keeps it */
	loop_signal(l, SIGWINCH, on_winch, t);
	loop_signal(l, SIGTERM, on_term, t);
	loop_signal(l, SIGINT, on_sigint, t);
	loop_signal(l, SIGHUP, on_term, t);

	stderr_redirect(t);
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		stderr_restore(t);
		*err = xasprintf("cannot use the terminal (TERM=%s)",
		    getenv("TERM") ? getenv("TERM") : "");
		state_free(t);
		return -1;
	}
	set_term(scr);
	t->active = 1;
	fatal_set_hook(tui_fatal_hook);
	raw();
	noecho();
	nonl();
	set_escdelay(25);
	char *terr = NULL;
	if (tui_style_init(t, &terr) < 0) {
		tui_item_text(t, IT_ERROR, terr ? terr : "theme: cannot load");
		free(terr);
	}
	tui_draw_start(t);
	if (t->o.mouse) {
		mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED
#if NCURSES_MOUSE_VERSION > 1
		    | BUTTON5_PRESSED
#endif
		    , NULL);
		mouseinterval(0);
	}
	fputs("\033[?2004h", stdout);	/* bracketed paste */
	fflush(stdout);
	rl_setup(t);
	loop_watch(l, STDIN_FILENO, POLLIN, on_tty, t);
	t->lay.rows = -1;
	tui_mark(t);

	while (!t->quit && !loop_stopped(l)) {
		tui_cmd_held_run(t);
		int64_t now = now_ms();
		/* the idle countdown ticks by the second */
		if (t->st.ticking && now - t->last_draw >= 250)
			t->dirty = 1;
		/* the clock on the status bar and the spinner tick while busy */
		if ((t->st.busy || (t->st.flash && now >= t->st.flash_until && now < t->st.flash_until + 200)) &&
		    now - t->last_draw >= 100)
			t->dirty = 1;
		int64_t wait = 1000;
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
		loop_run_once(l, wait);
	}

	loop_unwatch(l, STDIN_FILENO);
	rl_callback_handler_remove();
	if (t->in.history && write_history(t->in.history) != 0) {
		/* not fatal: the session still ends cleanly */
	}
	tui_draw_end(t);
	screen_end(t);
	delscreen(scr);
	tui_style_free(t);
	fatal_set_hook(NULL);
	if (t->in.rl_null) {
		fclose(t->in.rl_null);
		t->in.rl_null = NULL;
	}
	rl_outstream = NULL;
	state_free(t);
	t->quit = 0;
	t->agent = NULL;
	t->nb = NULL;
	return 0;
}
