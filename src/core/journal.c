/* journal: the crash-safe record of a session. Every notebook change is
 * appended as one JSON line with one write(2), so a killed terp (even
 * kill -9) loses nothing written. Against power loss the file is also
 * fdatasync'ed at a question's edges (question, answer, error) and at
 * the close, each only when a line was written since the last sync; at
 * an idle edge (the end of a cell) at most every JOURNAL_SYNC_MS, the
 * one due later by the session's timer (journal_sync_due): a script of
 * cells (terp exec) would otherwise pay a sync per cell, 0.3-0.5 ms on
 * a disk, three times the cell's own round trip.
 * The loader (journal_load.c) replays the lines into a fresh notebook.
 * Where the file lives and its lock are store.c's; data-file
 * fingerprints datafile.c's. */
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
#include "terp/sanitize.h"
#include "terp/store.h"
#include "terp/util.h"

#include "journal_priv.h"

/* 2: kernel states by name, questions with their notes, replies and
 * tool results as records of their own (1: messages re-serialised). */
#define JOURNAL_VERSION	2
/* A request's new bytes up to this size are kept; more by hash. */
#define SENT_BODY_MAX	(64u << 10)
#define STREAM_MS	100	/* streamed text waits at most this long */
#define LLM_STREAM_KEEP	(16u << 20)	/* a reply's text, at most (buf's cap) */
/* A deleted session folder is looked for (an fstat) at most this often
 * and at each sync: one fstat a line was 2 of a script cell's 14
 * system calls. */
#define GONE_MS		100

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
	/* The file's length up to its last whole line: a failed write (a
	 * full disk) is cut back to it, so no partial line is left for the
	 * next one to be appended to (two records merged, both lost). */
	off_t		  end;
	int		  torn;		/* the cut failed: start the next line anew */
	int		  lost;		/* a line could not be written: disk full */
	int		  gone;		/* the file was unlinked: never saved again */
	int		  again;	/* then one could: not told yet */
	int		  sync_wanted;	/* an idle edge's sync, deferred */
	int64_t		  synced_ms;	/* now_ms() of the last sync; 0: none */
	char		 *failed;
	char		 *remote;
	/* An answer's text as it streams, not yet journalled: written as
	 * a "stream" record at each newline or every STREAM_MS, so a kill
	 * -9 keeps what was shown; the reply record supersedes it. */
	struct buf	  stream;
	int64_t		  stream_ms;	/* when a stream record was last written */
	int		  kstate;	/* 1 + the last kernel state written; 0: none */
	/* Lines not written yet (journal_defer): one write(2) for all of
	 * them at journal_flush, a sync, or a line that syncs. */
	struct buf	  pending;
	int		  defer;
	int64_t		  gone_ms;	/* now_ms() of the last deleted() look */	/* the last "remote" line: "SANDBOX\nSESSION" */
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
static int write_pending(struct journal *j);
static int deleted(struct journal *j, int now);

static int
sync_now(struct journal *j)
{
	j->sync_wanted = 0;
	if (write_pending(j) < 0)
		return -1;
	if (j->fd < 0 || !j->unsynced)
		return 0;
	(void)deleted(j, 1);	/* said by journal_failed */
	if (fdatasync(j->fd) < 0) {
		fail(j, "fdatasync");
		return -1;
	}
	j->unsynced = 0;
	j->synced_ms = now_ms();
	return 0;
}

/* Where the file ends (after opening it): its last line is whole. */
static int
note_end(struct journal *j)
{
	struct stat st;

	if (fstat(j->fd, &st) < 0)
		return -1;
	j->end = st.st_size;
	return 0;
}

/* An idle edge: a sync now, unless one was less than JOURNAL_SYNC_MS
 * ago; then it is due at that age (journal_sync_due). */
static void
sync_edge(struct journal *j)
{
	if (!j->unsynced)
		return;
	if (j->synced_ms == 0 || now_ms() - j->synced_ms >= JOURNAL_SYNC_MS)
		sync_now(j);
	else
		j->sync_wanted = 1;
}

int64_t
journal_sync_due(const struct journal *j)
{
	int64_t age;

	if (j == NULL || !j->sync_wanted || !j->unsynced)
		return -1;
	age = now_ms() - j->synced_ms;
	return age >= JOURNAL_SYNC_MS ? 0 : JOURNAL_SYNC_MS - age;
}

void
journal_sync_deferred(struct journal *j)
{
	if (j != NULL && j->sync_wanted)
		sync_now(j);
}

/* The journal was unlinked (its session folder deleted while terp
 * runs, --delete from elsewhere): writes still succeed, into a file
 * nobody will read again. Said once as a failure that stays. One fstat
 * at most every GONE_MS (a clock read in between), or now when asked. */
static int
deleted(struct journal *j, int now)
{
	struct stat st;
	int64_t t;

	if (j->gone)
		return 1;
	t = now_ms();
	if (!now && j->gone_ms != 0 && t - j->gone_ms < GONE_MS)
		return 0;
	j->gone_ms = t;
	if (fstat(j->fd, &st) < 0 || st.st_nlink > 0)
		return 0;
	j->gone = 1;
	j->lost = j->again = 0;
	free(j->failed);
	j->failed = xasprintf("the session folder %s was deleted", j->dir);
	return 1;
}

/* Writes the lines kept with one write(2) (write_all only loops on a
 * short write). Returns 0, or -1 (the failure kept for journal_failed):
 * what went of them is cut back, so the file ends with a whole line. */
static int
write_pending(struct journal *j)
{
	struct buf *b = &j->pending;
	int rc = 0;

	if (b->len == 0)
		return 0;
	if (j->fd >= 0)
		j->unsynced = 1;	/* a short write too: what went, syncs */
	if (j->fd < 0 || write_all(j->fd, b->data, b->len) < 0) {
		int e = errno;

		fail(j, "write");
		rc = -1;
		/* space may come back; other errors (EFBIG, EIO) stay, and
		 * what fits in between is not "saved again" */
		if (e == ENOSPC || e == EDQUOT)
			j->lost = 1;
		/* what went of the lines goes; if that fails too, the next
		 * line begins with a newline (the loader skips the part) */
		if (j->fd >= 0)
			j->torn = ftruncate(j->fd, j->end) < 0;
	} else if (deleted(j, 0)) {
		rc = -1;
	} else {
		j->end += (off_t)b->len;
		/* after a part left behind, the file's end is known again
		 * only from the file */
		if (!j->torn || note_end(j) == 0) {
			j->again |= j->lost;
			j->lost = j->torn = 0;
		}
	}
	/* a big line's storage (a request body) is not kept */
	if (b->cap > (64u << 10)) {
		buf_free(b);
		buf_init(b, (size_t)-1 / 2);
	} else {
		buf_reset(b);
	}
	return rc;
}

/* Adds o as one line and frees it; writes it now unless deferred
 * (journal_defer), and syncs when asked (the kept lines too). */
static int
put(struct journal *j, cJSON *o, int sync)
{
	struct buf *b = &j->pending;

	cJSON_AddNumberToObject(o, "ts", (double)wall_ms());
	if ((b->len == 0 && j->fd >= 0 && j->torn && buf_addc(b, '\n') < 0) ||
	    json_text(b, o) < 0 || buf_addc(b, '\n') < 0)
		fatal("out of memory (journal line)");
	cJSON_Delete(o);
	if (sync)
		return sync_now(j);
	return j->defer ? 0 : write_pending(j);
}

void
journal_defer(struct journal *j, int on)
{
	if (j == NULL)
		return;
	j->defer = on;
	if (!on)
		(void)write_pending(j);
}

int
journal_flush(struct journal *j)
{
	return j == NULL ? 0 : write_pending(j);
}

int
journal_flush_check(struct journal *j)
{
	if (j == NULL)
		return 0;
	if (write_pending(j) < 0)
		return -1;
	return j->fd >= 0 && deleted(j, 1) ? -1 : 0;
}

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

static const char *
kstate_name(enum kernel_state st)
{
	if ((size_t)st < sizeof kstate_names / sizeof kstate_names[0] &&
	    kstate_names[st] != NULL)
		return kstate_names[st];
	return "unknown";
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

/* The bytes a and b begin with alike, cut back to the start of a UTF-8
 * sequence so both parts stay text; their first known bytes are the
 * same (the builder said so: nb_change's shared) and are not read. */
static size_t
common_prefix(const char *a, size_t alen, const char *b, size_t blen,
    size_t known)
{
	size_t n = alen < blen ? alen : blen, i = known < n ? known : n;

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
		keep = common_prefix(prev, prev_len, ch->p, ch->len, ch->shared);
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
	add_str(o, "id", json_str(m, "tool_call_id"));
	add_str(o, "content", json_str(m, "content"));
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
			journal_state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
			    ch->cell->n);
		return;
	case NB_ARTIFACT:
		o = rec("artifact");
		cJSON_AddNumberToObject(o, "c", ch->artifact->cell);
		add_str(o, "name", ch->artifact->name);
		add_str(o, "path", ch->artifact->path);
		/* a path relative to where terp ran: that folder too, so an
		 * export or resume from elsewhere finds the file */
		if (ch->artifact->path != NULL && ch->artifact->path[0] != '/') {
			char *cwd = getcwd(NULL, 0);
			add_str(o, "dir", cwd);
			free(cwd);
		}
		cJSON_AddNumberToObject(o, "bytes", (double)ch->artifact->bytes);
		break;
	case NB_QUESTION:
		o = rec("question");
		add_str(o, "text", ch->question->text);
		add_str(o, "notes", ch->question->notes);
		sync = 1;
		break;
	case NB_REPLY:
		buf_reset(&j->stream);	/* the reply holds it all */
		m = notebook_message(j->nb, ch->msg);
		o = rec("reply");
		add_str(o, "text", json_str(m, "content"));
		if (cJSON_GetObjectItemCaseSensitive(m, "tool_calls") != NULL)
			cJSON_AddItemToObject(o, "calls", cJSON_Duplicate(
			    cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), 1));
		/* the provider's reasoning items, byte for byte: a resumed
		 * session sends them back (Anthropic checks signatures) */
		if (cJSON_GetObjectItemCaseSensitive(m, "reasoning") != NULL)
			cJSON_AddItemToObject(o, "reasoning", cJSON_Duplicate(
			    cJSON_GetObjectItemCaseSensitive(m, "reasoning"), 1));
		break;
	case NB_TOOL_RESULT:
		put_tool_result(j, notebook_message(j->nb, ch->msg), -1);
		return;
	case NB_USAGE:
		o = rec("usage");
		cJSON_AddNumberToObject(o, "in", (double)ch->usage->input_tokens);
		cJSON_AddNumberToObject(o, "out", (double)ch->usage->output_tokens);
		cJSON_AddNumberToObject(o, "cached", (double)ch->usage->cached_tokens);
		if (ch->usage->reasoning_tokens > 0)
			cJSON_AddNumberToObject(o, "reasoning",
			    (double)ch->usage->reasoning_tokens);
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
	case NB_DROP:
		o = rec("drop");
		cJSON_AddNumberToObject(o, "c", ch->cell->n);
		sync = 1;
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

/* An answer's streamed text: kept until a newline or STREAM_MS since
 * the last record, then written (one line per batch, not per token). */
static void
put_streamed(struct journal *j, const char *p, size_t n)
{
	int64_t now = (int64_t)wall_ms();
	cJSON *o;

	if (n == 0 || buf_add(&j->stream, p, n) < 0)
		return;
	if (memchr(p, '\n', n) == NULL && now - j->stream_ms < STREAM_MS)
		return;
	o = rec("stream");
	add_bytes(o, j->stream.data, j->stream.len);
	buf_reset(&j->stream);
	j->stream_ms = now;
	put(j, o, 0);
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
		/* Not the running state around every cell, nor the state it
		 * goes back to after one (the cell and result records say
		 * that): two records a cell in a script, which the loader
		 * reads only for a start or a lost state. */
		if (!ev->restarted && !ev->state_lost && (ev->kstate == KERNEL_BUSY ||
		    (int)ev->kstate + 1 == j->kstate) && ev->kstate != KERNEL_STARTING)
			return;
		if (ev->kstate != KERNEL_BUSY)
			j->kstate = (int)ev->kstate + 1;
		if (ev->state_lost)
			journal_state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
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
		buf_reset(&j->stream);	/* no answer: the loader drops it too */
		o = rec("error");
		add_str(o, "text", ev->text);
		cJSON_AddStringToObject(o, "kind", event_error_name(ev));
		if (ev->http_status > 0)
			cJSON_AddNumberToObject(o, "status", ev->http_status);
		sync = 1;
		break;
	case EV_REASONING:	/* kept whole in the reply's record */
	case EV_CODE:		/* the call comes whole in the reply */
	case EV_APPROVE:	/* its cell, or its declined result, follows */
		return;
	case EV_NOTICE:
		o = rec("notice");
		add_str(o, "text", ev->text);
		break;
	case EV_ANSWER:
		/* a question's edge: what it wrote reaches the disk */
		sync_now(j);
		return;
	case EV_TEXT:
		put_streamed(j, ev->text, ev->len);
		return;
	case EV_IDLE:
		sync_edge(j);
		return;
	case EV_CELL_START: case EV_STDOUT: case EV_STDERR: case EV_RESULT:
	case EV_ARTIFACT: case EV_QUESTION: case EV_TOOL_CALL:
	case EV_USAGE: case EV_REQUEST: case EV_NET: case EV_PACKAGE:
	case EV_INPUT:	/* a question to the user, answered or not */
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
		journal_state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
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

int
journal_saved_again(struct journal *j)
{
	if (!j->again)
		return 0;
	j->again = 0;
	free(j->failed);	/* a later failure is told again */
	j->failed = NULL;
	return 1;
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
	buf_init(&j->stream, LLM_STREAM_KEEP);
	buf_init(&j->pending, (size_t)-1 / 2);
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
	buf_free(&j->stream);
	buf_free(&j->pending);
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
	j->end = 0;
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
	if (note_end(j) < 0) {
		*err = xasprintf("cannot read %s: %s", j->path, strerror(errno));
		journal_free(j);
		return NULL;
	}
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
		journal_state_lost(j->nb, &j->live_from, &j->replay_from, &j->replay_to,
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

char *
journal_read_sent(const struct journal *j, int i, size_t *len, char **err)
{
	struct lines ls = { .fd = -1 };
	struct sent_chain sc = { 0 };
	char *line, *body = NULL;
	size_t n;

	if ((ls.fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		*err = xasprintf("cannot read %s: %s", j->path, strerror(errno));
		return NULL;
	}
	/* Every request up to i is read: a record may keep the bytes of the
	 * one before (put_sent); only request i is built. */
	while (sc.n <= i && journal_next_line(&ls, &line, &n) == 1) {
		cJSON *o;
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
		sent_chain_add(&sc, o);
		cJSON_Delete(o);
	}
	if (i >= 0 && i < sc.n)
		body = sent_chain_body(&sc, i, len);
	sent_chain_free(&sc);
	close(ls.fd);
	free(ls.buf);
	if (body == NULL)
		*err = xasprintf("request %d is not in the journal", i + 1);
	return body;
}
