/* tui_status: the status bar: the model, the sandbox's step, tokens,
 * context share and the key hint, made into one display line. Its
 * drawing is tui_draw's; this says only what the bar reads. */
#include "tui_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/context.h"
#include "terp/cost.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

static const char *
kstate_text(struct tui *t)
{
	switch (t->st.kstate) {
	case KERNEL_STOPPED:	return "stopped";
	case KERNEL_STARTING:	return "starting";
	case KERNEL_LOADING:	return "loading libraries";
	case KERNEL_READY:	return "ready";
	case KERNEL_BUSY:	return "running";
	case KERNEL_DEAD:	return "sandbox failed";
	default:		return "starting";
	}
}

static void
fmt_tokens(char *b, size_t n, long v)
{
	if (v >= 10000)
		snprintf(b, n, "%.0fk", (double)v / 1000.0);
	else if (v >= 1000)
		snprintf(b, n, "%.1fk", (double)v / 1000.0);
	else
		snprintf(b, n, "%ld", v);
}

/* " openai · gpt-4o " */
static void
status_model(struct tui *t, struct tline *l)
{
	char tmp[256];
	const char *model = NULL;
	struct llm *m = t->session ? session_llm(t->session) : NULL;

	if (m)
		model = llm_model(m);
	snprintf(tmp, sizeof tmp, " %s%s%s ", t->o.provider_label ?
	    t->o.provider_label : (m ? llm_provider(m) : "no model"),
	    model ? " · " : "", model ? model : "");
	tui_tline_adds(l, R_STATUS_KEY, tmp);
}

/* "Python 3.11.2 (virtualenv /home/u/proj/.venv) │ ": which Python the
 * session runs, once the sandbox (or the probe's cache) said. */
static void
status_python(struct tui *t, struct tline *l)
{
	char *label = t->session ? session_python_label(t->session) : NULL, *clean;

	if (label == NULL)
		return;
	/* a path of the user's: shown, never interpreted */
	clean = sanitize_str(label, strlen(label), 0);
	tui_tline_adds(l, R_STATUS, "│ ");
	tui_tline_adds(l, R_STATUS, clean);
	tui_tline_adds(l, R_STATUS, " ");
	free(clean);
	free(label);
}

/* What is going on: a replay's progress, the running cell, the model
 * thinking or answering, else the sandbox's state. */
static void
status_step(struct tui *t, struct tline *l, int done, int total,
    int idle_stopped)
{
	char tmp[64];

	if (total > 0)
		snprintf(tmp, sizeof tmp, "replaying %d/%d",
		    done < total ? done + 1 : total, total);
	else if (t->in.modal == M_APPROVE)
		snprintf(tmp, sizeof tmp, "the model's cell waits for you");
	else if (t->st.phase == PH_CELL && t->st.run_cell)
		snprintf(tmp, sizeof tmp, "running cell [%d]", t->st.run_cell);
	else if (t->st.phase == PH_THINKING)
		snprintf(tmp, sizeof tmp, "thinking");
	else if (t->st.phase == PH_ANSWERING)
		snprintf(tmp, sizeof tmp, "answering");
	else if (t->st.phase == PH_CODE)
		snprintf(tmp, sizeof tmp, "writing a cell");
	else if (t->st.kstate == KERNEL_STOPPED && idle_stopped)
		snprintf(tmp, sizeof tmp, "sandbox stopped (idle)");
	else if (t->st.where)
		snprintf(tmp, sizeof tmp, "%s on %.40s", kstate_text(t), t->st.where);
	else
		snprintf(tmp, sizeof tmp, "%s", kstate_text(t));
	tui_tline_adds(l, total > 0 ? R_STATUS_KEY : R_STATUS, tmp);
}

/* The idle countdown, once less than IDLE_SHOW_MS is left (then the
 * bar ticks every second). */
static void
status_idle(struct tui *t, struct tline *l, int64_t deadline)
{
	char tmp[64];
	int64_t left = deadline - now_ms();

	if (left < 0)
		left = 0;
	if (left >= IDLE_SHOW_MS)
		return;
	int64_t sec = (left + 999) / 1000;
	snprintf(tmp, sizeof tmp, " │ idle stop in %d:%02d", (int)(sec / 60),
	    (int)(sec % 60));
	tui_tline_adds(l, R_STATUS, tmp);
	t->st.ticking = 1;
}

static void
status_tokens(struct tui *t, struct tline *l)
{
	char tmp[96], a[24], b[24];

	if (!t->st.total.input_tokens && !t->st.total.output_tokens)
		return;
	fmt_tokens(a, sizeof a, t->st.total.input_tokens);
	fmt_tokens(b, sizeof b, t->st.total.output_tokens);
	snprintf(tmp, sizeof tmp, " │ tokens %s in · %s out", a, b);
	tui_tline_adds(l, R_STATUS, tmp);
	if (t->st.total.reasoning_tokens > 0) {	/* of the out, apart */
		fmt_tokens(b, sizeof b, t->st.total.reasoning_tokens);
		snprintf(tmp, sizeof tmp, " (%s reasoning)", b);
		tui_tline_adds(l, R_STATUS, tmp);
	}
	if (t->st.total.priced) {	/* the session's cost (cost.h) */
		snprintf(tmp, sizeof tmp, " · %s", cost_fmt(t->st.total.cost, a, sizeof a));
		tui_tline_adds(l, R_STATUS, tmp);
	}
}

/* " │ context 37%": the share of the model's window the last request
 * used (context.h), once one went out. */
static void
status_context(struct tui *t, struct tline *l)
{
	struct context *cx = t->session ? session_context(t->session) : NULL;
	int pct = cx ? context_percent(cx) : -1;
	char tmp[64], w[24];

	if (pct < 0)
		return;
	fmt_tokens(w, sizeof w, context_window(cx));
	snprintf(tmp, sizeof tmp, " │ context %d%% of %s", pct, w);
	tui_tline_adds(l, pct >= 90 ? R_STATUS_KEY : R_STATUS, tmp);
}

/* The keys of what has the focus, for the right end of the status bar:
 * the pieces in order of use, as many as fit. */
static int
hint_pieces(const struct tui *t, const char **pc, int max)
{
	int n = 0;
	enum pane p = t->ov.on ? P_NPANES : t->focus;

#define HINT(s)	do { if (n < max) pc[n++] = (s); } while (0)
	if (t->st.busy)
		HINT("Ctrl-C cancel");
	if (t->srch.pat && t->srch.pane == p) {
		HINT("n/N next");
		HINT("Esc end search");
	}
	switch (p) {	/* status_hint adds "q quit" to a pane's */
	case P_INPUT:
		if (t->in.modal == M_SEARCH) {
			HINT("Enter search");
			HINT("Esc cancel");
			break;
		}
		HINT("Tab panes");
		break;
	case P_CONV:
		HINT("↑↓ scroll");
		HINT("y copy answer");
		HINT("/ search");
		HINT("z zoom");
		break;
	case P_CELLS:
		HINT("Enter expand");
		HINT("e edit");
		HINT("r re-run");
		HINT("y/Y copy");
		HINT("/ search");
		break;
	case P_ARTS:
		HINT("Enter preview");
		HINT("o open");
		HINT("s save");
		HINT("z zoom");
		break;
	default:
		HINT("q close");
		break;
	}
	if (p == P_INPUT || p == P_NPANES)
		HINT("? help");
#undef HINT
	return n;
}

/* The key hint at the right end: as many of its pieces as fit, the
 * first ones (the input line's two or none). */
static void
status_hint(struct tui *t, struct tline *l)
{
	const char *pc[12];
	int n = hint_pieces(t, pc, 12);
	int used = tui_tline_width(l);
	struct buf b;

	buf_init(&b, 1024);
	int least = t->focus == P_INPUT && !t->ov.on ? n : 1;
	/* in a pane, "q quit" ends the pieces when it fits with them (as
	 * htop and lazygit say it); else as many pieces as fit without */
	int quit = t->focus != P_INPUT && !t->ov.on;
	int done = 0;
	for (int k = n; k >= least && !done; k--) {
		for (int q = quit; q >= 0 && !done; q--) {
			buf_reset(&b);
			for (int i = 0; i < k; i++)
				buf_printf(&b, " %s%s", pc[i], i + 1 < k || q ? " ·" : " ");
			if (q)
				buf_printf(&b, " q quit ");
			done = used + tui_tlines_width(b.data, b.len) <= t->lay.cols;
		}
	}
	if (!done)
		buf_reset(&b);
	if (b.len) {
		char pad[256];
		int hw = tui_tlines_width(b.data, b.len);
		int np = t->lay.cols - used - hw;
		if (np > (int)sizeof pad)
			np = (int)sizeof pad;
		memset(pad, ' ', sizeof pad);
		tui_tline_add(l, R_STATUS, pad, (size_t)np);
		tui_tline_add(l, R_STATUS, b.data, b.len);
	}
	buf_free(&b);
}

/* The bar up to its hint; with the interpreter's name when python. */
static void
status_body(struct tui *t, struct tline *lp, int python)
{
	struct tline l = { 0 };
	char tmp[64];
	int total = 0, idle_stopped = 0;
	int done = session_progress(t->session, &total);
	int64_t deadline = session_idle_deadline(t->session, &idle_stopped);

	t->st.ticking = 0;
	status_model(t, &l);
	if (python)
		status_python(t, &l);
	tui_tline_adds(&l, R_STATUS, "│ ");
	status_step(t, &l, done, total, idle_stopped);
	if (t->cmd.nheld > 0) {
		snprintf(tmp, sizeof tmp, " · %d held", t->cmd.nheld);
		tui_tline_adds(&l, R_STATUS, tmp);
	}
	if (deadline > 0 && !t->st.busy)
		status_idle(t, &l, deadline);
	if (t->st.busy) {
		snprintf(tmp, sizeof tmp, " %.1fs",
		    (double)(now_ms() - t->st.step_ms) / 1000.0);
		tui_tline_adds(&l, R_STATUS, tmp);
	}
	/* a message the bar has no room for pushes the token count and the
	 * context share out */
	int flash = t->st.flash && now_ms() < t->st.flash_until;
	if (!flash || tui_tline_width(&l) + 3 + tui_tlines_width(t->st.flash,
	    strlen(t->st.flash)) + 24 <= t->lay.cols) {
		status_tokens(t, &l);
		status_context(t, &l);
	}
	if (flash) {
		tui_tline_adds(&l, R_STATUS, " │ ");
		tui_tline_adds(&l, R_STATUS_KEY, t->st.flash);
	}
	*lp = l;
}
#define STATUS_HINT_LEAST	10	/* room kept for " ? help " */

/* The whole bar's line into *l (empty before; the caller frees it). */
void
tui_status_line(struct tui *t, struct tline *l)
{
	/* the interpreter's name is the first thing to go when the bar is
	 * short: the state, tokens and context share matter more */
	status_body(t, l, 1);
	if (tui_tline_width(l) + STATUS_HINT_LEAST > t->lay.cols) {
		tui_tline_free(l);
		status_body(t, l, 0);
	}
	status_hint(t, l);
}
