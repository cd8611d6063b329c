/* session: the one session runner. Every frontend's run is a session:
 * it owns the loop, the notebook, the model client, the agent, the
 * journal, the replay and the idle timers, and every event of the core
 * passes through it once, in one order: journaled first, then shown by
 * the frontend's sink, then the idle timers, the replay and the script
 * act on it. A frontend gives options and a sink:
 *
 *	terp exec, terp -p	a script (cells or questions run in order);
 *				session_run, then the outcome -> exit code
 *	the TUI			no script: session_start, then tui_run on
 *				the session until the user quits; the TUI
 *				reaches the core only through the calls
 *				below (it never sees the agent)
 *
 * (Called session, not runner: a run of terp is one session, the unit
 * the journal saves and --resume continues.) */
#ifndef TERP_SESSION_H
#define TERP_SESSION_H

#include <stdint.h>

#include "terp/event.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/resume.h"

struct agent;
struct agent_opts;
struct context;
struct journal;

struct session_opts {
	const char	*sessions_dir;	/* where journals live */
	const char	*id;		/* the session's id (its folder) */
	const char	*provider, *model;	/* recorded; may be NULL */
	const char	**data_files;	/* given on the command line */
	int		 ndata;
	/* A resumed session (resume_prepare): the session takes its
	 * notebook (r->nb becomes NULL). Borrowed for session_new only.
	 * NULL for a new session. */
	struct resume	*resume;
	int		 replay;	/* re-run the cells the resume lost */
	int64_t		 idle_ms;	/* stop an idle sandbox; 0 = never */
	int64_t		 max_ms;	/* end the session; 0 = never */
	/* Borrowed; they must outlive the session. llm NULL: no model
	 * (terp exec). */
	const struct kernel_opts *kopts;
	const struct agent_opts	*aopts;
	const struct llm_config	*llm;

	/* The script, run in order once the sandbox takes it (and a
	 * --replay is over): -p's questions or exec's cells. None: the
	 * frontend drives the agent itself (the TUI). */
	const char	**questions;
	int		 nquestions;
	const char	**cells;
	int		 ncells;
	int		 keep_going;	/* a failed cell does not stop it */
	/* The session takes Ctrl-C, SIGTERM and SIGHUP (a frontend with
	 * a terminal of its own takes them itself). */
	int		 signals;

	/* The frontend's sink: every event, after the journal has it. */
	event_fn	 show;
	void		*arg;
	/* Set for a sink that batches what it shows (NULL: it shows each
	 * event at once): called with arg before the loop waits, once the
	 * journal's lines (kept until then, journal_defer) are written. */
	void		(*show_flush)(void *arg);
	/* How long a flush may wait while events come back to back (the
	 * cells of a script), in us; 0: before every wait, so nothing is
	 * shown later than it would be at once. */
	int		 show_hold_us;
};

/* How a script's run ended: the first thing that went wrong, else
 * SESSION_DONE. Each frontend maps it to its documented exit status. */
enum session_end {
	SESSION_DONE,		/* nothing went wrong */
	SESSION_UNANSWERED,	/* a question ended without an answer */
	SESSION_FAILED,		/* an error (model, sandbox, cancelled...) */
	SESSION_TURN_CAP,	/* a question reached --max-turns */
	SESSION_CELL_RAISED,	/* a cell raised */
	SESSION_CELL_STOPPED,	/* a cell timed out or was interrupted */
	SESSION_CELL_CRASHED,	/* a cell was lost with its sandbox */
	SESSION_SANDBOX_DEAD,	/* the sandbox could not start, or died */
	SESSION_REFUSED,	/* the agent refused a question or cell */
	SESSION_MAX_SESSION,	/* --max-session ended it */
	SESSION_MAX_COST,	/* --max-cost stopped a question */
};

struct session_outcome {
	enum session_end end;
	int		 finished;	/* every item of the script ran */
	int		 cancelled;	/* a Ctrl-C cancelled what ran */
	int		 interrupted;	/* a Ctrl-C ended the run */
	int		 signo;		/* SIGTERM or SIGHUP ended it, or 0 */
};

struct session;

/* Creates the loop, the notebook (a resume's, or a new one), the model
 * client, the agent and the journal (or reopens the resumed one). A
 * journal that cannot be created is not fatal: *warn (caller frees)
 * says the session will not be saved. A model client that cannot be
 * made, or a resumed journal that cannot be reopened (in use by
 * another terp), is: NULL with *err. */
struct session *session_new(const struct session_opts *o, char **warn,
    char **err);
/* Tears the agent (no sandbox process is left), the journal (synced
 * and closed), the timers, the notebook and the loop down. NULL is a
 * no-op. */
void session_free(struct session *s);

/* Says the session's id and folder (EV_SESSION), stages the data files
 * (a resumed session's that are still there, then those given) and
 * starts the sandbox. Returns 0, or -1 after an EV_ERROR that says
 * why. */
int session_start(struct session *s);
/* A script's whole run: session_start, the loop until the script is
 * over (or Ctrl-C, a signal, --max-session, the sandbox's death), and
 * how it ended in *out. */
void session_run(struct session *s, struct session_outcome *out);

/* The session's own (borrowed while it lives). session_agent is for
 * the core's tests; a frontend uses the calls below instead. */
struct loop *session_loop(const struct session *s);
struct agent *session_agent(const struct session *s);
struct notebook *session_notebook(const struct session *s);
/* The journal (owned by the session), or NULL when not saved. */
struct journal *session_journal(const struct session *s);

/* Whether a replay is pending or running (frontends hold user input). */
int session_busy(const struct session *s);

/* Re-runs now, in order, the cells whose state was lost most recently
 * (which NULL or empty: /replay after a restart; a lost state in which
 * every cell failed does not count), or those of which that succeeded
 * ("3", "1-5", "2,4-6": /replay 2,4-6; see replay_parse_range). Returns
 * 0, or -1 with *err (a bad list, nothing to replay, or busy). */
int session_replay(struct session *s, const char *which, char **err);
/* agent_reset, recorded in the journal (the state before is lost). */
int session_reset(struct session *s, char **err);
/* agent_restart, recorded in the journal. */
int session_restart(struct session *s, char **err);
/* /allow (allow 1) or /deny SPEC: agent_egress, recorded in the journal
 * so that --resume applies it again. Returns 0, 1 (the sandbox restarted
 * for it), or -1 with *err. */
int session_egress(struct session *s, int allow, const char *spec, char **err);
/* While a replay runs: the cells it has re-run so far, and in *total
 * how many it re-runs. 0 and 0 when none runs. */
int session_progress(const struct session *s, int *total);
/* When the idle timeout stops the sandbox, on the now_ms() clock; 0
 * when it is not counting down (no --idle-timeout, busy, stopped).
 * *stopped (may be NULL): 1 while the sandbox is down because the idle
 * timeout stopped it (until a new one starts). */
int64_t session_idle_deadline(const struct session *s, int *stopped);
/* /load: agent_load, told to the model with the next question. Returns
 * the sandbox path (new string) or NULL with *err. */
char *session_load(struct session *s, const char *path, char **err);
/* /sent N: the body of the i-th request (0-based) as sent, from the
 * notebook while it keeps it, else read back from the journal. A new
 * string, its length in *len; NULL with *err. */
char *session_sent(const struct session *s, int i, size_t *len, char **err);

/* ------------------------------------------------------------ the door
 * What a frontend does while the session runs, each the agent's call
 * of the same name (agent.h says what it does): strings are borrowed
 * for the call, *err is the caller's to free. */

/* A question (agent_ask): -1 with *err when busy or without a model. */
int session_ask(struct session *s, const char *question, char **err);
/* A cell written by the user (agent_run_cell), or cell n's code again
 * (agent_rerun): the new cell's number, or -1 with *err. */
int session_run_cell(struct session *s, const char *code, char **err);
int session_rerun(struct session *s, int n, char **err);
/* Whether a question or a cell runs (agent_busy; a pending replay is
 * session_busy), and Ctrl-C for it (agent_cancel). */
int session_running(const struct session *s);
void session_cancel(struct session *s);
/* `d` on cell n (agent_drop_cell): 0, or -1 with *err. */
int session_drop_cell(struct session *s, int n, char **err);
/* --ask: whether each cell of the model waits for the user. */
void session_set_ask(struct session *s, int on);
int session_asks(const struct session *s);
enum session_verdict {
	SESSION_APPROVE_RUN,	/* run it (code: the user's version, or NULL) */
	SESSION_APPROVE_SKIP,	/* do not run it: the model hears the user declined */
	SESSION_APPROVE_ALWAYS,	/* run it, and stop asking */
};
/* The user's answer to the waiting cell (agent_approve): 0, or -1 with
 * *err when none waits. */
int session_approve(struct session *s, enum session_verdict v, const char *code,
    char **err);
/* The answer to cell's input() (agent_input_reply; line NULL: end of
 * file): 0, or -1 when no request of that cell is open. */
int session_input_reply(struct session *s, int cell, const char *line);
/* The width the user reads cells' values at (agent_set_width). */
void session_set_width(struct session *s, int cols);
/* /model (agent_set_model): 0, or -1 with *err. */
int session_set_model(struct session *s, const char *model, char **err);
/* The model client and its context window (the session's, borrowed;
 * NULL without a model). */
struct llm *session_llm(const struct session *s);
struct context *session_context(const struct session *s);
/* Which Python runs, for the status bar (agent_python_label): a new
 * string, or NULL. */
char *session_python_label(const struct session *s);

#endif
