/* sse: a pure parser for Server-Sent Events (WHATWG HTML 9.2.6) fed
 * arbitrary network reads. Knows nothing of sockets or JSON. Every line
 * and every event has a maximum size fixed at creation; past it the
 * parser fails instead of growing. */
#ifndef TERP_SSE_H
#define TERP_SSE_H

#include <stddef.h>

struct sse_event {
	const char	*type;	/* the event: field, or "message" */
	const char	*data;	/* data: lines joined by '\n'; NUL-terminated */
	size_t		 len;	/* bytes of data */
	const char	*id;	/* the last event id seen ("" if none) */
};

/* Called for each dispatched event; the strings are owned by the parser
 * and valid during the call only. Return 0 to go on, or any other value
 * to stop: sse_feed then returns that value at once. The non-standard
 * field "error:" (old llama.cpp) is dispatched at once as an event of
 * type "error" whose data is the field's value. */
typedef int (*sse_event_fn)(void *arg, const struct sse_event *ev);

struct sse;

/* A new parser; max_line bounds one line, max_event the data of one
 * event (both in bytes). cb and arg are borrowed. */
struct sse *sse_new(size_t max_line, size_t max_event, sse_event_fn cb,
    void *arg);
void sse_free(struct sse *p);

/* Feeds the next len bytes of the stream. Returns 0; -1 when a line or
 * an event is too big (sse_error says which; the parser stays failed);
 * or the callback's nonzero value when it asked to stop. */
int sse_feed(struct sse *p, const void *data, size_t len);

/* End of stream: a last line without its terminator is taken, and an
 * event whose blank line never came is dispatched anyway (llama.cpp may
 * end with "data: [DONE]" and no blank line). Returns as sse_feed. */
int sse_finish(struct sse *p);

/* The reason of the last -1 (a static string), or NULL. */
const char *sse_error(const struct sse *p);
/* The last valid retry: field in milliseconds, or -1. */
long sse_retry(const struct sse *p);

#endif
