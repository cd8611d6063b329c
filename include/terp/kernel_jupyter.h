/* kernel_jupyter: a Python session on a Jupyter server (Jupyter Server,
 * a JupyterHub single-user server under its base URL, or Enterprise
 * Gateway). The kernel is started and controlled over the server's REST
 * API, cells run over the kernel's WebSocket channels (Jupyter messaging
 * protocol 5.3), data files go up and files the code wrote come back
 * through the contents API. The API mirrors kernel.h's (same callbacks,
 * same states, same result struct) so that it can sit behind a kernel
 * backend interface unchanged. Everything is driven by the loop.
 *
 * The server is not trusted: every message and listing is bounded and
 * type-checked, and nothing the server names becomes a host path
 * (artifacts are written under names terp picks, O_EXCL|O_NOFOLLOW). */
#ifndef TERP_KERNEL_JUPYTER_H
#define TERP_KERNEL_JUPYTER_H

#include <stdint.h>

#include "terp/kernel_types.h"
#include "terp/loop.h"

struct jupyter_opts {
	/* http(s)://host[:port][/base]; a "jupyter+" prefix is accepted. */
	const char	*url;
	const char	*token;		/* NULL or "": none sent */
	const char	*kernel_name;	/* NULL: the server's default kernelspec */
	const char	*ca_file;	/* CA bundle for https/wss; NULL: the system's */
	const char	*out_dir;	/* host folder artifacts are written to */
	const char	**data_files;	/* uploaded at start (session's data/) */
	int		 ndata;
	/* Attach to this kernel instead of starting one (a resumed
	 * session); when the server no longer has it, a new kernel starts
	 * and the state is reported lost. NULL: start one. */
	const char	*kernel_id;
	/* The session folder's name on the server is "terp-<session>"
	 * ([A-Za-z0-9_-], at most 64); NULL: a random one. */
	const char	*session;
	int64_t		 timeout_ms;	/* per cell; 0 = none */
	int64_t		 grace_ms;	/* after the interrupt, before a restart */
	long		 connect_timeout_ms;
	uint64_t	 max_msg;	/* one kernel message (larger: skipped) */
	uint64_t	 artifact_max;	/* one artifact */
	int		 artifacts_per_cell;
	int		 artifacts_per_session;
	uint64_t	 artifact_bytes;	/* all of the session's artifacts */
	int		 out_files_max;	/* entries of out/ looked at per cell */
	int		 keep_kernel;	/* jupyter_free leaves the kernel running */
};

/* Fills o with the defaults: 120 s per cell, 3 s grace, 20 s to
 * connect, 16 MiB messages, 64 MiB artifacts, 64 per cell, 1000 files
 * and 1 GiB per session, 1000 entries of out/. */
void jupyter_opts_default(struct jupyter_opts *o);

struct jupyter;

/* Creates the backend; opts' strings must outlive it; cbs is copied.
 * Does not connect. */
struct jupyter *jupyter_new(struct loop *l, const struct jupyter_opts *opts,
    const struct kernel_cbs *cbs, void *arg);
/* Shuts the kernel down (unless keep_kernel) and frees. This is the one
 * call that waits: a DELETE of the kernel bounded to 3 s, so that no
 * kernel is left running on the server after terp exits. */
void jupyter_free(struct jupyter *j);

/* Checks the URL and the output folder, then connects in the
 * background: the state callback reports KERNEL_STARTING, then
 * KERNEL_READY, or KERNEL_DEAD with one line saying why (server
 * unreachable, token refused, no such kernel with the kernelspecs the
 * server has...). Returns 0, or -1 with *err (caller frees). */
int jupyter_start(struct jupyter *j, char **err);
/* Queues code as cell n; the result callback fires exactly once for it,
 * in queueing order. A backend that died of a lost connection
 * reconnects first (the state says whether the kernel's state was kept).
 * Returns 0, or -1 with *err when it cannot take the cell. */
int jupyter_run(struct jupyter *j, int n, const char *code, char **err);
/* Interrupts the running cell (REST interrupt; when the cell has not
 * ended after grace_ms, the kernel is restarted and its state lost). */
void jupyter_interrupt(struct jupyter *j);
/* reset: a fresh namespace in the same kernel (IPython's %reset -f).
 * restart: a new kernel process; the running cell ends (state lost),
 * queued cells end not run. Return 0, or -1 with *err. */
int jupyter_reset(struct jupyter *j, char **err);
int jupyter_restart(struct jupyter *j, char **err);
/* Uploads a data file into the session's data/ folder on the server
 * (queued: cells queued after it see the file). Returns the path the
 * code sees, relative to the kernel's working directory (the session
 * folder; e.g. "data/sales.csv"), as a new string, or NULL with *err.
 * A failed upload is reported in the next cell's stderr. */
char *jupyter_stage(struct jupyter *j, const char *host_path, char **err);
/* Shuts the kernel down on the server (a running cell ends, its state
 * lost) and reports KERNEL_STOPPED with reason (copied). The next
 * jupyter_run starts a new kernel and says "restarted". */
void jupyter_stop(struct jupyter *j, const char *reason);

enum kernel_state jupyter_state(const struct jupyter *j);
int jupyter_busy(const struct jupyter *j);
/* One line for the user, shown once when connecting: what isolation a
 * Jupyter server gives (none that terp can check). Static string. */
const char *jupyter_isolation(const struct jupyter *j);
/* Where the session runs, for a status bar: "jupyter host:port". Owned
 * by j. */
const char *jupyter_where(const struct jupyter *j);
/* The server's kernel id once known (for a resumed session), or NULL;
 * the session folder's name ("terp-..."). Owned by j. */
const char *jupyter_kernel_id(const struct jupyter *j);
const char *jupyter_session_dir(const struct jupyter *j);

#endif
