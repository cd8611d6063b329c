/* kernel_aca_ops: the session pool backend's entry in the registry
 * (kernel_backend.h): its struct kernel_ops over kernel_aca.h, the
 * builder that turns kernel_opts into aca_opts, and its offline check. */
#ifndef TERP_KERNEL_ACA_OPS_H
#define TERP_KERNEL_ACA_OPS_H

#include "terp/kernel_backend.h"
#include "terp/kernel_types.h"
#include "terp/loop.h"

/* Checks an aca:<endpoint> backend without the network: the endpoint's
 * form and that a token can be had. Returns 0, or -1 with *err. */
int kernel_aca_check(const struct kernel_opts *o, char **err);

/* Builds the backend into kb (ops, object, isolation, note, its options
 * in kb->opts); o, cbs and arg outlive it. Connects nothing. */
void kernel_aca_build(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb);

#endif
