/* notebook: the one model of a session's state (DESIGN.md): the
 * conversation as sent to the model, the cells with their outputs, and
 * the artifacts. Frontends, persistence and export read it; nothing else
 * keeps a second copy. Pure data: no I/O. */
#ifndef TERP_NOTEBOOK_H
#define TERP_NOTEBOOK_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "terp/netlog.h"
#include "terp/outcap.h"

enum cell_author { CELL_BY_MODEL, CELL_BY_USER };

enum cell_status {
	CELL_PENDING,		/* queued, not started */
	CELL_RUNNING,
	CELL_OK,
	CELL_ERROR,		/* raised an exception */
	CELL_TIMEOUT,
	CELL_INTERRUPTED,
	CELL_CRASHED,		/* the Python process died; state lost */
};

/* Bounded per-stream capture sizes: head and tail each. */
#define CELL_OUT_HEAD	(256 * 1024)
#define CELL_OUT_TAIL	(64 * 1024)

struct cell {
	int			 n;		/* 1-based, as shown: [n] */
	enum cell_author	 author;
	char			*code;
	char			*tool_call_id;	/* the model's call id, or NULL */
	enum cell_status	 status;
	struct outcap		 out[2];	/* 0 = stdout, 1 = stderr (raw bytes) */
	char			*value;		/* repr of the trailing expression */
	char			*ename, *evalue, *traceback;
	char			*reason;	/* timeout/crash explanation */
	int			 state_lost;	/* the session restarted */
	int64_t			 started_ms;	/* monotonic */
	int64_t			 duration_ms;
	int64_t			 duration_us;	/* this run only; not saved */
	int			 nartifacts;
	int			 told_model;	/* hand-run cell already reported */
};

struct artifact {
	int		 cell;		/* the cell that made it */
	char		*name;		/* sanitized name, relative to out/ */
	char		*path;		/* host path of the copy */
	uint64_t	 bytes;
};

struct usage {
	long	input_tokens, output_tokens, cached_tokens;
};

struct notebook;

struct notebook *notebook_new(void);
void notebook_free(struct notebook *nb);

/* Adds a cell with the next number; the notebook owns it and the
 * pointer stays valid for the notebook's life. code and tool_call_id
 * (may be NULL) are copied. */
struct cell *notebook_add_cell(struct notebook *nb, enum cell_author who,
    const char *code, const char *tool_call_id);
/* The cell numbered n, or NULL. */
struct cell *notebook_cell(const struct notebook *nb, int n);
int notebook_ncells(const struct notebook *nb);

/* Records an artifact; strings are copied. Returns the stored one. */
const struct artifact *notebook_add_artifact(struct notebook *nb, int cell,
    const char *name, const char *path, uint64_t bytes);
int notebook_nartifacts(const struct notebook *nb);
const struct artifact *notebook_artifact(const struct notebook *nb, int i);

/* The conversation in terp's neutral form (an array the providers
 * encode): {"role":"user","content":S}
 *           {"role":"assistant","content":S|null,
 *            "tool_calls":[{"id":S,"name":S,"arguments":S}]}
 *           {"role":"tool","tool_call_id":S,"content":S,"is_error":B}
 * Owned by the notebook. */
cJSON *notebook_messages(const struct notebook *nb);
/* Appends msg; the notebook takes ownership. */
void notebook_add_message(struct notebook *nb, cJSON *msg);

void notebook_add_usage(struct notebook *nb, const struct usage *u);
const struct usage *notebook_usage(const struct notebook *nb);

/* What left the machine: each model request body as sent. */
void notebook_add_sent(struct notebook *nb, const char *what, const char *body,
    size_t len);
int notebook_nsent(const struct notebook *nb);
/* The i-th request: description and body (owned by the notebook). */
const char *notebook_sent(const struct notebook *nb, int i, const char **what,
    size_t *len);

/* The egress ledger: every attempt the session's proxy saw (netlog.h).
 * An entry of an attempt still open (same id) is updated in place;
 * others are appended, at most NOTEBOOK_NET_MAX, then only counted.
 * a is copied. Returns the stored entry (valid until the next add), or
 * NULL past the cap. */
#define NOTEBOOK_NET_MAX	20000
const struct net_attempt *notebook_add_net(struct notebook *nb,
    const struct net_attempt *a);
/* The entries in order (owned by the notebook), *n of them, and how
 * many the cap left out (dropped may be NULL). */
const struct net_attempt *notebook_nets(const struct notebook *nb, size_t *n,
    uint64_t *dropped);

const char *cell_status_name(enum cell_status s);
/* The cell's stream (0 stdout, 1 stderr) as text: a new string. */
char *cell_output(const struct cell *c, int stream, size_t *len);

#endif
