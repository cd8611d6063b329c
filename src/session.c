/* session: the journal, resume, replay and idle modules bound together
 * for a frontend. It sits beside the frontend's event handler: every
 * event is journaled before it is shown, and the replay and the idle
 * timers act on it after. It decides nothing the user did not ask for:
 * the options say when to replay, stop the sandbox or end the run. */
#include "terp/session.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/idle.h"
#include "terp/journal.h"
#include "terp/kernel.h"
#include "terp/pipindex.h"
#include "terp/replay.h"
#include "terp/util.h"

/* In the replay's list: the cell that installs the packages again. */
#define REINSTALL	(-1)

/* --max-session's exit status in the frontends: a timeout. */
#define SESSION_MAX_STATUS	3

struct session {
	struct loop	*loop;
	struct notebook	*nb;
	struct agent	*agent;
	struct journal	*j;
	int		 warned;	/* the journal's failure was told */
	struct idle	*idle;
	int64_t		 idle_ms, max_ms;
	int		 idle_stopped;	/* the idle timeout stopped the sandbox */
	event_fn	 emit;
	void		*arg;
	char		*model_note;	/* a resume's, until session_attach */

	/* replay */
	int		 replay_wanted;	/* --replay: at the first kernel event */
	struct replay	*replay;	/* running when non-NULL */
	int		*cells;		/* what it re-runs (original numbers) */
	int		 ncells;
	int		 first_new;	/* the first cell it made */
	int		 inside;	/* in replay_start/replay_event: events
					 * they cause come back here nested */
	char		*reinstall;	/* --resume --replay: a first cell that
					 * installs the session's packages again
					 * (REINSTALL in cells), or NULL */
	int		 reinstall_done;
};

static void
emit(struct session *s, enum event_type t, const char *text, int n)
{
	struct event ev = { .type = t, .text = text, .len = strlen(text), .n = n };

	if (s->emit)
		s->emit(s->arg, &ev);
}

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

	if (s->agent == NULL)
		return;
	if (why == IDLE_TIMEOUT) {
		if (agent_busy(s->agent) || s->replay != NULL)
			return;
		fmt_dur(dur, sizeof dur, s->idle_ms);
		msg = xasprintf("idle for %s", dur);
		if (s->j)
			journal_note(s->j, "idle-stop", msg);
		s->idle_stopped = 1;	/* before kernel_stop: its event asks */
		kernel_stop(agent_kernel(s->agent), msg);
		free(msg);
		msg = xasprintf("stopped the sandbox after %s idle (--idle-timeout); a new "
		    "one starts at the next cell or question, without the variables", dur);
		emit(s, EV_NOTICE, msg, 0);
		free(msg);
		return;
	}
	fmt_dur(dur, sizeof dur, s->max_ms);
	msg = xasprintf("the session reached its --max-session limit of %s; ending it", dur);
	if (s->j)
		journal_note(s->j, "max-session", msg);
	if (agent_busy(s->agent))
		agent_cancel(s->agent);
	emit(s, EV_ERROR, msg, SESSION_MAX_STATUS);
	free(msg);
	loop_stop(s->loop);
}

/* Whether path (maybe relative) is one of the files the journal has. */
static int
recorded(const struct journal_meta *m, const char *path)
{
	char *abs = realpath(path, NULL);
	int found = 0;

	for (int i = 0; i < m->nfiles && !found; i++)
		found = strcmp(m->files[i].path, abs ? abs : path) == 0;
	free(abs);
	return found;
}

struct session *
session_new(struct loop *l, struct notebook *nb, const struct session_opts *o,
    char **warn, char **err)
{
	struct session *s = xcalloc(1, sizeof *s);
	char *e = NULL;

	*warn = NULL;
	s->loop = l;
	s->nb = nb;
	s->emit = o->emit;
	s->arg = o->arg;
	s->idle_ms = o->idle_ms;
	s->max_ms = o->max_ms;
	if (o->resume != NULL) {
		s->j = journal_reopen(o->sessions_dir, o->id, nb, &o->resume->meta, err);
		if (s->j == NULL) {
			free(s);
			return NULL;
		}
		for (int i = 0; i < o->ndata; i++) {
			if (recorded(&o->resume->meta, o->data_files[i]))
				continue;
			if (journal_add_data(s->j, o->data_files[i], &e) < 0) {
				free(*warn);
				*warn = xasprintf("%s will not be staged on a later resume: %s",
				    o->data_files[i], e);
				free(e);
				e = NULL;
			}
		}
		if (o->resume->model_note)
			s->model_note = xstrdup(o->resume->model_note);
	} else {
		struct journal_info info = {
			.provider = o->provider, .model = o->model,
			.data_files = o->data_files, .ndata = o->ndata,
		};
		s->j = journal_create(o->sessions_dir, o->id, &info, nb, &e);
		if (s->j == NULL) {
			*warn = xasprintf("the session will not be saved: %s", e);
			free(e);
		}
	}
	s->replay_wanted = o->replay;
	if (o->replay && o->resume != NULL)
		s->reinstall = pipindex_reinstall_code(
		    (const char *const *)o->resume->meta.packages);
	if (o->idle_ms > 0 || o->max_ms > 0)
		s->idle = idle_new(l, o->idle_ms, o->max_ms, on_idle, s);
	return s;
}

void
session_free(struct session *s)
{
	if (s == NULL)
		return;
	idle_free(s->idle);
	replay_free(s->replay);
	journal_close(s->j);
	free(s->cells);
	free(s->model_note);
	free(s->reinstall);
	free(s);
}

void
session_attach(struct session *s, struct agent *a)
{
	s->agent = a;
	if (s->model_note) {
		agent_note(a, s->model_note);
		free(s->model_note);
		s->model_note = NULL;
	}
}

void
session_record(struct session *s, const struct event *ev)
{
	if (s->j == NULL)
		return;
	journal_event(s->j, ev);
	if (!s->warned && journal_failed(s->j) != NULL) {
		char *msg = xasprintf("warning: the session is no longer saved: %s",
		    journal_failed(s->j));
		s->warned = 1;	/* before emit: the notice comes back here */
		emit(s, EV_NOTICE, msg, 0);
		free(msg);
	}
}

static int
rerun(void *arg, int n, char **err)
{
	struct session *s = arg;

	if (n == REINSTALL && s->reinstall != NULL)
		return agent_run_cell(s->agent, s->reinstall, err);
	return agent_rerun(s->agent, n, err);
}

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

/* Starts re-running s->cells. Returns 0, or -1 with *err. */
static int
replay_begin(struct session *s, char **err)
{
	struct buf b;
	int rc;

	buf_init(&b, 1 << 20);
	buf_printf(&b, "replaying %d cell%s that succeeded before the state was lost: ",
	    s->ncells, s->ncells == 1 ? "" : "s");
	list_cells(&b, s->cells, s->ncells);
	if (s->j)
		journal_note(s->j, "replay", buf_str(&b));
	emit(s, EV_NOTICE, buf_str(&b), 0);
	buf_free(&b);
	s->first_new = notebook_ncells(s->nb) + 1;
	s->replay = replay_new(s->cells, s->ncells, rerun, s);
	s->inside = 1;
	rc = replay_start(s->replay, err);
	s->inside = 0;
	if (rc < 0) {
		replay_free(s->replay);
		s->replay = NULL;
		return -1;
	}
	return 0;
}

/* The replay is over: tell the user and, with the next question, the
 * model (the cells it re-ran were the user's, so they are not listed
 * again as hand-run cells: the model saw them the first time). */
static void
replay_end(struct session *s)
{
	int failed = 0, done = replay_progress(s->replay, &failed);
	int last = notebook_ncells(s->nb);
	struct buf b;

	/* Over before anything is said: the notices come back here. */
	replay_free(s->replay);
	s->replay = NULL;

	for (int n = s->first_new; n <= last; n++) {
		struct cell *c = notebook_cell(s->nb, n);
		if (c != NULL && c->author == CELL_BY_USER)
			c->told_model = 1;
	}
	buf_init(&b, 1 << 20);
	buf_adds(&b, "Note: terp re-ran these earlier cells in the new sandbox: ");
	list_cells(&b, s->cells, s->ncells);
	if (failed == REINSTALL)
		buf_adds(&b, ". pip could not install the session's packages again, so "
		    "the replay stopped there: none of the cells ran again.\n");
	else if (failed)
		buf_printf(&b, ". Cell [%d] failed this time, so the replay stopped "
		    "there: only the cells before it ran again.\n", failed);
	else
		buf_adds(&b, ". The variables and imports they made exist again.\n");
	if (s->agent)
		agent_note(s->agent, buf_str(&b));
	buf_free(&b);
	if (failed == REINSTALL) {
		char *msg = xasprintf("replay stopped: pip could not install the "
		    "session's packages again (see the cell); no earlier cell re-ran");
		emit(s, EV_NOTICE, msg, 0);
		free(msg);
	} else if (failed) {
		char *msg = xasprintf("replay stopped: cell [%d] failed; %d of %d cells "
		    "re-ran", failed, done, s->ncells);
		emit(s, EV_NOTICE, msg, 0);
		free(msg);
	} else {
		char *msg = xasprintf("replay done: %d cell%s re-ran", done,
		    done == 1 ? "" : "s");
		emit(s, EV_NOTICE, msg, 0);
		free(msg);
	}
}

enum session_role
session_event(struct session *s, const struct event *ev)
{
	char *err = NULL;
	int running;

	if (s->idle)
		idle_event(s->idle, ev);
	if (ev->type == EV_KERNEL) {
		int up = ev->n == KERNEL_STARTING || ev->n == KERNEL_LOADING ||
		    ev->n == KERNEL_READY;

		if (up || ev->n == KERNEL_DEAD)
			s->idle_stopped = 0;

		if (ev->n == KERNEL_DEAD && s->replay != NULL) {
			replay_end(s);
			return SESSION_PASS;
		}
		if (up && s->replay_wanted) {
			s->replay_wanted = 0;
			s->ncells = s->j ? journal_replay_cells(s->j, &s->cells) : 0;
			prepend_reinstall(s);
			if (s->ncells == 0) {
				emit(s, EV_NOTICE, "nothing to replay: no cell that "
				    "succeeded lost its state", 0);
				return SESSION_PASS;
			}
			if (replay_begin(s, &err) < 0) {
				char *msg = xasprintf("replay failed: %s", err);
				emit(s, EV_NOTICE, msg, 0);
				free(msg);
				free(err);
				return SESSION_READY;
			}
			return SESSION_OWN;
		}
		return s->replay != NULL && ev->n != KERNEL_DEAD ? SESSION_OWN :
		    SESSION_PASS;
	}
	if (s->replay == NULL)
		return SESSION_PASS;
	if (s->inside)
		return SESSION_OWN;	/* a cell the replay could not start */
	s->inside = 1;
	running = replay_event(s->replay, ev);
	s->inside = 0;
	if (running)
		return SESSION_OWN;
	replay_end(s);
	return SESSION_READY;
}

int
session_busy(const struct session *s)
{
	return s->replay != NULL || s->replay_wanted;
}

int
session_replay(struct session *s, char **err)
{
	if (s->replay != NULL || (s->agent && agent_busy(s->agent))) {
		*err = xstrdup("busy: wait for the running cell or question");
		return -1;
	}
	if (s->j == NULL) {
		*err = xstrdup("nothing to replay: the session is not saved");
		return -1;
	}
	free(s->cells);
	s->ncells = journal_replay_cells(s->j, &s->cells);
	if (s->ncells == 0) {
		*err = xstrdup("nothing to replay: no cell that succeeded lost its state");
		return -1;
	}
	return replay_begin(s, err);
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
	char *p = agent_load(s->agent, path, err), *e = NULL;

	if (p != NULL && s->j && journal_add_data(s->j, path, &e) < 0) {
		char *msg = xasprintf("warning: %s will not be staged on a later resume: %s",
		    path, e);
		emit(s, EV_NOTICE, msg, 0);
		free(msg);
		free(e);
	}
	return p;
}

struct journal *
session_journal(const struct session *s)
{
	return s->j;
}
