/* kernel_net: a session's egress as the kernel runs it. The proxy
 * (egress.h) on the kernel's loop for the whole session (its byte cap
 * counts across restarts), its socket in the session's folder for the
 * sandbox to bind, the cell each attempt is attributed to, and a note
 * under the cell for each refused or failed attempt (so whoever reads
 * the cell, the model included, learns which setting to change). Knows
 * nothing of bwrap (sandbox.c binds the socket) nor of the protocol.
 *
 * Test seam: when the environment variable TERP_EGRESS_LEDGER names a
 * file when the kernel starts, every ledger event is appended to it as
 * one JSON object per line (phase, verdict, id, time_ms, cell, method,
 * host, port, addr, code, reason, up, down), so the tests can check the
 * ledger through `terp exec` before the notebook shows it. */
#ifndef TERP_KERNEL_NET_H
#define TERP_KERNEL_NET_H

#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "terp/loop.h"

struct egress_event;

#define KERNEL_NET_NOTES	8	/* notes per cell; then one more line */

struct kernel_net_cbs {
	/* Every ledger event, attributed to cell (0: none yet). */
	void (*event)(void *arg, int cell, const struct egress_event *ev);
	/* A line for the cell's stderr, newline included. */
	void (*note)(void *arg, int cell, const char *line);
};

struct kernel_net;

/* A session's egress, not started. allow: NULL-terminated HOST[:PORT]
 * rules (copied); max_up: the bytes-up cap (0: the default), of which
 * sent_before (the session's earlier runs) is spent. Returns NULL with
 * *err on a malformed rule. cb and arg must outlive it. */
struct kernel_net *kernel_net_new(struct loop *l, const char *const *allow,
    uint64_t max_up, uint64_t sent_before, const struct kernel_net_cbs *cb, void *arg,
    char **err);

/* Starts the proxy once, listening on dir/egress.sock (a stale one is
 * replaced), the socket owned by uid (0: left as terp's) with mode 0600.
 * dir must be terp's and not writable by the sandbox. Later calls do
 * nothing. Returns 0, or -1 with *err. */
int kernel_net_start(struct kernel_net *n, const char *dir, uid_t uid, char **err);

/* The socket's host path, for bwrap to bind; NULL before the start. */
const char *kernel_net_socket(const struct kernel_net *n);

/* Attempts from now on belong to cell; the notes are counted anew. */
void kernel_net_cell(struct kernel_net *n, int cell);

/* egress_allow / egress_deny on the running proxy (the notebook's /allow
 * and /deny). Returns 0, or -1 with *err. */
int kernel_net_allow(struct kernel_net *n, const char *spec, char **err);
int kernel_net_deny(struct kernel_net *n, const char *spec, char **err);

/* A ledger event as the TERP_EGRESS_LEDGER line writes it (the fields
 * above): a new object the caller frees. Also what the egress test
 * harness prints. */
cJSON *kernel_net_event_json(const struct egress_event *ev);

/* Stops the proxy (open tunnels end), removes the socket, frees. NULL
 * is a no-op. */
void kernel_net_free(struct kernel_net *n);

#endif
