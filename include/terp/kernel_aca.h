/* kernel_aca: the Python session in an Azure Container Apps dynamic
 * session pool (PROTOCOLS.md §7) instead of the local sandbox, behind
 * the local kernel's API (kernel.h): the same callbacks, cells queued and
 * answered in order, exactly once each, everything driven by the loop.
 *
 * What differs from the local kernel, because the pool's API has no
 * streaming and no interrupt:
 * - a cell's output arrives when it ends (said once per session, as a
 *   terp note on stream 1 of the first cell);
 * - aca_interrupt abandons the wait: the cell ends interrupted and the
 *   remote cell may still run;
 * - the session lives in the pool under a random identifier
 *   (aca_identifier, for the journal only: never shown); the pool
 *   recycles it after its cooldown, which terp detects with a marker
 *   variable it sets and checks before every cell, and reports as lost
 *   state (like the idle stop);
 * - data files are uploaded to /mnt/data; files the code writes there
 *   are listed after each cell and the new or changed ones downloaded as
 *   artifacts (aca_note says so to the model).
 *
 * The bearer token comes from a command (cached until shortly before it
 * expires) or an environment variable. It is sent in the Authorization
 * header and nowhere else: no callback, message or file ever holds it.
 * Everything the pool returns is treated as hostile: bounded sizes,
 * checked JSON, terp-chosen file names, caps per cell and per session. */
#ifndef TERP_KERNEL_ACA_H
#define TERP_KERNEL_ACA_H

#include <stdint.h>

#include "terp/kernel_aca_opts.h"
#include "terp/kernel_aca_parse.h"
#include "terp/kernel_types.h"
#include "terp/loop.h"

struct aca;

/* A session bound to loop l; opts' strings and cbs must outlive it.
 * Does not connect. The identifier is chosen here (opts->identifier or
 * a random UUID). */
struct aca *aca_new(struct loop *l, const struct aca_opts *opts,
    const struct kernel_cbs *cbs, void *arg);
/* Cancels every transfer, kills a running token command and frees. No
 * callback fires; not to be called from one. The remote session stays
 * in the pool until its cooldown. */
void aca_free(struct aca *a);

/* Connects: gets a token, checks the session (the marker), uploads the
 * data files. Reports KERNEL_STARTING, then KERNEL_READY, or KERNEL_DEAD
 * with one line saying what failed and how to fix it. Returns -1 with
 * *err only for what needs no network (bad options, the output folder). */
int aca_start(struct aca *a, char **err);
/* Stops talking to the pool (the remote session is kept until its
 * cooldown): the running cell ends interrupted (the remote cell may
 * still run), queued cells end unrun, KERNEL_STOPPED is reported with
 * reason (copied). The next aca_run reconnects to the same identifier
 * and reports whether the session kept its state. */
void aca_stop(struct aca *a, const char *reason);
/* Queues code as cell n; the result callback fires exactly once for it.
 * Reconnects when stopped or dead. Returns 0, or -1 with *err. */
int aca_run(struct aca *a, int n, const char *code, char **err);
/* Abandons the wait for the running cell: it ends CELL_INTERRUPTED, the
 * reason says the remote cell may still run. Queued cells go on. While
 * connecting with cells waiting, gives up the connect instead: they end
 * interrupted and KERNEL_STOPPED is reported (the next cell connects). */
void aca_interrupt(struct aca *a);
/* A fresh session: a new identifier (read aca_identifier again), the
 * running cell ends interrupted and queued ones unrun, the state is
 * lost and reported so. The old remote session lingers until its
 * cooldown. Returns 0, or -1 with *err. */
int aca_restart(struct aca *a, char **err);
/* Uploads another data file (queued behind the cells queued so far).
 * Checks it first (a regular file within upload_max) and returns the
 * path the code sees, /mnt/data/NAME (new string), or NULL with a
 * one-line *err. A failed upload is told in the next cell's stderr. */
char *aca_stage(struct aca *a, const char *host_path, char **err);

enum kernel_state aca_state(const struct aca *a);
/* 1 while a cell runs or waits in the queue. */
int aca_busy(const struct aca *a);
/* The session identifier, owned by a. For the journal only (so that
 * --resume reaches the same session): never print it. It changes on
 * aca_restart. */
const char *aca_identifier(const struct aca *a);
/* What the model must know about paths here (a static string). */
const char *aca_note(void);

#endif
