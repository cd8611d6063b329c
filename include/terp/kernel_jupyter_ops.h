/* kernel_jupyter_ops: the Jupyter backend's entry in the registry
 * (kernel_backend.h): its struct kernel_ops over kernel_jupyter.h, and
 * the builder that turns kernel_opts into jupyter_opts (the token from
 * the environment or a command, a resumed session's folder and kernel). */
#ifndef TERP_KERNEL_JUPYTER_OPS_H
#define TERP_KERNEL_JUPYTER_OPS_H

#include "terp/kernel_backend.h"
#include "terp/kernel_types.h"
#include "terp/loop.h"

/* Builds the backend into kb (ops, object, isolation, notes, the
 * options it keeps in kb->opts and its token in kb->token); o, cbs and
 * arg outlive it. Connects nothing. Returns 0, or -1 with a one-line
 * *err (the token command failed): kb is then untouched but for what
 * kernel_backend_free frees. */
int kernel_jupyter_build(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb, char **err);

#endif
