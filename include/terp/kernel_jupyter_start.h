/* kernel_jupyter_start: how the Jupyter backend gets a kernel and its
 * WebSocket: the server's URL, token and session folder checked once
 * (jstart_configure), then over the server's REST API, on the loop:
 *
 *   GET /api/kernelspecs (reachable? token? the kernel asked for?) ->
 *   PUT the session folders (terp-<id>/, data/, out/) -> POST
 *   /api/kernels with the session folder as the kernel's cwd, or GET the
 *   kernel to attach to -> the WebSocket to its channels.
 *
 * The handshake on the open socket (kernel_info, the cwd check) and
 * everything after it are the owner's (kernel_jupyter.c). The owner
 * embeds a struct jstart; the sequence reports back through callbacks
 * only, never into the owner's state. Answers carry the jrest
 * generation they were sent under: one of an abandoned sequence (the
 * owner bumped rest->gen) is ignored. */
#ifndef TERP_KERNEL_JUPYTER_START_H
#define TERP_KERNEL_JUPYTER_START_H

#include "terp/kernel_jupyter.h"
#include "terp/kernel_jupyter_rest.h"
#include "terp/loop.h"
#include "terp/ws.h"

/* Where the sequence is. The owner moves step past JSTART_WS for its
 * handshake (JSTART_INFO, JSTART_CWD) and back to JSTART_NONE. */
enum jstart_step {
	JSTART_NONE,
	JSTART_PROBE,
	JSTART_MKDIR,
	JSTART_ATTACH,	/* GET /api/kernels/<id> */
	JSTART_CREATE,
	JSTART_WS,	/* the socket is being opened */
	JSTART_INFO,	/* kernel_info_request sent */
	JSTART_CWD,	/* the silent cwd check sent */
};

struct jstart_cbs {
	/* A step failed: msg is one line for the user (borrowed). The owner
	 * tears down (jstart_drop_ws included) and reports the kernel dead. */
	void	(*dead)(void *arg, const char *msg);
	/* The server no longer has the kernel (culled, or the server
	 * restarted): kernel_id is already forgotten and a new kernel is
	 * started right after this returns; the owner ends or requeues its
	 * running cell and marks the state lost. */
	void	(*gone)(void *arg);
	/* The kernel's socket (opened with arg as the owner's): its open,
	 * message, dropped and closed. closed must forget st->ws and, while
	 * step is JSTART_WS and the upgrade got an HTTP answer, hand it to
	 * jstart_ws_refused. */
	struct ws_cbs ws;
};

/* Embedded in its owner: jstart_init, jstart_configure once, then
 * jstart_begin for each start. The owner may read every field and sets
 * step, reconnecting and kernel_dead as said. */
struct jstart {
	struct loop	*loop;		/* borrowed */
	struct jrest	*rest;		/* borrowed: the server and its calls */
	const struct jupyter_opts *o;	/* borrowed */
	const struct jstart_cbs *cb;	/* borrowed */
	void		*arg;		/* handed to every callback */
	char		*session;	/* owned: "terp-<id>", the session folder */

	char		*kernel_id;	/* owned; NULL: none known (create one) */
	struct ws	*ws;		/* owned: the kernel's channels, or NULL */
	char		 ws_session[40];	/* the socket's session id */
	enum jstart_step step;
	int		 reconnecting;	/* the owner reopens a dropped socket */
	int		 kernel_dead;	/* the server said "dead" (set by the owner) */
};

/* Before first use; cb and arg are borrowed. */
void jstart_init(struct jstart *st, struct loop *l, struct jrest *rest,
    const struct jupyter_opts *o, const struct jstart_cbs *cb, void *arg);
/* Checks o's URL, token, session name and kernel id (to attach to) and
 * sets rest's base, where, auth and http client, the session folder's
 * name and the socket's session id. Returns 0, or -1 with *err (caller
 * frees); rest's base may be set even then (the owner calls this while
 * it is NULL). */
int jstart_configure(struct jstart *st, char **err);
/* The whole sequence: probe, folders, then attach or create, socket. */
void jstart_begin(struct jstart *st);
/* Single steps, for a reconnect (attach), a kernel the server lost
 * (create) and a restart (open_ws). */
void jstart_attach(struct jstart *st);
void jstart_create(struct jstart *st);
void jstart_open_ws(struct jstart *st);
/* The socket's upgrade was answered with e->http_status (not 101) while
 * step was JSTART_WS: a kernel gone while reconnecting is replaced
 * (gone, then create), anything else is dead with one line. */
void jstart_ws_refused(struct jstart *st, const struct ws_end *e);
/* Frees the socket, if any (no closed callback). */
void jstart_drop_ws(struct jstart *st);
/* Forgets the kernel id (the next start creates a kernel). */
void jstart_forget(struct jstart *st);
/* DELETE of kernel id on the server, waiting at most 3 s: the one call
 * that blocks, for the end of terp (no kernel left running). Nothing
 * when id is NULL, the server unknown or o->keep_kernel. */
void jstart_delete_sync(const struct jstart *st, const char *id);
/* Frees what it owns (the socket without a callback, the kernel id, the
 * session folder's name). */
void jstart_free(struct jstart *st);

#endif
