/* journal: the crash-safe record of a session. Every notebook change is
 * appended as one JSON line with one write(2), so a killed terp (even
 * kill -9) loses nothing written. Against power loss the file is also
 * fdatasync'ed at a question's edges (question, answer, error, idle) and
 * at the close, each only when a line was written since the last sync;
 * not at every cell: a sync costs ~0.1 ms here and a turn's budget is
 * small.
 * The loader replays the lines into a fresh notebook. Where the file
 * lives and its lock are store.c's; data-file fingerprints datafile.c's. */
#include "terp/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/datafile.h"
#include "terp/digest.h"
#include "terp/json_text.h"
#include "terp/kernel.h"
#include "terp/netlog.h"
#include "terp/pipindex.h"
#include "terp/sanitize.h"
#include "terp/store.h"
#include "terp/util.h"

/* 2: kernel states by name, questions with their notes, replies and
 * tool results as records of their own (1: messages re-serialised). */
#define JOURNAL_VERSION	2
/* The longest line the loader accepts; longer ones count as corrupt. */
#define LINE_MAX_BYTES	(16u << 20)
/* A request's new bytes up to this size are kept; more by hash. */
#define SENT_BODY_MAX	(64u << 10)
/* A request body shares its beginning with the one before (the
 * conversation only grew), so a "sent" record keeps that many bytes of
 * the previous body ("keep") and holds the rest ("dt" or "bt"): a
 * turn writes what is new, not the whole conversation again. A delta
 * below this many shared bytes is not worth it: the body goes whole. */
#define SENT_KEEP_MIN	256

struct journal {
	char		 *id, *dir, *path;
	int		  fd;
	struct notebook	 *nb;
	uint64_t	(*logged)[2];	/* per cell, per stream: bytes written */
	int		  live_from, replay_from, replay_to;
	int		  nlogged;
	/* 1 + the index of the last request written whole or as a delta
	 * by this journal (what the next one may keep bytes of); 0: none */
	int		  sent_base;
	int		  unsynced;	/* lines written since the last sync */
	char		 *failed;
	char		 *remote;	/* the last "remote" line: "SANDBOX\nSESSION" */
};

static void
fail(struct journal *j, const char *what)
{
	if (j->failed == NULL)
		j->failed = xasprintf("journal %s: %s: %s", j->path, what,
		    strerror(errno));
}

/* fdatasyncs what was written since the last sync, if anything: a
 * sync with nothing new (the close right after an answer's) costs a
 * flush of the disk's cache for no durability. Returns 0 or -1. */
static int
sync_now(struct journal *j)
{
	if (j->fd < 0 || !j->unsynced)
		return 0;
	if (fdatasync(j->fd) < 0) {
		fail(j, "fdatasync");
		return -1;
	}
	j->unsynced = 0;
	return 0;
}

/* Writes o as one line with one write(2) (write_all only loops on a
 * short write) and frees it; syncs when asked. */
static int
put(struct journal *j, cJSON *o, int sync)
{
	struct buf b;
	int rc = 0;

	cJSON_AddNumberToObject(o, "ts", (double)wall_ms());
	buf_init(&b, (size_t)-1 / 2);
	if (json_text(&b, o) < 0 || buf_addc(&b, '\n') < 0)
		fatal("out of memory (journal line)");
	cJSON_Delete(o);
	if (j->fd >= 0)
		j->unsynced = 1;	/* a short write too: what went, syncs */
	if (j->fd < 0 || write_all(j->fd, b.data, b.len) < 0) {
		fail(j, "write");
		rc = -1;
	} else if (sync && sync_now(j) < 0) {
		rc = -1;
	}
	buf_free(&b);
	return rc;
}

#define JOURNAL_EGRESS_MAX	1000	/* /allow and /deny kept for a resume */

static cJSON *
rec(const char *type)
{
	cJSON *o = cJSON_CreateObject();
	if (o == NULL)
		fatal("out of memory (cJSON)");
	/* "t" first: the lister skips lines by their prefix */
	cJSON_AddStringToObject(o, "t", type);
	return o;
}

static void
add_str(cJSON *o, const char *k, const char *v)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
}

/* Valid UTF-8 without NUL travels as a JSON string ("d"), anything
 * else as base64 ("b"), so the bytes come back exactly. */
static int
utf8_clean(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned cp;
		size_t k;
		if ((unsigned char)p[i] < 0x80) {
			if (p[i] == '\0')
				return 0;
			i++;
			continue;
		}
		if ((k = utf8_decode(p + i, n - i, &cp)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

static void
add_bytes_as(cJSON *o, const char *p, size_t n, const char *d_key,
    const char *b_key)
{
	char *s;

	if (utf8_clean(p, n)) {
		s = xstrndup(p, n);
		cJSON_AddStringToObject(o, d_key, s);
	} else {
		s = base64_encode(p, n, NULL);
		cJSON_AddStringToObject(o, b_key, s);
	}
	free(s);
}

static void
add_bytes(cJSON *o, const char *p, size_t n)
{
	add_bytes_as(o, p, n, "d", "b");
}

/* The bytes of a d_key (text) or b_key (base64) member: a new buffer,
 * or NULL. */
static char *
get_bytes_as(const cJSON *o, const char *d_key, const char *b_key, size_t *len)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, d_key);
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, b_key);

	if (cJSON_IsString(d)) {
		*len = strlen(d->valuestring);
		return xstrndup(d->valuestring, *len);
	}
	if (cJSON_IsString(b))
		return base64_decode(b->valuestring, strlen(b->valuestring), len);
	return NULL;
}

/* The bytes of a "d" or "b" member. */
static char *
get_bytes(const cJSON *o, size_t *len)
{
	return get_bytes_as(o, "d", "b", len);
}

static const char *
jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double
jnum(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static char *
jdup(const cJSON *o, const char *k)
{
	const char *s = jstr(o, k);
	return s ? xstrdup(s) : NULL;
}

/* The sandbox's states by name: a journal must outlive a reordering of
 * enum kernel_state. */
static const char *const kstate_names[] = {
	[KERNEL_STOPPED] = "stopped", [KERNEL_STARTING] = "starting",
	[KERNEL_LOADING] = "loading", [KERNEL_READY] = "ready",
	[KERNEL_BUSY] = "busy", [KERNEL_DEAD] = "dead",
};

/* Journals of version 1 wrote the state as the enum's value of those
 * days; this table is that order, fixed forever. */
static const enum kernel_state kstate_v1[] = {
	KERNEL_STOPPED, KERNEL_STARTING, KERNEL_LOADING, KERNEL_READY,
	KERNEL_BUSY, KERNEL_DEAD,
};

static const char *
kstate_name(enum kernel_state st)
{
	if ((size_t)st < sizeof kstate_names / sizeof kstate_names[0] &&
	    kstate_names[st] != NULL)
		return kstate_names[st];
	return "unknown";
}

/* A kernel record's state: by name, or a version 1 ordinal. -1 when
 * neither. */
static int
kstate_parse(const cJSON *v)
{
	if (cJSON_IsString(v)) {
		for (size_t i = 0; i < sizeof kstate_names / sizeof kstate_names[0]; i++)
			if (kstate_names[i] && strcmp(v->valuestring, kstate_names[i]) == 0)
				return (int)i;
		return -1;
	}
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble < (double)(sizeof kstate_v1 / sizeof kstate_v1[0]))
		return (int)kstate_v1[(int)v->valuedouble];
	return -1;
}

static uint64_t *
logged(struct journal *j, int cell)
{
	if (cell < 1)
		return NULL;
	if (cell > j->nlogged) {
		int n = cell + 16;
		j->logged = xrealloc(j->logged, (size_t)n * sizeof *j->logged);
		memset(j->logged + j->nlogged, 0,
		    (size_t)(n - j->nlogged) * sizeof *j->logged);
		j->nlogged = n;
	}
	return j->logged[cell - 1];
}

/* The Python state of cells live_from..k is gone: remember that
 * segment as the one a replay rebuilds, if a cell in it succeeded. One
 * where every cell failed built nothing (`/reset`, a NameError,
 * `/restart`): the segment before it stays the one to rebuild. */
static void
state_lost(const struct notebook *nb, int *live_from, int *from, int *to, int k)
{
	int built = 0;

	for (int i = *live_from; i <= k && !built; i++) {
		const struct cell *c = notebook_cell(nb, i);
		built = c != NULL && c->status == CELL_OK;
	}
	if (built) {
		*from = *live_from;
		*to = k;
	}
	if (k >= *live_from)
		*live_from = k + 1;
}

/* Output is written as it comes while the cell's stream is within the
 * notebook's head; past it nothing, until the result brings the tail
 * the notebook kept. So a cell that prints 2 GB costs head+tail. */
static void
put_output(struct journal *j, const struct nb_change *ch)
{
	int s = ch->stream;
	uint64_t *lg = logged(j, ch->cell->n);
	size_t max = ch->cell->out[s].head_max, n = ch->len;
	cJSON *o;

	if (lg == NULL || lg[s] >= max)
		return;
	if (lg[s] + n > max)
		n = (size_t)(max - lg[s]);
	lg[s] += n;
	o = rec("out");
	cJSON_AddNumberToObject(o, "c", ch->cell->n);
	cJSON_AddNumberToObject(o, "s", s);
	add_bytes(o, ch->p, n);
	put(j, o, 0);
}

static void
put_result(struct journal *j, const struct cell *c)
{
	cJSON *o = rec("result"), *tails = NULL;

	cJSON_AddNumberToObject(o, "c", c->n);
	cJSON_AddStringToObject(o, "status", cell_status_name(c->status));
	add_str(o, "value", c->value);
	add_str(o, "ename", c->ename);
	add_str(o, "evalue", c->evalue);
	add_str(o, "traceback", c->traceback);
	add_str(o, "reason", c->reason);
	if (c->state_lost)
		cJSON_AddTrueToObject(o, "state_lost");
	cJSON_AddNumberToObject(o, "ms", (double)c->duration_ms);
	for (int s = 0; s < 2; s++) {
		const struct outcap *oc = &c->out[s];
		char *tail;
		cJSON *t;

		if (oc->total <= oc->head_len)
			continue;
		tail = xmalloc(oc->tail_len + 1);
		for (size_t i = 0; i < oc->tail_len; i++)
			tail[i] = oc->tail[(oc->tail_start + i) % oc->tail_max];
		t = cJSON_CreateObject();
		cJSON_AddNumberToObject(t, "s", s);
		cJSON_AddNumberToObject(t, "total", (double)oc->total);
		add_bytes(t, tail, oc->tail_len);
		free(tail);
		if (tails == NULL)
			tails = cJSON_AddArrayToObject(o, "tails");
		cJSON_AddItemToArray(tails, t);
	}
	put(j, o, 0);
}

/* A sent record's body, or the line that stands for one not kept.
 * prev (prev_len bytes, NULL when unknown) is what the request before
 * read back as, n the number of requests read before this one: a
 * delta ("keep") applies only when the record says it is request n
 * (a record lost in between yields no wrong body) and keeps at least
 * SENT_KEEP_MIN bytes, more than any stand-in line holds, so a delta
 * is never applied on a stand-in. New string. */
static char *
sent_body(const cJSON *o, int n, const char *prev, size_t prev_len, int *whole,
    size_t *len)
{
	const cJSON *keep = cJSON_GetObjectItemCaseSensitive(o, "keep");
	char *p, *tail;
	size_t k, tlen;

	*whole = 0;
	if (keep == NULL) {
		if ((p = get_bytes(o, len)) != NULL) {
			*whole = 1;
			return p;
		}
		p = xasprintf("(%.0f bytes, sha256 %.64s: not kept in the journal)",
		    jnum(o, "len", 0), jstr(o, "sha256") ? jstr(o, "sha256") : "?");
		*len = strlen(p);
		return p;
	}
	k = cJSON_IsNumber(keep) && keep->valuedouble >= 0 ?
	    (size_t)keep->valuedouble : SIZE_MAX;
	if (prev == NULL || k < SENT_KEEP_MIN || k > prev_len ||
	    jnum(o, "n", -1) != (double)n ||
	    (tail = get_bytes_as(o, "dt", "bt", &tlen)) == NULL ||
	    tlen > LINE_MAX_BYTES) {
		p = xasprintf("(%.0f bytes: the request before it is not in the "
		    "journal)", jnum(o, "len", 0));
		*len = strlen(p);
		return p;
	}
	p = xmalloc(k + tlen + 1);
	memcpy(p, prev, k);
	memcpy(p + k, tail, tlen);
	p[k + tlen] = '\0';
	*len = k + tlen;
	*whole = 1;
	free(tail);
	return p;
}

/* The bytes a and b begin with alike, cut back to the start of a UTF-8
 * sequence so both parts stay text. */
static size_t
common_prefix(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen, i = 0;

	/* a page at a time (memcmp's vector loop: the bodies grow with the
	 * conversation, the prefix is most of them), then word by word,
	 * then byte by byte */
	while (i + 4096 <= n && memcmp(a + i, b + i, 4096) == 0)
		i += 4096;
	while (i + sizeof(uint64_t) <= n && memcmp(a + i, b + i, sizeof(uint64_t)) == 0)
		i += sizeof(uint64_t);
	while (i < n && a[i] == b[i])
		i++;
	while (i > 0 && i < blen && ((unsigned char)b[i] & 0xc0) == 0x80)
		i--;
	return i;
}

static void
put_sent(struct journal *j, const struct nb_change *ch)
{
	const char *what, *prev = NULL;
	unsigned char d[32];
	char hex[65];
	struct sha256 h;
	size_t prev_len = 0, keep = 0;
	cJSON *o = rec("sent");

	notebook_sent(j->nb, ch->sent, &what, NULL);
	add_str(o, "what", what);
	cJSON_AddNumberToObject(o, "len", (double)ch->len);
	if (j->sent_base == ch->sent && ch->sent > 0)
		prev = notebook_sent(j->nb, ch->sent - 1, NULL, &prev_len);
	if (prev != NULL)
		keep = common_prefix(prev, prev_len, ch->p, ch->len);
	if (keep >= SENT_KEEP_MIN && ch->len - keep <= SENT_BODY_MAX) {
		cJSON_AddNumberToObject(o, "n", ch->sent);
		cJSON_AddNumberToObject(o, "keep", (double)keep);
		add_bytes_as(o, ch->p + keep, ch->len - keep, "dt", "bt");
		j->sent_base = ch->sent + 1;
	} else if (ch->len <= SENT_BODY_MAX) {
		add_bytes(o, ch->p, ch->len);
		j->sent_base = ch->sent + 1;
	} else {
		/* Too big to keep every turn: its fingerprint. */
		sha256_init(&h);
		sha256_add(&h, ch->p, ch->len);
		sha256_done(&h, d);
		sha256_hex(d, hex);
		cJSON_AddStringToObject(o, "sha256", hex);
		j->sent_base = 0;
	}
	put(j, o, 0);
}

/* A tool result as a record; at (>= 0) places one the loader's repair
 * inserted before the end. */
static void
put_tool_result(struct journal *j, const cJSON *m, int at)
{
	cJSON *o = rec("tool");

	if (at >= 0)
		cJSON_AddNumberToObject(o, "i", at);
	add_str(o, "id", jstr(m, "tool_call_id"));
	add_str(o, "content", jstr(m, "content"));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "is_error")))
		cJSON_AddTrueToObject(o, "is_error");
	put(j, o, 0);
}

/* ---- data files -------------------------------------------------- */

static cJSON *
file_json(const struct datafile *f)
{
	cJSON *o = cJSON_CreateObject();
	add_str(o, "path", f->path);
	cJSON_AddNumberToObject(o, "size", (double)f->size);
	cJSON_AddNumberToObject(o, "mtime", (double)f->mtime);
	add_str(o, "fp", f->fingerprint);
	add_str(o, "sandbox", f->sandbox);
	return o;
}

void
journal_change(struct journal *j, const struct nb_change *ch)
{
	const cJSON *m;
	cJSON *o = NULL;
	int sync = 0;

	switch (ch->kind) {
	case NB_CELL:
		o = rec("cell");
		cJSON_AddNumberToObject(o, "n", ch->cell->n);
		cJSON_AddStringToObject(o, "by",
		    ch->cell->author == CELL_BY_USER ? "user" : "model");
		add_str(o, "call", ch->cell->tool_call_id);
		add_str(o, "code", ch->cell->code);
		break;
	case NB_OUTPUT:
		put_output(j, ch);
		return;
	case NB_RESULT:
		put_result(j, ch->cell);
		if (ch->cell->state_lost)
			state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
			    ch->cell->n);
		return;
	case NB_ARTIFACT:
		o = rec("artifact");
		cJSON_AddNumberToObject(o, "c", ch->artifact->cell);
		add_str(o, "name", ch->artifact->name);
		add_str(o, "path", ch->artifact->path);
		cJSON_AddNumberToObject(o, "bytes", (double)ch->artifact->bytes);
		break;
	case NB_QUESTION:
		o = rec("question");
		add_str(o, "text", ch->question->text);
		add_str(o, "notes", ch->question->notes);
		sync = 1;
		break;
	case NB_REPLY:
		m = notebook_message(j->nb, ch->msg);
		o = rec("reply");
		add_str(o, "text", jstr(m, "content"));
		if (cJSON_GetObjectItemCaseSensitive(m, "tool_calls") != NULL)
			cJSON_AddItemToObject(o, "calls", cJSON_Duplicate(
			    cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), 1));
		break;
	case NB_TOOL_RESULT:
		put_tool_result(j, notebook_message(j->nb, ch->msg), -1);
		return;
	case NB_USAGE:
		o = rec("usage");
		cJSON_AddNumberToObject(o, "in", (double)ch->usage->input_tokens);
		cJSON_AddNumberToObject(o, "out", (double)ch->usage->output_tokens);
		cJSON_AddNumberToObject(o, "cached", (double)ch->usage->cached_tokens);
		if (ch->usage->priced)	/* dollars, as priced then (cost.h) */
			cJSON_AddNumberToObject(o, "cost", ch->usage->cost);
		break;
	case NB_SUMMARY:
		/* The context window's summary (context.h): a resumed
		 * session sends it again instead of asking anew. */
		o = rec("summary");
		cJSON_AddNumberToObject(o, "upto", ch->msg);
		add_str(o, "text", ch->p);
		sync = 1;
		break;
	case NB_SENT:
		put_sent(j, ch);
		return;
	case NB_FILE:
		o = rec("data");
		cJSON_AddItemToObject(o, "file", file_json(ch->file));
		sync = 1;
		break;
	case NB_NET:
		/* one line per attempt, when it ends */
		if (ch->net->open)
			return;
		o = rec("net");
		netlog_json_add(o, ch->net);
		break;
	case NB_PACKAGE:
		/* for a resume's replay: install it again */
		o = rec("installed");
		cJSON_AddNumberToObject(o, "c", ch->package->cell);
		add_str(o, "name", ch->package->name);
		add_str(o, "version", ch->package->version);
		break;
	}
	if (o != NULL)
		put(j, o, sync);
}

void
journal_event(struct journal *j, const struct event *ev)
{
	cJSON *o = NULL;
	int sync = 0;

	switch (ev->type) {
	case EV_SESSION:
		o = rec("session");
		add_str(o, "id", ev->text);
		add_str(o, "workspace", ev->name);
		break;
	case EV_KERNEL:
		if (ev->state_lost)
			state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
			    notebook_ncells(j->nb));
		o = rec("kernel");
		cJSON_AddStringToObject(o, "state", kstate_name(ev->kstate));
		add_str(o, "msg", ev->text);
		if (ev->restarted)
			cJSON_AddTrueToObject(o, "restarted");
		if (ev->state_lost)
			cJSON_AddTrueToObject(o, "state_lost");
		break;
	case EV_TURN:
		o = rec("turn");
		cJSON_AddNumberToObject(o, "n", ev->n);
		break;
	case EV_ERROR:
		o = rec("error");
		add_str(o, "text", ev->text);
		cJSON_AddStringToObject(o, "kind", event_error_name(ev));
		if (ev->http_status > 0)
			cJSON_AddNumberToObject(o, "status", ev->http_status);
		sync = 1;
		break;
	case EV_NOTICE:
		o = rec("notice");
		add_str(o, "text", ev->text);
		break;
	case EV_ANSWER:
	case EV_IDLE:
		/* a question's edge: what it wrote reaches the disk */
		sync_now(j);
		return;
	case EV_CELL_START: case EV_STDOUT: case EV_STDERR: case EV_RESULT:
	case EV_ARTIFACT: case EV_QUESTION: case EV_TEXT: case EV_TOOL_CALL:
	case EV_USAGE: case EV_REQUEST: case EV_NET: case EV_PACKAGE:
		/* notebook changes (journal_change), or in one: the reply
		 * holds its text and its tool calls */
		return;
	}
	if (o != NULL)
		put(j, o, sync);
}

/* fdatasyncs. Returns 0, or -1 when that or an earlier write failed. */
static int
journal_sync(struct journal *j)
{
	if (sync_now(j) < 0)
		return -1;
	return j->failed ? -1 : 0;
}

int
journal_replay_cells(const struct journal *j, int **cells)
{
	int n = 0;

	*cells = NULL;
	for (int i = j->replay_from; i >= 1 && i <= j->replay_to; i++) {
		const struct cell *c = notebook_cell(j->nb, i);
		if (c == NULL || c->status != CELL_OK)
			continue;
		*cells = xrealloc(*cells, (size_t)(n + 1) * sizeof **cells);
		(*cells)[n++] = i;
	}
	return n;
}

#define REMOTE_MAX	1024	/* a "remote" line's fields, in bytes */

void
journal_remote(struct journal *j, const char *sandbox, const char *session)
{
	const char *auth = sandbox ? strstr(sandbox, "://") : NULL;
	cJSON *o;
	char *key;

	if (sandbox == NULL || session == NULL || strlen(sandbox) > REMOTE_MAX ||
	    strlen(session) > REMOTE_MAX ||
	    (j->remote == NULL && strcmp(sandbox, "local") == 0))
		return;		/* "local" only after a remote: where it ran last */
	/* A URL with user:password@ (or a token as its user) stays out of
	 * the journal; ssh://user@host has no password in it. */
	if (auth != NULL) {
		const char *at = memchr(auth + 3, '@', strcspn(auth + 3, "/?#"));
		if (at != NULL && (strncmp(sandbox, "ssh://", 6) != 0 ||
		    memchr(auth + 3, ':', (size_t)(at - (auth + 3))) != NULL))
			return;
	}
	/* once per change; the host counts too (every ssh session is "") */
	key = xasprintf("%s\n%s", sandbox, session);
	if (j->remote != NULL && strcmp(j->remote, key) == 0) {
		free(key);
		return;
	}
	free(j->remote);
	j->remote = key;
	o = rec("remote");
	add_str(o, "sandbox", sandbox);
	add_str(o, "session", session);
	put(j, o, 1);	/* a crash is when a resume needs it */
}

void
journal_note(struct journal *j, const char *kind, const char *text)
{
	cJSON *o = rec("note");

	if (kind != NULL && strcmp(kind, "reset") == 0)
		state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
		    notebook_ncells(j->nb));
	add_str(o, "kind", kind);
	add_str(o, "text", text);
	put(j, o, 0);
}

const char *
journal_id(const struct journal *j)
{
	return j->id;
}

const char *
journal_dir(const struct journal *j)
{
	return j->dir;
}

const char *
journal_failed(const struct journal *j)
{
	return j->failed;
}

/* ---- opening ------------------------------------------------------ */

static struct journal *
journal_alloc(const char *sessions_dir, const char *id, struct notebook *nb)
{
	struct journal *j = xcalloc(1, sizeof *j);

	j->id = xstrdup(id);
	j->dir = xasprintf("%s/%s", sessions_dir, id);
	j->path = store_journal_path(sessions_dir, id);	/* id checked */
	j->fd = -1;
	j->nb = nb;
	j->live_from = 1;
	return j;
}

static void
journal_free(struct journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	free(j->id);
	free(j->dir);
	free(j->path);
	free(j->logged);
	free(j->failed);
	free(j->remote);
	free(j);
}

/* Opens the journal file for appending and takes the session's lock. */
static int
open_locked(struct journal *j, int flags, char **err)
{
	j->fd = store_open_locked(j->path, j->id, flags, err);
	return j->fd < 0 ? -1 : 0;
}

struct journal *
journal_create(const char *sessions_dir, const char *given_id,
    const struct journal_info *info, struct notebook *nb, char **err)
{
	struct journal *j = NULL;
	cJSON *o;
	char *id;

	if (mkdir_p(sessions_dir, 0700) < 0) {
		*err = xasprintf("cannot create %s: %s", sessions_dir,
		    strerror(errno));
		return NULL;
	}
	if (given_id != NULL) {
		if (store_id_valid(given_id) < 0) {
			*err = xasprintf("not a session id: %s", given_id);
			return NULL;
		}
		j = journal_alloc(sessions_dir, given_id, nb);
		if (mkdir(j->dir, 0700) < 0 && errno != EEXIST) {
			*err = xasprintf("cannot create %s: %s", j->dir,
			    strerror(errno));
			journal_free(j);
			return NULL;
		}
	}
	for (int tries = 0; j == NULL; tries++) {
		id = store_new_id();
		j = journal_alloc(sessions_dir, id, nb);
		free(id);
		if (mkdir(j->dir, 0700) == 0)
			break;	/* j is set: the loop ends */
		if (errno != EEXIST || tries == 16) {
			*err = xasprintf("cannot create %s: %s", j->dir,
			    strerror(errno));
			journal_free(j);
			return NULL;
		}
		journal_free(j);
		j = NULL;
	}
	if (open_locked(j, O_CREAT | O_EXCL, err) < 0) {
		journal_free(j);
		return NULL;
	}
	o = rec("meta");
	cJSON_AddNumberToObject(o, "v", JOURNAL_VERSION);
	cJSON_AddStringToObject(o, "id", j->id);
	cJSON_AddNumberToObject(o, "started", (double)time(NULL));
	if (info != NULL) {
		add_str(o, "provider", info->provider);
		add_str(o, "model", info->model);
	}
	/* the data files follow as "data" records, as they are staged */
	if (put(j, o, 1) < 0) {
		*err = xstrdup(j->failed);
		journal_free(j);
		return NULL;
	}
	return j;
}

/* Cuts a torn last line (no newline) so appended lines start clean. */
static int
cut_torn(int fd)
{
	struct stat st;
	char c;
	off_t end;

	if (fstat(fd, &st) < 0)
		return -1;
	end = st.st_size;
	while (end > 0) {
		if (pread(fd, &c, 1, end - 1) != 1)
			return -1;
		if (c == '\n')
			break;
		end--;
	}
	if (end == st.st_size)
		return 0;
	return ftruncate(fd, end);
}

struct journal *
journal_reopen(const char *sessions_dir, const char *id, struct notebook *nb,
    const struct journal_meta *meta, char **err)
{
	struct journal *j;
	cJSON *o;
	int rfd;

	if (store_id_valid(id) < 0) {
		*err = xasprintf("not a session id: %s", id);
		return NULL;
	}
	j = journal_alloc(sessions_dir, id, nb);
	if (open_locked(j, 0, err) < 0) {
		journal_free(j);
		return NULL;
	}
	/* O_APPEND descriptors cannot pread portably: a second one reads */
	rfd = open(j->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (rfd < 0 || cut_torn(rfd) < 0) {
		*err = xasprintf("cannot repair %s: %s", j->path, strerror(errno));
		if (rfd >= 0)
			close(rfd);
		journal_free(j);
		return NULL;
	}
	close(rfd);
	/* the loaded cells' output is in the file already */
	for (int n = 1; n <= notebook_ncells(nb); n++) {
		uint64_t *lg = logged(j, n);
		lg[0] = lg[1] = UINT64_MAX;
	}
	j->live_from = meta->live_from > 0 ? meta->live_from : 1;
	j->replay_from = meta->replay_from;
	j->replay_to = meta->replay_to;
	if (meta->sent_whole)
		j->sent_base = notebook_nsent(nb);
	o = rec("resume");
	if (meta->reach_remote)
		cJSON_AddTrueToObject(o, "remote");
	else
		state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
		    notebook_ncells(nb));
	put(j, o, 0);
	/* journal_remote writes a remote session again only when it changed */
	j->remote = meta->remote_session && meta->remote_sandbox ? xasprintf("%s\n%s",
	    meta->remote_sandbox, meta->remote_session) : NULL;
	/* The tool results the loader's repair added are not in the file
	 * yet (the loader puts each back at its place). */
	for (int i = 0; i < meta->nrepaired; i++)
		put_tool_result(j, cJSON_GetArrayItem(notebook_messages(nb),
		    meta->repaired[i]), meta->repaired[i]);
	sync_now(j);
	if (j->failed != NULL) {
		*err = xstrdup(j->failed);
		journal_free(j);
		return NULL;
	}
	return j;
}

void
journal_close(struct journal *j)
{
	if (j == NULL)
		return;
	journal_sync(j);
	journal_free(j);
}

/* ---- loading ------------------------------------------------------ */

void
journal_meta_free(struct journal_meta *m)
{
	free(m->id);
	free(m->provider);
	free(m->model);
	for (int i = 0; i < m->nfiles; i++)
		datafile_free(&m->files[i]);
	free(m->files);
	free(m->first_question);
	free(m->repaired);
	for (int i = 0; i < m->negress; i++)
		free(m->egress[i]);
	free(m->egress);
	free(m->remote_sandbox);
	free(m->remote_session);
	memset(m, 0, sizeof *m);
}

/* A data file record: into the notebook, or into meta for a listing.
 * Where the sandbox had it is not restored: that sandbox is gone. */
static void
meta_add_file(struct journal_meta *m, struct notebook *nb, const cJSON *f)
{
	struct datafile *jf;

	if (!cJSON_IsObject(f) || jstr(f, "path") == NULL)
		return;
	if (nb != NULL) {
		struct datafile d = {
			.path = (char *)jstr(f, "path"),
			.size = (uint64_t)jnum(f, "size", 0),
			.mtime = (int64_t)jnum(f, "mtime", 0),
			.fingerprint = (char *)jstr(f, "fp"),
			.recorded = (char *)jstr(f, "sandbox"),
		};
		notebook_add_file(nb, &d);
		return;
	}
	/* a file staged again replaces its earlier record */
	for (int i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].path, jstr(f, "path")) == 0) {
			datafile_free(&m->files[i]);
			jf = &m->files[i];
			goto fill;
		}
	m->files = xrealloc(m->files, (size_t)(m->nfiles + 1) * sizeof *m->files);
	jf = &m->files[m->nfiles++];
	memset(jf, 0, sizeof *jf);
fill:
	jf->path = jdup(f, "path");
	jf->size = (uint64_t)jnum(f, "size", 0);
	jf->mtime = (int64_t)jnum(f, "mtime", 0);
	jf->fingerprint = jdup(f, "fp");
}

static int
is_role(const cJSON *m, const char *role)
{
	const char *r = jstr(m, "role");
	return r != NULL && strcmp(r, role) == 0;
}

/* Compatibility: journals of before questions were kept apart from
 * their notes hold the user message whole (a "msg" record, in
 * *pending until the record after it) and then a "question" record
 * with the text. The question goes in through notebook_add_question
 * like the agent's, which puts the same message together again: the
 * notes are what comes before "\nQuestion: " and the text. Without
 * its "question" record (a journal cut there), the text is recovered
 * as the export of those days did: after "\nQuestion: ", when the
 * message starts with one of the notes terp wrote ("Note: ", "Since
 * your last turn"). */
static void
legacy_question(struct notebook *nb, char **pending, const char *text)
{
	const char *content = *pending, *q = NULL;
	char *notes = NULL;
	size_t n = strlen(content), tn;

	if (text != NULL && strcmp(content, text) == 0) {
		q = text;
	} else if (text != NULL && (tn = strlen(text)) + 11 <= n &&
	    strcmp(content + n - tn, text) == 0 &&
	    strncmp(content + n - tn - 11, "\nQuestion: ", 11) == 0) {
		notes = xstrndup(content, n - tn - 11);
		q = text;
	} else if ((strncmp(content, "Note: ", 6) == 0 ||
	    strncmp(content, "Since your last turn", 20) == 0) &&
	    (q = strstr(content, "\nQuestion: ")) != NULL) {
		notes = xstrndup(content, (size_t)(q - content));
		q += 11;
	} else {
		q = content;
	}
	notebook_add_question(nb, q, notes);
	free(notes);
	free(*pending);
	*pending = NULL;
}

/* The tool calls of a reply record, checked (every member a string,
 * as the providers' encoders expect): a copy, or NULL when they do not
 * fit. A reply without calls gives an empty array. */
static cJSON *
calls_copy(const cJSON *calls)
{
	const cJSON *c;

	if (calls == NULL)
		return cJSON_CreateArray();
	if (!cJSON_IsArray(calls))
		return NULL;
	cJSON_ArrayForEach(c, calls)
		if (jstr(c, "id") == NULL || jstr(c, "name") == NULL ||
		    jstr(c, "arguments") == NULL)
			return NULL;
	return cJSON_Duplicate(calls, 1);
}

/* A version 1 "msg" record: the conversation as it was re-serialised
 * then. Each message goes in through the update functions of its kind;
 * a message written again once the agent completed it (same index)
 * replaces the earlier one. */
static int
legacy_msg(const cJSON *o, struct notebook *nb, char **pending)
{
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(o, "m");
	int i = (int)jnum(o, "i", -1), n = cJSON_GetArraySize(notebook_messages(nb));
	cJSON *calls;

	if (!cJSON_IsObject(msg) || i < 0 || i > n)
		return -1;
	if (i < n) {
		notebook_replace_message(nb, i, cJSON_Duplicate(msg, 1));
		return 0;
	}
	if (is_role(msg, "user") && jstr(msg, "content") != NULL) {
		*pending = xstrdup(jstr(msg, "content"));
		return 0;
	}
	if (is_role(msg, "assistant")) {
		if ((calls = calls_copy(cJSON_GetObjectItemCaseSensitive(msg,
		    "tool_calls"))) == NULL)
			return -1;
		notebook_add_reply(nb, jstr(msg, "content"), calls);
		return 0;
	}
	if (is_role(msg, "tool") && jstr(msg, "tool_call_id") != NULL &&
	    jstr(msg, "content") != NULL) {
		notebook_add_tool_result(nb, jstr(msg, "tool_call_id"),
		    jstr(msg, "content"), cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(msg, "is_error")));
		return 0;
	}
	return -1;
}

/* A cell's result record, with the tails of streams cut in between. */
static int
apply_result(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	struct cell *c = notebook_cell(nb, (int)jnum(o, "c", 0));
	int status = cell_status_parse(jstr(o, "status"));
	const cJSON *tl;
	struct cell_result r = {
		.value = jstr(o, "value"), .ename = jstr(o, "ename"),
		.evalue = jstr(o, "evalue"), .traceback = jstr(o, "traceback"),
		.reason = jstr(o, "reason"),
		.state_lost = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o,
		    "state_lost")),
		.duration_ms = (int64_t)jnum(o, "ms", 0),
	};

	/* one result per cell, as the kernel gives it */
	if (c == NULL || status < 0 || c->status != CELL_RUNNING)
		return -1;
	r.status = (enum cell_status)status;
	notebook_cell_result(nb, c->n, &r);
	if (c->state_lost)
		state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to, c->n);
	cJSON_ArrayForEach(tl, cJSON_GetObjectItemCaseSensitive(o, "tails")) {
		int s = (int)jnum(tl, "s", -1);
		size_t len;
		char *p;
		if ((s != 0 && s != 1) || (p = get_bytes(tl, &len)) == NULL)
			continue;
		notebook_cell_tail(nb, c->n, s, p, len,
		    (uint64_t)jnum(tl, "total", 0));
		free(p);
	}
	return 0;
}

/* One record type each, as journal_change writes them. Each applies o
 * through the notebook's update functions (the agent's way), or
 * returns -1 for a damaged record. */

static int
rec_question(const cJSON *o, struct notebook *nb, struct journal_meta *m,
    int legacy_q)
{
	if (jstr(o, "text") == NULL)
		return -1;
	if (m->nquestions++ == 0)
		m->first_question = jdup(o, "text");
	if (nb == NULL)
		return 0;
	/* the agent tells the model of finished hand-run cells with each
	 * question */
	for (int i = 1; i <= notebook_ncells(nb); i++) {
		struct cell *c = notebook_cell(nb, i);
		if (c->status != CELL_RUNNING && c->status != CELL_PENDING)
			c->told_model = 1;
	}
	/* version 1: the message came in its "msg" record (a journal of
	 * version 1 resumed goes on in version 2) */
	if (!legacy_q)
		notebook_add_question(nb, jstr(o, "text"), jstr(o, "notes"));
	return 0;
}

static int
rec_kernel(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "state");
	int k = kstate_parse(st), lost;

	if (k < 0)
		return -1;
	/* version 1 had no flag: a start or a stop lost the state */
	lost = cJSON_IsNumber(st) ? k == KERNEL_STARTING || k == KERNEL_STOPPED :
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "state_lost"));
	if (lost)
		state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to,
		    notebook_ncells(nb));
	return 0;
}

static int
rec_cell(const cJSON *o, struct notebook *nb)
{
	const char *by = jstr(o, "by");

	if ((int)jnum(o, "n", 0) != notebook_ncells(nb) + 1)
		return -1;
	notebook_add_cell(nb, by && strcmp(by, "user") == 0 ? CELL_BY_USER :
	    CELL_BY_MODEL, jstr(o, "code"), jstr(o, "call"));
	return 0;
}

static int
rec_out(const cJSON *o, struct notebook *nb)
{
	int s = (int)jnum(o, "s", -1);
	struct cell *c = notebook_cell(nb, (int)jnum(o, "c", 0));
	size_t len;
	char *p;

	if (c == NULL || (s != 0 && s != 1) || (p = get_bytes(o, &len)) == NULL)
		return -1;
	notebook_cell_output(nb, c->n, s, p, len);
	free(p);
	return 0;
}

static int
rec_artifact(const cJSON *o, struct notebook *nb)
{
	if (jstr(o, "name") == NULL || jstr(o, "path") == NULL)
		return -1;
	notebook_add_artifact(nb, (int)jnum(o, "c", 0), jstr(o, "name"),
	    jstr(o, "path"), (uint64_t)jnum(o, "bytes", 0));
	return 0;
}

static int
rec_reply(const cJSON *o, struct notebook *nb)
{
	cJSON *calls = calls_copy(cJSON_GetObjectItemCaseSensitive(o, "calls"));

	if (calls == NULL)
		return -1;
	notebook_add_reply(nb, jstr(o, "text"), calls);
	return 0;
}

static int
rec_tool(const cJSON *o, struct notebook *nb)
{
	int i = (int)jnum(o, "i", -1);
	int is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "is_error"));

	if (jstr(o, "id") == NULL || jstr(o, "content") == NULL)
		return -1;
	/* one the repair of a resume put before the end */
	if (i >= 0 && i < cJSON_GetArraySize(notebook_messages(nb)))
		notebook_insert_tool_result(nb, i, jstr(o, "id"), jstr(o, "content"),
		    is_error);
	else
		notebook_add_tool_result(nb, jstr(o, "id"), jstr(o, "content"),
		    is_error);
	return 0;
}

static int
rec_usage(const cJSON *o, struct notebook *nb)
{
	struct usage u = {
		.input_tokens = (long)jnum(o, "in", 0),
		.output_tokens = (long)jnum(o, "out", 0),
		.cached_tokens = (long)jnum(o, "cached", 0),
	};
	double cost = jnum(o, "cost", -1);

	if (cost >= 0 && cost < 1e9) {
		u.cost = cost;
		u.priced = 1;
	}
	notebook_add_usage(nb, &u);
	return 0;
}

static int
rec_summary(const cJSON *o, struct notebook *nb)
{
	int upto = (int)jnum(o, "upto", -1);

	if (jstr(o, "text") == NULL || upto < 1 ||
	    upto > cJSON_GetArraySize(notebook_messages(nb)))
		return -1;
	notebook_set_summary(nb, upto, jstr(o, "text"));
	return 0;
}

static int
rec_sent(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	const char *what = jstr(o, "what"), *prev;
	int n = notebook_nsent(nb);
	size_t len, prev_len = 0;
	char *p;

	prev = n > 0 ? notebook_sent(nb, n - 1, NULL, &prev_len) : NULL;
	p = sent_body(o, n, prev, prev_len, &m->sent_whole, &len);

	notebook_add_sent(nb, what ? what : "request", p, len);
	free(p);
	return 0;
}

/* terp's own lines: a reset lost the state; /allow and /deny are
 * applied again by a resume (kernel_opts.egress_ops). */
static int
rec_note(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	const char *kind = jstr(o, "kind"), *spec = jstr(o, "text");

	if (kind && strcmp(kind, "reset") == 0)
		state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to,
		    notebook_ncells(nb));
	if (kind && spec && (strcmp(kind, "allow") == 0 ||
	    strcmp(kind, "deny") == 0) && m->negress < JOURNAL_EGRESS_MAX) {
		m->egress = xrealloc(m->egress, (size_t)(m->negress + 2) *
		    sizeof *m->egress);
		m->egress[m->negress++] = xasprintf("%s %s", kind, spec);
		m->egress[m->negress] = NULL;
	}
	return 0;
}

/* The remote session the notebook ran in: the last one counts. The
 * backend checks the session's form again before it uses it. */
static int
rec_remote(const cJSON *o, struct journal_meta *m)
{
	const char *sb = jstr(o, "sandbox"), *se = jstr(o, "session");

	if (sb == NULL || se == NULL || strlen(sb) > REMOTE_MAX ||
	    strlen(se) > REMOTE_MAX)
		return -1;
	free(m->remote_sandbox);
	free(m->remote_session);
	m->remote_sandbox = xstrdup(sb);
	m->remote_session = xstrdup(se);
	return 0;
}

/* An egress attempt, as it ended (netlog_parse checks it again). */
static int
rec_net(const cJSON *o, struct notebook *nb)
{
	struct net_attempt a;

	if (netlog_parse(o, &a) < 0)
		return -1;
	notebook_add_net(nb, &a);
	return 0;
}

/* A package pip installed. Names and versions go into Python code at
 * a replay (pipindex_reinstall_code): only pip's characters are taken. */
static int
rec_installed(const cJSON *o, struct notebook *nb)
{
	const char *name = jstr(o, "name"), *ver = jstr(o, "version");

	if (name == NULL || ver == NULL || !pipindex_word_ok(name) ||
	    !pipindex_word_ok(ver))
		return -1;
	notebook_add_package(nb, (int)jnum(o, "c", 0), name, ver);
	return 0;
}

static int
rec_meta(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	const cJSON *f;

	if (jstr(o, "id") == NULL)
		return -1;
	m->id = jdup(o, "id");
	m->version = (int)jnum(o, "v", 1);
	m->started = (int64_t)jnum(o, "started", 0);
	m->provider = jdup(o, "provider");
	m->model = jdup(o, "model");
	/* version 1 listed the data files here */
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(o, "data"))
		meta_add_file(m, nb, f);
	return 0;
}

/* Applies one record, through the notebook's update functions as the
 * agent made the change. Returns 0, or -1 when it does not fit
 * (counted as skipped). nb may be NULL (listing: meta only). */
static int
apply(const cJSON *o, struct notebook *nb, struct journal_meta *m, int first,
    char **pending)
{
	const char *t = jstr(o, "t");
	int legacy_q = 0;

	if (t == NULL)
		return -1;
	if (*pending != NULL && nb != NULL) {
		legacy_q = strcmp(t, "question") == 0;
		legacy_question(nb, pending, legacy_q ? jstr(o, "text") : NULL);
	}
	if (strcmp(t, "meta") == 0)
		return first ? rec_meta(o, nb, m) : -1;
	if (m->id == NULL)
		return -1;	/* nothing counts before the meta line */
	/* what a listing needs too */
	if (strcmp(t, "question") == 0)
		return rec_question(o, nb, m, legacy_q);
	if (strcmp(t, "data") == 0) {
		meta_add_file(m, nb, cJSON_GetObjectItemCaseSensitive(o, "file"));
		return 0;
	}
	if (strcmp(t, "resume") == 0) {
		m->nresumed++;
		/* one that reached its remote session kept the state */
		if (nb != NULL && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "remote")))
			state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to,
			    notebook_ncells(nb));
		return 0;
	}
	if (nb == NULL)
		return 0;
	if (strcmp(t, "remote") == 0)
		return rec_remote(o, m);
	if (strcmp(t, "kernel") == 0)
		return rec_kernel(o, nb, m);
	if (strcmp(t, "note") == 0)
		return rec_note(o, nb, m);
	if (strcmp(t, "cell") == 0)
		return rec_cell(o, nb);
	if (strcmp(t, "out") == 0)
		return rec_out(o, nb);
	if (strcmp(t, "result") == 0)
		return apply_result(o, nb, m);
	if (strcmp(t, "artifact") == 0)
		return rec_artifact(o, nb);
	if (strcmp(t, "reply") == 0)
		return rec_reply(o, nb);
	if (strcmp(t, "tool") == 0)
		return rec_tool(o, nb);
	if (strcmp(t, "msg") == 0)
		return legacy_msg(o, nb, pending);
	if (strcmp(t, "usage") == 0)
		return rec_usage(o, nb);
	if (strcmp(t, "sent") == 0)
		return rec_sent(o, nb, m);
	if (strcmp(t, "summary") == 0)
		return rec_summary(o, nb);
	if (strcmp(t, "net") == 0)
		return rec_net(o, nb);
	if (strcmp(t, "installed") == 0)
		return rec_installed(o, nb);
	if (strcmp(t, "error") == 0) {
		/* how a question ended without an answer, for an export */
		notebook_question_unanswered(nb, jstr(o, "text"));
		return 0;
	}
	/* session, turn, notice, and version 1's text, tool_call
	 * and answer: the record of what happened; the notebook needs
	 * none (a reply holds its text and its calls) */
	return 0;
}

/* After a crash: a cell that never got its result was interrupted, and
 * a tool call without a result gets one right after the recorded
 * results, so the provider accepts the conversation. The indexes of
 * the results inserted go to m->repaired. */
static void
repair(struct notebook *nb, struct journal_meta *m)
{
	cJSON *msgs = notebook_messages(nb);
	int n = cJSON_GetArraySize(msgs);

	for (int i = 1; i <= notebook_ncells(nb); i++) {
		struct cell *c = notebook_cell(nb, i);
		if (c->author == CELL_BY_MODEL)
			c->told_model = 1;	/* through its tool result */
		if (c->status == CELL_RUNNING || c->status == CELL_PENDING) {
			struct cell_result r = { .status = CELL_INTERRUPTED,
			    .reason = "terp stopped while this cell ran; its "
			    "output may be incomplete" };
			notebook_cell_result(nb, i, &r);
		}
	}
	for (int i = 0; i < n; ) {
		cJSON *msg = cJSON_GetArrayItem(msgs, i);
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg,
		    "tool_calls"), *call;
		int k = i + 1, end;

		for (; k < n && is_role(cJSON_GetArrayItem(msgs, k), "tool"); k++)
			;
		end = k;	/* the results inserted go after the recorded */
		if (!cJSON_IsArray(calls))
			calls = NULL;
		cJSON_ArrayForEach(call, calls) {
			const char *id = jstr(call, "id");
			int found = 0;

			for (int t = i + 1; t < end && id != NULL; t++) {
				const char *tid = jstr(cJSON_GetArrayItem(msgs, t),
				    "tool_call_id");
				if (tid != NULL && strcmp(tid, id) == 0)
					found = 1;
			}
			if (found || id == NULL)
				continue;
			notebook_insert_tool_result(nb, k, id, "terp stopped "
			    "before this call finished; its result was lost.", 1);
			m->repaired = xrealloc(m->repaired,
			    (size_t)(m->nrepaired + 1) * sizeof *m->repaired);
			m->repaired[m->nrepaired++] = k++;
			n++;
		}
		i = k;
	}
}

struct lines {
	int	 fd;
	char	*buf;
	size_t	 len, cap, off;
	int	 eof, toolong;
};

/* The next complete line (without its newline, NUL-terminated) in
 * *line, or 0 at the end. A line longer than LINE_MAX_BYTES comes back
 * as an empty line with ls->toolong set. Leftover bytes without a
 * newline at the end are the torn last line: ls->len > ls->off then. */
static int
next_line(struct lines *ls, char **line, size_t *len)
{
	for (;;) {
		char *nl = ls->buf == NULL ? NULL :
		    memchr(ls->buf + ls->off, '\n', ls->len - ls->off);
		ssize_t n;
		if (nl != NULL) {
			*nl = '\0';
			*line = ls->buf + ls->off;
			*len = (size_t)(nl - *line);
			ls->off = (size_t)(nl - ls->buf) + 1;
			if (ls->toolong) {
				ls->toolong = 0;
				*len = 0;
				**line = '\0';
				ls->toolong = 2;	/* tell the caller */
			}
			return 1;
		}
		if (ls->eof)
			return 0;
		if (ls->off > 0) {
			memmove(ls->buf, ls->buf + ls->off, ls->len - ls->off);
			ls->len -= ls->off;
			ls->off = 0;
		}
		if (ls->len >= LINE_MAX_BYTES) {
			ls->len = 0;	/* drop the long line's start */
			ls->toolong = 1;
		}
		if (ls->cap - ls->len < 65536) {
			ls->cap = ls->cap ? ls->cap * 2 : 131072;
			ls->buf = xrealloc(ls->buf, ls->cap + 1);
		}
		n = read(ls->fd, ls->buf + ls->len, ls->cap - ls->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			ls->eof = 1;
		ls->len += (size_t)n;
	}
}

static int
scan(const char *path, struct notebook *nb, struct journal_meta *m, char **err)
{
	struct lines ls = { .fd = -1 };
	struct stat st;
	char *line, *pending = NULL;
	size_t len;
	int rc, first = 1;

	memset(m, 0, sizeof *m);
	m->live_from = 1;
	if ((ls.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
	    fstat(ls.fd, &st) < 0) {
		*err = xasprintf("cannot read %s: %s", path, strerror(errno));
		if (ls.fd >= 0)
			close(ls.fd);
		return -1;
	}
	m->last_active = (int64_t)st.st_mtim.tv_sec;
	while ((rc = next_line(&ls, &line, &len)) == 1) {
		cJSON *o;
		if (ls.toolong == 2) {
			ls.toolong = 0;
			m->skipped++;
			first = 0;
			continue;
		}
		if (len == 0)
			continue;
		/* "t" comes first in every record (rec) */
		if (strncmp(line, "{\"t\":\"cell\"", 11) == 0)
			m->ncells++;
		else if (strncmp(line, "{\"t\":\"reply\"", 12) == 0)
			m->nreplies++;
		/* listing: only the lines that feed the meta are parsed */
		if (nb == NULL && !first &&
		    strncmp(line, "{\"t\":\"question\"", 15) != 0 &&
		    strncmp(line, "{\"t\":\"data\"", 11) != 0 &&
		    strncmp(line, "{\"t\":\"resume\"", 13) != 0)
			continue;
		o = cJSON_ParseWithLength(line, len);
		if (o == NULL || !cJSON_IsObject(o) ||
		    apply(o, nb, m, first, &pending) < 0)
			m->skipped++;
		cJSON_Delete(o);
		first = 0;
	}
	if (pending != NULL)
		legacy_question(nb, &pending, NULL);
	if (rc == 0 && ls.len > ls.off)
		m->torn = 1;
	close(ls.fd);
	free(ls.buf);
	if (rc < 0) {
		*err = xasprintf("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if (m->id == NULL) {
		*err = xasprintf("%s is not a terp journal (no meta line)", path);
		return -1;
	}
	if (nb != NULL)
		repair(nb, m);
	return 0;
}

char *
journal_read_sent(const struct journal *j, int i, size_t *len, char **err)
{
	struct lines ls = { .fd = -1 };
	char *line, *body = NULL, *prev = NULL;
	size_t n, prev_len = 0;
	int k = 0, whole;

	if ((ls.fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		*err = xasprintf("cannot read %s: %s", j->path, strerror(errno));
		return NULL;
	}
	/* Every request up to i is read back: a record may keep the bytes
	 * of the one before (put_sent). */
	while (body == NULL && next_line(&ls, &line, &n) == 1) {
		cJSON *o;
		char *p;
		if (ls.toolong == 2) {
			ls.toolong = 0;
			continue;
		}
		/* "t" comes first in every record (rec) */
		if (strncmp(line, "{\"t\":\"sent\"", 11) != 0)
			continue;
		/* a corrupt line is no request, as for the loader */
		if ((o = cJSON_ParseWithLength(line, n)) == NULL)
			continue;
		p = sent_body(o, k, prev, prev_len, &whole, &prev_len);
		cJSON_Delete(o);
		free(prev);
		prev = p;
		if (k++ == i) {
			body = prev;
			*len = prev_len;
			prev = NULL;
		}
	}
	free(prev);
	close(ls.fd);
	free(ls.buf);
	if (body == NULL)
		*err = xasprintf("request %d is not in the journal", i + 1);
	return body;
}

int
journal_load(const char *path, struct notebook *nb, struct journal_meta *meta,
    char **err)
{
	return scan(path, nb, meta, err);
}

int
journal_read_meta(const char *path, struct journal_meta *meta, char **err)
{
	return scan(path, NULL, meta, err);
}
