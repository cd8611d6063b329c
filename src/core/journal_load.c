/* journal_load: reading a journal back (journal.h's loading part). The
 * loader replays the lines into a fresh notebook (journal_load), or only
 * reads what they say about the session, for listings (journal_read_meta);
 * it skips and counts what it cannot use and repairs a conversation a
 * crash left without tool results. The writer is journal.c. */
#include "terp/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/datafile.h"
#include "terp/digest.h"
#include "terp/json_text.h"
#include "terp/kernel.h"
#include "terp/netlog.h"
#include "terp/pipindex.h"
#include "terp/util.h"

#include "journal_priv.h"

/* The longest line the loader accepts; longer ones count as corrupt. */
#define LINE_MAX_BYTES	(16u << 20)
#define JOURNAL_EGRESS_MAX	1000	/* /allow and /deny kept for a resume */

/* The bytes of a d_key (text) or b_key (base64) member: a new buffer,
 * or NULL. */
/* The Python state of cells live_from..k is gone: remember that
 * segment as the one a replay rebuilds, if a cell in it succeeded. One
 * where every cell failed built nothing (`/reset`, a NameError,
 * `/restart`): the segment before it stays the one to rebuild. */
void
journal_state_lost(const struct notebook *nb, int *live_from, int *from, int *to, int k)
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

static double
jnum(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static char *
jdup(const cJSON *o, const char *k)
{
	const char *s = json_str(o, k);
	return s ? xstrdup(s) : NULL;
}

/* Journals of version 1 wrote the state as the enum's value of those
 * days; this table is that order, fixed forever. */
static const enum kernel_state kstate_v1[] = {
	KERNEL_STOPPED, KERNEL_STARTING, KERNEL_LOADING, KERNEL_READY,
	KERNEL_BUSY, KERNEL_DEAD,
};

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

/* The sent records read so far, each as the journal holds it: whole,
 * a stand-in line, or a delta on the one before. A body is built only
 * when asked for (sent_chain_body): a long session's loader builds the
 * few the notebook keeps, not every body ever sent, so loading stays
 * linear in the journal (rebuilding each from the one before cost the
 * sum of all bodies: 3.5 GB for 3,000 questions). */
struct sent_rec {
	char	*what;		/* NULL: "request" */
	char	*data;		/* whole bytes, stand-in text, or the delta's tail */
	size_t	 dlen;		/* bytes of data */
	size_t	 keep;		/* delta: bytes of the body before; 0: data is whole */
	size_t	 len;		/* the body's size as read back */
};

void
sent_chain_free(struct sent_chain *sc)
{
	for (int i = 0; i < sc->n; i++) {
		free(sc->r[i].what);
		free(sc->r[i].data);
	}
	free(sc->r);
	memset(sc, 0, sizeof *sc);
}

/* One sent record, as the next request. The body before is what the
 * record before read back as: a delta ("keep") applies only when the
 * record says it is request n (a record lost in between yields no
 * wrong body) and keeps at least SENT_KEEP_MIN bytes, more than any
 * stand-in line holds, so a delta is never applied on a stand-in.
 * Returns 1 when the body reads back whole, 0 for a stand-in. */
int
sent_chain_add(struct sent_chain *sc, const cJSON *o)
{
	const cJSON *keep = cJSON_GetObjectItemCaseSensitive(o, "keep");
	const char *what = json_str(o, "what");
	struct sent_rec r = { .what = what ? xstrdup(what) : NULL };
	int n = sc->n, whole = 0;
	size_t k;

	if (keep == NULL) {
		if ((r.data = get_bytes(o, &r.dlen)) != NULL)
			whole = 1;
		else
			r.data = xasprintf("(%.0f bytes, sha256 %.64s: not kept in the "
			    "journal)", jnum(o, "len", 0), json_str(o, "sha256") ?
			    json_str(o, "sha256") : "?");
	} else {
		k = cJSON_IsNumber(keep) && keep->valuedouble >= 0 ?
		    (size_t)keep->valuedouble : SIZE_MAX;
		if (n > 0 && k >= SENT_KEEP_MIN && k <= sc->r[n - 1].len &&
		    jnum(o, "n", -1) == (double)n &&
		    (r.data = get_bytes_as(o, "dt", "bt", &r.dlen)) != NULL &&
		    r.dlen <= LINE_MAX_BYTES) {
			r.keep = k;
			whole = 1;
		} else {
			free(r.data);
			r.data = xasprintf("(%.0f bytes: the request before it is not "
			    "in the journal)", jnum(o, "len", 0));
		}
	}
	if (!whole)
		r.dlen = strlen(r.data);
	r.len = r.keep + r.dlen;
	if (sc->n == sc->cap) {
		sc->cap = sc->cap ? sc->cap * 2 : 64;
		sc->r = xrealloc(sc->r, (size_t)sc->cap * sizeof *sc->r);
	}
	sc->r[sc->n++] = r;
	return whole;
}

size_t
sent_chain_len(const struct sent_chain *sc, int i, const char **what)
{
	if (what)
		*what = sc->r[i].what ? sc->r[i].what : "request";
	return sc->r[i].len;
}

/* Request i's body: each delta, from i back, gives the bytes past what
 * it kept of the one before, until a whole record gives the start.
 * O(len + the records walked). New string of *len bytes. */
char *
sent_chain_body(const struct sent_chain *sc, int i, size_t *len)
{
	size_t w = sc->r[i].len;
	char *p = xmalloc(w + 1);

	p[w] = '\0';
	*len = w;
	for (int j = i; w > 0; j--) {
		const struct sent_rec *r = &sc->r[j];
		if (r->keep == 0) {
			memcpy(p, r->data, w);
			break;
		}
		if (w > r->keep) {
			memcpy(p + r->keep, r->data, w - r->keep);
			w = r->keep;
		}
	}
	return p;
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
	free(m->streamed);
	memset(m, 0, sizeof *m);
}

/* A data file record: into the notebook, or into meta for a listing.
 * Where the sandbox had it is not restored: that sandbox is gone. */
static void
meta_add_file(struct journal_meta *m, struct notebook *nb, const cJSON *f)
{
	struct datafile *jf;

	if (!cJSON_IsObject(f) || json_str(f, "path") == NULL)
		return;
	if (nb != NULL) {
		struct datafile d = {
			.path = (char *)json_str(f, "path"),
			.size = (uint64_t)jnum(f, "size", 0),
			.mtime = (int64_t)jnum(f, "mtime", 0),
			.fingerprint = (char *)json_str(f, "fp"),
			.recorded = (char *)json_str(f, "sandbox"),
		};
		notebook_add_file(nb, &d);
		return;
	}
	/* a file staged again replaces its earlier record */
	for (int i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].path, json_str(f, "path")) == 0) {
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
	const char *r = json_str(m, "role");
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
		if (json_str(c, "id") == NULL || json_str(c, "name") == NULL ||
		    json_str(c, "arguments") == NULL)
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
	int i = (int)jnum(o, "i", -1), n = notebook_nmessages(nb);
	cJSON *calls;

	if (!cJSON_IsObject(msg) || i < 0 || i > n)
		return -1;
	if (i < n) {
		notebook_replace_message(nb, i, cJSON_Duplicate(msg, 1));
		return 0;
	}
	if (is_role(msg, "user") && json_str(msg, "content") != NULL) {
		*pending = xstrdup(json_str(msg, "content"));
		return 0;
	}
	if (is_role(msg, "assistant")) {
		if ((calls = calls_copy(cJSON_GetObjectItemCaseSensitive(msg,
		    "tool_calls"))) == NULL)
			return -1;
		notebook_add_reply(nb, json_str(msg, "content"), calls);
		return 0;
	}
	if (is_role(msg, "tool") && json_str(msg, "tool_call_id") != NULL &&
	    json_str(msg, "content") != NULL) {
		notebook_add_tool_result(nb, json_str(msg, "tool_call_id"),
		    json_str(msg, "content"), cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(msg, "is_error")));
		return 0;
	}
	return -1;
}

/* A cell whose own record was damaged (or never reached the disk, as
 * on a full disk) leaves a gap: it comes back as a stand-in, so the
 * records of the cells after it still fit (one damaged line costs that
 * cell's code, not every later cell). Numbers further ahead than
 * GAP_MAX are taken as damage themselves. */
#define GAP_MAX	1000

#define STAND_IN	"# terp: this cell's record in the journal was damaged; " \
			"its code is lost"

static void
stand_in(struct notebook *nb, int upto)
{
	while (notebook_ncells(nb) < upto)
		notebook_add_cell(nb, CELL_BY_MODEL, STAND_IN, NULL);
}

/* A cell record for a stand-in (one a damaged number in another record
 * made early): the stand-in becomes that cell. The loader owns the
 * notebook it builds; no observer watches it yet. */
static int
adopt(struct cell *c, const char *by, const char *code, const char *call)
{
	if (c == NULL || strcmp(c->code, STAND_IN) != 0)
		return -1;
	free(c->code);
	c->code = xstrdup(code ? code : "");
	free(c->tool_call_id);
	c->tool_call_id = call ? xstrdup(call) : NULL;
	c->author = by && strcmp(by, "user") == 0 ? CELL_BY_USER : CELL_BY_MODEL;
	return 0;
}

/* The cell records other than its own ("out", "result") refer to: the
 * one after the last loaded stands in for a damaged cell record. */
static struct cell *
cell_of(struct notebook *nb, const cJSON *o)
{
	int n = (int)jnum(o, "c", 0);

	if (n == notebook_ncells(nb) + 1)
		stand_in(nb, n);
	return notebook_cell(nb, n);
}

/* A cell's result record, with the tails of streams cut in between. */
static int
apply_result(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	struct cell *c = cell_of(nb, o);
	int status = cell_status_parse(json_str(o, "status"));
	const cJSON *tl;
	struct cell_result r = {
		.value = json_str(o, "value"), .ename = json_str(o, "ename"),
		.evalue = json_str(o, "evalue"), .traceback = json_str(o, "traceback"),
		.reason = json_str(o, "reason"),
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
		journal_state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to, c->n);
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
	if (json_str(o, "text") == NULL)
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
		notebook_add_question(nb, json_str(o, "text"), json_str(o, "notes"));
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
		journal_state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to,
		    notebook_ncells(nb));
	return 0;
}

static int
rec_cell(const cJSON *o, struct notebook *nb)
{
	const char *by = json_str(o, "by");
	double n = jnum(o, "n", 0);

	if (n >= 1 && n <= notebook_ncells(nb))
		return adopt(notebook_cell(nb, (int)n), by, json_str(o, "code"),
		    json_str(o, "call"));
	if (n > notebook_ncells(nb) + 1 && n <= notebook_ncells(nb) + 1 + GAP_MAX)
		stand_in(nb, (int)n - 1);
	if ((int)n != notebook_ncells(nb) + 1)
		return -1;
	notebook_add_cell(nb, by && strcmp(by, "user") == 0 ? CELL_BY_USER :
	    CELL_BY_MODEL, json_str(o, "code"), json_str(o, "call"));
	return 0;
}

static int
rec_out(const cJSON *o, struct notebook *nb)
{
	int s = (int)jnum(o, "s", -1);
	struct cell *c = cell_of(nb, o);
	size_t len;
	char *p;

	if (c == NULL || (s != 0 && s != 1) || (p = get_bytes(o, &len)) == NULL)
		return -1;
	notebook_cell_output(nb, c->n, s, p, len);
	free(p);
	return 0;
}

/* The path is where terp copied the file; a relative one is taken
 * from the folder terp ran in ("dir"; journals of before it had none:
 * the path as it was). */
static int
rec_artifact(const cJSON *o, struct notebook *nb)
{
	const char *path = json_str(o, "path"), *dir = json_str(o, "dir");
	char *full;

	if (json_str(o, "name") == NULL || path == NULL)
		return -1;
	full = path[0] != '/' && dir != NULL && dir[0] == '/' ?
	    xasprintf("%s/%s", dir, path) : xstrdup(path);
	notebook_add_artifact(nb, (int)jnum(o, "c", 0), json_str(o, "name"),
	    full, (uint64_t)jnum(o, "bytes", 0));
	free(full);
	return 0;
}

/* A reply's reasoning items (journals before them have none): objects
 * with a string type, copied whole; anything else is left out, as the
 * provider would refuse it. NULL when there are none. */
static cJSON *
reasoning_copy(const cJSON *items)
{
	cJSON *out = NULL;
	const cJSON *it;

	if (!cJSON_IsArray(items))
		return NULL;
	cJSON_ArrayForEach(it, items) {
		if (!cJSON_IsObject(it) || json_str(it, "type") == NULL)
			continue;
		if (out == NULL)
			out = cJSON_CreateArray();
		cJSON_AddItemToArray(out, cJSON_Duplicate(it, 1));
	}
	return out;
}

static int
rec_reply(const cJSON *o, struct notebook *nb)
{
	cJSON *calls = calls_copy(cJSON_GetObjectItemCaseSensitive(o, "calls"));

	if (calls == NULL)
		return -1;
	notebook_add_reply_reasoning(nb, json_str(o, "text"), calls,
	    reasoning_copy(cJSON_GetObjectItemCaseSensitive(o, "reasoning")));
	return 0;
}

static int
rec_tool(const cJSON *o, struct notebook *nb)
{
	int i = (int)jnum(o, "i", -1);
	int is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "is_error"));

	if (json_str(o, "id") == NULL || json_str(o, "content") == NULL)
		return -1;
	/* one the repair of a resume put before the end */
	if (i >= 0 && i < notebook_nmessages(nb))
		notebook_insert_tool_result(nb, i, json_str(o, "id"), json_str(o, "content"),
		    is_error);
	else
		notebook_add_tool_result(nb, json_str(o, "id"), json_str(o, "content"),
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
		.reasoning_tokens = (long)jnum(o, "reasoning", 0),
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

	if (json_str(o, "text") == NULL || upto < 1 ||
	    upto > notebook_nmessages(nb))
		return -1;
	notebook_set_summary(nb, upto, json_str(o, "text"));
	return 0;
}

/* A request body: to the chain; into the notebook at the end of the
 * journal (sent_to_notebook), when the last ones are known. */
static int
rec_sent(const cJSON *o, struct sent_chain *sc, struct journal_meta *m)
{
	m->sent_whole = sent_chain_add(sc, o);
	return 0;
}

/* Every request into the notebook: the size and description of each,
 * the body of the last NOTEBOOK_SENT_KEEP only (as a live session
 * keeps them). */
static void
sent_to_notebook(const struct sent_chain *sc, struct notebook *nb)
{
	for (int i = 0; i < sc->n; i++) {
		const char *what;
		size_t len = sent_chain_len(sc, i, &what);
		char *p = NULL;

		if (i >= sc->n - NOTEBOOK_SENT_KEEP)
			p = sent_chain_body(sc, i, &len);
		if (p != NULL)	/* kept as rebuilt, not copied again */
			free(notebook_add_sent_keep(nb, what, p, len));
		else
			notebook_add_sent(nb, what, NULL, len);
	}
}

/* terp's own lines: a reset lost the state; /allow and /deny are
 * applied again by a resume (kernel_opts.egress_ops). */
static int
rec_note(const cJSON *o, struct notebook *nb, struct journal_meta *m)
{
	const char *kind = json_str(o, "kind"), *spec = json_str(o, "text");

	if (kind && strcmp(kind, "reset") == 0)
		journal_state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to,
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
	const char *sb = json_str(o, "sandbox"), *se = json_str(o, "session");

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
	const char *name = json_str(o, "name"), *ver = json_str(o, "version");

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

	if (json_str(o, "id") == NULL)
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

/* An answer cut by a kill while it streamed: what had been shown comes
 * back as the reply, marked as cut (the model sees the mark too). */
static void
streamed_cut(struct notebook *nb, struct journal_meta *m)
{
	char *text;

	if (m->streamed == NULL || nb == NULL)
		return;
	text = xasprintf("%.*s\n\n[cut: terp stopped while this answer was "
	    "streaming]", (int)(m->nstreamed > INT32_MAX ? INT32_MAX : m->nstreamed),
	    m->streamed);
	notebook_add_reply(nb, text, cJSON_CreateArray());
	free(text);
	free(m->streamed);
	m->streamed = NULL;
	m->nstreamed = 0;
}

/* A "stream" record: more of the answer's text. */
static int
rec_stream(const cJSON *o, struct journal_meta *m)
{
	size_t len;
	char *p = get_bytes(o, &len);

	if (p == NULL)
		return -1;
	if (m->nstreamed + len <= LINE_MAX_BYTES) {
		m->streamed = xrealloc(m->streamed, m->nstreamed + len + 1);
		memcpy(m->streamed + m->nstreamed, p, len);
		m->nstreamed += len;
		m->streamed[m->nstreamed] = '\0';
	}
	free(p);
	return 0;
}

/* Applies one record, through the notebook's update functions as the
 * agent made the change. Returns 0, or -1 when it does not fit
 * (counted as skipped). nb may be NULL (listing: meta only). */
static int
apply(const cJSON *o, struct notebook *nb, struct journal_meta *m, int first,
    char **pending, struct sent_chain *sc)
{
	const char *t = json_str(o, "t");
	int legacy_q = 0;

	if (t == NULL)
		return -1;
	if (*pending != NULL && nb != NULL) {
		legacy_q = strcmp(t, "question") == 0;
		legacy_question(nb, pending, legacy_q ? json_str(o, "text") : NULL);
	}
	if (strcmp(t, "meta") == 0)
		return first ? rec_meta(o, nb, m) : -1;
	if (m->id == NULL)
		return -1;	/* nothing counts before the meta line */
	/* a streamed answer: superseded by its reply, dropped by a new turn
	 * or an error, or cut when the session went on after it */
	if (strcmp(t, "stream") == 0)
		return nb != NULL ? rec_stream(o, m) : 0;
	if (strcmp(t, "reply") == 0 || strcmp(t, "turn") == 0 ||
	    strcmp(t, "error") == 0) {
		free(m->streamed);
		m->streamed = NULL;
		m->nstreamed = 0;
	} else if (strcmp(t, "question") == 0 || strcmp(t, "resume") == 0) {
		streamed_cut(nb, m);
	}
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
			journal_state_lost(nb, &m->live_from, &m->replay_from, &m->replay_to,
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
		return rec_sent(o, sc, m);
	if (strcmp(t, "summary") == 0)
		return rec_summary(o, nb);
	if (strcmp(t, "net") == 0)
		return rec_net(o, nb);
	if (strcmp(t, "installed") == 0)
		return rec_installed(o, nb);
	if (strcmp(t, "drop") == 0)	/* `d` on a cell */
		return notebook_drop_cell(nb, (int)jnum(o, "c", 0));
	if (strcmp(t, "error") == 0) {
		/* how a question ended without an answer, for an export */
		notebook_question_unanswered(nb, json_str(o, "text"));
		return 0;
	}
	/* session, turn, notice, and version 1's text, tool_call
	 * and answer: the record of what happened; the notebook needs
	 * none (a reply holds its text and its calls) */
	return 0;
}

/* Whether call id is among the calls of msg (an assistant message) and
 * no result for it came yet in the messages from first up to (not
 * including) upto: a walk along the list, not an index per message (a
 * walk from the head each: quadratic in a long session). */
static int
call_open(const cJSON *msg, const cJSON *first, const cJSON *upto, const char *id)
{
	const cJSON *call;
	int found = 0;

	cJSON_ArrayForEach(call, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls")) {
		const char *cid = json_str(call, "id");
		if (cid != NULL && strcmp(cid, id) == 0)
			found = 1;
	}
	for (const cJSON *t = first; t != NULL && t != upto && found; t = t->next) {
		const char *tid = json_str(t, "tool_call_id");
		if (tid != NULL && strcmp(tid, id) == 0)
			found = 0;	/* answered already: a second is an orphan */
	}
	return found;
}

/* A damaged reply line leaves its tool results without their call,
 * which the providers refuse (400 on every later request). Each such
 * orphan becomes, in its place, a user message telling the model what
 * it held: the conversation stays valid and the message indexes the
 * journal's later records use stay right. Done again at every load (the
 * file keeps the records as they were). One walk along the list. */
static void
repair_orphans(struct notebook *nb)
{
	cJSON *msgs = notebook_messages(nb);
	cJSON *msg = msgs != NULL ? msgs->child : NULL, *next;
	const cJSON *start = NULL;

	for (int i = 0; msg != NULL; i++, msg = next) {
		const char *id = json_str(msg, "tool_call_id");
		cJSON *note;
		char *text;

		next = msg->next;	/* msg may be replaced below */
		if (!is_role(msg, "tool")) {
			start = is_role(msg, "assistant") ? msg : NULL;
			continue;
		}
		if (id != NULL && start != NULL &&
		    call_open(start, start->next, msg, id))
			continue;
		text = xasprintf("(terp: the reply that made a tool call was damaged in "
		    "the journal and is lost; the call's result was:)\n%s",
		    json_str(msg, "content") ? json_str(msg, "content") : "");
		note = cJSON_CreateObject();
		cJSON_AddStringToObject(note, "role", "user");
		cJSON_AddStringToObject(note, "content", text);
		free(text);
		notebook_replace_message(nb, i, note);
		start = NULL;	/* a tool message after a user one is an orphan */
	}
}

/* After a crash: a cell that never got its result was interrupted, and
 * a tool call without a result gets one right after the recorded
 * results, so the provider accepts the conversation. The indexes of
 * the results inserted go to m->repaired. */
static void
repair(struct notebook *nb, struct journal_meta *m)
{
	cJSON *msgs = notebook_messages(nb);
	int i = 0;

	for (int n = 1; n <= notebook_ncells(nb); n++) {
		struct cell *c = notebook_cell(nb, n);
		if (c->author == CELL_BY_MODEL)
			c->told_model = 1;	/* through its tool result */
		if (c->status == CELL_RUNNING || c->status == CELL_PENDING) {
			struct cell_result r = { .status = CELL_INTERRUPTED,
			    .reason = "terp stopped while this cell ran; its "
			    "output may be incomplete" };
			notebook_cell_result(nb, n, &r);
		}
	}
	repair_orphans(nb);
	/* A walk along the list: indexing it is a walk from its head. */
	for (cJSON *msg = msgs ? msgs->child : NULL; msg != NULL; ) {
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg,
		    "tool_calls"), *call;
		cJSON *after = msg->next;
		int k = i + 1;

		for (; after != NULL && is_role(after, "tool"); after = after->next)
			k++;
		/* the results inserted go after the recorded, before after */
		if (!cJSON_IsArray(calls))
			calls = NULL;
		cJSON_ArrayForEach(call, calls) {
			const char *id = json_str(call, "id");
			int found = 0;

			for (const cJSON *t = msg->next; t != after && id != NULL;
			    t = t->next) {
				const char *tid = json_str(t, "tool_call_id");
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
		}
		i = k;
		msg = after;
	}
}

/* The next complete line (without its newline, NUL-terminated) in
 * *line, or 0 at the end. A line longer than LINE_MAX_BYTES comes back
 * as an empty line with ls->toolong set. Leftover bytes without a
 * newline at the end are the torn last line: ls->len > ls->off then. */
int
journal_next_line(struct lines *ls, char **line, size_t *len)
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
	struct sent_chain sc = { 0 };
	struct stat st;
	char *line, *pending = NULL;
	size_t len;
	int rc, first = 1;

	memset(m, 0, sizeof *m);
	m->live_from = 1;
	/* O_NONBLOCK: a FIFO in a journal's place must not hang a listing */
	if ((ls.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0 ||
	    fstat(ls.fd, &st) < 0) {
		*err = xasprintf("cannot read %s: %s", path, strerror(errno));
		if (ls.fd >= 0)
			close(ls.fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("cannot read %s: not a regular file", path);
		close(ls.fd);
		return -1;
	}
	m->last_active = (int64_t)st.st_mtim.tv_sec;
	while ((rc = journal_next_line(&ls, &line, &len)) == 1) {
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
		    apply(o, nb, m, first, &pending, &sc) < 0)
			m->skipped++;
		cJSON_Delete(o);
		first = 0;
	}
	if (pending != NULL)
		legacy_question(nb, &pending, NULL);
	if (nb != NULL)
		sent_to_notebook(&sc, nb);
	sent_chain_free(&sc);
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
	if (nb != NULL) {
		streamed_cut(nb, m);
		repair(nb, m);
	}
	return 0;
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
