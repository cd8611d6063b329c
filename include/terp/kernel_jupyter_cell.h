/* kernel_jupyter_cell: the Jupyter backend's running cell as the kernel
 * tells of it: the execute_reply, the stream text, values, figures and
 * errors of its iopub messages, and from them its outcome and result.
 * Everything it keeps is cut to kframe_text_cap's bound; what it passes
 * on (text, figures) goes through the owner's callbacks. The queue, the
 * timers and the out/ fetch stay the owner's (kernel_jupyter.c). */
#ifndef TERP_KERNEL_JUPYTER_CELL_H
#define TERP_KERNEL_JUPYTER_CELL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "terp/kernel_types.h"

/* Why the cell was interrupted, if it was. */
enum jcell_stop { JCELL_STOP_NONE, JCELL_STOP_USER, JCELL_STOP_TIMEOUT };

/* Embedded in its owner, which sets and reads the fields; every string
 * is owned (jcell_clear frees them). */
struct jcell {
	int		 active;
	int		 n;
	char		 msg_id[40];
	int64_t		 start_us;
	int		 got_reply, got_idle;
	char		*reply_status;
	char		*value;
	char		*ename, *evalue, *traceback;
	char		*fp;		/* the out/ fingerprint, when the reply had one */
	enum jcell_stop	 stop;
	int		 fetching;	/* listing or downloading out/ */
	int		 looked;	/* out/ was checked for this cell */
	int		 notes, unnoted;
	int		 figs;
	int		 lost_reply;	/* the connection dropped mid-cell */
	int		 started;	/* the kernel said something about it */
	char		*code;		/* kept until started: it may be sent again */
};

/* Where the cell's output goes. */
struct jcell_cbs {
	/* Text of stream (0 stdout, 1 stderr); p valid during the call. */
	void	(*output)(void *arg, int stream, const char *p, size_t n);
	/* A figure: its PNG in base64, unchecked (the owner decodes it). */
	void	(*image)(void *arg, const char *png_b64);
};

/* Frees the strings and zeroes c. */
void jcell_clear(struct jcell *c);
/* The cell's execute_reply: its status and the out/ fingerprint of
 * user expression fp_name (at most fp_max bytes, else none). */
void jcell_reply(struct jcell *c, const cJSON *content, const char *fp_name, size_t fp_max);
/* One of the cell's other messages (stream, execute_result,
 * display_data, update_display_data, error; others are ignored). */
void jcell_message(struct jcell *c, const char *type, const cJSON *content,
    const struct jcell_cbs *cb, void *arg);
/* Once reply and idle are in: how the cell ended, with *reason a new
 * string or NULL; an error without details gets a generic ename and
 * evalue. timeout_ms: the limit it may have run past. */
enum cell_status jcell_outcome(struct jcell *c, int64_t timeout_ms, char **reason);
/* The result of the cell as it ended at now_us; r's strings point into
 * c (valid until jcell_clear) and reason (borrowed). */
void jcell_result(const struct jcell *c, enum cell_status st, const char *reason, int lost,
    int64_t now_us, struct kernel_result *r);

#endif
