/* tui_event: the notebook UI's event sink. Each core event becomes
 * conversation items and status bar state; the cell and file panes read
 * the notebook itself, so output and artifacts only mark the screen. */
#include "tui_event.h"

#include <stdlib.h>
#include <string.h>

#include "terp/export.h"
#include "terp/kernel.h"
#include "terp/session.h"
#include "terp/util.h"

#include "tui_act.h"
#include "tui_cells.h"
#include "tui_input.h"
#include "tui_items.h"
#include "tui_trace.h"

/* The status bar's step and its clock start again. */
static void
phase_set(struct tui *t, enum phase ph)
{
	t->st.phase = ph;
	t->st.step_ms = now_ms();
}

/* The core's word that it restarted the sandbox; after an idle stop,
 * with what the user lost and how to get it back. */
static void
restart_notice(struct tui *t, const char *text)
{
	int ok = 0;

	/* no hint while a replay runs: it is already re-running them */
	int replaying = t->session && session_busy(t->session);
	for (int n = 1; t->st.idle_down && !replaying && t->nb &&
	    n <= notebook_ncells(t->nb); n++) {
		const struct cell *c = notebook_cell(t->nb, n);
		ok += c->status == CELL_OK;
	}
	if (ok == 0) {
		tui_item_text(t, IT_NOTICE, text);
		return;
	}
	char *m = xasprintf("%s: variables from before are gone; /replay re-runs "
	    "the cells that succeeded", text);
	tui_item_text(t, IT_NOTICE, m);
	free(m);
}

static void
on_session(struct tui *t, const struct event *ev)
{
	free(t->st.session_id);
	free(t->st.workspace);
	t->st.session_id = ev->text ? xstrdup(ev->text) : NULL;
	t->st.workspace = ev->name ? xstrdup(ev->name) : NULL;
	free(t->st.where);
	t->st.where = ev->isolation && ev->where ? xstrdup(ev->where) : NULL;
	if (ev->isolation) {	/* once, when connecting to a remote */
		char *s = xasprintf("The session runs on %s. %s", ev->where, ev->isolation);
		tui_item_text(t, IT_NOTICE, s);
		free(s);
	}
}

static void
on_kernel(struct tui *t, const struct event *ev)
{
	int news = t->st.kstate == KERNEL_BUSY || t->st.kstate < 0 ||
	    (int)ev->kstate != t->st.kstate;

	if (news && ev->kstate == KERNEL_DEAD && ev->text)
		tui_item_text(t, IT_ERROR, ev->text);
	else if (news && ev->restarted && ev->text)
		restart_notice(t, ev->text);
	if (ev->kstate == KERNEL_STOPPED && t->session) {
		int stopped = 0;
		session_idle_deadline(t->session, &stopped);
		t->st.idle_down = stopped;
	} else if (ev->kstate != KERNEL_STOPPED)
		t->st.idle_down = 0;
	t->st.kstate = (int)ev->kstate;
}

static void
on_question(struct tui *t, const struct event *ev)
{
	tui_items_answer_close(t);
	tui_item_text(t, IT_USER, ev->text ? ev->text : "");
	t->st.busy = 1;
	phase_set(t, PH_THINKING);
	t->conv.question_text = 0;
	/* a queued follow-up's reply is followed too, unless the user
	 * scrolled up meanwhile (the first answer's anchor is over) */
	tui_items_follow_newest(t);
}

static void
on_text(struct tui *t, const struct event *ev)
{
	if (!ev->text || !ev->len)
		return;
	tui_item_add(t, tui_items_answer(t), ev->text, ev->len);
	t->conv.question_text = 1;
	if (t->st.phase != PH_ANSWERING)
		phase_set(t, PH_ANSWERING);
}

static void
on_cell_start(struct tui *t, const struct event *ev)
{
	tui_items_answer_close(t);
	if (ev->cell) {
		if (!tui_items_pending_ran(t, ev->cell->n) &&
		    !tui_items_has_cell(t, ev->cell->n))
			tui_item_new(t, IT_CELL)->cell = ev->cell->n;
		t->st.run_cell = ev->cell->n;
		t->v[P_CELLS].sel = ev->cell->n;
		t->v[P_CELLS].follow = 1;
	}
	t->st.busy = 1;
	phase_set(t, PH_CELL);
}

/* The final answer: shown when no text streamed since the question. */
static void
on_answer(struct tui *t, const struct event *ev)
{
	if (!t->conv.question_text && ev->text && *ev->text)
		tui_item_text(t, IT_ANSWER, ev->text);
	tui_items_answer_close(t);
	tui_items_anchor_answer(t);
}

/* The cells whose variables the Python state holds: a crash or a
 * restart before a cell empties it. */
static void
count_live(struct tui *t, const struct cell *c)
{
	if (c == NULL)
		return;
	if (c->state_lost || c->status == CELL_CRASHED)
		t->st.live = 0;
	if (c->status == CELL_OK)
		t->st.live++;
}

/* An error or a notice ends the answer being streamed. */
static void
on_message(struct tui *t, enum item_kind k, const char *text)
{
	tui_items_answer_close(t);
	tui_item_text(t, k, text);
}

static void
on_idle(struct tui *t)
{
	tui_act_approve_end(t);
	tui_items_pending_drop(t);
	tui_items_answer_close(t);
	t->st.busy = 0;
	t->st.phase = PH_IDLE;
	t->st.run_cell = 0;
}

void
tui_event_apply(struct tui *t, const struct event *ev)
{
	switch (ev->type) {
	case EV_SESSION:	on_session(t, ev); break;
	case EV_KERNEL:		on_kernel(t, ev); break;
	case EV_QUESTION:
		on_question(t, ev);
		tui_trace_question(t, ev->text);
		break;
	case EV_TURN:		break;
	case EV_REQUEST:
		t->st.busy = 1;
		phase_set(t, PH_THINKING);
		break;
	case EV_TEXT:		on_text(t, ev); break;
	case EV_REASONING:
		if (ev->text && ev->len)
			tui_item_add(t, tui_items_reasoning(t), ev->text, ev->len);
		break;
	case EV_TOOL_CALL:
		tui_items_answer_close(t);
		tui_items_pending_claim(t);
		break;
	case EV_APPROVE:
		tui_items_pending_show(t, ev->text ? ev->text : "", ev->len);
		tui_act_approve_ask(t, ev->text ? ev->text : "", ev->len);
		break;
	case EV_CODE:
		tui_items_pending_code(t, ev->n, ev->text ? ev->text : "", ev->len);
		if (t->st.phase != PH_CODE)
			phase_set(t, PH_CODE);
		break;
	case EV_CELL_START:	on_cell_start(t, ev); break;
	case EV_STDOUT:
	case EV_STDERR:
		/* the panes read the notebook; the order is the UI's own */
		tui_cells_note_output(t, ev->cell, ev->type == EV_STDERR);
		break;
	case EV_ARTIFACT:	break;	/* the panes read the notebook */
	case EV_RESULT:
		if (ev->cell != NULL)
			tui_input_ask_done(t, ev->cell->n);
		if (t->st.phase == PH_CELL)
			phase_set(t, PH_THINKING);
		count_live(t, ev->cell);
		break;
	case EV_INPUT:
		tui_input_ask(t, ev->cell ? ev->cell->n : 0, ev->text, ev->n);
		break;
	case EV_USAGE:
		if (ev->total)
			t->st.total = *ev->total;
		break;
	case EV_ANSWER:
		on_answer(t, ev);
		tui_trace_answer(t, ev->text);
		break;
	case EV_ERROR:
		tui_items_pending_drop(t);
		on_message(t, IT_ERROR, ev->text ? ev->text : "error");
		break;
	case EV_NOTICE:
		on_message(t, IT_NOTICE, ev->text ? ev->text : "");
		break;
	case EV_IDLE:		on_idle(t); break;
	case EV_NET:		/* a cell's body is laid out again when its
				 * ledger summary changed (its gen) */
		break;
	case EV_PACKAGE:	break;
	}
	tui_mark(t);
}

/* One item of the resumed notebook, in reading order (export_walk). */
static void
restore_item(void *arg, enum export_item k, const char *text,
    const struct cell *c)
{
	struct tui *t = arg;
	tui_trace_restore(t, k, text, c);	/* the reply before: an answer? */
	switch (k) {
	case EXPORT_QUESTION:
		tui_item_text(t, IT_USER, text ? text : "");
		break;
	case EXPORT_REPLY:
		tui_item_text(t, IT_ANSWER, text ? text : "")->closed = 1;
		break;
	case EXPORT_CELL:
		if (c != NULL)
			tui_item_new(t, IT_CELL)->cell = c->n;
		break;
	case EXPORT_REASONING:
		tui_item_text(t, IT_REASONING, text ? text : "");
		break;
	}
}

void
tui_event_restore(struct tui *t, const struct notebook *nb)
{
	tui_trace_restore_begin(t, nb);
	export_walk(nb, restore_item, t);
	tui_trace_restore_end(t);
	t->st.total = *notebook_usage(nb);
	t->v[P_CONV].follow = 1;
	t->v[P_CELLS].follow = 1;
	t->v[P_CELLS].sel = notebook_ncells(nb);
	tui_mark(t);
}
