/* journal_priv: what the journal's two files share and nothing else may
 * use: the writer (journal.c) and the loader that reads a journal back
 * (journal_load.c). */
#ifndef TERP_JOURNAL_PRIV_H
#define TERP_JOURNAL_PRIV_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "terp/kernel.h"
#include "terp/notebook.h"

/* A request body shares its beginning with the one before (the
 * conversation only grew), so a "sent" record keeps that many bytes of
 * the previous body ("keep") and holds the rest ("dt" or "bt"): a
 * turn writes what is new, not the whole conversation again. A delta
 * below this many shared bytes is not worth it: the body goes whole. */
#define SENT_KEEP_MIN	256
#define REMOTE_MAX	1024	/* a "remote" line's fields, in bytes */

/* The sandbox's states by name: a journal must outlive a reordering of
 * enum kernel_state. */
static const char *const kstate_names[] = {
	[KERNEL_STOPPED] = "stopped", [KERNEL_STARTING] = "starting",
	[KERNEL_LOADING] = "loading", [KERNEL_READY] = "ready",
	[KERNEL_BUSY] = "busy", [KERNEL_DEAD] = "dead",
};

struct lines {
	int	 fd;
	char	*buf;
	size_t	 len, cap, off;
	int	 eof, toolong;
};

/* journal_load.c (the writer calls down into the loader, never the
 * other way) */
void journal_state_lost(const struct notebook *nb, int *live_from, int *from,
    int *to, int k);
int journal_next_line(struct lines *ls, char **line, size_t *len);
/* The sent records of a journal in order (journal_load.c's comment);
 * owns its records. Zero-initialised is empty. */
struct sent_chain {
	struct sent_rec	*r;
	int		 n, cap;
};
int sent_chain_add(struct sent_chain *sc, const cJSON *o);
/* Request i's (0 <= i < n) size and description (owned by the chain). */
size_t sent_chain_len(const struct sent_chain *sc, int i, const char **what);
char *sent_chain_body(const struct sent_chain *sc, int i, size_t *len);
void sent_chain_free(struct sent_chain *sc);

#endif
