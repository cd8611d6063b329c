/* notebook: cells, conversation, artifacts, usage and the ledger of what
 * was sent. Plain growable arrays of pointers, so a cell's address never
 * changes once handed out. */
#include "terp/notebook.h"

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
	struct net_attempt *net;	/* the egress ledger (netlog.h) */
	size_t		  nnet, capnet;
	uint64_t	  net_dropped;
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
	free(nb->net);
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

const struct net_attempt *
notebook_add_net(struct notebook *nb, const struct net_attempt *a)
{
	/* an open attempt's later events: its newest entry, from the end */
	for (size_t i = nb->nnet; i-- > 0 && a->id != 0;) {
		if (nb->net[i].open && nb->net[i].id == a->id) {
			nb->net[i] = *a;
			return &nb->net[i];
		}
	}
	if (nb->nnet >= NOTEBOOK_NET_MAX) {
		nb->net_dropped++;
		return NULL;
	}
	GROW(nb->net, nb->nnet, nb->capnet);
	nb->net[nb->nnet] = *a;
	return &nb->net[nb->nnet++];
}

const struct net_attempt *
notebook_nets(const struct notebook *nb, size_t *n, uint64_t *dropped)
{
	*n = nb->nnet;
	if (dropped != NULL)
		*dropped = nb->net_dropped;
	return nb->net;
}
