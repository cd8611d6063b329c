/* replay: re-runs a list of cells one after the other (`--replay`,
 * `/replay`), to rebuild a Python state a resume or restart lost. Driven
 * by the event stream: the next cell is due when the previous one is
 * over; a cell that fails stops the replay. The caller starts each. */
#ifndef TERP_REPLAY_H
#define TERP_REPLAY_H

#include "terp/event.h"

struct replay;

/* cells (n of them, copied) are to be re-run in order. */
struct replay *replay_new(const int *cells, int n);
void replay_free(struct replay *r);

/* The original number of the cell to re-run now, or 0 when none is due
 * (one is running, or the replay is over). */
int replay_due(const struct replay *r);
/* The due cell was started as new cell n, or refused (n <= 0: the
 * replay is over, that cell counted as failed). */
void replay_started(struct replay *r, int n);
/* Feed every event of the session. Returns 1 while the replay runs, 0
 * once it is over (replay_due says when the next cell may start). */
int replay_event(struct replay *r, const struct event *ev);
/* Cells re-run so far; *failed (may be NULL) gets the original number
 * of the cell that failed, or 0. */
int replay_progress(const struct replay *r, int *failed);

/* /replay's list of cells: "3", "1-5", "2,4-6" (blanks around "," and
 * "-" allowed), each between 1 and max. Returns how many, in *cells a
 * new array (caller frees) in ascending order without repeats; or -1
 * with *err, one line that says what is wrong (no cell past max, no
 * backward range, nothing but digits, "-" and ","). */
int replay_parse_range(const char *spec, int max, int **cells, char **err);

#endif
