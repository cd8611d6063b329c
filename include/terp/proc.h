/* proc: runs a program to completion, synchronously, reading its
 * stdout (and stderr) through bounded pipes: the one fork/exec runner
 * of terp's blocking callers (the Python probe, a secret's command).
 * The token command of a session pool is read in the event loop instead
 * (kernel_aca_token.c: it must not block the loop), but starts its
 * child with proc_start, the first half of proc_run. */
#ifndef TERP_PROC_H
#define TERP_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* What happens to the child's stderr. */
enum proc_err {
	PROC_ERR_TAIL = 0,	/* read; the last err_max bytes kept in err */
	PROC_ERR_INHERIT,	/* the caller's stderr (a prompt may show) */
	PROC_ERR_DROP,		/* /dev/null */
};

struct proc_opts {
	const char	*name;		/* in messages; NULL: argv[0] */
	char *const	*envp;		/* NULL: the caller's environment */
	const char	*dir;		/* the child's working folder; NULL: ours */
	int		 stdin_fd;	/* dup'ed to its stdin; -1: /dev/null */
	size_t		 out_max;	/* stdout bytes kept */
	int		 out_kill;	/* over out_max: killed, an error (else
					 * the rest is read and dropped, so
					 * that it never dies of SIGPIPE) */
	enum proc_err	 err;
	size_t		 err_max;	/* PROC_ERR_TAIL: bytes kept (0: 4096) */
	int		 timeout_ms;	/* 0: none */
	int		 path_search;	/* argv[0] looked up in PATH, as a
					 * shell does (else a path) */
	int		 new_session;	/* its own session (setsid): no
					 * controlling terminal, so a prompt
					 * cannot open /dev/tty; else its own
					 * process group */
};

/* Owned by the caller: proc_result_free. */
struct proc_result {
	char	*out;		/* stdout, NUL-terminated: one allocation of
				 * out_max + 1 bytes, never moved, so that a
				 * secret read into it leaves no copy behind */
	size_t	 out_len;
	int	 overflow;	/* stdout went on past out_max */
	char	*err;		/* PROC_ERR_TAIL: stderr's tail, NUL-terminated */
	size_t	 err_len;
	int	 status;	/* waitpid's status, once it exited */
};

/* Runs argv (argv[0] a path unless path_search) in its own process group,
 * with every fd but 0-2 closed and default signal dispositions. Returns
 * 0 once the child exited and was reaped (its status in r->status,
 * whatever it was), or -1 with one line in *err (caller frees) and errno
 * set: it could not be started (a missing program: "cannot run X: No
 * such file or directory"), it ran past timeout_ms or printed past
 * out_max with out_kill (its group killed and reaped). r is filled in
 * both cases and must be freed. EINTR is retried throughout. */
int proc_run(char *const argv[], const struct proc_opts *o,
    struct proc_result *r, char **err);
/* The start of proc_run, for a caller that reads the pipes itself (in an
 * event loop): the child set up as proc_run does (its own process group,
 * stdin, fds, signals), waited for only until its exec. Returns its pid
 * with *out its stdout's read end and *errfd its stderr's (-1 unless
 * PROC_ERR_TAIL), both close-on-exec and blocking, the caller's to close
 * (and the child its to reap); or -1 with one line in *err and errno.
 * out_max, out_kill, err_max and timeout_ms are the caller's to apply. */
pid_t proc_start(char *const argv[], const struct proc_opts *o, int *out,
    int *errfd, char **err);
/* Frees r's buffers (r->out wiped first). */
void proc_result_free(struct proc_result *r);

#endif
