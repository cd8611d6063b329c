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

struct sandbox_spec {
	const char	*python;	/* /usr/bin/python3 */
	const char	*workspace;	/* host dir -> /workspace (read-write) */
	const char	*datadir;	/* host dir -> /workspace/data (read-only) */
	const char	*driver;	/* the driver's source */
	size_t		 driver_len;
	uid_t		 uid;		/* drop to this uid/gid first (0: stay) */
	uint64_t	 memory;	/* RLIMIT_DATA */
	long		 nproc;
	uint64_t	 fsize;
	long		 nofile;
	uint64_t	 artifact_max;	/* passed to the driver */
	int		 no_sandbox;	/* plain python3 with rlimits only */
	int		 network;	/* share the host network */
	int		 preload;	/* driver imports pandas & co at start */
	int		 cgroup_procs_fd; /* the child joins this cgroup; -1: none */
	/* Data files bound read-only, each at /workspace/data/<name>:
	 * open fds of regular files (the caller keeps them open), and
	 * names that exist as empty placeholders in datadir. Bound by fd,
	 * so nothing is copied; bwrap resolves the fd's path as the
	 * sandbox uid, which must be able to reach and read it. */
	const int	*bind_fds;
	const char *const *bind_names;
	int		 nbinds;	/* at most SANDBOX_MAX_BINDS */
};

#define SANDBOX_MAX_BINDS	32

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
