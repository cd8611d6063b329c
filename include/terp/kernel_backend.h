/* kernel_backend: the one table every backend fills, and the registry
 * that matches a --sandbox spec to one. kernel.c (the dispatcher) keeps
 * kernel.h's API over it: every kernel_* call is an entry of struct
 * kernel_ops, for the local sandbox (kernel_local.c) as for the remote
 * backends (kernel_ssh.c, kernel_jupyter.c, kernel_aca.c), which all
 * take struct kernel_cbs unchanged. */
#ifndef TERP_KERNEL_BACKEND_H
#define TERP_KERNEL_BACKEND_H

#include "terp/kernel_types.h"
#include "terp/loop.h"

enum kernel_kind {
	KERNEL_LOCAL,
	KERNEL_SSH,
	KERNEL_JUPYTER,
	KERNEL_ACA,
};

/* The operations a backend gives; b is the backend's own object. */
struct kernel_ops {
	void		 (*free)(void *b);
	int		 (*start)(void *b, char **err);
	void		 (*stop)(void *b, const char *reason);
	int		 (*run)(void *b, int n, const char *code, char **err);
	void		 (*interrupt)(void *b);
	int		 (*reset)(void *b, char **err);
	int		 (*restart)(void *b, char **err);
	char		*(*stage)(void *b, const char *host_path, char **err);
	enum kernel_state (*state)(const void *b);
	int		 (*busy)(const void *b);
	/* The remote session's identity for the journal (new string), or
	 * NULL; kernel_opts.sandbox_session gives it back. "" for ssh: the
	 * journal keeps where it ran, with nothing to reach again there. */
	char		*(*session)(const void *b);
	/* The interpreter, as kernel.h's kernel_python_*; NULL where the
	 * backend does not know it (the remote ones). */
	const char	*(*python_info)(const void *b);
	int		 (*python_charts)(const void *b);
	char		*(*python_label)(const void *b);
	/* Egress rules (kernel.h); NULL where the backend has none: the
	 * dispatcher says that the remote reaches what its machine allows. */
	int		 (*egress_allow)(void *b, const char *spec, char **err);
	int		 (*egress_deny)(void *b, const char *spec, char **err);
	/* A cell's input() (kernel.h's kernel_set_input and
	 * kernel_input_reply); NULL where a cell cannot ask (input() raises
	 * at once there). */
	void		 (*set_input)(void *b, int allow);
	int		 (*input_reply)(void *b, int cell, const char *line);
	/* The user's cells pane width (kernel_set_width); NULL where the
	 * backend prints for the model's view only. */
	void		 (*set_width)(void *b, int cols);
};

/* A built backend: its table, its object, and what to say about it. */
struct kernel_backend {
	const struct kernel_ops	*ops;
	void			*b;
	char			*where;		/* "jupyter 127.0.0.1:8888" */
	const char		*isolation;	/* one line, or NULL (static) */
	const char		*note;		/* for the model's prompt, or NULL */
	const char		*files_note;	/* what a restart does to files, or NULL */
	char			*token;		/* kept for the backend's life; never shown */
	void			*opts;		/* the backend's options (they outlive it) */
	char			*session;	/* the last ops->session; never shown */
	char			*jsession, *jkernel;	/* a resumed Jupyter kernel's */

	/* The callbacks go through here: a death the backend reports from
	 * inside start (a missing token, a bad endpoint) is passed on from
	 * the loop, after kernel_start returned, as the local kernel's
	 * are, so that a frontend reacting to it acts inside the loop. */
	struct loop		*loop;
	struct kernel_cbs	 inner, outer;
	void			*outer_arg;
	int			 in_start;
	int			 ndeferred;
	struct {
		enum kernel_state st;
		char		*msg;
		int		 restarted, state_lost;
	}			 deferred[4];
	uint64_t		 defer_timer;
};

/* Which backend spec names (NULL, "" and "local": the local sandbox).
 * Returns the kind, or -1 with a one-line *err (caller frees) saying
 * what forms there are. */
int kernel_backend_kind(const char *spec, char **err);

/* Checks what can be checked without the network: the spec's form, a
 * token where the backend needs one. Returns 0, or -1 with *err. */
int kernel_backend_check(const struct kernel_opts *o, char **err);

/* Builds the backend o->sandbox names (local included) into *kb; cbs
 * and arg are handed to it. Connects nothing. A backend that cannot be
 * built (a bad spec: kernel_backend_check says so first) fails at
 * start. */
void kernel_backend_new(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb);
/* Starts it (ops->start); the states it reports meanwhile come after. */
int kernel_backend_start(struct kernel_backend *kb, char **err);
/* The remote session's identity, for the journal only (so that
 * --resume reaches the same session: kernel_opts.sandbox_session takes
 * it back): a pool's session identifier; a Jupyter server's session
 * folder and kernel id ("FOLDER/KERNELID"); "" over ssh (a resume goes
 * back to the host, in a new session). NULL when the backend does not
 * know it yet. Never shown: a pool's identifier
 * is all it takes to reach its session. Owned by kb, valid until the
 * next call. */
const char *kernel_backend_session(struct kernel_backend *kb);
/* Frees the backend (its session is shut down) and what kb holds. */
void kernel_backend_free(struct kernel_backend *kb);

/* "where" for the local sandbox's status line. */
#define KERNEL_WHERE_LOCAL	"local sandbox"

#endif
