/* session: what makes a frontend's run a lasting session, in one
 * object: the journal (every event saved before it is shown), a resume
 * (the model told, extra data files recorded), the replay of the cells
 * a resume lost, and the idle and --max-session timers. Any frontend
 * (exec, headless, the TUI) wires it with session_new, session_attach,
 * and two calls in its event handler:
 *
 *	session_record(s, ev);			before showing ev
 *	show(ev);
 *	switch (session_event(s, ev)) {		after showing it
 *	case SESSION_OWN: return;		the replay's: not the frontend's
 *	case SESSION_READY: start(); return;	the replay is over
 *	default: ...				the frontend's own logic
 *	}
 */
#ifndef TERP_SESSION_H
#define TERP_SESSION_H

#include <stdint.h>

#include "terp/agent.h"
#include "terp/event.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/resume.h"

struct journal;

struct session_opts {
	const char	*sessions_dir;	/* where journals live */
	const char	*id;		/* the session's id (its folder) */
	const char	*provider, *model;	/* recorded; may be NULL */
	const char	**data_files;	/* given on the command line */
	int		 ndata;
	/* A resumed session (resume_prepare): the notebook given to
	 * session_new must be r->nb. Borrowed for session_new and
	 * session_attach only. NULL for a new session. */
	struct resume	*resume;
	int		 replay;	/* re-run the cells the resume lost */
	int64_t		 idle_ms;	/* stop an idle sandbox; 0 = never */
	int64_t		 max_ms;	/* end the session; 0 = never */
	/* The frontend's event handler: the session's own notices and
	 * errors go through it (so they are recorded and shown). */
	event_fn	 emit;
	void		*arg;
};

enum session_role {
	SESSION_PASS,	/* the frontend's business as usual */
	SESSION_OWN,	/* part of the session's replay: only show it */
	SESSION_READY,	/* the replay just ended: the frontend may start */
};

struct session;

/* Creates the journal (or reopens the resumed one) for nb, which is
 * borrowed and must outlive the session; the loop too. A journal that
 * cannot be created is not fatal: *warn (caller frees) says the session
 * will not be saved. A resumed journal that cannot be reopened (in use
 * by another terp) is: NULL with *err. */
struct session *session_new(struct loop *l, struct notebook *nb,
    const struct session_opts *o, char **warn, char **err);
/* Closes the journal (synced) and stops the timers. Call it after
 * agent_free and before notebook_free. NULL is a no-op. */
void session_free(struct session *s);

/* Binds the agent (borrowed), before agent_start: a resume's note for
 * the model is handed over here. */
void session_attach(struct session *s, struct agent *a);

/* Write-ahead: journals ev. Call it first thing for every event, so
 * that whatever was shown is saved. A journal that fails warns once
 * (an EV_NOTICE through emit) and the run goes on unsaved. */
void session_record(struct session *s, const struct event *ev);
/* Drives the replay and the idle timers with ev; call it after showing
 * ev. Returns what ev means to the frontend (enum session_role). */
enum session_role session_event(struct session *s, const struct event *ev);

/* Stages the data files (a resumed session's that are still there,
 * then those given) and starts the sandbox (agent_start). Returns 0,
 * or -1 with *err. */
int session_start(struct session *s, char **err);

/* Whether a replay is pending or running (frontends hold user input). */
int session_busy(const struct session *s);

/* Re-runs now the cells whose state was lost most recently (/replay
 * after a restart). Returns 0, or -1 with *err (nothing to replay, or
 * busy). */
int session_replay(struct session *s, char **err);
/* agent_reset, recorded in the journal (the state before is lost). */
int session_reset(struct session *s, char **err);
/* agent_restart, recorded in the journal. */
int session_restart(struct session *s, char **err);
/* While a replay runs: the cells it has re-run so far, and in *total
 * how many it re-runs. 0 and 0 when none runs. */
int session_progress(const struct session *s, int *total);
/* When the idle timeout stops the sandbox, on the now_ms() clock; 0
 * when it is not counting down (no --idle-timeout, busy, stopped).
 * *stopped (may be NULL): 1 while the sandbox is down because the idle
 * timeout stopped it (until a new one starts). */
int64_t session_idle_deadline(const struct session *s, int *stopped);
/* agent_load, with the file recorded for a later resume. Returns the
 * sandbox path (new string) or NULL with *err. */
char *session_load(struct session *s, const char *path, char **err);

/* The journal (owned by the session), or NULL when not saved. */
struct journal *session_journal(const struct session *s);

#endif
