/* idle: watches a session's event stream and says when its sandbox has
 * been idle too long (--idle-timeout) or the session has lasted too long
 * (--max-session). It decides nothing: the frontend stops the sandbox
 * (the core restarts it at the next cell) or ends the session. */
#ifndef TERP_IDLE_H
#define TERP_IDLE_H

#include <stdint.h>

#include "terp/event.h"
#include "terp/loop.h"

enum idle_why { IDLE_TIMEOUT, IDLE_MAX_SESSION };

typedef void (*idle_fn)(void *arg, enum idle_why why);

struct idle;

/* idle_ms: quiet time (no question, no cell) before IDLE_TIMEOUT; 0 =
 * never. max_ms: time from now before IDLE_MAX_SESSION; 0 = never. The
 * loop is borrowed. */
struct idle *idle_new(struct loop *l, int64_t idle_ms, int64_t max_ms,
    idle_fn fire, void *arg);
void idle_free(struct idle *i);
/* Feed every event: questions and cells hold the timer, EV_IDLE and a
 * kernel that became ready arm it, a stopped kernel disarms it. */
void idle_event(struct idle *i, const struct event *ev);
/* When IDLE_TIMEOUT will fire, on the now_ms() clock (for a countdown);
 * 0 when the timer is not armed (busy, stopped, or no timeout). NULL
 * gives 0. */
int64_t idle_deadline(const struct idle *i);

#endif
