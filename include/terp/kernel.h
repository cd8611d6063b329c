/* kernel: one sandboxed Python session (host side). Starts the driver
 * inside the sandbox (sandbox.h), speaks its line protocol, streams the
 * cell's output, enforces the per-cell time limit with the interrupt
 * ladder (SIGINT, grace, kill), reports crashes and restarts, and copies
 * artifacts out through the protocol channel. Everything is driven by
 * the loop: no call here blocks. */
#ifndef TERP_KERNEL_H
#define TERP_KERNEL_H

#include <stdint.h>

#include "terp/loop.h"
#include "terp/notebook.h"

struct egress_event;
struct pyenv;

enum kernel_state {
	KERNEL_STOPPED,
	KERNEL_STARTING,	/* sandbox launched, driver not ready yet */
	KERNEL_LOADING,		/* ready for cells; pandas & co still importing */
	KERNEL_READY,
	KERNEL_BUSY,		/* a cell is running */
	KERNEL_DEAD,		/* failed to start; see the message */
};

struct kernel_opts {
	const char	*session_dir;	/* holds workspace/ (created if absent) */
	const char	*out_dir;	/* host folder artifacts are copied to */
	const char	*python;	/* default /usr/bin/python3 */
	const char	**data_files;	/* staged read-only under /workspace/data */
	int		 ndata;
	uint64_t	 memory;	/* bytes (RLIMIT_DATA; cgroup when usable) */
	int64_t		 timeout_ms;	/* per cell; 0 = none */
	int64_t		 grace_ms;	/* after SIGINT before the kill */
	long		 nproc;
	uint64_t	 fsize;		/* largest file the session may write */
	long		 nofile;
	uint64_t	 artifact_max;	/* largest artifact copied out */
	uint64_t	 disk;		/* bytes the workspace may hold */
	uint64_t	 disk_files;	/* entries it may hold; 0: one per 32 KiB
					 * of disk, 4096 to 200000 */
	int		 no_sandbox;	/* run python3 directly (still rlimited) */
	int		 network;	/* share the host network */
	/* Caps on what the sandbox may put in out_dir (every frame may be
	 * forged, so the host counts): artifacts started per cell, distinct
	 * files terp writes per session, and the bytes of those files. */
	int		 artifacts_per_cell;
	int		 artifacts_per_session;
	uint64_t	 artifact_bytes;
	/* The user's interpreter (pyenv.h), resolved by the caller, which
	 * keeps it for the kernel's life: the sandbox binds what it needs
	 * and runs pyenv->exec. NULL: python above, with /usr only. */
	const struct pyenv *pyenv;
	const char	*probe_cache;	/* pyenv_probe's cache folder, or NULL */
	/* Egress (kernel_net.h): HOST[:PORT] rules, NULL-terminated; NULL
	 * or none: no proxy, no forwarder, and pip fails at once saying so.
	 * Needs the sandbox's own network (not network, not no_sandbox). */
	const char *const *allow_hosts;
	uint64_t	 egress_max;	/* bytes sent out per session; 0: 10 MiB */
	uint64_t	 egress_sent;	/* sent by the session's earlier runs
					 * (--resume, from its journal) */
	/* "allow SPEC" and "deny SPEC", NULL-terminated, applied in order
	 * over allow_hosts when the proxy starts: the /allow and /deny of
	 * the session being resumed (its journal's). An "allow" makes a
	 * proxy even without allow_hosts. */
	const char *const *egress_ops;
	/* More KEY=VALUE for the sandbox's environment (the user's pip
	 * index, passed on when its host is allowed), NULL-terminated. */
	const char *const *sandbox_env;
	/* Where the session runs (kernel_backend.h): NULL or "local": this
	 * sandbox; ssh://[user@]host[:port], jupyter+http[s]://host[:port]
	 * [/base] or aca:<pool management endpoint>. The fields above that
	 * shape the local sandbox do not apply to a remote one. */
	const char	*sandbox;
	/* The remote's token: the first line of this command's output (run
	 * with sh -c), else the environment variable named here (default
	 * JUPYTER_TOKEN for a Jupyter server, TERP_ACA_TOKEN for a pool).
	 * Never shown, never journaled. */
	const char	*sandbox_token_cmd;
	const char	*sandbox_token_env;
	const char	*jupyter_kernel;	/* kernelspec name; NULL: the server's default */
	/* The remote session to reach again (--resume), as
	 * kernel_remote_session gave it when the session ran on the same
	 * sandbox; NULL for a new one. "" over ssh: a resumed notebook's
	 * new session there, whose first start says so. Never shown. */
	const char	*sandbox_session;
	const char	*ssh_terp;	/* the remote's terp command; NULL: "terp" */
	const char	*ssh_command;	/* the ssh client and its options; NULL: "ssh" */
};

/* Fills opts with the defaults (4 GiB, 120 s, 3 s grace, 256 procs,
 * 1 GiB files, 1024 fds, 64 MiB artifacts, 4 GiB of disk; at most 64
 * artifacts per cell, 1000 files and 1 GiB of them per session). */
void kernel_opts_default(struct kernel_opts *o);

/* Checks that path can be a data file: it opens without blocking (a
 * FIFO would block) and is, after symlinks, a regular file. Returns 0,
 * or -1 with a one-line *err (caller frees). (workspace_check_data,
 * here so that a frontend needs the kernel's interface only.) */
int kernel_check_data(const char *path, char **err);

struct kernel_result {
	enum cell_status status;
	int64_t		 duration_ms;
	int64_t		 duration_us;	/* the same, in microseconds */
	const char	*value;		/* repr of a trailing expression or NULL */
	const char	*ename, *evalue, *traceback;
	const char	*reason;	/* why it timed out / crashed, or NULL */
	int		 state_lost;	/* the session was restarted */
};

/* A state change, as typed facts; msg is for people only. */
struct kernel_status {
	enum kernel_state state;
	const char	*msg;		/* "starting the sandbox", a death's cause */
	/* A new sandbox replaces one that died or was stopped without the
	 * user asking for it (a crash, an idle stop): with KERNEL_STARTING. */
	int		 restarted;
	/* The Python state (variables, imports) of the cells so far is
	 * gone: a new sandbox replaces an earlier one, or it stopped. */
	int		 state_lost;
};

struct kernel_cbs {
	/* stream 0 = stdout, 1 = stderr; raw bytes, not sanitized. terp's
	 * own notes on the cell ("terp: artifact x not copied: ...") come
	 * on stream 1 too, so they reach whoever reads the cell. */
	void (*output)(void *arg, int cell, int stream, const char *p, size_t n);
	void (*result)(void *arg, int cell, const struct kernel_result *r);
	/* A file copied to out_dir. Only names terp chose cross here, never
	 * the sandbox's: name is the host file name in out_dir (ASCII
	 * letters, digits, '.', '-', '_'; no '/', no leading dot or dash,
	 * e.g. "chart-2.png" when chart.png existed), host_path is
	 * out_dir/name. */
	void (*artifact)(void *arg, int cell, const char *name,
	    const char *host_path, uint64_t bytes);
	/* The session's state changed; st and its strings are valid during
	 * the call only. */
	void (*state)(void *arg, const struct kernel_status *st);
	/* Every egress ledger event (egress.h: one END per attempt, OPEN
	 * and PROGRESS for allowed ones), attributed to cell (the running
	 * one, else the last). May be NULL. Refused and failed attempts
	 * also get a line on the cell's stderr from terp. The agent keeps
	 * them in the notebook (netlog.h) and emits EV_NET. */
	void (*net)(void *arg, int cell, const struct egress_event *ev);
	/* A package the cell installed into the session's site directory
	 * (pip install from a cell): name and version as pip recorded them
	 * (letters, digits, ".-_+!"; checked). May be NULL. The sandbox
	 * reports it: a claim, fine for a record, not for a decision. */
	void (*installed)(void *arg, int cell, const char *name, const char *version);
};

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
const char *kernel_state_name(enum kernel_state s);
int kernel_busy(const struct kernel *k);

#endif
