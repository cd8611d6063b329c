/* kernel_types: what every kernel backend and the kernel's users share:
 * the session's states, its options, a cell's result and the callbacks
 * a backend reports through. The backends (kernel/local, ssh, jupyter,
 * aca) include this, not kernel.h: they sit below the dispatcher. */
#ifndef TERP_KERNEL_TYPES_H
#define TERP_KERNEL_TYPES_H

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
	/* Files in out_dir that earlier runs of this session copied there
	 * (--resume, from its journal), with their sizes then: a re-run
	 * cell's file replaces its own copy instead of taking name-2. */
	const struct kernel_own_file {
		const char	*name;		/* relative to out_dir */
		uint64_t	 bytes;
	}		*own_files;
	int		 nown;
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
	/* The local driver imports pandas & co only once a cell names one
	 * (terp exec: no model, no data file), not at its first idle gap. */
	int		 preload_on_need;
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
	/* The same at the user's width (kernel_set_width) where it differs
	 * (a pandas value), for showing only; the model reads value. */
	const char	*value_wide;
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
	/* The running cell asks for a line (input(), sys.stdin, getpass:
	 * Jupyter's stdin request), allowed by kernel_set_input: prompt is
	 * made safe to show (no control characters, at most 200 bytes);
	 * password: not to be echoed. Answer with kernel_input_reply; an
	 * interrupt cancels it. May be NULL: the cell is refused at once.
	 * The local sandbox only (elsewhere input() raises at once). */
	void (*input)(void *arg, int cell, const char *prompt, int password);
};

/* "ready", "running", ... (static strings). */
const char *kernel_state_name(enum kernel_state s);

#endif
