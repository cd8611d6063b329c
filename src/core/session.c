/* session: the one session runner (session.h says why the name). It
 * owns everything a run of terp is made of and is the one place the
 * core's events pass through: on_event journals each, hands it to the
 * frontend's sink, then lets the idle timers, the replay and the script
 * act on it. Nothing here starts a cell or a question inside an event:
 * the next replay cell or script item starts from a 0 ms loop timer
 * (on_step), so no call re-enters the agent that is emitting. It
 * decides nothing the user did not ask for: the options say when to
 * replay, stop the sandbox or end the run. */
#include "terp/session.h"

#include <assert.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/agent.h"
#include "terp/buf.h"
#include "terp/idle.h"
#include "terp/journal.h"
#include "terp/pipindex.h"
#include "terp/replay.h"
#include "terp/util.h"

/* In the replay's list: the cell that installs the packages again. */
#define REINSTALL	(-1)

struct session {
	struct loop	*loop;
	struct notebook	*nb;
	struct llm	*llm;		/* NULL: no model */
	struct agent	*agent;
	struct journal	*j;		/* NULL: not saved */
	int		 warned;	/* the journal's failure was told */
	struct idle	*idle;
	int64_t		 idle_ms, max_ms;
	int		 idle_stopped;	/* the idle timeout stopped the sandbox */
	const struct cell *held;	/* a cell's start, held for the restart */
	event_fn	 show;
	void		*arg;
	void		(*show_flush)(void *arg);	/* NULL: shown at once */
	int64_t		 show_hold_us;	/* session_opts' */
	int64_t		 flushed_us;	/* flush_all's last (now_us) */
	const char	*id, *dir;	/* for EV_SESSION */
	const char	*sandbox;	/* --sandbox, for journal_remote */
	int		*file_state;	/* a resume's, per file of nb; or NULL */
	int		 nfile_state;
	const char	**data_files;	/* given on the command line */
	int		 ndata;
	uint64_t	 step_timer;	/* on_step is due */
	uint64_t	 sync_timer;	/* the journal's deferred sync is due */
	int		 closing;	/* session_free: events are only kept */

	/* replay */
	int		 replay_wanted;	/* --replay: at the first kernel event;
					 * 2: a remote session reached again,
					 * once the backend says whether its
					 * state was lost */
	struct replay	*replay;	/* running when non-NULL */
	int		*cells;		/* what it re-runs (original numbers) */
	int		 ncells;
	int		 first_new;	/* the first cell it made */
	int		 chosen;	/* the user named the cells (/replay 2-4) */
	char		*skipped;	/* of those, the ones that failed: "[3], [5]" */
	char		*reinstall;	/* --resume --replay: a first cell that
					 * installs the session's packages again
					 * (REINSTALL in cells), or NULL */
	int		 reinstall_done;

	/* the script (exec's cells or -p's questions) */
	const char	**items;
	int		 nitems, next;
	int		 questions;	/* the items are questions, not cells */
	int		 keep_going;
	int		 go;		/* the sandbox takes them now */
	int		 inflight;	/* an item runs, until its EV_IDLE */
	int		 answered;	/* the question in flight was */
	int		 presses;	/* Ctrl-C since the last result */
	struct session_outcome out;
};

static void on_event(void *arg, const struct event *ev);

/* The session's own lines go the way of every event. */
static void
say(struct session *s, enum event_type t, const char *text)
{
	struct event ev = { .type = t, .text = text, .len = strlen(text) };

	on_event(s, &ev);
}

static void
say_error(struct session *s, enum error_kind kind, const char *text)
{
	struct event ev = { .type = EV_ERROR, .text = text, .len = strlen(text),
	    .error = kind };

	on_event(s, &ev);
}

/* The first thing that went wrong is how the run ended. */
static void
fail(struct session *s, enum session_end e)
{
	if (s->out.end == SESSION_DONE)
		s->out.end = e;
}

static void on_step(struct loop *l, void *arg);
static void release_held(struct session *s, const struct event *ev);

/* on_step runs from the loop, after the event being handled. */
static void
schedule(struct session *s)
{
	if (s->step_timer == 0 && !s->closing)
		s->step_timer = loop_timer_add(s->loop, 0, on_step, s);
}

/* A sandbox that is (coming) up: starting, loading or ready. */
static int
kernel_up(enum kernel_state k)
{
	return k == KERNEL_STARTING || k == KERNEL_LOADING || k == KERNEL_READY;
}

/* ------------------------------------------------------------ timers */

/* "30 min", "2 h", "1.5 s", "250 ms" */
static void
fmt_dur(char *b, size_t len, int64_t ms)
{
	if (ms >= 3600000 && ms % 3600000 == 0)
		snprintf(b, len, "%lld h", (long long)(ms / 3600000));
	else if (ms >= 60000 && ms % 60000 == 0)
		snprintf(b, len, "%lld min", (long long)(ms / 60000));
	else if (ms >= 1000 && ms % 1000 == 0)
		snprintf(b, len, "%lld s", (long long)(ms / 1000));
	else if (ms >= 1000)
		snprintf(b, len, "%.1f s", (double)ms / 1000.0);
	else
		snprintf(b, len, "%lld ms", (long long)ms);
}

static void
on_idle(void *arg, enum idle_why why)
{
	struct session *s = arg;
	char dur[32], *msg;

	if (why == IDLE_TIMEOUT) {
		if (agent_busy(s->agent) || s->replay != NULL)
			return;
		fmt_dur(dur, sizeof dur, s->idle_ms);
		msg = xasprintf("idle for %s", dur);
		if (s->j)
			journal_note(s->j, "idle-stop", msg);
		s->idle_stopped = 1;	/* before the stop: its event asks */
		agent_stop_sandbox(s->agent, msg);
		free(msg);
		msg = xasprintf("stopped the sandbox after %s idle (--idle-timeout); a new "
		    "one starts at the next cell or question, without the variables", dur);
		say(s, EV_NOTICE, msg);
		free(msg);
		return;
	}
	fmt_dur(dur, sizeof dur, s->max_ms);
	msg = xasprintf("the session reached its --max-session limit of %s; ending it", dur);
	if (s->j)
		journal_note(s->j, "max-session", msg);
	if (agent_busy(s->agent))
		agent_cancel(s->agent);
	fail(s, SESSION_MAX_SESSION);
	say_error(s, ERROR_MAX_SESSION, msg);
	free(msg);
	loop_stop(s->loop);
}

/* The first Ctrl-C cancels what runs (the question, or the cell: later
 * cells of a script that keeps going still run); a second one before
 * that is over, or one with nothing running, ends the run. */
static void
on_sigint(struct loop *l, int signo, void *arg)
{
	struct session *s = arg;

	(void)signo;
	if (s->presses++ > 0 || !agent_busy(s->agent)) {
		s->out.interrupted = 1;
		loop_stop(l);
		return;
	}
	s->out.cancelled = 1;
	agent_cancel(s->agent);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	struct session *s = arg;

	s->out.signo = signo;
	loop_stop(l);
}

/* Whether fd is a pipe or socket whose reader is gone (poll says
 * POLLERR for a pipe's write end once its read end is closed). */
static int
reader_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLOUT };

	return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLERR | POLLHUP)) != 0;
}

/* A closed pipe (`terp --json -p ... | head -1`): SIGPIPE comes from the
 * write that failed with EPIPE, on whichever fd. When it was stdout or
 * stderr, nobody reads the run any more: stop it there, no more model
 * calls nor cells, and exit as a pipeline's writer does (128 + SIGPIPE).
 * Another fd's (a sandbox pipe closing) is that fd's error, handled
 * where it was written. */
static void
on_sigpipe(struct loop *l, int signo, void *arg)
{
	struct session *s = arg;

	if (!reader_gone(STDOUT_FILENO) && !reader_gone(STDERR_FILENO))
		return;
	s->out.signo = signo;
	loop_stop(l);
}

/* ------------------------------------------------------------ journal */

/* A journal that fails warns once (an EV_NOTICE) and the run goes on
 * unsaved; once it can write again (a disk that was full), that is said
 * too, and a later failure warns again. */
static void
journal_check(struct session *s)
{
	if (s->warned && journal_saved_again(s->j)) {
		s->warned = 0;	/* before say, as below */
		say(s, EV_NOTICE, "the session is saved again (what happened "
		    "while it could not be written is missing from it)");
	}
	if (!s->warned && journal_failed(s->j) != NULL) {
		char *msg = xasprintf("warning: the session is no longer saved: %s",
		    journal_failed(s->j));
		s->warned = 1;	/* before say: the notice comes back here */
		say(s, EV_NOTICE, msg);
		free(msg);
	}
}

/* The journal's kept lines written, then what the sink holds shown, in
 * that order (what was shown is in the file first). */
static void
flush_now(struct session *s)
{
	s->flushed_us = now_us();
	if (s->j != NULL && journal_flush(s->j) < 0) {
		journal_check(s);	/* its notice is kept too */
		(void)journal_flush(s->j);
	}
	s->show_flush(s->arg);
}

/* Before the loop waits (a sink that batches): flush_now, at most once
 * every show_hold_us while events come back to back (cells of a script:
 * two writes and a wakeup of the reader a cell were half the host's
 * cost of a trivial one), at once after a quiet spell. */
static int64_t
flush_all(void *arg)
{
	struct session *s = arg;
	int64_t now = now_us();

	if (!s->closing && now - s->flushed_us < s->show_hold_us)
		return (s->flushed_us + s->show_hold_us - now + 999) / 1000;
	flush_now(s);
	return -1;
}

/* The notebook's observer: the journal is told what changed. */
static void
on_change(void *arg, const struct nb_change *ch)
{
	struct session *s = arg;

	if (s->j == NULL)
		return;
	journal_change(s->j, ch);
	journal_check(s);
}

/* ------------------------------------------------------------ replay */

static void
list_cells(struct buf *b, const int *cells, int n)
{
	for (int i = 0; i < n; i++) {
		if (cells[i] == REINSTALL)
			buf_printf(b, "%sthe packages pip installed", i ? ", " : "");
		else
			buf_printf(b, "%s[%d]", i ? ", " : "", cells[i]);
	}
}

/* The cell that installs again what pip installed in the resumed
 * session (the notebook's packages, the last version of each name),
 * or NULL when it installed nothing. */
static char *
reinstall_code(const struct notebook *nb)
{
	int n = notebook_npackages(nb), k = 0;
	char **specs = xcalloc((size_t)n + 1, sizeof *specs), *code;

	for (int i = 0; i < n; i++) {
		const struct package *p = notebook_package(nb, i);
		int later = 0;
		for (int j = i + 1; j < n && !later; j++)
			later = strcmp(notebook_package(nb, j)->name, p->name) == 0;
		if (!later)
			specs[k++] = xasprintf("%s==%s", p->name, p->version);
	}
	code = pipindex_reinstall_code((const char *const *)specs);
	for (int i = 0; i < k; i++)
		free(specs[i]);
	free(specs);
	return code;
}

/* The resume's packages go first: the cells after may import them.
 * Once: a later /replay finds them in the workspace. */
static void
prepend_reinstall(struct session *s)
{
	if (s->reinstall == NULL || s->reinstall_done)
		return;
	s->reinstall_done = 1;
	s->cells = xrealloc(s->cells, (size_t)(s->ncells + 1) * sizeof *s->cells);
	memmove(s->cells + 1, s->cells, (size_t)s->ncells * sizeof *s->cells);
	s->cells[0] = REINSTALL;
	s->ncells++;
}

/* Starts re-running s->cells: the first is due at the next step. */
static void
replay_begin(struct session *s)
{
	struct buf b;

	assert(s->replay == NULL && s->ncells > 0);	/* one replay at a time */
	buf_init(&b, 1 << 20);
	if (s->chosen)
		buf_printf(&b, "replaying %d cell%s you chose: ", s->ncells,
		    s->ncells == 1 ? "" : "s");
	else
		buf_printf(&b, "replaying %d cell%s that succeeded before the state "
		    "was lost: ", s->ncells, s->ncells == 1 ? "" : "s");
	list_cells(&b, s->cells, s->ncells);
	if (s->skipped != NULL)
		buf_printf(&b, " (not %s: failed the first time)", s->skipped);
	if (s->j)
		journal_note(s->j, "replay", buf_str(&b));
	say(s, EV_NOTICE, buf_str(&b));
	buf_free(&b);
	s->first_new = notebook_ncells(s->nb) + 1;
	s->replay = replay_new(s->cells, s->ncells);
	schedule(s);
}

/* The replay is over: tell the user and, with the next question, the
 * model (the cells it re-ran were the user's, so they are not listed
 * again as hand-run cells: the model saw them the first time). Then
 * the script may start. */
static void
replay_end(struct session *s)
{
	int failed = 0, done = replay_progress(s->replay, &failed);
	int last = notebook_ncells(s->nb);
	struct buf b;
	char *msg;

	/* Over before anything is said: the notices pass through here. */
	replay_free(s->replay);
	s->replay = NULL;

	for (int n = s->first_new; n <= last; n++) {
		struct cell *c = notebook_cell(s->nb, n);
		if (c != NULL && c->author == CELL_BY_USER)
			c->told_model = 1;
	}
	buf_init(&b, 1 << 20);
	buf_adds(&b, s->chosen ? "Note: the user had terp re-run these earlier "
	    "cells: " : "Note: terp re-ran these earlier cells in the new sandbox: ");
	list_cells(&b, s->cells, s->ncells);
	if (failed == REINSTALL)
		buf_adds(&b, ". pip could not install the session's packages again, so "
		    "the replay stopped there: none of the cells ran again.\n");
	else if (failed)
		buf_printf(&b, ". Cell [%d] failed this time, so the replay stopped "
		    "there: only the cells before it ran again.\n", failed);
	else
		buf_adds(&b, ". The variables and imports they made exist again.\n");
	agent_note(s->agent, buf_str(&b));
	buf_free(&b);
	if (failed == REINSTALL)
		msg = xstrdup("replay stopped: pip could not install the session's "
		    "packages again (see the cell); no earlier cell re-ran");
	else if (failed)
		msg = xasprintf("replay stopped: cell [%d] failed; %d of %d cells "
		    "re-ran", failed, done, s->ncells);
	else
		msg = xasprintf("replay done: %d cell%s re-ran", done,
		    done == 1 ? "" : "s");
	say(s, EV_NOTICE, msg);
	free(msg);
	s->go = 1;
	schedule(s);
}

/* Starts the due replay cell (from on_step). A first cell the agent
 * refuses ends the replay in one line; a later one, as a failure. */
static void
replay_step(struct session *s)
{
	int first = replay_progress(s->replay, NULL) == 0;
	char *err = NULL;
	int due = replay_due(s->replay);
	int n = due == REINSTALL ? agent_run_cell(s->agent, s->reinstall, &err) :
	    agent_rerun(s->agent, due, &err);

	if (n < 0 && first) {
		char *msg = xasprintf("replay failed: %s", err);
		replay_free(s->replay);
		s->replay = NULL;
		say(s, EV_NOTICE, msg);
		free(msg);
		free(err);
		s->go = 1;
		schedule(s);
		return;
	}
	free(err);
	replay_started(s->replay, n);
	if (n < 0)
		replay_end(s);
}

/* The replay's share of ev, after it was shown. Returns 1 when ev is
 * the replay's (the script leaves it alone). */
static int
replay_track(struct session *s, const struct event *ev)
{
	if (ev->type == EV_KERNEL) {
		int up = kernel_up(ev->kstate);

		if (up || ev->kstate == KERNEL_DEAD)
			s->idle_stopped = 0;
		if (ev->kstate == KERNEL_DEAD && s->replay != NULL) {
			replay_end(s);
			return 0;
		}
		if (up && s->replay_wanted && (s->replay_wanted == 1 ||
		    ev->kstate != KERNEL_STARTING || ev->state_lost)) {
			int remote = s->replay_wanted == 2;
			s->replay_wanted = 0;
			s->ncells = s->j ? journal_replay_cells(s->j, &s->cells) : 0;
			/* a remote session reached with its state has its packages */
			if (!remote || s->ncells > 0)
				prepend_reinstall(s);
			if (s->ncells == 0) {
				say(s, EV_NOTICE, "nothing to replay: no cell that "
				    "succeeded lost its state");
				return 0;
			}
			replay_begin(s);
			return 1;
		}
		return s->replay != NULL && ev->kstate != KERNEL_DEAD;
	}
	if (s->replay == NULL)
		return 0;
	if (replay_event(s->replay, ev)) {
		if (replay_due(s->replay))
			schedule(s);
		return 1;
	}
	replay_end(s);
	return 1;
}

/* ------------------------------------------------------------ script */

/* Starts the next item of the script (from on_step). */
static void
script_step(struct session *s)
{
	const char *item;
	char *err = NULL;
	int rc;

	/* one item at a time, each started once */
	assert(!s->inflight && s->next < s->nitems && s->replay == NULL);
	item = s->items[s->next++];
	/* in flight before the call: its events may come within it */
	s->inflight = 1;
	s->answered = 0;
	rc = s->questions ? agent_ask(s->agent, item, &err) :
	    agent_run_cell(s->agent, item, &err);
	if (rc < 0) {
		s->inflight = 0;
		fail(s, SESSION_REFUSED);
		say_error(s, ERROR_USAGE, err);
		free(err);
		loop_stop(s->loop);
	}
}

static enum session_end
cell_end(enum cell_status st)
{
	switch (st) {
	case CELL_OK: return SESSION_DONE;
	case CELL_ERROR: return SESSION_CELL_RAISED;
	case CELL_TIMEOUT:
	case CELL_INTERRUPTED: return SESSION_CELL_STOPPED;
	default: return SESSION_CELL_CRASHED;
	}
}

/* An item is over (its EV_IDLE): the next, or the end of the run. */
static void
script_item_over(struct session *s)
{
	s->inflight = 0;
	if (s->questions && !s->answered)
		fail(s, SESSION_UNANSWERED);
	if (s->next >= s->nitems) {
		s->out.finished = 1;
		loop_stop(s->loop);
	} else if (!s->keep_going && (s->out.end != SESSION_DONE || s->out.cancelled)) {
		/* a follow-up to a failed question would not make sense */
		loop_stop(s->loop);
	} else {
		schedule(s);
	}
}

/* The script's share of ev (none of the replay's). */
static void
script_event(struct session *s, const struct event *ev)
{
	if (s->nitems == 0)
		return;
	switch (ev->type) {
	case EV_KERNEL:
		if (ev->kstate == KERNEL_DEAD) {
			/* a question in flight ends by itself (the agent says
			 * why); anything else cannot go on */
			if (!(s->inflight && s->questions)) {
				fail(s, SESSION_SANDBOX_DEAD);
				loop_stop(s->loop);
			}
		} else if (!s->go && (s->questions ? kernel_up(ev->kstate) :
		    ev->kstate == KERNEL_LOADING || ev->kstate == KERNEL_READY)) {
			/* A question goes as soon as the sandbox starts: the
			 * model's first reply and the imports overlap. */
			s->go = 1;
			schedule(s);
		}
		break;
	case EV_ANSWER:
		s->answered = 1;
		break;
	case EV_ERROR:
		fail(s, ev->error == ERROR_TURN_CAP ? SESSION_TURN_CAP :
		    ev->error == ERROR_MAX_SESSION ? SESSION_MAX_SESSION :
		    ev->error == ERROR_MAX_COST ? SESSION_MAX_COST : SESSION_FAILED);
		break;
	case EV_RESULT:
		s->presses = 0;
		if (!s->questions && ev->cell != NULL)
			fail(s, cell_end(ev->cell->status));
		break;
	case EV_IDLE:
		if (s->inflight)
			script_item_over(s);
		break;
	default:
		break;
	}
}

static void
on_step(struct loop *l, void *arg)
{
	struct session *s = arg;

	(void)l;
	s->step_timer = 0;
	if (s->held != NULL)
		release_held(s, NULL);
	if (s->replay != NULL) {
		if (replay_due(s->replay))
			replay_step(s);
		return;
	}
	if (s->replay_wanted || !s->go || s->inflight || s->next >= s->nitems ||
	    loop_stopped(s->loop))
		return;
	script_step(s);
}

/* ------------------------------------------------------------ events */

static void
on_sync(struct loop *l, void *arg)
{
	struct session *s = arg;

	(void)l;
	s->sync_timer = 0;
	journal_sync_deferred(s->j);
}

/* The journal's sync it deferred (a cell ended soon after the last
 * sync) comes when due, also when nothing else happens then. */
static void
arm_sync(struct session *s)
{
	int64_t due = journal_sync_due(s->j);

	if (due >= 0 && s->sync_timer == 0 && !s->closing)
		s->sync_timer = loop_timer_add(s->loop, due, on_sync, s);
}

/* Every event of the session, in one order: journaled (what was shown
 * is saved), shown, then the timers, the replay and the script. */
static void
deliver(struct session *s, const struct event *ev)
{
	if (s->j != NULL) {
		journal_event(s->j, ev);
		/* the remote session a resume is to reach again */
		if (ev->type == EV_KERNEL && s->agent != NULL && !s->closing)
			journal_remote(s->j, s->sandbox && *s->sandbox ? s->sandbox :
			    "local", agent_remote_session(s->agent));
		/* a cell is in the file before the sandbox has it */
		if (ev->type == EV_CELL_START)
			(void)journal_flush(s->j);
		journal_check(s);
		arm_sync(s);
	}
	s->show(s->arg, ev);
	if (s->closing)
		return;
	if (s->idle)
		idle_event(s->idle, ev);
	if (replay_track(s, ev))
		return;
	script_event(s, ev);
}

/* The held cell start goes now, before ev (NULL: alone). */
static void
release_held(struct session *s, const struct event *ev)
{
	struct event cs = { .type = EV_CELL_START, .cell = s->held };

	s->held = NULL;
	deliver(s, &cs);
	if (ev != NULL)
		deliver(s, ev);
}

/* The first cell after an idle stop starts a new sandbox: the user is
 * told so before the cell, not under it (the agent announces the cell,
 * then the kernel starts for it). So its start waits for the restart's
 * event, or for whatever comes first, or for the next step. */
static void
on_event(void *arg, const struct event *ev)
{
	struct session *s = arg;

	if (s->held != NULL) {
		if (ev->type == EV_KERNEL && ev->restarted) {
			deliver(s, ev);
			release_held(s, NULL);
		} else {
			release_held(s, ev);
		}
		return;
	}
	if (ev->type == EV_CELL_START && ev->cell != NULL && s->idle_stopped &&
	    !s->closing) {
		s->held = ev->cell;
		schedule(s);	/* at the latest */
		return;
	}
	deliver(s, ev);
}

/* ------------------------------------------------------------ life */

/* Whether path names a file the sandbox has already (a resumed
 * session's file given again on the command line). */
static int
staged(const struct notebook *nb, const char *path)
{
	char *abs = realpath(path, NULL);
	int found = 0;

	for (int i = 0; abs != NULL && i < notebook_nfiles(nb) && !found; i++) {
		const struct datafile *f = notebook_file(nb, i);
		found = f->sandbox != NULL && strcmp(f->path, abs) == 0;
	}
	free(abs);
	return found;
}

/* The notebook and its journal: a resume's, reopened (in use by
 * another terp: -1 with *err), or new ones (a journal that cannot be
 * created: *warn, and the session is not saved). */
static int
open_journal(struct session *s, const struct session_opts *o, char **warn,
    char **err)
{
	char *e = NULL;

	if (o->resume != NULL) {
		s->nb = o->resume->nb;	/* the conversation goes on */
		o->resume->nb = NULL;
		s->j = journal_reopen(o->sessions_dir, o->id, s->nb, &o->resume->meta, err);
		if (s->j == NULL)
			return -1;
		/* what datafile_check found, per file of the notebook */
		s->nfile_state = notebook_nfiles(s->nb);
		s->file_state = xcalloc((size_t)s->nfile_state + 1, sizeof *s->file_state);
		if (o->resume->file_state != NULL)
			memcpy(s->file_state, o->resume->file_state,
			    (size_t)s->nfile_state * sizeof *s->file_state);
		return 0;
	}
	struct journal_info info = { .provider = o->provider, .model = o->model };
	s->nb = notebook_new();
	s->j = journal_create(o->sessions_dir, o->id, &info, s->nb, &e);
	if (s->j == NULL) {
		*warn = xasprintf("the session will not be saved: %s", e);
		free(e);
	}
	return 0;
}

struct session *
session_new(const struct session_opts *o, char **warn, char **err)
{
	struct session *s = xcalloc(1, sizeof *s);

	*warn = NULL;
	s->loop = loop_new();
	s->show = o->show;
	s->arg = o->arg;
	s->id = o->id;
	s->dir = o->kopts->session_dir;
	s->sandbox = o->kopts->sandbox;
	s->idle_ms = o->idle_ms;
	s->max_ms = o->max_ms;
	if (o->llm != NULL && (s->llm = llm_new(s->loop, o->llm, err)) == NULL) {
		loop_free(s->loop);
		free(s);
		return NULL;
	}
	if (open_journal(s, o, warn, err) < 0) {
		session_free(s);
		return NULL;
	}
	notebook_observe(s->nb, on_change, s);
	if (o->show_flush != NULL) {
		s->show_flush = o->show_flush;
		s->show_hold_us = o->show_hold_us;
		journal_defer(s->j, 1);
		loop_before_wait(s->loop, flush_all, s);
	}
	s->agent = agent_new(s->loop, s->nb, o->kopts, s->llm, o->aopts, on_event, s);
	if (o->resume != NULL && o->resume->model_note)
		agent_note(s->agent, o->resume->model_note);
	s->data_files = o->data_files;
	s->ndata = o->ndata;
	s->replay_wanted = !o->replay ? 0 : o->resume != NULL &&
	    o->resume->meta.reach_remote ? 2 : 1;
	if (o->replay && o->resume != NULL)
		s->reinstall = reinstall_code(s->nb);
	s->questions = o->nquestions > 0;
	s->items = s->questions ? o->questions : o->cells;
	s->nitems = s->questions ? o->nquestions : o->ncells;
	s->keep_going = o->keep_going;
	if (o->idle_ms > 0 || o->max_ms > 0)
		s->idle = idle_new(s->loop, o->idle_ms, o->max_ms, on_idle, s);
	if (o->signals) {
		loop_signal(s->loop, SIGINT, on_sigint, s);
		loop_signal(s->loop, SIGTERM, on_term, s);
		loop_signal(s->loop, SIGHUP, on_term, s);
		/* a closed pipe is a write error (EPIPE), and the signal
		 * says whose */
		loop_signal(s->loop, SIGPIPE, on_sigpipe, s);
	}
	return s;
}

void
session_free(struct session *s)
{
	if (s == NULL)
		return;
	/* what the teardown says is still journaled and shown */
	s->closing = 1;
	loop_timer_cancel(s->loop, s->step_timer);
	loop_timer_cancel(s->loop, s->sync_timer);
	if (s->agent)
		agent_free(s->agent);
	if (s->nb)
		notebook_observe(s->nb, NULL, NULL);
	idle_free(s->idle);
	replay_free(s->replay);
	/* a folder deleted since the last look is said before the end
	 * (the look is at most every 100 ms: a short run ended first) */
	if (s->j != NULL) {
		(void)journal_flush_check(s->j);
		journal_check(s);
	}
	journal_close(s->j);	/* synced */
	if (s->show_flush != NULL)
		s->show_flush(s->arg);	/* after the journal's lines */
	if (s->llm)
		llm_free(s->llm);
	notebook_free(s->nb);
	loop_free(s->loop);
	free(s->cells);
	free(s->skipped);
	free(s->file_state);
	free(s->reinstall);
	free(s);
}

/* Stages the resumed session's files that are still there, in their
 * order, then the ones given on the command line. */
static int
stage_files(struct session *s, char **err)
{
	int n = notebook_nfiles(s->nb);
	char *p;

	for (int i = 0; i < n; i++) {
		char *path;
		if (i < s->nfile_state && s->file_state[i] == 2)
			continue;	/* gone since */
		path = xstrdup(notebook_file(s->nb, i)->path);
		p = agent_load(s->agent, path, 0, err);
		free(path);
		if (p == NULL)
			return -1;
		free(p);
	}
	for (int i = 0; i < s->ndata; i++) {
		if (staged(s->nb, s->data_files[i]))
			continue;
		if ((p = agent_load(s->agent, s->data_files[i], 0, err)) == NULL)
			return -1;
		free(p);
	}
	return 0;
}

int
session_start(struct session *s)
{
	struct event ev = { .type = EV_SESSION, .text = s->id, .name = s->dir,
	    .where = agent_where(s->agent), .isolation = agent_isolation(s->agent) };
	char *err = NULL;

	on_event(s, &ev);
	if (stage_files(s, &err) < 0 || agent_start(s->agent, &err) < 0) {
		fail(s, SESSION_SANDBOX_DEAD);
		say_error(s, ERROR_SANDBOX, err);
		free(err);
		return -1;
	}
	return 0;
}

void
session_run(struct session *s, struct session_outcome *out)
{
	if (session_start(s) == 0)
		loop_run(s->loop);
	/* The last results out now (journaled first, as ever), not after
	 * the sandbox's teardown and the journal's sync in session_free: a
	 * script reading exec --json waited those milliseconds for them. */
	if (s->show_flush != NULL)
		flush_now(s);
	*out = s->out;
}

struct loop *
session_loop(const struct session *s)
{
	return s->loop;
}

struct agent *
session_agent(const struct session *s)
{
	return s->agent;
}

struct notebook *
session_notebook(const struct session *s)
{
	return s->nb;
}

struct journal *
session_journal(const struct session *s)
{
	return s->j;
}

/* ------------------------------------------------------------ commands */

int
session_busy(const struct session *s)
{
	return s->replay != NULL || s->replay_wanted;
}

/* The cells of which (a /replay list) that succeeded into s->cells,
 * the others named in s->skipped. -1 with *err for a bad list or when
 * none of them succeeded. */
static int
chosen_cells(struct session *s, const char *which, char **err)
{
	int *all, n = replay_parse_range(which, notebook_ncells(s->nb), &all, err);
	struct buf skipped;

	if (n < 0)
		return -1;
	buf_init(&skipped, 1 << 20);
	s->ncells = 0;
	s->cells = xcalloc((size_t)n + 1, sizeof *s->cells);
	for (int i = 0; i < n; i++) {
		const struct cell *c = notebook_cell(s->nb, all[i]);
		if (c->status == CELL_OK)
			s->cells[s->ncells++] = all[i];
		else
			buf_printf(&skipped, "%s[%d]", skipped.len ? ", " : "", all[i]);
	}
	free(all);
	if (s->ncells == 0) {
		*err = xasprintf("nothing to replay: %s failed the first time "
		    "(/rerun N runs one cell again as it is)", buf_str(&skipped));
		buf_free(&skipped);
		return -1;
	}
	if (skipped.len > 0)
		s->skipped = xstrdup(buf_str(&skipped));
	buf_free(&skipped);
	return 0;
}

int
session_replay(struct session *s, const char *which, char **err)
{
	if (s->replay != NULL || agent_busy(s->agent)) {
		*err = xstrdup("busy: wait for the running cell or question");
		return -1;
	}
	free(s->cells);
	s->cells = NULL;
	free(s->skipped);
	s->skipped = NULL;
	s->chosen = which != NULL && *which != '\0';
	if (s->chosen) {
		if (chosen_cells(s, which, err) < 0)
			return -1;
	} else if (s->j == NULL) {
		*err = xstrdup("nothing to replay: the session is not saved "
		    "(/replay N-M re-runs the cells you name)");
		return -1;
	} else if ((s->ncells = journal_replay_cells(s->j, &s->cells)) == 0) {
		*err = xstrdup("nothing to replay: no cell that succeeded lost its "
		    "state (/replay N-M re-runs the cells you name)");
		return -1;
	}
	replay_begin(s);
	return 0;
}

int
session_reset(struct session *s, char **err)
{
	if (agent_reset(s->agent, err) < 0)
		return -1;
	if (s->j)
		journal_note(s->j, "reset", NULL);
	return 0;
}

int
session_egress(struct session *s, int allow, const char *spec, char **err)
{
	int rc = agent_egress(s->agent, allow, spec, err);

	/* kept as a note: a resume applies it again (journal_meta.egress) */
	if (rc >= 0 && s->j)
		journal_note(s->j, allow ? "allow" : "deny", spec);
	return rc;
}

int
session_restart(struct session *s, char **err)
{
	if (agent_restart(s->agent, err) < 0)
		return -1;
	if (s->j)
		journal_note(s->j, "restart", NULL);
	return 0;
}

int
session_progress(const struct session *s, int *total)
{
	*total = s->replay != NULL ? s->ncells : 0;
	return s->replay != NULL ? replay_progress(s->replay, NULL) : 0;
}

int64_t
session_idle_deadline(const struct session *s, int *stopped)
{
	if (stopped != NULL)
		*stopped = s->idle_stopped;
	return idle_deadline(s->idle);
}

char *
session_load(struct session *s, const char *path, char **err)
{
	return agent_load(s->agent, path, 1, err);
}

char *
session_sent(const struct session *s, int i, size_t *len, char **err)
{
	const char *body = notebook_sent(s->nb, i, NULL, len);

	if (body != NULL)
		return xstrndup(body, *len);
	if (s->j == NULL) {
		*err = xstrdup("that request is no longer kept in memory, and the "
		    "session is not saved");
		return NULL;
	}
	return journal_read_sent(s->j, i, len, err);
}

/* ------------------------------------------------------------ the door */

int
session_ask(struct session *s, const char *question, char **err)
{
	return agent_ask(s->agent, question, err);
}

int
session_run_cell(struct session *s, const char *code, char **err)
{
	return agent_run_cell(s->agent, code, err);
}

int
session_rerun(struct session *s, int n, char **err)
{
	return agent_rerun(s->agent, n, err);
}

int
session_running(const struct session *s)
{
	return agent_busy(s->agent);
}

void
session_cancel(struct session *s)
{
	agent_cancel(s->agent);
}

int
session_drop_cell(struct session *s, int n, char **err)
{
	return agent_drop_cell(s->agent, n, err);
}

void
session_set_ask(struct session *s, int on)
{
	agent_set_ask(s->agent, on);
}

int
session_asks(const struct session *s)
{
	return agent_asks(s->agent);
}

int
session_approve(struct session *s, enum session_verdict v, const char *code,
    char **err)
{
	enum agent_verdict av = v == SESSION_APPROVE_SKIP ? AGENT_SKIP :
	    v == SESSION_APPROVE_ALWAYS ? AGENT_ALWAYS : AGENT_RUN;

	return agent_approve(s->agent, av, code, err);
}

int
session_input_reply(struct session *s, int cell, const char *line)
{
	return agent_input_reply(s->agent, cell, line);
}

void
session_set_width(struct session *s, int cols)
{
	agent_set_width(s->agent, cols);
}

int
session_set_model(struct session *s, const char *model, char **err)
{
	return agent_set_model(s->agent, model, err);
}

struct llm *
session_llm(const struct session *s)
{
	return agent_llm(s->agent);
}

struct context *
session_context(const struct session *s)
{
	return agent_context(s->agent);
}

char *
session_python_label(const struct session *s)
{
	return agent_python_label(s->agent);
}
