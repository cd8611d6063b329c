/* kernel: one Python session, wherever it runs (host side): the
 * dispatcher over the backend --sandbox names (kernel_backend.h). The
 * local backend (kernel_local.h) starts the driver inside the sandbox
 * (sandbox.h), speaks its line protocol, streams the cell's output,
 * enforces the per-cell time limit with the interrupt ladder (SIGINT,
 * grace, kill), reports crashes and restarts, and copies artifacts out
 * through the protocol channel. Everything is driven by the loop: no
 * call here blocks. */
#ifndef TERP_KERNEL_H
#define TERP_KERNEL_H

#include "terp/kernel_types.h"

/* The kernel is one table (kernel_backend.h: struct kernel_ops) over one
 * backend object, whatever runs the session: the local sandbox
 * (kernel/local) fills the table as the remote backends do. Every call
 * below is the table's, or the backend's description. */
struct kernel;

/* Creates a kernel; opts' strings must outlive it. Does not start it. */
struct kernel *kernel_new(struct loop *l, const struct kernel_opts *opts,
    const struct kernel_cbs *cbs, void *arg);
/* Kills the session (no process is left behind) and frees. */
void kernel_free(struct kernel *k);

/* Checks that the sandbox can run here (bwrap present, user namespaces
 * usable). Returns 0, or -1 with a one-line reason and fix in *err
 * (caller frees). */
int kernel_probe(const struct kernel_opts *opts, char **err);

/* Launches the sandbox and the driver. Returns 0, or -1 with *err. */
int kernel_start(struct kernel *k, char **err);
/* Stops the sandbox (no process is left; a running cell ends
 * interrupted, its state lost) and reports KERNEL_STOPPED with reason
 * (copied; e.g. "idle for 30 min"). The workspace is kept. The next
 * kernel_run or kernel_start launches a new sandbox and reports
 * KERNEL_STARTING with restarted set. */
void kernel_stop(struct kernel *k, const char *reason);
/* Queues code as cell n; the result callback fires exactly once for it.
 * Returns 0, or -1 when the kernel cannot take it (err set). */
int kernel_run(struct kernel *k, int n, const char *code, char **err);
/* Whether the cells queued from now on may ask for input (cbs.input);
 * off at first: input() raises at once with one line saying so. */
void kernel_set_input(struct kernel *k, int allow);
/* The width, in columns, the user reads cells at (the TUI's cells pane;
 * 0: unknown): a pandas value is then also printed at it for the user
 * (kernel_result.value_wide), the model keeping Jupyter's 80-column
 * view. Ignored by backends without it. */
void kernel_set_width(struct kernel *k, int cols);
/* Answers cell's open input request with line (without its newline;
 * NULL: end of file, the cell gets EOFError). Returns 0, or -1 when no
 * request of that cell is open. */
int kernel_input_reply(struct kernel *k, int cell, const char *line);
/* Interrupts the running cell (KeyboardInterrupt; kill after grace). */
void kernel_interrupt(struct kernel *k);
/* reset: fresh namespace in the same process. restart: new process. */
int kernel_reset(struct kernel *k, char **err);
int kernel_restart(struct kernel *k, char **err);
/* Stages another data file into the running session. Returns the path
 * the code sees (new string) or NULL with *err. */
char *kernel_stage(struct kernel *k, const char *host_path, char **err);

/* What the session's Python has, for the system prompt: the probe's
 * sentence (pyenv_prompt_line: version, the common data packages there
 * and not, a note when charts are unavailable), or NULL until known
 * (the cache had no answer and the sandbox has not reported yet). Owned
 * by k, valid until the next call into the kernel. */
const char *kernel_python_info(const struct kernel *k);
/* 1 when the session's Python has matplotlib, 0 when not, -1 until the
 * probe is known. */
int kernel_python_charts(const struct kernel *k);
/* "Python 3.11.2 (virtualenv /home/u/proj/.venv)" for a status line
 * (new string), or NULL without a pyenv and before the probe. */
char *kernel_python_label(const struct kernel *k);

/* Changes the egress rules of the session (the notebook's /allow and
 * /deny; egress.h has the syntax; the journal keeps them, and
 * kernel_opts.egress_ops gives them back on a resume). Allowing the
 * first host of a session started without egress starts the proxy and,
 * when the sandbox runs, restarts it (its forwarder and proxy variables
 * exist only from a start; state is lost, KERNEL_STARTING says
 * "restarted"): then 1 is returned; refused while a cell runs. Returns
 * 0, 1, or -1 with *err (a malformed spec, --network, --no-sandbox). */
int kernel_egress_allow(struct kernel *k, const char *spec, char **err);
int kernel_egress_deny(struct kernel *k, const char *spec, char **err);

/* Where the session runs, for a status bar and the --json session
 * event: "local sandbox", "ssh HOST", "jupyter HOST:PORT", "aca pool
 * NAME" (no token, no identifier). Owned by k. */
const char *kernel_where(const struct kernel *k);
/* One line on what isolation the remote gives, to show once when
 * connecting; NULL for the local sandbox. Static string. */
const char *kernel_isolation(const struct kernel *k);
/* What the model must know about paths on a remote backend (it replaces
 * the local sandbox's /workspace), or NULL. Static string. */
const char *kernel_prompt_note(const struct kernel *k);
/* What a restart leaves of the files the code wrote, for the model's
 * note after a restart ("files under /workspace are kept"), or NULL
 * when the backend cannot say. Static string. */
const char *kernel_files_note(const struct kernel *k);
/* The remote session's identity, for the journal only, so that a
 * resume reaches the same session (kernel_opts.sandbox_session): a
 * pool's session identifier, a Jupyter server's folder and kernel id;
 * "" over ssh (where it ran, nothing to reach there) and for the local
 * sandbox. NULL until known. Never to be
 * shown (it is all it takes to reach a pool's session). Owned by k,
 * valid until the next call into the kernel. */
const char *kernel_remote_session(struct kernel *k);
/* Whether opts->sandbox names a remote backend (a remote needs neither
 * bwrap nor a local Python). */
int kernel_opts_remote(const struct kernel_opts *opts);

enum kernel_state kernel_state(const struct kernel *k);
int kernel_busy(const struct kernel *k);

#endif
