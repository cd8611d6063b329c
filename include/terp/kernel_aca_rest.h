/* kernel_aca_rest: the session pool backend's REST requests, one in
 * flight at a time, through http.c in the loop: the bearer token
 * (kernel_aca_token.h, owned here), bounded answers, a 429 waited out and
 * tried again (the pool's Retry-After, else 1 s, 2 s, 4 s... within
 * retry_max_ms, said through the retrying callback), a 401 tried once
 * more with a fresh token, and every failure one line saying what to
 * fix. kernel_aca.c chains these into its jobs. */
#ifndef TERP_KERNEL_ACA_REST_H
#define TERP_KERNEL_ACA_REST_H

#include <stddef.h>
#include <stdint.h>

#include "terp/http.h"
#include "terp/kernel_aca_opts.h"
#include "terp/kernel_aca_token.h"
#include "terp/loop.h"

#define ACA_LIST_BODY_MAX	(4u << 20)	/* a files listing */

enum aca_rq_kind { ACA_RQ_EXEC, ACA_RQ_UPLOAD, ACA_RQ_LIST, ACA_RQ_DOWNLOAD };

/* How a request ended. */
struct aca_rq_end {
	long		 status;	/* HTTP status, 0 without an answer */
	int		 timed_out;	/* no answer in time (ours) */
	const char	*err;		/* one line when it failed, else NULL */
	const char	*body;		/* the 2xx answer ("" for a download) */
	size_t		 len;
};

struct aca_rest_cbs {
	/* The request ended; body is valid until the next start or clear. */
	void	(*done)(void *arg, const struct aca_rq_end *e);
	/* A download's bytes as they come; nonzero stops it (its end then
	 * says the transfer failed). */
	int	(*download)(void *arg, const char *p, size_t n);
	/* A 429 is waited out: msg says for how long. */
	void	(*retrying)(void *arg, const char *msg);
	/* The request went out (NULL: not told). */
	void	(*sent)(void *arg);
};

struct aca_rest;

/* o (and its strings) outlive it. */
struct aca_rest *aca_rest_new(struct loop *l, const struct aca_opts *o,
    const struct aca_rest_cbs *cbs, void *arg);
/* Cancels the request (no callback), kills a token command, frees. */
void aca_rest_free(struct aca_rest *r);

/* Starts a request (the one before is cancelled); done gets its end,
 * perhaps from inside this call. url and body are taken (body may be
 * NULL); part (may be NULL) is copied, its strings and fd borrowed. */
void aca_rest_start(struct aca_rest *r, enum aca_rq_kind kind, char *url, char *body,
    const struct http_part *part, int64_t idle_ms);
/* Cancels the request in flight, if any: no callback. */
void aca_rest_clear(struct aca_rest *r);

#endif
