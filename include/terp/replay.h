/* replay: re-runs a list of cells one after the other (`--replay`,
 * `/replay`), to rebuild a Python state a resume or restart lost. Driven
 * by the event stream: the next cell starts when the previous one is
 * over; a cell that fails stops the replay. */
#ifndef TERP_REPLAY_H
#define TERP_REPLAY_H

#include "terp/event.h"

/* Runs cell n's code again as a new cell; returns the new cell's
 * number or -1 with *err. (main passes agent_rerun.) */
typedef int (*replay_run_fn)(void *arg, int n, char **err);

struct replay;

/* cells (n of them, copied) are re-run in order through run(arg, ...). */
struct replay *replay_new(const int *cells, int n, replay_run_fn run,
    void *arg);
void replay_free(struct replay *r);

/* Starts the first cell. Returns 0, or -1 with *err (caller frees). */
int replay_start(struct replay *r, char **err);
/* Feed every event of the session. Returns 1 while the replay runs, 0
 * once it is over. */
int replay_event(struct replay *r, const struct event *ev);
/* Cells re-run so far; *failed (may be NULL) gets the original number
 * of the cell that failed, or 0. */
int replay_progress(const struct replay *r, int *failed);

#endif
