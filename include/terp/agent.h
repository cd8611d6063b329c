/* agent: the core of terp. Owns the turn loop of a question (model ->
 * python_exec -> kernel -> model ... -> answer), runs cells by hand,
 * and turns kernel and model callbacks into notebook updates and events
 * for the frontends (event.h). Knows nothing of terminals. */
#ifndef TERP_AGENT_H
#define TERP_AGENT_H

#include <stddef.h>

#include "terp/event.h"
#include "terp/kernel.h"
#include "terp/loop.h"
#include "terp/notebook.h"

struct context;
struct llm;
struct cost_table;

struct agent_opts {
	int		 max_turns;		/* model calls per question (20) */
	size_t		 tool_output_limit;	/* bytes per tool result (4096) */
	const char	*system_prompt;		/* NULL: the built-in one */
	const struct cost_table *prices;	/* NULL: none (cost.h) */
	double		 max_cost;		/* dollars per session; 0: none */
	long		 context_window;	/* tokens; 0: the model's (context.h) */
	/* Whether input() in a cell asks the user (EV_INPUT): in cells run
	 * by hand, in the model's. 0 (headless): it raises at once. */
	int		 input_hand, input_model;
	/* --ask: each model cell waits for the user (agent_set_ask) */
	int		 ask;
};

void agent_opts_default(struct agent_opts *o);

struct agent;

/* Creates the core. The notebook and the llm (NULL: no model, as in
 * `terp exec`) are borrowed and must outlive the agent; kopts too.
 * Every change is reported through emit(arg, ev). */
struct agent *agent_new(struct loop *l, struct notebook *nb,
    const struct kernel_opts *kopts, struct llm *llm,
    const struct agent_opts *opts, event_fn emit, void *arg);
/* Tears the session down (no sandbox process is left) and frees. */
void agent_free(struct agent *a);

/* Answers cell's input request (EV_INPUT) with line (NULL: end of
 * file). Returns 0, or -1 when no request of that cell is open. */
int agent_input_reply(struct agent *a, int cell, const char *line);

/* Starts the sandbox session, with the files agent_load staged.
 * Returns 0 or -1 with *err (caller frees). */
int agent_start(struct agent *a, char **err);

/* Asks a question; turns run in the loop until EV_ANSWER or EV_ERROR,
 * then EV_IDLE. A sandbox stopped by kernel_stop is started again first
 * (the model is told its variables are gone). Returns -1 with *err when
 * busy or without a model. */
int agent_ask(struct agent *a, const char *question, char **err);

/* Runs code as a new cell written by the user (hand-run cells are told
 * to the model with the next question). Returns the cell number, or -1
 * with *err. EV_IDLE follows its result. */
int agent_run_cell(struct agent *a, const char *code, char **err);
/* Re-runs cell n's code as a new cell by the user. */
int agent_rerun(struct agent *a, int n, char **err);

/* Ctrl-C: cancels the model request or interrupts the running cell.
 * Never loses the notebook. */
void agent_cancel(struct agent *a);
int agent_busy(const struct agent *a);

/* `d`: drops cell n from the notebook's view and from what the model
 * is sent next (notebook_drop_cell; the journal keeps it, marked).
 * Returns 0, or -1 with *err: no such cell, or something runs. */
int agent_drop_cell(struct agent *a, int n, char **err);
/* --ask: whether each cell of the model waits for the user (an
 * EV_APPROVE, then agent_approve) before it runs. */
void agent_set_ask(struct agent *a, int on);
int agent_asks(const struct agent *a);
enum agent_verdict {
	AGENT_RUN,	/* run it (code: the user's version, or NULL) */
	AGENT_SKIP,	/* do not run it: the model is told the user declined */
	AGENT_ALWAYS,	/* run it, and stop asking (agent_set_ask 0) */
};
/* The user's answer to the waiting cell (EV_APPROVE); code (borrowed)
 * replaces the model's when not NULL. Returns 0, or -1 with *err when
 * none waits. Ctrl-C (agent_cancel) answers it as cancelled. */
int agent_approve(struct agent *a, enum agent_verdict v, const char *code,
    char **err);

/* Appends text (copied; a newline is added when missing) to what the
 * model is told with the next question, e.g. that the session was
 * resumed in a new sandbox. */
void agent_note(struct agent *a, const char *text);

/* The width the user reads cells' values at (kernel_set_width). */
void agent_set_width(struct agent *a, int cols);

/* Stops the sandbox (the idle timeout): the variables go; the next
 * question or cell starts a new one and the model is told. why is
 * for people ("idle for 30 min"). */
void agent_stop_sandbox(struct agent *a, const char *why);

/* Where the Python session runs (kernel_where) and, for a remote one,
 * the line on its isolation (kernel_isolation; else NULL): the agent's. */
const char *agent_where(const struct agent *a);
const char *agent_isolation(const struct agent *a);
/* The remote session's identity for the journal (kernel_remote_session;
 * never shown), or NULL. */
const char *agent_remote_session(struct agent *a);
/* Which Python the session runs, for the status bar (kernel_python_label:
 * "Python 3.11.2 (virtualenv ...)"): a new string, or NULL before the
 * probe, without a pyenv, or for a remote session. */
char *agent_python_label(const struct agent *a);

int agent_reset(struct agent *a, char **err);
int agent_restart(struct agent *a, char **err);
/* Stages the data file at path, before agent_start or while the
 * sandbox runs, and records it in the notebook with the path the code
 * sees there, which it returns (new string), or NULL with *err. told:
 * the user loaded it (/load): the model hears of it with the next
 * question, and its fingerprint is taken anew; else it is a file of
 * the session's start (a resumed one keeps its first fingerprint). */
char *agent_load(struct agent *a, const char *path, int told, char **err);
/* kernel_egress_allow (allow) or kernel_egress_deny for the notebook's
 * /allow and /deny, and a note so the model hears of it with the next
 * question. Returns 0, 1 (the sandbox restarted for it), or -1 with
 * *err. */
int agent_egress(struct agent *a, int allow, const char *spec, char **err);
/* Switches model (provider keeps its settings). */
int agent_set_model(struct agent *a, const char *model, char **err);

struct notebook *agent_notebook(const struct agent *a);
struct llm *agent_llm(const struct agent *a);
/* The model's context window and what the conversation uses of it
 * (NULL without a model); /context and /compact use it. */
struct context *agent_context(const struct agent *a);

#endif
