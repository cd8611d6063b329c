/* ctxprobe: asks a local Ollama server for a model's context size
 * without blocking: /api/show (the num_ctx of its parameters, and
 * model_info's *.context_length), then /api/ps (the loaded model's
 * context_length). The probe owns its HTTP client, its reply buffer and
 * its copies of the root URL and model name; it knows nothing of the
 * context, which owns one and takes the answer by the done callback.
 * Private to src/core. */
#ifndef TERP_CORE_CTXPROBE_H
#define TERP_CORE_CTXPROBE_H

#include "terp/buf.h"
#include "terp/http.h"
#include "terp/loop.h"

#define CTXPROBE_MAX	(256 * 1024)	/* bytes of one reply */

struct ctxprobe;
/* The probe is over, answered or not (p->num_ctx, p->model_len). */
typedef void (*ctxprobe_done_fn)(void *arg, const struct ctxprobe *p);

struct ctxprobe {
	struct http		*http;		/* made on the first start */
	struct http_xfer	*xfer;
	struct buf		 body;
	int			 step;		/* 0: idle, 1: /api/show, 2: /api/ps */
	char			*root;		/* the server, "/v1" cut */
	char			*model;		/* NULL: none */
	long			 num_ctx;	/* the server's size, 0: not told */
	long			 model_len;	/* model_info's, 0: not told */
	ctxprobe_done_fn	 done;
	void			*arg;
};

void ctxprobe_init(struct ctxprobe *p, ctxprobe_done_fn done, void *arg);
void ctxprobe_free(struct ctxprobe *p);
/* Starts the two questions to the server at base_url (a provider's:
 * trailing slashes and ".../v1" are cut) about model (copied; may be
 * NULL). Returns 0, or -1 when one runs already or it could not start
 * (then done was called already). */
int ctxprobe_start(struct ctxprobe *p, struct loop *l, const char *base_url,
    const char *model);
/* Whether the questions are still out. */
int ctxprobe_busy(const struct ctxprobe *p);

#endif
