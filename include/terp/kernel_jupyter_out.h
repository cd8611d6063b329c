/* kernel_jupyter_out: what a cell leaves for the user on a Jupyter
 * server: after the cell, the session folder's out/ is listed and the
 * files new or changed since the last look (kernel_seen.h) are fetched
 * through the contents API into the sink; a figure the kernel displays
 * (image/png) goes there too, as figure-CELL-N.png. Names and sizes from
 * the server are checked before anything is fetched; every problem is
 * one note for the cell. */
#ifndef TERP_KERNEL_JUPYTER_OUT_H
#define TERP_KERNEL_JUPYTER_OUT_H

#include <stdint.h>

#include "terp/kernel_jupyter_rest.h"
#include "terp/kernel_sink.h"

struct jout_opts {
	uint64_t	 artifact_max;	/* a file over it is not fetched */
	int		 out_files_max;	/* entries of a listing looked at */
};

struct jout_cbs {
	/* Whether the fetch is still wanted (the cell runs). */
	int	(*live)(void *arg);
	/* The fetch ended (all fetched, or given up: said). */
	void	(*ended)(void *arg);
	/* A note for the cell, without "terp: " and '\n'. */
	void	(*note)(void *arg, const char *text);
};

struct jout;

/* rest and sink are borrowed (they outlive it). */
struct jout *jout_new(struct jrest *rest, struct kernel_sink *sink,
    const struct jout_opts *o, const struct jout_cbs *cbs, void *arg);
void jout_free(struct jout *j);

/* Lists session/out and fetches what is new; ended is called once the
 * last file came (or at once, from inside a later answer, not here). */
void jout_fetch(struct jout *j, const char *session);
/* Abandons the fetch (the cell ended otherwise): no callback. */
void jout_cancel(struct jout *j);
/* A base64 image/png (from display_data or execute_result) of cell. */
void jout_image(struct jout *j, int cell, const char *b64);

#endif
