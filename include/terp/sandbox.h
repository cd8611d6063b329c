/* sandbox: launches one Python process inside bubblewrap: a fork whose
 * child wires fixed fds, closes the rest, sets rlimits, drops root to a
 * per-session uid, and execs bwrap with a minimal environment, every
 * namespace, no capabilities, two stacked seccomp filters, read-only
 * system directories, a private /tmp, the workspace at /workspace and
 * the data folder read-only inside it. Knows nothing of the protocol
 * spoken over the fds (kernel.c does). The sandbox's processes once it
 * runs: sandbox_tree.h. */
#ifndef TERP_SANDBOX_H
#define TERP_SANDBOX_H

#include <stdint.h>
#include <sys/types.h>

struct pyenv;

/* Where the sandbox finds terp's egress proxy: the socket bound in, the
 * forwarder's source, and the loopback port the forwarder listens on in
 * the sandbox's own network namespace (which holds nothing else, so a
 * fixed port is free). */
#define SANDBOX_EGRESS_SOCK	"/run/terp/egress.sock"
#define SANDBOX_EGRESS_FWD	"/run/terp/egress_fwd.py"
#define SANDBOX_EGRESS_PORT	3128
/* The session's own site directory (the driver adds pythonX.Y): pip
 * installs there (PIP_TARGET), the driver puts it on sys.path. */
#define SANDBOX_SITE_DIR	"/workspace/.terp/site"
/* The driver's source, and its compiled code when the caller has it. */
#define SANDBOX_DRIVER		"/run/terp/driver.py"
#define SANDBOX_DRIVER_CODE	"/run/terp/driver.code"
/* The session's staged data files, read-only (datadir below); code
 * sees them in /workspace/data, the workspace's own writable folder,
 * each bound there or linked to from there (workspace.c). */
#define SANDBOX_STAGED		"/run/terp/data"

struct sandbox_spec {
	const char	*python;	/* /usr/bin/python3; with pyenv: pyenv->exec */
	const char	*workspace;	/* host dir -> /workspace (read-write) */
	const char	*datadir;	/* host dir -> SANDBOX_STAGED (read-only) */
	const char	*driver;	/* the driver's source */
	size_t		 driver_len;
	/* The driver compiled (kernel_code.h), bound read-only at
	 * SANDBOX_DRIVER_CODE, and the program run as `python -I -u -c
	 * loader` instead of driver.py, which loads it. NULL: none (and
	 * always so with no_sandbox). code_want: the driver sends its code
	 * in "ready" (TERP_CODE=1). */
	const void	*code;
	size_t		 code_len;
	const char	*loader;
	int		 code_want;
	uid_t		 uid;		/* drop to this uid/gid first (0: stay) */
	uint64_t	 memory;	/* RLIMIT_DATA */
	long		 nproc;
	uint64_t	 fsize;
	long		 nofile;
	uint64_t	 artifact_max;	/* passed to the driver */
	int		 no_sandbox;	/* plain python3 with rlimits only */
	int		 network;	/* share the host network */
	/* When the driver imports pandas & co: never, at its first idle
	 * gap, or once a cell names one of them. */
	enum { SANDBOX_PRELOAD_OFF, SANDBOX_PRELOAD_IDLE, SANDBOX_PRELOAD_NEED } preload;
	int		 cgroup_procs_fd; /* the child joins this cgroup; -1: none */
	/* Data files bound read-only, each at /workspace/data/<name>:
	 * open fds of regular files (the caller keeps them open), and
	 * names that exist as empty placeholders in datadir. Bound by fd,
	 * so nothing is copied; bwrap resolves the fd's path as the
	 * sandbox uid, which must be able to reach and read it. */
	const int	*bind_fds;
	const char *const *bind_names;
	int		 nbinds;	/* at most SANDBOX_MAX_BINDS */
	/* As root: data files given as detached mounts (workspace_mount.h)
	 * that the launcher attaches over mount_paths (their placeholders in
	 * datadir) in a mount namespace of its own before it drops root;
	 * bwrap never sees these fds. nbinds + nmounts: at most
	 * SANDBOX_MAX_BINDS. */
	const int	*mount_fds;
	const char *const *mount_paths;
	int		 nmounts;
	/* The user's interpreter (pyenv.h): its prefixes bound read-only
	 * where they are on the host, the symlinks on the way recreated,
	 * its variables (VIRTUAL_ENV, PATH) set. NULL: python with /usr. */
	const struct pyenv *pyenv;
	/* Egress: the proxy's socket on the host (bound read-only at
	 * SANDBOX_EGRESS_SOCK; connect() works through a read-only bind)
	 * and the forwarder's source, which the driver starts; the proxy
	 * variables point at it. NULL: no egress, and pip is told so. */
	const char	*egress_sock;
	const char	*fwd;
	size_t		 fwd_len;
	/* More KEY=VALUE for the sandbox's environment, set after terp's
	 * own (the user's pip index when its host is allowed). */
	const char *const *setenv;
	int		 probe;		/* the driver reports its packages in "ready" */
};

#define SANDBOX_MAX_BINDS	32
/* The interpreter's prefixes bound by fd (a venv, its base, a conda
 * env's parts); more is refused in one line. */
#define SANDBOX_MAX_PYBINDS	8

/* A running sandbox: the fds are non-blocking and close-on-exec on our
 * side; the caller owns and closes them (sandbox_close). */
struct sandbox_proc {
	pid_t	pid;		/* our child: the launcher (python with no_sandbox) */
	int	cmd_fd;		/* we write commands */
	int	ev_fd;		/* we read the driver's events */
	int	out_fd, err_fd;	/* the cell's stdout / stderr */
	int	status_fd;	/* bwrap's --json-status-fd, or -1 */
	int	life_fd;	/* closing it makes the launcher kill everything */
	int	pid_fd;		/* a pidfd of pid, readable once it exited;
				 * -1 where the kernel has no pidfd_open */
};

/* Forks the launcher, which forks and execs bwrap and stays its parent
 * for the sandbox's life, so that no process of the sandbox outlives
 * terp, however terp ends (see sandbox_launcher.c). The launcher's exit
 * status is bwrap's. status_fd carries bwrap's JSON status lines with
 * "child-pid" as a pid of terp's pid namespace. Returns 0, or -1 with a
 * one-line *err (caller frees). Failures inside bwrap's own setup show
 * up later as its exit with a message on err_fd: see sandbox_explain. */
int sandbox_launch(const struct sandbox_spec *s, struct sandbox_proc *p,
    char **err);

/* Kills every process of the sandbox (bwrap and the child bwrap reports,
 * whatever stage of its set-up it is in), reaps the launcher, closes the
 * fds. Safe to call twice. Returns the launcher's wait status, or -1
 * when it was already reaped. */
int sandbox_kill(struct sandbox_proc *p);
/* Closes the fds; closing life_fd makes a live launcher kill the
 * sandbox and exit. */
void sandbox_close_fds(struct sandbox_proc *p);

/* Quick checks that bwrap can work here: the binary, user namespaces,
 * the AppArmor restriction. Returns 0, or -1 with a one-line reason and
 * the fix in *err. */
int sandbox_probe(char **err);

/* Turns bwrap's setup error text into one line with the fix (new string). */
char *sandbox_explain(const char *bwrap_stderr);

#endif
