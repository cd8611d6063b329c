/* agentfiles: the files of an agent's session as the notebook records
 * them: the output files a resumed session's earlier runs made (so that
 * a re-run cell replaces them), and the record of a data file staged
 * into the sandbox. Reads and writes the notebook only; the agent
 * stages the files and tells the model. Private to src/core. */
#ifndef TERP_CORE_AGENTFILES_H
#define TERP_CORE_AGENTFILES_H

#include "terp/kernel_types.h"
#include "terp/notebook.h"

/* The files the notebook's artifacts copied into out_dir, the last size
 * of each: a new array (caller frees; names borrowed from nb) and its
 * length in *n, or NULL and 0 when there are none. */
struct kernel_own_file *agentfiles_own(const struct notebook *nb,
    const char *out_dir, int *n);
/* Records the data file at path, staged as sandbox_path, in nb. told:
 * loaded now by the user (fingerprinted afresh); else a file the
 * notebook knew keeps the fingerprint it had at the start. */
void agentfiles_record(struct notebook *nb, const char *path,
    const char *sandbox_path, int told);

#endif
