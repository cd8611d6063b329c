/* kernel_aca_token: the session pool's bearer token, from a command
 * (run in the loop, cached until shortly before it expires, refreshed
 * after a 401) or an environment variable (read again at each use). The
 * token never leaves this module but through aca_token_get, for the
 * Authorization header: no message is built from it, and the command's
 * stderr is redacted (aca_redact_line) before it is shown. */
#ifndef TERP_KERNEL_ACA_TOKEN_H
#define TERP_KERNEL_ACA_TOKEN_H

#include <stdint.h>

#include "terp/loop.h"

struct aca_token_opts {
	const char	*cmd;		/* run with /bin/sh -c, or NULL */
	const char	*env;		/* else the variable holding it */
	int64_t		 lifetime_ms;	/* a token with no expiry in it */
	int64_t		 timeout_ms;	/* cmd's time limit; 0: none */
	int64_t		(*wallclock)(void);	/* unix s; NULL: time() */
};

/* The command ended: err is NULL (aca_token_get has the token now) or
 * one line, which the callee frees. */
typedef void (*aca_token_done_fn)(void *arg, char *err);

/* o's strings outlive it. Runs nothing yet. */
struct aca_token *aca_token_new(struct loop *l, const struct aca_token_opts *o,
    aca_token_done_fn done, void *arg);
/* Kills a running command (and waits for it), wipes the token, frees. */
void aca_token_free(struct aca_token *t);

/* The token to send now (owned by t, valid until the next call), or
 * NULL: with a one-line *err (caller frees) when it cannot be had, or
 * with *err NULL while the command runs (done is called when it ends). */
const char *aca_token_get(struct aca_token *t, char **err);
/* Drops the token (the pool refused it): the next get fetches again. */
void aca_token_forget(struct aca_token *t);
/* The token's first audience claim, "" when none. */
const char *aca_token_audience(const struct aca_token *t);

#endif
