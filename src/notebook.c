/* notebook: cells, conversation, artifacts, usage and the ledger of what
 * was sent. Plain growable arrays of pointers, so a cell's address never
 * changes once handed out. */
#include "terp/notebook.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

struct sent {
	char	*what;
	char	*body;
	size_t	 len;
};

struct notebook {
	struct cell	**cells;
	int		  ncells, capcells;
	struct artifact	**arts;
	int		  narts, caparts;
	cJSON		 *messages;
	struct usage	  usage;
	struct sent	 *sent;
	int		  nsent, capsent;
	struct question	 *qs;
	int		  nqs, capqs;
};

#define GROW(arr, n, cap) do {						\
	if ((n) == (cap)) {						\
		(cap) = (cap) ? (cap) * 2 : 16;				\
		(arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));	\
	}								\
} while (0)

struct notebook *
notebook_new(void)
{
	struct notebook *nb = xcalloc(1, sizeof *nb);
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
	for (int i = 0; i < nb->nqs; i++) {
		free(nb->qs[i].text);
		free(nb->qs[i].notes);
	}
	free(nb->qs);
	cJSON_Delete(nb->messages);
	free(nb);
}

struct cell *
notebook_add_cell(struct notebook *nb, enum cell_author who, const char *code,
    const char *tool_call_id)
{
	struct cell *c = xcalloc(1, sizeof *c);

	c->n = nb->ncells + 1;
	c->author = who;
	c->code = xstrdup(code ? code : "");
	c->tool_call_id = tool_call_id ? xstrdup(tool_call_id) : NULL;
	c->status = CELL_PENDING;
	outcap_init(&c->out[0], CELL_OUT_HEAD, CELL_OUT_TAIL);
	outcap_init(&c->out[1], CELL_OUT_HEAD, CELL_OUT_TAIL);
	GROW(nb->cells, nb->ncells, nb->capcells);
	nb->cells[nb->ncells++] = c;
	return c;
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
	struct cell *c;

	a->cell = cell;
	a->name = xstrdup(name);
	a->path = xstrdup(path);
	a->bytes = bytes;
	GROW(nb->arts, nb->narts, nb->caparts);
	nb->arts[nb->narts++] = a;
	if ((c = notebook_cell(nb, cell)) != NULL)
		c->nartifacts++;
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

void
notebook_add_message(struct notebook *nb, cJSON *msg)
{
	cJSON_AddItemToArray(nb->messages, msg);
}

void
notebook_insert_message(struct notebook *nb, int at, cJSON *msg)
{
	int n = cJSON_GetArraySize(nb->messages);

	assert(at >= 0 && at <= n);
	if (at == n) {
		notebook_add_message(nb, msg);
		return;
	}
	cJSON_InsertItemInArray(nb->messages, at, msg);
	for (int i = 0; i < nb->nqs; i++)
		if (nb->qs[i].msg >= at)
			nb->qs[i].msg++;
}

const struct question *
notebook_add_question(struct notebook *nb, const char *text, const char *notes)
{
	struct question *q;
	cJSON *m = cJSON_CreateObject();
	char *content;

	if (notes != NULL && *notes != '\0')
		content = xasprintf("%s\nQuestion: %s", notes, text);
	else
		content = xstrdup(text);
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", content);
	free(content);
	GROW(nb->qs, nb->nqs, nb->capqs);
	q = &nb->qs[nb->nqs++];
	q->msg = cJSON_GetArraySize(nb->messages);
	q->text = xstrdup(text);
	q->notes = notes != NULL && *notes != '\0' ? xstrdup(notes) : NULL;
	notebook_add_message(nb, m);
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
	return &nb->qs[i];
}

const struct question *
notebook_question_at(const struct notebook *nb, int msg)
{
	for (int i = nb->nqs - 1; i >= 0; i--)
		if (nb->qs[i].msg == msg)
			return &nb->qs[i];
	return NULL;
}

void
notebook_add_usage(struct notebook *nb, const struct usage *u)
{
	nb->usage.input_tokens += u->input_tokens;
	nb->usage.output_tokens += u->output_tokens;
	nb->usage.cached_tokens += u->cached_tokens;
}

const struct usage *
notebook_usage(const struct notebook *nb)
{
	return &nb->usage;
}

void
notebook_add_sent(struct notebook *nb, const char *what, const char *body,
    size_t len)
{
	struct sent *s;

	GROW(nb->sent, nb->nsent, nb->capsent);
	s = &nb->sent[nb->nsent++];
	s->what = xstrdup(what);
	s->body = xstrndup(body, len);
	s->len = len;
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

char *
cell_output(const struct cell *c, int stream, size_t *len)
{
	return outcap_render(&c->out[stream ? 1 : 0], len);
}
