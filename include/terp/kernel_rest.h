/* kernel_rest: one REST call of a remote kernel backend (the Jupyter
 * server's, the ACA session pool's), over http.c in the loop: the JSON
 * headers, a 2xx answer kept up to a bound (past it the transfer stops
 * and over says so) or streamed to the owner, the status check, the
 * answer parsed as JSON, and a 429 waited out (the server's
 * Retry-After, else 1 s, 2 s, 4 s... capped) before the owner sends
 * again. What a failure means stays the backend's: each says it in its
 * own words, with its own fix.
 *
 * The owner embeds a struct krest per call in flight and may read
 * body, over and tries; everything the server sent is bounded here
 * (the 2xx body by max, an error body by max_error_body). */
#ifndef TERP_KERNEL_REST_H
#define TERP_KERNEL_REST_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "terp/buf.h"
#include "terp/http.h"
#include "terp/loop.h"

/* One request; the strings are copied by krest_send (by http.c). */
struct krest_req {
	const char	*method;	/* NULL: POST */
	const char	*url;
	const char	*auth;		/* a whole "Authorization: ..." line, or NULL */
	const char	*body;		/* JSON (sent with its Content-Type), or NULL */
	const struct http_part *part;	/* a multipart upload instead of body (borrowed) */
	int		 raw;		/* the answer is bytes, not JSON: no Accept
					 * header, the bytes go to cbs->bytes */
	size_t		 max;		/* bytes of a 2xx answer kept at most */
	size_t		 max_error_body;	/* of a non-2xx answer (http.c's default if 0) */
	long		 connect_timeout_ms;
	long		 idle_timeout_ms;	/* 0: none */
	const char	*ca_file;	/* NULL: the system's */
};

struct krest;

struct krest_cbs {
	/* The call ended (not cancelled); c->body holds a kept answer. */
	void	(*done)(void *ctx, struct krest *c, const struct http_result *r);
	/* A raw answer's bytes as they come; nonzero stops it (done then
	 * says the transfer failed). NULL for calls that are never raw. */
	int	(*bytes)(void *ctx, const char *p, size_t n);
	/* A 429 within the retry policy: it is waited out for ms, then
	 * again is called, where the owner calls krest_send once more
	 * (with a fresh token, say). NULL again: a 429 is a plain answer. */
	void	(*retrying)(void *ctx, int64_t ms);
	void	(*again)(void *ctx);
};

struct krest {
	/* Set by krest_init; kept across sends. */
	struct loop	*loop;		/* borrowed */
	struct http	*http;		/* borrowed: the owner's client */
	const struct krest_cbs *cb;	/* borrowed */
	void		*ctx;
	int		 max_retries;	/* 429s waited out; 0: none */
	int64_t		 retry_max_ms;	/* one wait at most */
	/* Read by the owner. */
	struct buf	 body;		/* the 2xx answer, owned */
	int		 over;		/* it passed max: the transfer stopped */
	int		 tries;		/* 429s waited out so far */
	/* Private. */
	struct http_xfer *x;
	uint64_t	 retry_timer;
	int		 raw;
};

/* Before first use; no retries until max_retries is set. */
void krest_init(struct krest *c, struct loop *l, struct http *h, const struct krest_cbs *cb,
    void *ctx);
/* Sends req (a kept answer from before is dropped). Returns 0 (done,
 * or a retry, follows), or -1 with *err (caller frees) when it cannot
 * start (a malformed URL): no callback then. */
int krest_send(struct krest *c, const struct krest_req *req, char **err);
/* Cancels the transfer or the wait before the next try: no callback.
 * The answer kept and the count of tries stay. */
void krest_cancel(struct krest *c);
/* krest_cancel, then the answer kept freed and the tries counted from 0. */
void krest_clear(struct krest *c);
/* 1 when r is a complete 2xx answer. */
int krest_ok(const struct http_result *r);
/* The kept answer as JSON, or NULL when it passed its bound or is not
 * JSON. The caller frees it (cJSON_Delete). */
cJSON *krest_json(const struct krest *c);
/* The wait before try number tries (1, 2, ...) after a 429: the
 * answer's retry-after-ms or Retry-After, else 1 s doubling, at most
 * max_ms. now: Unix time, for a Retry-After date. */
int64_t krest_backoff_ms(const struct http_result *r, int tries, int64_t max_ms, int64_t now);

#endif
