/* kernel_jupyter_put: one data file up to a Jupyter server's session
 * folder (data/NAME) through the contents API: read with pread (the
 * file may be large), base64 in one PUT, or in chunks ("chunk": 1, 2,
 * ..., -1) past JPUT_CHUNK bytes so that no request holds the whole
 * file. Its owner embeds it (an answer after a stop finds it inactive
 * and is ignored, as is one of an older request generation). */
#ifndef TERP_KERNEL_JUPYTER_PUT_H
#define TERP_KERNEL_JUPYTER_PUT_H

#include <stdint.h>

#include "terp/kernel_jupyter_rest.h"

#define JPUT_ANSWER_MAX	(1u << 20)	/* the server's answer to a PUT */

/* The upload ended: problem is NULL (it went up) or one line, which the
 * callee frees. */
typedef void (*jput_done_fn)(void *arg, char *problem);

struct jput {
	struct jrest	*rest;
	char		*session, *host_path, *name;
	jput_done_fn	 done;
	void		*arg;
	int		 active;
	int		 up_fd;
	uint64_t	 up_size, up_off;
	int		 up_chunk;	/* 0: one PUT; 1, 2...: chunks; -1: the last */
};

/* Before first use. */
void jput_init(struct jput *j);
/* Uploads host_path as session/data/name (strings copied); done is
 * called once, perhaps from inside this call. */
void jput_start(struct jput *j, struct jrest *rest, const char *session,
    const char *host_path, const char *name, jput_done_fn done, void *arg);
/* Abandons it (its requests are the owner's to cancel): no callback. */
void jput_stop(struct jput *j);

#endif
