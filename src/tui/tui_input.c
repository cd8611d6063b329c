/* tui_input: the notebook UI's keyboard and mouse: GNU readline in
 * callback mode inside ncurses (TUI.md 3.1: ncurses reads the keys,
 * readline edits the line from a byte queue and never touches the
 * terminal), bracketed paste, and the keys of each pane and of the
 * overlay. Keys change state and mark the screen; tui_draw shows it. */
#include "tui_input.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

#include "tui_act.h"
#include "tui_cells.h"
#include "tui_cmd.h"
#include "tui_draw.h"
#include "tui_items.h"
#include "tui_search.h"
#include "tui_spawn.h"
#include "tui_told.h"
#include "tui_view.h"
#include "tui_trace.h"

#ifndef READERR
#define READERR (-2)
#endif

/* Readline's hooks (rl_getc_function, the line handler, completion
 * display...) take no argument: they find the UI through this, set
 * between tui_input_start and tui_input_end. */
static struct tui *rl_ui;

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
	struct tui *t = rl_ui;
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
	struct tui *t = rl_ui;
	return t->in.qh != t->in.qt;
}

static void
rl_redisplay_mark(void)
{
	struct tui *t = rl_ui;
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

/* ---- a cell's input() ---- */

static void
ask_end(struct tui *t)
{
	t->in.modal = M_NONE;
	rl_replace_line(t->in.ask_saved ? t->in.ask_saved : "", 0);
	rl_point = rl_end;
	free(t->in.ask_saved);
	t->in.ask_saved = NULL;
	t->in.ask_cell = 0;
	tui_mark(t);
}

void
tui_input_ask(struct tui *t, int cell, const char *prompt, int password)
{
	if (t->in.modal == M_INPUT)
		ask_end(t);
	if (t->in.modal == M_SEARCH)
		tui_search_cancel(t);
	t->in.modal = M_INPUT;
	t->in.ask_cell = cell;
	t->in.ask_password = password;
	snprintf(t->in.ask_prompt, sizeof t->in.ask_prompt, "%s",
	    prompt && *prompt ? prompt : "input: ");
	free(t->in.ask_saved);
	t->in.ask_saved = xstrdup(rl_line_buffer ? rl_line_buffer : "");
	rl_replace_line("", 0);
	rl_point = rl_end = 0;
	t->focus = P_INPUT;
	tui_mark(t);
}

void
tui_input_ask_done(struct tui *t, int cell)
{
	if (t->in.modal == M_INPUT && t->in.ask_cell == cell)
		ask_end(t);
}

/* The line typed (NULL: Ctrl-D) answers the cell; never in history. */
static void
ask_answer(struct tui *t, const char *line)
{
	int cell = t->in.ask_cell;

	ask_end(t);
	if (t->session == NULL || session_input_reply(t->session, cell, line) < 0)
		tui_flash(t, "the cell no longer asks");
}

static void
on_line(char *line)
{
	struct tui *t = rl_ui;
	if (t->in.modal == M_INPUT) {
		ask_answer(t, line);
		free(line);
		return;
	}
	if (!line) {
		/* Ctrl-D on an empty line */
		if (t->in.modal == M_SAVE_AS)
			t->in.modal = M_NONE;
		else if (t->in.modal == M_SEARCH)
			tui_search_cancel(t);
		else
			tui_cmd_quit_eof(t);
		tui_mark(t);
		return;
	}
	if (t->in.modal == M_SEARCH) {
		tui_search_set(t, line);
		free(line);
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
	tui_cmd_submit(t, s);
	free(line);
	tui_mark(t);
}

static void
rl_show_matches(char **matches, int num, int max)
{
	tui_cmd_show_matches(rl_ui, matches, num, max);
}

/* The history file: a header, then one entry a line with its newlines
 * as \n and backslashes as \\, so that a multi-line question (a paste)
 * stays one entry; readline's own format splits it into one entry per
 * line, pushing the earlier questions out. A file without the header
 * is that older format, read a line an entry. */
#define HISTORY_HEADER	"#terp-history-2"

static void
history_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '\\' && s[1] == 'n') {
			*o++ = '\n';
			s++;
		} else if (*s == '\\' && s[1] == '\\') {
			*o++ = '\\';
			s++;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static void
history_load(const char *path)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int v2 = 0, first = 1;

	while (f && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (first && strcmp(line, HISTORY_HEADER) == 0) {
			v2 = 1;
			first = 0;
			continue;
		}
		first = 0;
		if (v2)
			history_unescape(line);
		if (*line)
			add_history(line);
	}
	free(line);
	if (f)
		fclose(f);
	/* Up recalls the newest at once (the position stayed at 0) */
	history_set_pos(history_length);
}

/* Written whole to a temporary file renamed over the old: a crash
 * mid-way keeps the old history. Returns 0 or -1. */
static int
history_save(const char *path)
{
	struct buf b;
	int rc;

	/* readline keeps a bounded history; its text is the user's own */
	buf_init(&b, (size_t)1 << 30);
	buf_adds(&b, HISTORY_HEADER "\n");
	for (int i = 0; i < history_length; i++) {
		HIST_ENTRY *e = history_get(history_base + i);
		for (const char *s = e ? e->line : ""; *s; s++) {
			if (*s == '\n')
				buf_adds(&b, "\\n");
			else if (*s == '\\')
				buf_adds(&b, "\\\\");
			else
				buf_addc(&b, *s);
		}
		buf_addc(&b, '\n');
	}
	rc = b.data == NULL ? -1 : write_file_atomic(path, b.data, b.len, 0600, 0);
	buf_free(&b);
	return rc;
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
	history_load(t->in.history);
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

void
tui_input_define_keys(void)
{
	/* Home and End as terminals send them whatever TERM says: inside
	 * tmux or screen with TERM=xterm-256color the terminfo names
	 * \eOH/\eOF but \e[1~/\e[4~ come (and ESC was taken alone). */
	static const struct { const char *seq; int key; } keys[] = {
		{ "\033[1~", KEY_HOME }, { "\033[4~", KEY_END },
		{ "\033[7~", KEY_HOME }, { "\033[8~", KEY_END },	/* rxvt */
		{ "\033[H", KEY_HOME }, { "\033[F", KEY_END },
		{ "\033OH", KEY_HOME }, { "\033OF", KEY_END },
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (key_defined(keys[i].seq) == 0)
			define_key(keys[i].seq, keys[i].key);
}

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
	/* a hidden files pane (f) is not a stop, on a split screen */
	if (p == P_ARTS && t->lay.files_hidden && !t->lay.compact)
		p = ((int)p + dir + P_NPANES) % P_NPANES;
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
		int nc = notebook_ncells(t->nb), s = v->sel + d;
		/* dropped cells are not in the pane: passed over */
		while (s >= 1 && s <= nc && notebook_cell(t->nb, s)->dropped)
			s += d > 0 ? 1 : -1;
		if (s >= 1 && s <= nc)
			v->sel = s;
		v->ensure_sel = 1;
	} else if (p == P_ARTS) {
		v->sel += d;
	} else
		pane_scroll(t, p, d);
	tui_mark(t);
}

/* Keys of every pane: zoom, the files pane, the mouse, search. */
static int
pane_view_key(struct tui *t, int c)
{
	enum pane p = t->focus;

	switch (c) {
	case 'z':
		t->lay.zoom = !t->lay.zoom;
		if (t->lay.zoom)
			tui_flash(t, "%s pane maximised (z restores)",
			    p == P_CONV ? "conversation" : p == P_CELLS ?
			    "cells" : "files");
		else
			tui_flash(t, "panes restored");
		return 1;
	case 'f':
		t->lay.files_hidden = !t->lay.files_hidden;
		if (t->lay.files_hidden && p == P_ARTS && !t->lay.compact)
			focus_set(t, P_CELLS);
		tui_flash(t, "%s", t->lay.files_hidden ?
		    "files pane hidden (f shows it)" : "files pane shown");
		tui_mark(t);
		return 1;
	case 'm':
		tui_input_mouse(t, !t->in.mouse);
		tui_flash(t, "%s", t->in.mouse ? "mouse on (m turns it off)" :
		    "mouse off: the terminal selects text (m turns it on)");
		return 1;
	case '/':
		tui_search_begin(t);
		return 1;
	case 'n':
	case 'N':
		if (!tui_search_active(t, p))
			return 0;
		tui_search_next(t, c == 'n' ? 1 : -1);
		return 1;
	case 27:
		if (!tui_search_active(t, p))
			return 0;
		tui_search_end(t);
		return 1;
	}
	return 0;
}

/* Ctrl-D and Ctrl-U in a pane: half a page down and up, as in vim and
 * less (on the input line Ctrl-D still quits from an empty line). */
static int
pane_half_page_key(struct tui *t, int c)
{
	enum pane p = t->focus;
	int h = t->lay.ph[p] > 2 ? t->lay.ph[p] - 1 : 1;

	if (c != 4 && c != 21)
		return 0;
	if (p == P_ARTS)	/* a list: the selection moves */
		sel_move(t, p, c == 4 ? (h + 1) / 2 : -(h + 1) / 2);
	else
		pane_scroll(t, p, c == 4 ? (h + 1) / 2 : -(h + 1) / 2);
	return 1;
}

/* A key when a pane (not the input) has the focus. Returns 0 when the
 * key is not the pane's (it then goes to the input line). */
static int
pane_key(struct tui *t, int c)
{
	enum pane p = t->focus;
	int sel = t->v[p].sel;

	if (pane_view_key(t, c) || pane_half_page_key(t, c))
		return 1;
	switch (c) {
	case KEY_UP: case 'k':		sel_move(t, p, -1); return 1;
	case KEY_DOWN: case 'j':	sel_move(t, p, 1); return 1;
	case KEY_PPAGE: case 'b':	pane_scroll(t, p, -1000); return 1;
	case KEY_NPAGE: case ' ':	pane_scroll(t, p, 1000); return 1;
	case KEY_HOME: case 'g':	pane_scroll(t, p, SCROLL_TOP); return 1;
	case KEY_END: case 'G':		pane_scroll(t, p, SCROLL_END); return 1;
	case 27: case 'i':		focus_set(t, P_INPUT); return 1;
	case '?':			tui_cmd_help(t); return 1;
	case 'q':			tui_cmd_quit_eof(t); return 1;
	case '\r': case '\n': case KEY_ENTER:
		if (p == P_CELLS) {
			tui_cells_toggle(t, sel);
			t->v[p].ensure_sel = 1;
		} else if (p == P_ARTS)
			tui_act_preview(t, sel);
		return 1;
	}
	if (p == P_CONV && c == 't') {
		tui_trace_next(t);
		return 1;
	}
	if (p == P_CELLS && sel > 0) {
		switch (c) {
		case 'e': tui_act_edit(t, sel); return 1;
		case 'r': tui_act_rerun(t, sel); return 1;
		case 'y': tui_act_copy(t, sel); return 1;
		case 'Y': tui_act_copy_output(t, sel); return 1;
		case 'w': tui_told_show(t, sel); return 1;
		case 'v': tui_view_output(t, sel); return 1;
		case 'd': tui_act_drop_ask(t, sel); return 1;
		}
	}
	if (p == P_CONV && c == 'r') {
		tui_items_toggle_reasoning(t);
		return 1;
	}
	if (p == P_CONV && c == 'y') {
		tui_act_copy_answer(t);
		return 1;
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
	case KEY_HOME: case 'g':	t->ov.top = 0; t->ov.left = 0; break;
	case KEY_END: case 'G':		t->ov.top = INT_MAX / 2; break;
	case KEY_LEFT: case 'h':	t->ov.left -= tui_view_hstep(t); break;
	case KEY_RIGHT: case 'l':	t->ov.left += tui_view_hstep(t); break;
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

/* The pane at screen row y, column x, or -1. */
static int
pane_at(const struct tui *t, int y, int x)
{
	for (int p = P_CONV; p < P_NPANES; p++)
		if (t->lay.ph[p] && y >= t->lay.py[p] &&
		    y < t->lay.py[p] + t->lay.ph[p] && x >= t->lay.px[p] &&
		    x < t->lay.px[p] + t->lay.pw[p])
			return p;
	return -1;
}

/* A click in pane p at screen row y, column x: on the title (or a tab),
 * focus; on a link to a cell, select the cell; on a cell or a file,
 * select it. */
static void
mouse_click(struct tui *t, enum pane p, int y, int x)
{
	int row = y - t->lay.py[p] - 1;
	if (row < 0) {
		int q = tui_draw_tab_at(t, x);
		focus_set(t, q >= 0 ? (enum pane)q : p);
		return;
	}
	int tag = row < TAGROWS ? t->lay.tagmap[p][row] : -1;
	if (p == P_CONV && tag > 0) {
		t->v[P_CELLS].sel = tag;
		t->v[P_CELLS].ensure_sel = 1;
		focus_set(t, P_CELLS);
		return;
	}
	focus_set(t, p);
	if (p == P_CELLS && tag > 0) {
		t->v[p].sel = tag;
		t->v[p].follow = 0;
	} else if (p == P_ARTS && tag >= 0)
		t->v[p].sel = tag;
}

/* The wheel: 4 up, 5 down (ncurses has button 5 from mouse version 2). */
static int
mouse_wheel(const MEVENT *me)
{
	if (me->bstate & BUTTON4_PRESSED)
		return -3;
#if NCURSES_MOUSE_VERSION > 1
	if (me->bstate & BUTTON5_PRESSED)
		return 3;
#endif
	return 0;
}

static void
mouse_event(struct tui *t)
{
	MEVENT me;
	if (getmouse(&me) != OK)
		return;
	int wheel = mouse_wheel(&me);
	if (t->ov.on) {
		t->ov.top += wheel;
		tui_mark(t);
		return;
	}
	if (me.y >= t->lay.rows - t->lay.inrows) {
		if (me.bstate & (BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON1_CLICKED))
			focus_set(t, P_INPUT);
		return;
	}
	int p = pane_at(t, me.y, me.x);
	if (p < 0)
		return;
	if (wheel)
		pane_scroll(t, (enum pane)p, wheel);
	else if (me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))
		mouse_click(t, (enum pane)p, me.y, me.x);
}

/* Hands the queued bytes to readline, so that a key that looks at the
 * line (Tab, ?) sees what was typed before it in the same batch. */
static void
input_flush(struct tui *t)
{
	while (q_avail() && !t->quit)
		rl_callback_read_char();
}

/* The answer to a question on the input line (quit? overwrite?). */
static int
modal_key(struct tui *t, int c)
{
	if (t->in.modal == M_CONFIRM_QUIT) {
		if (c == 'y' || c == 'Y') {
			session_cancel(t->session);
			t->quit = 1;
		}
		t->in.modal = M_NONE;
		tui_mark(t);
		return 1;
	}
	if (t->in.modal == M_SAVE_CONFIRM) {
		tui_act_save_confirm(t, c == 'y' || c == 'Y');
		return 1;
	}
	if (t->in.modal == M_OPEN_CONFIRM) {
		tui_act_open_confirm(t, c == 'y' || c == 'Y');
		return 1;
	}
	if (t->in.modal == M_APPROVE)
		return tui_act_approve_key(t, c);
	if (t->in.modal == M_DROP_CONFIRM) {
		tui_act_drop_confirm(t, c == 'y' || c == 'Y');
		return 1;
	}
	return 0;
}

/* Keys that mean the same wherever the focus is. */
static int
global_key(struct tui *t, int c)
{
	switch (c) {
	case 3:		/* Ctrl-C (raw mode: a byte, not a signal) */
		if (t->session && session_running(t->session)) {
			/* as Jupyter's interrupt: what was queued does not run;
			 * a cell's input() ends in KeyboardInterrupt */
			if (t->in.modal == M_INPUT)
				ask_end(t);
			tui_cmd_held_drop(t);
			session_cancel(t->session);
			tui_flash(t, "cancelling…");
		} else if (t->ov.on)
			tui_overlay_close(t);
		else if (t->in.modal == M_SEARCH) {
			input_cancel(t);
			tui_search_cancel(t);
		} else {
			if (t->in.modal == M_SAVE_AS)
				t->in.modal = M_NONE;
			input_cancel(t);
		}
		return 1;
	case 12:	/* Ctrl-L */
		clearok(curscr, TRUE);
		tui_mark(t);
		return 1;
	case 26:	/* Ctrl-Z (raw mode: a byte, not a signal) */
		tui_spawn_suspend(t);
		return 1;
	case KEY_F(1):
		if (t->ov.on)
			tui_overlay_close(t);
		else
			tui_cmd_help(t);
		return 1;
	}
	return 0;
}

/* Shift-Tab, and Tab unless it completes a /command. */
static int
focus_key(struct tui *t, int c)
{
	if (c == KEY_BTAB) {
		focus_cycle(t, -1);
		return 1;
	}
	if (c == '\t' && t->in.modal == M_SEARCH)
		return 1;	/* the pattern is typed: no pane to go to */
	if (c == '\t' && (t->focus != P_INPUT || !rl_line_buffer ||
	    rl_line_buffer[0] != '/')) {
		focus_cycle(t, 1);
		return 1;
	}
	return 0;
}

/* A key when a pane has the focus: the pane's own, or typing, which
 * moves to the input line. Returns 1 when the key is done with. */
static int
pane_or_typing(struct tui *t, int c)
{
	if (pane_key(t, c))
		return 1;
	/* other control keys are dropped, but Ctrl-W edits (Ctrl-D and
	 * -U are the pane's: pane_half_page_key) */
	if ((c < 32 && c != 23) || c >= 256)
		return 1;
	focus_set(t, P_INPUT);
	return 0;
}

/* A key for the input line: paging, '?' on an empty line, or readline. */
static void
line_key(struct tui *t, int c)
{
	if (c == KEY_PPAGE || c == KEY_NPAGE) {
		pane_scroll(t, scroll_target(t), c == KEY_PPAGE ? -1000 : 1000);
		return;
	}
	if (c == '?' && rl_end == 0 && t->in.modal == M_NONE) {
		tui_cmd_help(t);
		return;
	}
	if (c == KEY_END && rl_point >= rl_end && t->in.modal == M_NONE) {
		/* at the end of the line already: the pane follows again */
		pane_scroll(t, scroll_target(t), SCROLL_END);
		return;
	}
	input_translate(t, c);
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
	if (modal_key(t, c) || global_key(t, c))
		return;
	if (t->ov.on) {
		overlay_key(t, c);
		return;
	}
	if (focus_key(t, c))
		return;
	if (t->focus != P_INPUT && pane_or_typing(t, c))
		return;
	line_key(t, c);
}

/* A lone Esc (not the start of an Alt key or of a sequence). On the
 * input line in emacs mode, readline would take it as a Meta prefix and
 * swallow the next key: it closes the prompt instead (search, save
 * as), or goes to the last pane (as Jupyter's Esc leaves the cell for
 * command mode; i or typing comes back). vi mode keeps it. */
static void
lone_esc(struct tui *t)
{
	if (t->ov.on || t->focus != P_INPUT || rl_editing_mode == 0 ||
	    t->in.modal == M_CONFIRM_QUIT || t->in.modal == M_SAVE_CONFIRM ||
	    t->in.modal == M_OPEN_CONFIRM || t->in.modal == M_APPROVE ||
	    t->in.modal == M_DROP_CONFIRM) {
		on_key(t, 27);
		return;
	}
	if (t->in.modal == M_SEARCH) {
		tui_search_cancel(t);
		return;
	}
	if (t->in.modal == M_INPUT)
		return;		/* the cell waits: Enter, Ctrl-D or Ctrl-C */
	if (t->in.modal == M_SAVE_AS) {
		t->in.modal = M_NONE;
		input_cancel(t);
		tui_flash(t, "not saved");
		return;
	}
	focus_set(t, t->last_pane != P_INPUT ? t->last_pane : P_CONV);
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

/* The end marker of a paste: the text goes into the input line
 * (sanitized, newlines kept), which gets the focus. */
static void
paste_done(struct tui *t)
{
	t->in.paste = 0;
	if (t->focus != P_INPUT || t->ov.on) {
		tui_overlay_close(t);
		focus_set(t, P_INPUT);
	}
	if (t->in.modal != M_CONFIRM_QUIT && t->in.pastebuf.len) {
		char *s = sanitize_str(t->in.pastebuf.data, t->in.pastebuf.len,
		    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
		rl_insert_text(s);
		free(s);
	}
	tui_mark(t);
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
				} else
					paste_done(t);
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

static void keys_done(struct tui *t);

void
tui_input_on_tty(struct loop *l, int fd, int revents, void *arg)
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
	keys_done(t);
}

void
tui_input_typeahead(struct tui *t)
{
	for (size_t i = 0; i < t->in.ntypeahead; i++)
		feed_key(t, (unsigned char)t->in.typeahead[i]);
	t->in.ntypeahead = 0;
	keys_done(t);
}

/* After a batch of keys: an Esc alone or a sequence cut short is
 * settled, readline gets what was queued, and the screen is redrawn. */
static void
keys_done(struct tui *t)
{
	if (t->in.nesc == 1 && !t->in.paste) {
		/* ncurses waited ESCDELAY for more: the Esc key alone */
		t->in.nesc = 0;
		input_flush(t);
		lone_esc(t);
	} else if (t->in.nesc > 0 && !t->in.paste)
		paste_flush_esc(t);	/* the start of a sequence, cut short */
	input_flush(t);
	tui_mark(t);
}

void
tui_input_mouse(struct tui *t, int on)
{
	mousemask(on ? BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED
#if NCURSES_MOUSE_VERSION > 1
	    | BUTTON5_PRESSED
#endif
	    : 0, NULL);
	if (on)
		mouseinterval(0);
	t->in.mouse = on;
	tui_mark(t);
}

void
tui_input_start(struct tui *t)
{
	buf_init(&t->in.pastebuf, 1024 * 1024);
	if (t->o.history_path)
		t->in.history = xstrdup(t->o.history_path);
	else {
		char *st = xdg_state_home();
		char *dir = xasprintf("%s/terp", st);
		mkdir_p(dir, 0700);
		t->in.history = xasprintf("%s/history", dir);
		free(dir);
		free(st);
	}
	rl_ui = t;
	rl_setup(t);
}

void
tui_input_end(struct tui *t)
{
	rl_callback_handler_remove();
	if (t->in.history && history_save(t->in.history) != 0) {
		/* not fatal: the session still ends cleanly */
	}
	if (t->in.rl_null) {
		fclose(t->in.rl_null);
		t->in.rl_null = NULL;
	}
	rl_outstream = NULL;
	rl_ui = NULL;
	free(t->in.history);
	t->in.history = NULL;
	buf_free(&t->in.pastebuf);
	free(t->in.save_name);
	t->in.save_name = NULL;
	free(t->in.approve_code);
	t->in.approve_code = NULL;
}
