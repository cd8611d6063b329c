/* kernel_local: the local backend, one bwrap sandbox on this machine
 * running terp's driver (kernel/local/). It fills struct kernel_ops like
 * every other backend; kernel.h's dispatcher reaches it only through
 * kernel_local_ops. The klocal_* functions are that table's entries, with
 * kernel.h's contracts. */
#ifndef TERP_KERNEL_LOCAL_H
#define TERP_KERNEL_LOCAL_H

#include "terp/kernel_backend.h"
#include "terp/kernel_types.h"
#include "terp/loop.h"

struct klocal;

extern const struct kernel_ops kernel_local_ops;

/* A new local session (nothing started); opts must outlive it. The
 * kernel_backend that holds it frees it through kernel_local_ops. */
struct klocal *klocal_new(struct loop *l, const struct kernel_opts *opts,
    const struct kernel_cbs *cbs, void *arg);
/* Whether this machine can run the sandbox at all (bwrap, namespaces);
 * 0, or -1 with a one-line *err. */
int klocal_probe(const struct kernel_opts *opts, char **err);

void klocal_free(struct klocal *k);
int klocal_start(struct klocal *k, char **err);
void klocal_stop(struct klocal *k, const char *reason);
int klocal_run(struct klocal *k, int n, const char *code, char **err);
void klocal_interrupt(struct klocal *k);
int klocal_reset(struct klocal *k, char **err);
int klocal_restart(struct klocal *k, char **err);
char *klocal_stage(struct klocal *k, const char *host_path, char **err);
enum kernel_state klocal_state(const struct klocal *k);
int klocal_busy(const struct klocal *k);
const char *klocal_python_info(const struct klocal *k);
int klocal_python_charts(const struct klocal *k);
char *klocal_python_label(const struct klocal *k);
int klocal_egress_allow(struct klocal *k, const char *spec, char **err);
int klocal_egress_deny(struct klocal *k, const char *spec, char **err);
void klocal_set_input(struct klocal *k, int allow);
/* The width the exec commands from now on ask values at (0: none). */
void klocal_set_width(struct klocal *k, int cols);
int klocal_input_reply(struct klocal *k, int cell, const char *line);

#endif
