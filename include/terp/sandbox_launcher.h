/* sandbox_launcher: what runs in the processes terp forks to start a
 * sandbox, up to their exec. The launcher sits between terp and bwrap
 * for the sandbox's whole life, so that no process of the sandbox
 * outlives terp; the exec step wires the fixed fds, closes the rest,
 * sets the rlimits, drops root and execs bwrap (or, without sandbox,
 * Python) with a minimal environment. Every step that fails reports
 * through the error pipe (SANDBOX_FD_ERRPIPE) in one line. Used by
 * sandbox.c only; nothing here returns. */
#ifndef TERP_SANDBOX_LAUNCHER_H
#define TERP_SANDBOX_LAUNCHER_H

#include <sys/types.h>

#include "terp/sandbox.h"

/* The fd numbers bwrap sees. SANDBOX_FD_ALIVE is the launcher's pipe,
 * closed before the exec; the data files' fds follow from
 * SANDBOX_FD_BIND0, then the interpreter's prefixes' (sandbox.h,
 * SANDBOX_MAX_PYBINDS), then the data files' mounts (closed by the
 * launcher once attached). */
enum sandbox_fd {
	SANDBOX_FD_CMD = 3, SANDBOX_FD_EV = 4, SANDBOX_FD_STATUS = 5,
	SANDBOX_FD_SECA = 6, SANDBOX_FD_SECB = 7, SANDBOX_FD_WS = 8,
	SANDBOX_FD_DRIVER = 9, SANDBOX_FD_PASSWD = 10, SANDBOX_FD_GROUP = 11,
	SANDBOX_FD_HOSTS = 12, SANDBOX_FD_DATA = 13, SANDBOX_FD_ERRPIPE = 14,
	SANDBOX_FD_ALIVE = 15, SANDBOX_FD_FWD = 16, SANDBOX_FD_CODE = 17,
	SANDBOX_FD_BIND0 = 18,
	SANDBOX_FD_MAX = SANDBOX_FD_BIND0 + 2 * SANDBOX_MAX_BINDS + SANDBOX_MAX_PYBINDS
};

struct sandbox_launcher_args {
	const struct sandbox_spec *spec;
	int	 *src;		/* src[i] becomes fd i of the exec (-1: closed) */
	int	  nsrc;
	char	**argv;		/* the command */
	char	**argv_net;	/* the command when the exec step made the
				 * network namespace itself; NULL: never */
	char	**envp;
	/* The launcher's pipes (sandbox_launcher_run only): */
	int	  life;		/* read end; terp closing its end means "go" */
	int	  st_out;	/* status lines to terp */
	int	  st_in;	/* bwrap's --json-status-fd */
	int	  errfd;	/* the error pipe, also the exec step's */
	pid_t	  terp;		/* terp's pid, to notice it died before us */
};

/* In a forked child: wires a->src into place, sets the limits, drops to
 * the spec's uid and execs a->argv. */
void sandbox_launcher_exec(struct sandbox_launcher_args *a)
    __attribute__((noreturn));

/* In a forked child: becomes the launcher. Forks the exec step, relays
 * bwrap's status lines (with "child-pid" as a host pid), and kills and
 * reaps every process under it when bwrap exits or a->life reads EOF.
 * Exits with bwrap's status. */
void sandbox_launcher_run(struct sandbox_launcher_args *a)
    __attribute__((noreturn));

#endif
