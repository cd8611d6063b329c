/* prompt: the texts terp writes for the model to read: the system
 * prompt (the rules, the session's Python, the network, the data
 * files), the tool result of a finished cell, and the note on the cells
 * the user ran by hand since the model's last turn. The agent decides
 * when each is sent; this module only writes them. It reads the
 * notebook and the kernel, and writes to neither except the told_model
 * mark of the hand-run cells it tells. Private to src/core. */
#ifndef TERP_CORE_PROMPT_H
#define TERP_CORE_PROMPT_H

#include <stddef.h>

#include "terp/buf.h"
#include "terp/kernel.h"
#include "terp/notebook.h"

/* The data files' part of the system prompt, made again only when the
 * set of files changed (describing a file reads it: not every request).
 * Owned by the caller, zeroed to start; prompt_files_free frees. */
struct prompt_files {
	char	*desc;		/* the lines, or NULL before the first */
	char	*key;		/* the files they describe */
};

void prompt_files_free(struct prompt_files *pf);

/* The built-in system prompt for the session of k, with the notebook's
 * data files and the hosts allowed at the start (NULL-terminated, or
 * NULL: the network is off). It stays the same for the whole session
 * unless the files change (a changing system prompt defeats the
 * providers' caches). Returns a new string. */
char *prompt_system(struct prompt_files *pf, struct notebook *nb,
    struct kernel *k, const char *const *allow_hosts);

/* The text the model gets for the finished cell c of nb: status, the
 * egress summary, outputs, value, error, the files it copied out; cut
 * to limit bytes, saying how much was cut. Returns a new string. */
char *prompt_cell_result(struct notebook *nb, const struct cell *c,
    size_t limit);

/* Appends to b the cells the user ran by hand that the model was not
 * told of yet (each with its result, cut to limit), and marks them
 * told. Nothing when there are none. Looks from cell from on (1: all)
 * and returns where the next call may start: every cell before it is
 * told or the model's (a long session does not walk all its cells for
 * every question). */
int prompt_hand_cells(struct notebook *nb, size_t limit, int from,
    struct buf *b);

#endif
