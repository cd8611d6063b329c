/* kernel_jupyter_rest: the Jupyter backend's REST calls to its server
 * (kernelspecs, contents, kernels), several in flight at once, each one
 * kernel_rest.h call. Each answer is bounded (max), its body kept, and
 * handed to the call's done once; a failure becomes one line
 * (jrest_problem). A generation number tells answers to an abandoned
 * sequence from current ones (the owner bumps it, the answer carries the
 * one it was sent under). */
#ifndef TERP_KERNEL_JUPYTER_REST_H
#define TERP_KERNEL_JUPYTER_REST_H

#include <stddef.h>
#include <stdint.h>

#include "terp/http.h"
#include "terp/kernel_rest.h"
#include "terp/loop.h"

struct jreq;
/* ctx is the call's (jrest.owner by default); the request is freed
 * after the call. */
typedef void (*jreq_done)(void *ctx, struct jreq *q, const struct http_result *r);

struct jrest;

/* One call in flight. */
struct jreq {
	struct jrest	*r;
	struct jreq	*next;
	struct krest	 k;		/* the call: k.body its answer, k.over past max */
	jreq_done	 done;
	void		*ctx;
	int		 i;		/* the generation it was sent under, or the caller's */
	char		*s;		/* the caller's (freed with it) */
};

/* The server and the calls to it, embedded in its owner (zeroed, then
 * these set). The strings are owned (jrest_free frees them). */
struct jrest {
	void		*owner;		/* handed to every done */
	struct loop	*loop;
	struct http	*http;		/* http_new(loop) before the first call */
	char		*base;		/* http(s)://host[:port][/base], no trailing '/' */
	char		*where;		/* "jupyter host:port", for messages */
	char		*auth;		/* "Authorization: token T" or NULL */
	int64_t		 connect_timeout_ms;
	const char	*ca_file;	/* borrowed */
	int		 gen;		/* bumped when a sequence is abandoned */
	struct jreq	*reqs;
	struct jreq	*dispatching;	/* the call whose done runs */
};

/* Starts method on base+path (path already escaped: jrest_path). body
 * (JSON) may be NULL. done runs once with the answer, at once when the
 * call cannot start (then NULL is returned). */
struct jreq *jrest_call(struct jrest *r, const char *method, const char *path,
    const char *body, size_t max, jreq_done done);
/* jrest_call with ctx for done instead of the owner. */
struct jreq *jrest_call_for(struct jrest *r, void *ctx, const char *method,
    const char *path, const char *body, size_t max, jreq_done done);
/* Cancels every call but the one whose done is running: no done. */
void jrest_cancel(struct jrest *r);
/* One line for a failed call (what: "the listing of out/"), or NULL when
 * it succeeded. New string. */
char *jrest_problem(const struct jrest *r, const struct http_result *res, const char *what);
/* prefix + path with each component percent-encoded + query. New string. */
char *jrest_path(const char *prefix, const char *path, const char *query);
/* Cancels every call, frees the client and the strings. */
void jrest_free(struct jrest *r);

#endif
