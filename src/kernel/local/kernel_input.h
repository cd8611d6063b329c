/* kernel_input: a cell's input() requests as the local backend bounds
 * them (private to src/kernel/local). Each "input" frame may be forged:
 * one request open at a time, at most KINPUT_MAX per cell, the prompt
 * cut and made safe to show, the line sent back bounded. */
#ifndef TERP_KERNEL_INPUT_H
#define TERP_KERNEL_INPUT_H

#include <cjson/cJSON.h>

#include "terp/kernel_frame.h"

#define KINPUT_MAX	1000		/* input requests one cell may make */
#define KINPUT_PROMPT	200		/* bytes of a prompt passed on (cut there) */
#define KINPUT_REPLY_MAX (64u << 10)	/* bytes of a line sent back */

/* The running cell's: whether it may ask, its request waiting for a
 * reply, and how many it made. */
struct kinput {
	int	may, open, count;
};

/* A new cell, which may ask or not. */
void kinput_cell(struct kinput *in, int may);

/* An "input" frame of the running cell: 1 with *prompt (caller frees)
 * to ask the frontend; 0 to ignore it (a cell that may not ask raises
 * by itself: this frame is forged); -1 with *refusal, the line the cell
 * raises. */
int kinput_request(struct kinput *in, const struct kframe *f, char **prompt,
    const char **refusal);

/* The frontend's line (NULL: end of input) for cell: the command to send
 * (caller frees), or NULL when no request of that cell is open. */
cJSON *kinput_reply(struct kinput *in, int cell, const char *line);

/* The "input_reply" command: a value, an error the cell raises, or eof. */
cJSON *kinput_answer(int cell, const char *value, const char *error, int eof);

#endif
