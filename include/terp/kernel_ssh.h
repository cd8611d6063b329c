/* kernel_ssh: the Python session in terp's own sandbox on another
 * machine, through the system's ssh and `terp serve` there (serve.h).
 * One backend of kernel_backend.h. */
#ifndef TERP_KERNEL_SSH_H
#define TERP_KERNEL_SSH_H

#include "terp/kernel_types.h"
#include "terp/kernel_backend.h"
#include "terp/loop.h"

/* Checks an ssh://[user@]host[:port] spec. Returns 0, or -1 with a
 * one-line *err (caller frees). */
int kernel_ssh_check(const char *spec, char **err);

/* Whether a data file argument names a file on the remote: NAME:/path
 * (no '/' before the colon). The caller stages it only when no local
 * file has that name. */
int kernel_ssh_remote_path(const char *arg);

/* Builds the backend into kb (ops, object, isolation line); o, cbs and
 * arg outlive it. Connects nothing: kernel_start does. */
void kernel_ssh_build(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb);

#endif
