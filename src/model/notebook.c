/* notebook: cells, conversation, artifacts, usage and the ledger of what
 * was sent. Plain growable arrays of pointers, so a cell's address never
 * changes once handed out. Every change goes through a function here,
 * which tells the one observer (the journal) exactly what changed. */
#include "terp/notebook.h"

#include <assert.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "terp/json_text.h"
#include "terp/outdisp.h"
#include "terp/outnorm.h"
#include "terp/util.h"

struct sent {
	char	*what;
	char	*body;
	size_t	 len;
	uint64_t tag;	/* the keeper's name for what body holds; 0: a copy */
};

struct notebook {
	struct cell	**cells;
	int		  ncells, capcells;
	struct artifact	**arts;
	int		  narts, caparts;
	cJSON		 *messages;
	int		  nmsgs;	/* its length, kept: a list walk per turn no more */
	cJSON		 *last_msg;	/* its last item, or NULL */
	uint64_t	  gen;		/* notebook_gen */
	struct usage	  usage;
	struct sent	 *sent;
	int		  nsent, capsent;
	char		 *summary;	/* the context's, of messages [0, upto) */
	int		  summary_upto, summary_gen;
	struct question	**qs;
	int		  nqs, capqs;
	struct datafile	**files;
	int		  nfiles, capfiles;
	notebook_observer observer;
	void		 *observer_arg;
	struct net_attempt *net;	/* the egress ledger (netlog.h) */
	size_t		  nnet, capnet;
	uint64_t	  net_dropped;
	size_t		 *net_open;	/* indexes in net of open attempts */
	size_t		  nnet_open, capnet_open;
	struct net_cellsum *net_cells;	/* cell -> its summary, a hash table */
	size_t		  nnet_cells, capnet_cells;
	struct netlog_sum *net_all;	/* the session's */
	struct package	 *pkgs;		/* what pip installed, in order */
	int		  npkgs, cappkgs;
};

/* One cell's ledger summary, kept as its attempts come (issue 22: the
 * notebook recomputed every cell's from the whole ledger on each
 * attempt). Keyed by cell number in an open-addressing table: a
 * journal's cell numbers are bounded only by its lines. */
struct net_cellsum {
	int		   cell;
	struct netlog_sum *sum;		/* NULL: an empty slot */
};

#define GROW(arr, n, cap) do {						\
	if ((n) == (cap)) {						\
		(cap) = (cap) ? (cap) * 2 : 16;				\
		(arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));	\
	}								\
} while (0)

static void
tell(struct notebook *nb, struct nb_change *ch)
{
	if (nb->observer != NULL)
		nb->observer(nb->observer_arg, ch);
}

void
notebook_observe(struct notebook *nb, notebook_observer fn, void *arg)
{
	nb->observer = fn;
	nb->observer_arg = arg;
}

/* The last generation given to a notebook (notebook_gen). */
static uint64_t gens;

struct notebook *
notebook_new(void)
{
	struct notebook *nb = xcalloc(1, sizeof *nb);

	nb->gen = ++gens;
	nb->messages = cJSON_CreateArray();
	if (nb->messages == NULL)
		fatal("out of memory (cJSON)");
	return nb;
}

static void
cell_free(struct cell *c)
{
	free(c->code);
	free(c->tool_call_id);
	outcap_free(&c->out[0]);
	outcap_free(&c->out[1]);
	free(c->value);
	free(c->value_wide);
	free(c->ename);
	free(c->evalue);
	free(c->traceback);
	free(c->reason);
	free(c);
}

void
notebook_free(struct notebook *nb)
{
	if (nb == NULL)
		return;
	for (int i = 0; i < nb->ncells; i++)
		cell_free(nb->cells[i]);
	free(nb->cells);
	for (int i = 0; i < nb->narts; i++) {
		free(nb->arts[i]->name);
		free(nb->arts[i]->path);
		free(nb->arts[i]);
	}
	free(nb->arts);
	for (int i = 0; i < nb->nsent; i++) {
		free(nb->sent[i].what);
		free(nb->sent[i].body);
	}
	free(nb->sent);
	free(nb->summary);
	for (int i = 0; i < nb->nqs; i++) {
		free(nb->qs[i]->text);
		free(nb->qs[i]->notes);
		free(nb->qs[i]->unanswered);
		free(nb->qs[i]);
	}
	free(nb->qs);
	for (int i = 0; i < nb->nfiles; i++) {
		datafile_free(nb->files[i]);
		free(nb->files[i]);
	}
	free(nb->files);
	free(nb->net);
	free(nb->net_open);
	for (size_t i = 0; i < nb->capnet_cells; i++)
		netlog_sum_free(nb->net_cells[i].sum);
	free(nb->net_cells);
	netlog_sum_free(nb->net_all);
	for (int i = 0; i < nb->npkgs; i++) {
		free(nb->pkgs[i].name);
		free(nb->pkgs[i].version);
	}
	free(nb->pkgs);
	cJSON_Delete(nb->messages);
	free(nb);
}

struct cell *
notebook_add_cell(struct notebook *nb, enum cell_author who, const char *code,
    const char *tool_call_id)
{
	struct cell *c = xcalloc(1, sizeof *c);
	struct nb_change ch = { .kind = NB_CELL, .cell = c };

	c->n = nb->ncells + 1;
	c->author = who;
	c->code = xstrdup(code ? code : "");
	c->tool_call_id = tool_call_id ? xstrdup(tool_call_id) : NULL;
	c->status = CELL_RUNNING;
	outcap_init(&c->out[0], CELL_OUT_HEAD, CELL_OUT_TAIL);
	outcap_init(&c->out[1], CELL_OUT_HEAD, CELL_OUT_TAIL);
	GROW(nb->cells, nb->ncells, nb->capcells);
	nb->cells[nb->ncells++] = c;
	tell(nb, &ch);
	return c;
}

void
notebook_cell_output(struct notebook *nb, int n, int stream, const char *p,
    size_t len)
{
	struct cell *c = notebook_cell(nb, n);
	struct nb_change ch = { .kind = NB_OUTPUT, .cell = c,
	    .stream = stream ? 1 : 0, .p = p, .len = len };

	if (c == NULL)
		return;
	outcap_add(&c->out[ch.stream], p, len);
	tell(nb, &ch);
}

void
notebook_cell_tail(struct notebook *nb, int n, int stream, const char *p,
    size_t len, uint64_t total)
{
	struct cell *c = notebook_cell(nb, n);
	struct outcap *oc;

	if (c == NULL)
		return;
	oc = &c->out[stream ? 1 : 0];
	outcap_add(oc, p, len);
	if (total > oc->total)
		oc->total = total;	/* what fell between head and tail */
}

static char *
dup_or_null(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

void
notebook_cell_result(struct notebook *nb, int n, const struct cell_result *r)
{
	struct cell *c = notebook_cell(nb, n);
	struct nb_change ch = { .kind = NB_RESULT, .cell = c };

	if (c == NULL)
		return;
	/* the kernel reports each cell's result once (kernel.h); a second
	 * would leak the first one's strings */
	assert(c->status == CELL_RUNNING || c->status == CELL_PENDING);
	c->status = r->status;
	c->duration_ms = r->duration_ms;
	c->duration_us = r->duration_us;
	c->value = dup_or_null(r->value);
	free(c->value_wide);
	c->value_wide = dup_or_null(r->value_wide);
	c->ename = dup_or_null(r->ename);
	c->evalue = dup_or_null(r->evalue);
	c->traceback = dup_or_null(r->traceback);
	c->reason = dup_or_null(r->reason);
	c->state_lost = r->state_lost;
	tell(nb, &ch);
}

struct cell *
notebook_cell(const struct notebook *nb, int n)
{
	if (n < 1 || n > nb->ncells)
		return NULL;
	return nb->cells[n - 1];
}

int
notebook_ncells(const struct notebook *nb)
{
	return nb->ncells;
}

const struct artifact *
notebook_add_artifact(struct notebook *nb, int cell, const char *name,
    const char *path, uint64_t bytes)
{
	struct artifact *a = xcalloc(1, sizeof *a);
	struct nb_change ch = { .kind = NB_ARTIFACT, .artifact = a };
	struct cell *c;

	a->cell = cell;
	a->name = xstrdup(name);
	a->path = xstrdup(path);
	a->bytes = bytes;
	GROW(nb->arts, nb->narts, nb->caparts);
	nb->arts[nb->narts++] = a;
	if ((c = notebook_cell(nb, cell)) != NULL)
		c->nartifacts++;
	ch.cell = c;
	tell(nb, &ch);
	return a;
}

int
notebook_nartifacts(const struct notebook *nb)
{
	return nb->narts;
}

const struct artifact *
notebook_artifact(const struct notebook *nb, int i)
{
	if (i < 0 || i >= nb->narts)
		return NULL;
	return nb->arts[i];
}

cJSON *
notebook_messages(const struct notebook *nb)
{
	return nb->messages;
}

uint64_t
notebook_gen(const struct notebook *nb)
{
	return nb->gen;
}

int
notebook_nmessages(const struct notebook *nb)
{
	return nb->nmsgs;
}

const cJSON *
notebook_message(const struct notebook *nb, int i)
{
	if (i < 0 || i >= nb->nmsgs)
		return NULL;
	if (i == nb->nmsgs - 1)
		return nb->last_msg;
	return cJSON_GetArrayItem(nb->messages, i);
}

/* Appends m (taken); returns its index. */
static int
add_message(struct notebook *nb, cJSON *m)
{
	if (m == NULL)
		fatal("out of memory (cJSON)");
	cJSON_AddItemToArray(nb->messages, m);
	nb->last_msg = m;
	return nb->nmsgs++;
}

void
notebook_add_reply(struct notebook *nb, const char *text, cJSON *calls)
{
	notebook_add_reply_reasoning(nb, text, calls, NULL);
}

void
notebook_add_reply_reasoning(struct notebook *nb, const char *text,
    cJSON *calls, cJSON *reasoning)
{
	cJSON *m = cJSON_CreateObject();
	struct nb_change ch = { .kind = NB_REPLY };

	cJSON_AddStringToObject(m, "role", "assistant");
	if (text != NULL && *text != '\0')
		cJSON_AddStringToObject(m, "content", text);
	else
		cJSON_AddNullToObject(m, "content");
	if (calls != NULL && cJSON_GetArraySize(calls) > 0)
		cJSON_AddItemToObject(m, "tool_calls", calls);
	else
		cJSON_Delete(calls);
	if (cJSON_IsArray(reasoning) && cJSON_GetArraySize(reasoning) > 0)
		cJSON_AddItemToObject(m, "reasoning", reasoning);
	else
		cJSON_Delete(reasoning);
	ch.msg = add_message(nb, m);
	tell(nb, &ch);
}

static cJSON *
tool_result(const char *id, const char *content, int is_error)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "role", "tool");
	cJSON_AddStringToObject(m, "tool_call_id", id);
	cJSON_AddStringToObject(m, "content", content);
	cJSON_AddBoolToObject(m, "is_error", is_error);
	return m;
}

void
notebook_add_tool_result(struct notebook *nb, const char *id,
    const char *content, int is_error)
{
	struct nb_change ch = { .kind = NB_TOOL_RESULT };

	ch.msg = add_message(nb, tool_result(id, content, is_error));
	tell(nb, &ch);
}

void
notebook_insert_tool_result(struct notebook *nb, int at, const char *id,
    const char *content, int is_error)
{
	int n = nb->nmsgs;
	cJSON *m = tool_result(id, content, is_error);

	assert(at >= 0 && at <= n);
	if (at == n) {
		add_message(nb, m);
		return;
	}
	json_array_insert(nb->messages, at, m);
	nb->nmsgs++;
	nb->gen = ++gens;
	for (int i = 0; i < nb->nqs; i++)
		if (nb->qs[i]->msg >= at)
			nb->qs[i]->msg++;
}

void
notebook_replace_message(struct notebook *nb, int i, cJSON *m)
{
	assert(i >= 0 && i < nb->nmsgs);
	cJSON_ReplaceItemInArray(nb->messages, i, m);
	nb->gen = ++gens;
	if (i == nb->nmsgs - 1)
		nb->last_msg = m;
}

int
notebook_drop_cell(struct notebook *nb, int n)
{
	struct cell *c = notebook_cell(nb, n);
	struct nb_change ch = { .kind = NB_DROP };
	cJSON *m, *calls, *call;
	const char *id;

	if (c == NULL || c->dropped || c->status == CELL_PENDING ||
	    c->status == CELL_RUNNING)
		return -1;
	c->dropped = 1;
	c->told_model = 1;	/* a hand-run one is never told now */
	if ((id = c->tool_call_id) != NULL) {
		cJSON_ArrayForEach(m, nb->messages) {
			const char *tid = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(m, "tool_call_id"));
			if (tid != NULL && strcmp(tid, id) == 0) {
				cJSON_ReplaceItemInObjectCaseSensitive(m, "content",
				    cJSON_CreateString(NOTEBOOK_DROPPED_RESULT));
				cJSON_ReplaceItemInObjectCaseSensitive(m, "is_error",
				    cJSON_CreateFalse());
				continue;
			}
			calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
			cJSON_ArrayForEach(call, calls) {
				const char *cid = cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(call, "id"));
				if (cid != NULL && strcmp(cid, id) == 0)
					cJSON_ReplaceItemInObjectCaseSensitive(call,
					    "arguments", cJSON_CreateString(NOTEBOOK_DROPPED_ARGS));
			}
		}
		nb->gen = ++gens;
	}
	ch.cell = c;
	tell(nb, &ch);
	return 0;
}

const struct question *
notebook_add_question(struct notebook *nb, const char *text, const char *notes)
{
	struct question *q;
	cJSON *m = cJSON_CreateObject();
	struct nb_change ch = { .kind = NB_QUESTION };
	char *content;

	if (notes != NULL && *notes != '\0')
		content = xasprintf("%s\nQuestion: %s", notes, text);
	else
		content = xstrdup(text);
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", content);
	free(content);
	q = xcalloc(1, sizeof *q);
	GROW(nb->qs, nb->nqs, nb->capqs);
	nb->qs[nb->nqs++] = q;
	q->text = xstrdup(text);
	q->notes = notes != NULL && *notes != '\0' ? xstrdup(notes) : NULL;
	q->msg = add_message(nb, m);
	ch.question = q;
	ch.msg = q->msg;
	tell(nb, &ch);
	return q;
}

int
notebook_nquestions(const struct notebook *nb)
{
	return nb->nqs;
}

const struct question *
notebook_question(const struct notebook *nb, int i)
{
	if (i < 0 || i >= nb->nqs)
		return NULL;
	return nb->qs[i];
}

void
notebook_question_unanswered(struct notebook *nb, const char *why)
{
	struct question *q = nb->nqs > 0 ? nb->qs[nb->nqs - 1] : NULL;
	const cJSON *m;

	if (q == NULL || why == NULL || q->unanswered != NULL)
		return;
	for (m = notebook_message(nb, q->msg + 1); m != NULL; m = m->next) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		if (cJSON_IsString(role) && strcmp(role->valuestring, "assistant") == 0 &&
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m,
		    "tool_calls")) == 0)
			return;
	}
	q->unanswered = xstrdup(why);
}

const struct question *
notebook_question_at(const struct notebook *nb, int msg)
{
	for (int i = nb->nqs - 1; i >= 0; i--)
		if (nb->qs[i]->msg == msg)
			return nb->qs[i];
	return NULL;
}

void
notebook_add_usage(struct notebook *nb, const struct usage *u)
{
	struct nb_change ch = { .kind = NB_USAGE, .usage = u };

	nb->usage.input_tokens += u->input_tokens;
	nb->usage.output_tokens += u->output_tokens;
	nb->usage.cached_tokens += u->cached_tokens;
	nb->usage.reasoning_tokens += u->reasoning_tokens;
	nb->usage.cost += u->cost;
	nb->usage.priced |= u->priced;
	tell(nb, &ch);
}

const struct usage *
notebook_usage(const struct notebook *nb)
{
	return &nb->usage;
}

void
notebook_set_summary(struct notebook *nb, int upto, const char *text)
{
	struct nb_change ch = { .kind = NB_SUMMARY, .msg = upto };

	free(nb->summary);
	nb->summary = xstrdup(text);
	nb->summary_upto = upto;
	nb->summary_gen++;
	ch.p = nb->summary;
	ch.len = strlen(nb->summary);
	tell(nb, &ch);
}

const char *
notebook_summary(const struct notebook *nb, int *upto, int *gen)
{
	if (upto)
		*upto = nb->summary_upto;
	if (gen)
		*gen = nb->summary_gen;
	return nb->summary;
}

/* notebook_add_sent's and notebook_add_sent_keep's: body is copied,
 * or kept when owned (then it is body, named tag by its keeper).
 * Returns the storage of the body that left the window when the caller
 * may have it (owned), with its tag in *tag_back, else NULL. */
static char *
add_sent(struct notebook *nb, const char *what, const char *body, char *owned,
    size_t len, size_t shared, uint64_t tag, uint64_t *tag_back)
{
	struct sent *s;
	struct nb_change ch = { .kind = NB_SENT, .p = body, .len = len };
	char *spare = NULL;
	uint64_t spare_tag = 0;

	GROW(nb->sent, nb->nsent, nb->capsent);
	/* A long session must not hold every body: the journal has them
	 * (notebook.h). The one that leaves the window lends its storage
	 * to the new one: a body of the whole conversation in a fresh
	 * allocation each turn is a page fault per 4 KiB (above the mmap
	 * threshold) or a hole the next, longer one does not fit (below
	 * it), which is most of a long session's cost and memory. */
	if (nb->nsent + 1 > NOTEBOOK_SENT_KEEP) {
		s = &nb->sent[nb->nsent - NOTEBOOK_SENT_KEEP];
		spare = s->body;
		spare_tag = s->tag;
		s->body = NULL;
	}
	ch.sent = nb->nsent;
	ch.shared = owned != NULL ? shared : 0;
	s = &nb->sent[nb->nsent++];
	s->what = xstrdup(what);
	s->body = NULL;
	s->tag = 0;
	if (owned != NULL) {
		s->body = owned;	/* its NUL is the caller's */
		s->tag = tag;
	} else if (body != NULL) {
		s->body = spare != NULL && malloc_usable_size(spare) > len ?
		    spare : xrealloc(spare, len + 1);
		memcpy(s->body, body, len);
		s->body[len] = '\0';
		spare = NULL;
	}
	if (owned == NULL) {
		free(spare);
		spare = NULL;
	}
	s->len = len;
	if (body != NULL)
		tell(nb, &ch);
	*tag_back = spare != NULL ? spare_tag : 0;
	return spare;
}

void
notebook_add_sent(struct notebook *nb, const char *what, const char *body,
    size_t len)
{
	uint64_t t;

	(void)add_sent(nb, what, body, NULL, len, 0, 0, &t);
}

char *
notebook_add_sent_keep(struct notebook *nb, const char *what, char *body,
    size_t len)
{
	uint64_t t;

	return add_sent(nb, what, body, body, len, 0, 0, &t);
}

char *
notebook_add_sent_tagged(struct notebook *nb, const char *what, char *body,
    size_t len, size_t shared, uint64_t tag, uint64_t *tag_back)
{
	return add_sent(nb, what, body, body, len, shared, tag, tag_back);
}

int
notebook_nsent(const struct notebook *nb)
{
	return nb->nsent;
}

const char *
notebook_sent(const struct notebook *nb, int i, const char **what, size_t *len)
{
	if (i < 0 || i >= nb->nsent)
		return NULL;
	if (what)
		*what = nb->sent[i].what;
	if (len)
		*len = nb->sent[i].len;
	return nb->sent[i].body;
}

const struct datafile *
notebook_add_file(struct notebook *nb, const struct datafile *f)
{
	struct datafile *d = NULL;
	struct nb_change ch = { .kind = NB_FILE };

	for (int i = 0; i < nb->nfiles && d == NULL; i++)
		if (strcmp(nb->files[i]->path, f->path) == 0)
			d = nb->files[i];
	if (d != NULL) {
		datafile_free(d);
	} else {
		d = xcalloc(1, sizeof *d);
		GROW(nb->files, nb->nfiles, nb->capfiles);
		nb->files[nb->nfiles++] = d;
	}
	datafile_copy(d, f);
	ch.file = d;
	tell(nb, &ch);
	return d;
}

int
notebook_nfiles(const struct notebook *nb)
{
	return nb->nfiles;
}

const struct datafile *
notebook_file(const struct notebook *nb, int i)
{
	if (i < 0 || i >= nb->nfiles)
		return NULL;
	return nb->files[i];
}

const char *
cell_status_name(enum cell_status s)
{
	switch (s) {
	case CELL_PENDING: return "pending";
	case CELL_RUNNING: return "running";
	case CELL_OK: return "ok";
	case CELL_ERROR: return "error";
	case CELL_TIMEOUT: return "timeout";
	case CELL_INTERRUPTED: return "interrupted";
	case CELL_CRASHED: return "crashed";
	}
	return "unknown";
}

int
cell_status_parse(const char *s)
{
	for (int i = CELL_PENDING; i <= CELL_CRASHED; i++)
		if (s != NULL && strcmp(s, cell_status_name((enum cell_status)i)) == 0)
			return i;
	return -1;
}

/* As a notebook shows it: carriage returns and backspaces resolved
 * (outnorm.h), display regions in place (outdisp.h), whatever pieces the
 * output came in. */
char *
cell_output_spans(const struct cell *c, int stream, size_t *len,
    struct outdisp_span **spans, size_t *nspans)
{
	size_t n;
	char *raw = outcap_render(&c->out[stream ? 1 : 0], &n), *s;

	if (spans != NULL) {
		*spans = NULL;
		*nspans = 0;
	}
	if (outdisp_has(raw, n)) {
		s = outdisp_resolve(raw, n, len, spans, nspans);
		free(raw);
		return s;
	}
	if (memchr(raw, '\r', n) == NULL && memchr(raw, '\b', n) == NULL) {
		if (len)
			*len = n;
		return raw;
	}
	s = outnorm_text(raw, n, len);
	free(raw);
	return s;
}

char *
cell_output(const struct cell *c, int stream, size_t *len)
{
	return cell_output_spans(c, stream, len, NULL, NULL);
}

/* Every report of an attempt is told (the journal writes the last). */
static const struct net_attempt *
net_told(struct notebook *nb, struct net_attempt *kept)
{
	struct nb_change ch = { .kind = NB_NET, .net = kept };

	tell(nb, &ch);
	return kept;
}

static size_t
cellsum_slot(const struct net_cellsum *t, size_t cap, int cell)
{
	size_t k = ((size_t)(unsigned)cell * 2654435761u) & (cap - 1);

	while (t[k].sum != NULL && t[k].cell != cell)
		k = (k + 1) & (cap - 1);
	return k;
}

/* cell's summary; made when create, else NULL when it has none. */
static struct netlog_sum *
cellsum(struct notebook *nb, int cell, int create)
{
	size_t k;

	if (nb->capnet_cells > 0) {
		k = cellsum_slot(nb->net_cells, nb->capnet_cells, cell);
		if (nb->net_cells[k].sum != NULL || !create)
			return nb->net_cells[k].sum;
	} else if (!create) {
		return NULL;
	}
	if (2 * (nb->nnet_cells + 1) > nb->capnet_cells) {
		size_t cap = nb->capnet_cells ? nb->capnet_cells * 2 : 16;
		struct net_cellsum *t = xcalloc(cap, sizeof *t);
		for (size_t i = 0; i < nb->capnet_cells; i++)
			if (nb->net_cells[i].sum != NULL)
				t[cellsum_slot(t, cap, nb->net_cells[i].cell)] =
				    nb->net_cells[i];
		free(nb->net_cells);
		nb->net_cells = t;
		nb->capnet_cells = cap;
	}
	k = cellsum_slot(nb->net_cells, nb->capnet_cells, cell);
	nb->net_cells[k].cell = cell;
	nb->net_cells[k].sum = netlog_sum_new();
	nb->nnet_cells++;
	return nb->net_cells[k].sum;
}

static void
net_count(struct notebook *nb, const struct net_attempt *a, int add)
{
	if (nb->net_all == NULL)
		nb->net_all = netlog_sum_new();
	if (add) {
		netlog_sum_add(cellsum(nb, a->cell, 1), a);
		netlog_sum_add(nb->net_all, a);
	} else {
		netlog_sum_remove(cellsum(nb, a->cell, 1), a);
		netlog_sum_remove(nb->net_all, a);
	}
}

/* An open attempt's later reports update its entry: the newest open one
 * with its id, found among the open ones (a handful: the proxy's
 * connection limit), not by a walk of the whole ledger. */
const struct net_attempt *
notebook_add_net(struct notebook *nb, const struct net_attempt *a)
{
	size_t at = 0, k = 0;
	int found = 0;

	for (size_t j = 0; j < nb->nnet_open && a->id != 0; j++) {
		size_t i = nb->net_open[j];
		if (nb->net[i].id == a->id && (!found || i > at)) {
			at = i;
			k = j;
			found = 1;
		}
	}
	if (found) {
		net_count(nb, &nb->net[at], 0);
		nb->net[at] = *a;
		net_count(nb, &nb->net[at], 1);
		if (!a->open)
			nb->net_open[k] = nb->net_open[--nb->nnet_open];
		return net_told(nb, &nb->net[at]);
	}
	if (nb->nnet >= NOTEBOOK_NET_MAX) {
		nb->net_dropped++;
		return NULL;
	}
	GROW(nb->net, nb->nnet, nb->capnet);
	nb->net[nb->nnet] = *a;
	if (a->open && a->id != 0) {
		GROW(nb->net_open, nb->nnet_open, nb->capnet_open);
		nb->net_open[nb->nnet_open++] = nb->nnet;
	}
	net_count(nb, a, 1);
	return net_told(nb, &nb->net[nb->nnet++]);
}

const struct netlog_sum *
notebook_net_sum(const struct notebook *nb, int cell)
{
	return cellsum((struct notebook *)nb, cell, 0);
}

const struct netlog_sum *
notebook_net_total(const struct notebook *nb)
{
	return nb->net_all;
}

const struct net_attempt *
notebook_nets(const struct notebook *nb, size_t *n, uint64_t *dropped)
{
	*n = nb->nnet;
	if (dropped != NULL)
		*dropped = nb->net_dropped;
	return nb->net;
}

const struct package *
notebook_add_package(struct notebook *nb, int cell, const char *name,
    const char *version)
{
	struct nb_change ch = { .kind = NB_PACKAGE };
	struct package *p;

	/* bounded: a cell looping over pip is not a reason to grow */
	if (nb->npkgs >= NOTEBOOK_PACKAGES_MAX)
		return NULL;
	GROW(nb->pkgs, nb->npkgs, nb->cappkgs);
	p = &nb->pkgs[nb->npkgs++];
	p->cell = cell;
	p->name = xstrdup(name);
	p->version = xstrdup(version);
	ch.package = p;
	tell(nb, &ch);
	return p;
}

int
notebook_npackages(const struct notebook *nb)
{
	return nb->npkgs;
}

const struct package *
notebook_package(const struct notebook *nb, int i)
{
	return i >= 0 && i < nb->npkgs ? &nb->pkgs[i] : NULL;
}

char *
notebook_reasoning_text(const cJSON *msg)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(msg, "reasoning");
	const cJSON *it, *part;
	size_t cap = 1, len = 0;
	char *out;

	/* two passes: the length, then the text */
	for (int pass = 0; pass < 2; pass++) {
		out = pass ? xmalloc(cap) : NULL;
		len = 0;
		cJSON_ArrayForEach(it, items) {
			const char *t = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(it, "thinking"));
			const cJSON *summary = cJSON_GetObjectItemCaseSensitive(it,
			    "summary");
			if (t == NULL)
				t = cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(it, "text"));
			if (t != NULL) {
				size_t n = strlen(t);
				if (pass)
					memcpy(out + len, t, n);
				len += n;
				if (pass)
					out[len] = '\n';
				len++;
			}
			cJSON_ArrayForEach(part, summary) {
				const char *st = cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(part, "text"));
				size_t n = st ? strlen(st) : 0;
				if (st == NULL)
					continue;
				if (pass)
					memcpy(out + len, st, n);
				len += n;
				if (pass)
					out[len] = '\n';
				len++;
			}
		}
		cap = len + 1;
	}
	while (len > 0 && out[len - 1] == '\n')
		len--;
	out[len] = '\0';
	if (len == 0) {
		free(out);
		return NULL;
	}
	return out;
}
