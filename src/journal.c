/* journal: the crash-safe record of a session. Every notebook change is
 * appended as one JSON line with one write(2), so a killed terp (even
 * kill -9) loses nothing written. Against power loss the file is also
 * fdatasync'ed at a question's edges (question, answer, error, idle), not
 * at every cell: a sync costs ~0.1 ms here and a turn's budget is small.
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
#include "terp/kernel.h"
#include "terp/netlog.h"
#include "terp/pipindex.h"
#include "terp/sanitize.h"
#include "terp/store.h"
#include "terp/util.h"

#define JOURNAL_VERSION	1
/* The longest line the loader accepts; longer ones count as corrupt. */
#define LINE_MAX_BYTES	(16u << 20)
/* Model text is coalesced into lines of about this size. */
#define TEXT_FLUSH	8192
/* Request bodies up to this size are kept whole; larger ones by hash. */
#define SENT_BODY_MAX	(64u << 10)

struct journal {
	char		 *id, *dir, *path;
	int		  fd;
	struct notebook	 *nb;
	int		  nmsgs;	/* messages written */
	char		 *last_msg;	/* how the last one was written */
	int		  nsent;	/* ledger entries written */
	struct buf	  text;		/* model text not yet written */
	uint64_t	(*logged)[2];	/* per cell, per stream: bytes written */
	int		  live_from, replay_from, replay_to;
	int		  nlogged;
	char		 *failed;
};

static int64_t
wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
fail(struct journal *j, const char *what)
{
	if (j->failed == NULL)
		j->failed = xasprintf("journal %s: %s: %s", j->path, what,
		    strerror(errno));
}

/* Writes o as one line with one write(2) (write_all only loops on a
 * short write) and frees it; syncs when asked. */
static int
put(struct journal *j, cJSON *o, int sync)
{
	char *s;
	size_t len;
	int rc = 0;

	cJSON_AddNumberToObject(o, "ts", (double)wall_ms());
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (s == NULL)
		fatal("out of memory (cJSON)");
	len = strlen(s);
	s = xrealloc(s, len + 2);
	s[len++] = '\n';
	s[len] = '\0';
	if (j->fd < 0 || write_all(j->fd, s, len) < 0) {
		fail(j, "write");
		rc = -1;
	} else if (sync && fdatasync(j->fd) < 0) {
		fail(j, "fdatasync");
		rc = -1;
	}
	free(s);
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
add_bytes(cJSON *o, const char *p, size_t n)
{
	char *s;

	if (utf8_clean(p, n)) {
		s = xstrndup(p, n);
		cJSON_AddStringToObject(o, "d", s);
	} else {
		s = base64_encode(p, n, NULL);
		cJSON_AddStringToObject(o, "b", s);
	}
	free(s);
}

/* The bytes of a "d" or "b" member: a new buffer, or NULL. */
static char *
get_bytes(const cJSON *o, size_t *len)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "d");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "b");

	if (cJSON_IsString(d)) {
		*len = strlen(d->valuestring);
		return xstrndup(d->valuestring, *len);
	}
	if (cJSON_IsString(b))
		return base64_decode(b->valuestring, strlen(b->valuestring), len);
	return NULL;
}

static void
flush_text(struct journal *j)
{
	cJSON *o;

	if (j->text.len == 0)
		return;
	o = rec("text");
	add_bytes(o, j->text.data, j->text.len);
	buf_reset(&j->text);
	put(j, o, 0);
}

static char *
msg_string(const cJSON *m)
{
	char *s = cJSON_PrintUnformatted(m);
	if (s == NULL)
		fatal("out of memory (cJSON)");
	return s;
}

/* Writes the messages and ledger entries the notebook gained. The last
 * message written is compared again, so one the agent completed in
 * place after adding it is written anew (same index, loader replaces). */
static void
catch_up(struct journal *j, int recheck)
{
	cJSON *msgs = notebook_messages(j->nb);
	int n = cJSON_GetArraySize(msgs);
	int from = j->nmsgs;

	if (recheck && j->nmsgs > 0 && j->last_msg != NULL) {
		char *s = msg_string(cJSON_GetArrayItem(msgs, j->nmsgs - 1));
		if (strcmp(s, j->last_msg) != 0)
			from = j->nmsgs - 1;
		free(s);
	}
	for (int i = from; i < n; i++) {
		cJSON *m = cJSON_GetArrayItem(msgs, i);
		cJSON *o = rec("msg");
		cJSON_AddNumberToObject(o, "i", i);
		cJSON_AddItemToObject(o, "m", cJSON_Duplicate(m, 1));
		put(j, o, 0);
		if (i == n - 1) {
			free(j->last_msg);
			j->last_msg = msg_string(m);
		}
	}
	j->nmsgs = n;
	for (; j->nsent < notebook_nsent(j->nb); j->nsent++) {
		const char *what, *body;
		size_t len;
		unsigned char d[32];
		char hex[65];
		struct sha256 h;
		cJSON *o = rec("sent");

		body = notebook_sent(j->nb, j->nsent, &what, &len);
		add_str(o, "what", what);
		cJSON_AddNumberToObject(o, "len", (double)len);
		if (len <= SENT_BODY_MAX) {
			add_bytes(o, body, len);
		} else {
			/* Too big to keep every turn: its fingerprint. */
			sha256_init(&h);
			sha256_add(&h, body, len);
			sha256_done(&h, d);
			sha256_hex(d, hex);
			cJSON_AddStringToObject(o, "sha256", hex);
		}
		put(j, o, 0);
	}
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
 * segment (if not empty) as the one a replay rebuilds. */
static void
state_lost(int *live_from, int *from, int *to, int k)
{
	if (k >= *live_from) {
		*from = *live_from;
		*to = k;
		*live_from = k + 1;
	}
}

/* Output is written as it comes while the cell's stream is within the
 * notebook's head; past it nothing, until the result brings the tail
 * the notebook kept. So a cell that prints 2 GB costs head+tail. */
static void
on_output(struct journal *j, const struct event *ev)
{
	int s = ev->type == EV_STDERR;
	uint64_t *lg = logged(j, ev->cell->n);
	size_t max = ev->cell->out[s].head_max, n = ev->len;
	cJSON *o;

	if (lg == NULL || lg[s] >= max)
		return;
	if (lg[s] + n > max)
		n = (size_t)(max - lg[s]);
	lg[s] += n;
	o = rec("out");
	cJSON_AddNumberToObject(o, "c", ev->cell->n);
	cJSON_AddNumberToObject(o, "s", s);
	add_bytes(o, ev->text, n);
	put(j, o, 0);
}

static void
on_result(struct journal *j, const struct cell *c)
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

void
journal_event(void *arg, const struct event *ev)
{
	struct journal *j = arg;
	cJSON *o = NULL;
	int sync = 0;

	if (ev->type == EV_TEXT) {
		if (buf_add(&j->text, ev->text, ev->len) < 0) {
			flush_text(j);
			if (buf_add(&j->text, ev->text, ev->len) < 0) {
				/* a delta larger than the buffer: its own line */
				o = rec("text");
				add_bytes(o, ev->text, ev->len);
				put(j, o, 0);
			}
		}
		if (j->text.len >= TEXT_FLUSH)
			flush_text(j);
		return;
	}
	flush_text(j);
	if ((ev->type == EV_STDOUT || ev->type == EV_STDERR)) {
		if (ev->cell != NULL)
			on_output(j, ev);
		return;
	}
	catch_up(j, 1);
	switch (ev->type) {
	case EV_SESSION:
		o = rec("session");
		add_str(o, "id", ev->text);
		add_str(o, "workspace", ev->name);
		break;
	case EV_KERNEL:
		if (ev->n == KERNEL_STARTING || ev->n == KERNEL_STOPPED)
			state_lost(&j->live_from, &j->replay_from, &j->replay_to,
			    notebook_ncells(j->nb));
		o = rec("kernel");
		cJSON_AddNumberToObject(o, "state", ev->n);
		add_str(o, "msg", ev->text);
		break;
	case EV_CELL_START:
		if (ev->cell == NULL)
			return;
		o = rec("cell");
		cJSON_AddNumberToObject(o, "n", ev->cell->n);
		cJSON_AddStringToObject(o, "by",
		    ev->cell->author == CELL_BY_USER ? "user" : "model");
		add_str(o, "call", ev->cell->tool_call_id);
		add_str(o, "code", ev->cell->code);
		break;
	case EV_RESULT:
		if (ev->cell == NULL)
			return;
		on_result(j, ev->cell);
		if (ev->cell->state_lost)
			state_lost(&j->live_from, &j->replay_from, &j->replay_to,
			    ev->cell->n);
		return;
	case EV_ARTIFACT:
		if (ev->artifact == NULL)
			return;
		o = rec("artifact");
		cJSON_AddNumberToObject(o, "c", ev->artifact->cell);
		add_str(o, "name", ev->artifact->name);
		add_str(o, "path", ev->artifact->path);
		cJSON_AddNumberToObject(o, "bytes", (double)ev->artifact->bytes);
		break;
	case EV_QUESTION:
		o = rec("question");
		add_str(o, "text", ev->text);
		sync = 1;
		break;
	case EV_TURN:
		o = rec("turn");
		cJSON_AddNumberToObject(o, "n", ev->n);
		break;
	case EV_TOOL_CALL:
		o = rec("tool_call");
		add_str(o, "id", ev->id);
		add_str(o, "name", ev->name);
		add_str(o, "code", ev->text);
		break;
	case EV_USAGE:
		if (ev->usage == NULL)
			return;
		o = rec("usage");
		cJSON_AddNumberToObject(o, "in", (double)ev->usage->input_tokens);
		cJSON_AddNumberToObject(o, "out", (double)ev->usage->output_tokens);
		cJSON_AddNumberToObject(o, "cached", (double)ev->usage->cached_tokens);
		break;
	case EV_ANSWER:
		o = rec("answer");
		add_str(o, "text", ev->text);
		sync = 1;
		break;
	case EV_ERROR:
		o = rec("error");
		add_str(o, "text", ev->text);
		sync = 1;
		break;
	case EV_NOTICE:
		o = rec("notice");
		add_str(o, "text", ev->text);
		break;
	case EV_REQUEST:	/* the ledger entry came with catch_up */
		return;
	case EV_PACKAGE:	/* for a resume's replay: install it again */
		if (ev->name == NULL || ev->text == NULL)
			return;
		o = rec("installed");
		cJSON_AddNumberToObject(o, "c", ev->cell ? ev->cell->n : 0);
		add_str(o, "name", ev->name);
		add_str(o, "version", ev->text);
		break;
	case EV_NET:	/* one line per attempt, when it ends */
		if (ev->net == NULL || ev->net->open)
			return;
		o = rec("net");
		netlog_json_add(o, ev->net);
		break;
	case EV_IDLE:
		if (j->fd >= 0 && fdatasync(j->fd) < 0)
			fail(j, "fdatasync");
		return;
	case EV_TEXT: case EV_STDOUT: case EV_STDERR:
		return;
	}
	if (o != NULL)
		put(j, o, sync);
}

int
journal_sync(struct journal *j)
{
	flush_text(j);
	catch_up(j, 1);
	if (j->fd >= 0 && fdatasync(j->fd) < 0) {
		fail(j, "fdatasync");
		return -1;
	}
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
journal_note(struct journal *j, const char *kind, const char *text)
{
	cJSON *o = rec("note");

	flush_text(j);
	if (kind != NULL && strcmp(kind, "reset") == 0)
		state_lost(&j->live_from, &j->replay_from, &j->replay_to,
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

/* ---- data files -------------------------------------------------- */

static cJSON *
file_json(const struct datafile *f)
{
	cJSON *o = cJSON_CreateObject();
	add_str(o, "path", f->path);
	cJSON_AddNumberToObject(o, "size", (double)f->size);
	cJSON_AddNumberToObject(o, "mtime", (double)f->mtime);
	add_str(o, "fp", f->fingerprint);
	return o;
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
	buf_init(&j->text, 1u << 20);
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
	free(j->last_msg);
	free(j->logged);
	free(j->failed);
	buf_free(&j->text);
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
	cJSON *o, *files;
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
	files = cJSON_AddArrayToObject(o, "data");
	for (int i = 0; info != NULL && i < info->ndata; i++) {
		struct datafile f;
		char *e = NULL;
		if (datafile_fingerprint(info->data_files[i], &f, &e) < 0) {
			/* recorded all the same: resume will say it is gone */
			free(e);
			memset(&f, 0, sizeof f);
			f.path = xstrdup(info->data_files[i]);
		}
		cJSON_AddItemToArray(files, file_json(&f));
		datafile_free(&f);
	}
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
	/* Messages the loader repaired are not in the file yet: they are
	 * written again from the first one it changed (the loader replaces
	 * by index). */
	j->nmsgs = cJSON_GetArraySize(notebook_messages(nb));
	if (meta->repaired && meta->repaired_from < j->nmsgs)
		j->nmsgs = meta->repaired_from;
	if (j->nmsgs > 0)
		j->last_msg = msg_string(cJSON_GetArrayItem(notebook_messages(nb),
		    j->nmsgs - 1));
	j->nsent = notebook_nsent(nb);
	/* the loaded cells' output is in the file already */
	for (int n = 1; n <= notebook_ncells(nb); n++) {
		uint64_t *lg = logged(j, n);
		lg[0] = lg[1] = UINT64_MAX;
	}
	j->live_from = meta->live_from > 0 ? meta->live_from : 1;
	j->replay_from = meta->replay_from;
	j->replay_to = meta->replay_to;
	state_lost(&j->live_from, &j->replay_from, &j->replay_to,
	    notebook_ncells(nb));
	put(j, rec("resume"), 0);
	catch_up(j, 0);
	if (j->fd >= 0 && fdatasync(j->fd) < 0)
		fail(j, "fdatasync");
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

int
journal_add_data(struct journal *j, const char *path, char **err)
{
	struct datafile f;
	cJSON *o;

	if (datafile_fingerprint(path, &f, err) < 0)
		return -1;
	o = rec("data");
	cJSON_AddItemToObject(o, "file", file_json(&f));
	datafile_free(&f);
	if (put(j, o, 1) < 0) {
		*err = xstrdup(j->failed);
		return -1;
	}
	return 0;
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
	for (int i = 0; i < m->negress; i++)
		free(m->egress[i]);
	free(m->egress);
	for (int i = 0; i < m->npackages; i++)
		free(m->packages[i]);
	free(m->packages);
	memset(m, 0, sizeof *m);
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

static void
meta_add_file(struct journal_meta *m, const cJSON *f)
{
	struct datafile *jf;

	if (!cJSON_IsObject(f) || jstr(f, "path") == NULL)
		return;
	/* a file staged again replaces its earlier record */
	for (int i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].path, jstr(f, "path")) == 0) {
			datafile_free(&m->files[i]);
			jf = &m->files[i];
			goto fill;
		}
	m->files = xrealloc(m->files, (size_t)(m->nfiles + 1) * sizeof *m->files);
	jf = &m->files[m->nfiles++];
fill:
	jf->path = jdup(f, "path");
	jf->size = (uint64_t)jnum(f, "size", 0);
	jf->mtime = (int64_t)jnum(f, "mtime", 0);
	jf->fingerprint = jdup(f, "fp");
}

static int
parse_status(const char *s, enum cell_status *out)
{
	for (int i = CELL_PENDING; i <= CELL_CRASHED; i++)
		if (s != NULL && strcmp(s, cell_status_name((enum cell_status)i)) == 0) {
			*out = (enum cell_status)i;
			return 0;
		}
	return -1;
}

static void
set_str(char **dst, const cJSON *o, const char *k)
{
	free(*dst);
	*dst = jdup(o, k);
}

/* A package pip installed, as "name==version" (a later version of the
 * same name replaces it). Names and versions go into Python code at a
 * replay: only pip's characters are taken. */
static void
meta_add_package(struct journal_meta *m, const char *name, const char *ver)
{
	size_t nl;
	int i;

	if (name == NULL || ver == NULL || !pipindex_word_ok(name) ||
	    !pipindex_word_ok(ver))
		return;
	nl = strlen(name);
	for (i = 0; i < m->npackages; i++)
		if (strncmp(m->packages[i], name, nl) == 0 &&
		    strncmp(m->packages[i] + nl, "==", 2) == 0)
			break;
	if (i == m->npackages) {
		if (m->npackages >= JOURNAL_EGRESS_MAX)
			return;
		m->packages = xrealloc(m->packages, (size_t)(m->npackages + 2) *
		    sizeof *m->packages);
		m->packages[m->npackages++] = NULL;
		m->packages[m->npackages] = NULL;
	}
	free(m->packages[i]);
	m->packages[i] = xasprintf("%s==%s", name, ver);
}

/* Applies one record. Returns 0, or -1 when it does not fit (counted
 * as skipped). nb may be NULL (listing: meta only). */
static int
apply(const cJSON *o, struct notebook *nb, struct journal_meta *m, int first)
{
	const char *t = jstr(o, "t");
	struct cell *c;

	if (t == NULL)
		return -1;
	if (strcmp(t, "meta") == 0) {
		const cJSON *f;
		if (!first || jstr(o, "id") == NULL)
			return -1;
		m->id = jdup(o, "id");
		m->started = (int64_t)jnum(o, "started", 0);
		m->provider = jdup(o, "provider");
		m->model = jdup(o, "model");
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(o, "data"))
			meta_add_file(m, f);
		return 0;
	}
	if (m->id == NULL)
		return -1;	/* nothing counts before the meta line */
	if (strcmp(t, "question") == 0) {
		if (m->nquestions++ == 0 && jstr(o, "text") != NULL)
			m->first_question = jdup(o, "text");
		/* the agent tells the model of finished hand-run cells
		 * with each question */
		for (int i = 1; nb != NULL && i <= notebook_ncells(nb); i++) {
			c = notebook_cell(nb, i);
			if (c->status != CELL_RUNNING && c->status != CELL_PENDING)
				c->told_model = 1;
		}
		return 0;
	}
	if (strcmp(t, "data") == 0) {
		meta_add_file(m, cJSON_GetObjectItemCaseSensitive(o, "file"));
		return 0;
	}
	if (strcmp(t, "resume") == 0) {
		m->nresumed++;
		if (nb != NULL)
			state_lost(&m->live_from, &m->replay_from, &m->replay_to,
			    notebook_ncells(nb));
		return 0;
	}
	if (nb == NULL)
		return 0;
	if (strcmp(t, "kernel") == 0) {
		int st = (int)jnum(o, "state", -1);
		if (st == KERNEL_STARTING || st == KERNEL_STOPPED)
			state_lost(&m->live_from, &m->replay_from, &m->replay_to,
			    notebook_ncells(nb));
		return 0;
	}
	if (strcmp(t, "note") == 0) {
		const char *kind = jstr(o, "kind"), *spec = jstr(o, "text");
		if (kind && strcmp(kind, "reset") == 0)
			state_lost(&m->live_from, &m->replay_from, &m->replay_to,
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
	if (strcmp(t, "cell") == 0) {
		const char *by = jstr(o, "by");
		if ((int)jnum(o, "n", 0) != notebook_ncells(nb) + 1)
			return -1;
		c = notebook_add_cell(nb, by && strcmp(by, "user") == 0 ?
		    CELL_BY_USER : CELL_BY_MODEL, jstr(o, "code"), jstr(o, "call"));
		c->status = CELL_RUNNING;
		return 0;
	}
	if (strcmp(t, "out") == 0) {
		int s = (int)jnum(o, "s", -1);
		size_t len;
		char *p;
		if ((c = notebook_cell(nb, (int)jnum(o, "c", 0))) == NULL ||
		    (s != 0 && s != 1) || (p = get_bytes(o, &len)) == NULL)
			return -1;
		outcap_add(&c->out[s], p, len);
		free(p);
		return 0;
	}
	if (strcmp(t, "result") == 0) {
		const cJSON *tl;
		if ((c = notebook_cell(nb, (int)jnum(o, "c", 0))) == NULL ||
		    parse_status(jstr(o, "status"), &c->status) < 0)
			return -1;
		set_str(&c->value, o, "value");
		set_str(&c->ename, o, "ename");
		set_str(&c->evalue, o, "evalue");
		set_str(&c->traceback, o, "traceback");
		set_str(&c->reason, o, "reason");
		c->state_lost = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o,
		    "state_lost"));
		c->duration_ms = (int64_t)jnum(o, "ms", 0);
		if (c->state_lost)
			state_lost(&m->live_from, &m->replay_from, &m->replay_to,
			    c->n);
		cJSON_ArrayForEach(tl, cJSON_GetObjectItemCaseSensitive(o, "tails")) {
			int s = (int)jnum(tl, "s", -1);
			uint64_t total = (uint64_t)jnum(tl, "total", 0);
			size_t len;
			char *p;
			if ((s != 0 && s != 1) || (p = get_bytes(tl, &len)) == NULL)
				continue;
			outcap_add(&c->out[s], p, len);
			free(p);
			if (total > c->out[s].total)
				c->out[s].total = total;
		}
		return 0;
	}
	if (strcmp(t, "artifact") == 0) {
		if (jstr(o, "name") == NULL || jstr(o, "path") == NULL)
			return -1;
		notebook_add_artifact(nb, (int)jnum(o, "c", 0), jstr(o, "name"),
		    jstr(o, "path"), (uint64_t)jnum(o, "bytes", 0));
		return 0;
	}
	if (strcmp(t, "msg") == 0) {
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(o, "m");
		cJSON *msgs = notebook_messages(nb);
		int i = (int)jnum(o, "i", -1), n = cJSON_GetArraySize(msgs);
		if (!cJSON_IsObject(msg) || i < 0 || i > n)
			return -1;
		if (i == n)
			notebook_add_message(nb, cJSON_Duplicate(msg, 1));
		else
			cJSON_ReplaceItemInArray(msgs, i, cJSON_Duplicate(msg, 1));
		return 0;
	}
	if (strcmp(t, "usage") == 0) {
		struct usage u = {
			(long)jnum(o, "in", 0), (long)jnum(o, "out", 0),
			(long)jnum(o, "cached", 0),
		};
		notebook_add_usage(nb, &u);
		return 0;
	}
	if (strcmp(t, "sent") == 0) {
		const char *what = jstr(o, "what");
		size_t len;
		char *p = get_bytes(o, &len);
		if (p == NULL) {
			p = xasprintf("(%.0f bytes, sha256 %s: not kept in the "
			    "journal)", jnum(o, "len", 0),
			    jstr(o, "sha256") ? jstr(o, "sha256") : "?");
			len = strlen(p);
		}
		notebook_add_sent(nb, what ? what : "request", p, len);
		free(p);
		return 0;
	}
	if (strcmp(t, "installed") == 0) {
		meta_add_package(m, jstr(o, "name"), jstr(o, "version"));
		return 0;
	}
	if (strcmp(t, "net") == 0) {
		struct net_attempt a;
		if (netlog_parse(o, &a) < 0)
			return -1;
		notebook_add_net(nb, &a);
		return 0;
	}
	/* session, kernel, turn, text, tool_call, answer, error, notice,
	 * note: the record of what happened; the notebook needs none */
	return 0;
}

static int
is_role(const cJSON *m, const char *role)
{
	const char *r = jstr(m, "role");
	return r != NULL && strcmp(r, role) == 0;
}

/* After a crash: a cell that never got its result was interrupted, and
 * a tool call without a result gets one right after the recorded
 * results, so the provider accepts the conversation. Returns the index
 * of the first message that differs from the file's, or -1 when the
 * conversation is as the file has it. */
static int
repair(struct notebook *nb)
{
	cJSON *msgs = notebook_messages(nb), *fixed;
	int n = cJSON_GetArraySize(msgs), changed = 0, first = -1;

	for (int i = 1; i <= notebook_ncells(nb); i++) {
		struct cell *c = notebook_cell(nb, i);
		if (c->author == CELL_BY_MODEL)
			c->told_model = 1;	/* through its tool result */
		if (c->status == CELL_RUNNING || c->status == CELL_PENDING) {
			c->status = CELL_INTERRUPTED;
			if (c->reason == NULL)
				c->reason = xstrdup("terp stopped while this "
				    "cell ran; its output may be incomplete");
		}
	}
	fixed = cJSON_CreateArray();
	for (int i = 0; i < n; ) {
		cJSON *m = cJSON_GetArrayItem(msgs, i);
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m,
		    "tool_calls"), *call;
		int k = i + 1;

		cJSON_AddItemToArray(fixed, cJSON_Duplicate(m, 1));
		for (; k < n && is_role(cJSON_GetArrayItem(msgs, k), "tool"); k++)
			cJSON_AddItemToArray(fixed,
			    cJSON_Duplicate(cJSON_GetArrayItem(msgs, k), 1));
		if (!cJSON_IsArray(calls))
			calls = NULL;
		cJSON_ArrayForEach(call, calls) {
			const char *id = jstr(call, "id");
			int found = 0;
			cJSON *r;

			for (int t = i + 1; t < k && id != NULL; t++) {
				const char *tid = jstr(cJSON_GetArrayItem(msgs, t),
				    "tool_call_id");
				if (tid != NULL && strcmp(tid, id) == 0)
					found = 1;
			}
			if (found || id == NULL)
				continue;
			r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "role", "tool");
			cJSON_AddStringToObject(r, "tool_call_id", id);
			cJSON_AddStringToObject(r, "content", "terp stopped before "
			    "this call finished; its result was lost.");
			cJSON_AddTrueToObject(r, "is_error");
			if (first < 0)
				first = cJSON_GetArraySize(fixed);
			cJSON_AddItemToArray(fixed, r);
			changed = 1;
		}
		i = k;
	}
	if (changed) {
		while (cJSON_GetArraySize(msgs) > 0)
			cJSON_DeleteItemFromArray(msgs, 0);
		while (cJSON_GetArraySize(fixed) > 0)
			notebook_add_message(nb, cJSON_DetachItemFromArray(fixed, 0));
	}
	cJSON_Delete(fixed);
	return first;
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
	char *line;
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
		/* listing: only the lines that feed the meta are parsed */
		if (nb == NULL && !first &&
		    strncmp(line, "{\"t\":\"question\"", 15) != 0 &&
		    strncmp(line, "{\"t\":\"data\"", 11) != 0 &&
		    strncmp(line, "{\"t\":\"resume\"", 13) != 0)
			continue;
		o = cJSON_ParseWithLength(line, len);
		if (o == NULL || !cJSON_IsObject(o) || apply(o, nb, m, first) < 0)
			m->skipped++;
		cJSON_Delete(o);
		first = 0;
	}
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
		int from = repair(nb);
		if (from >= 0) {
			m->repaired = 1;
			m->repaired_from = from;
		}
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
