/* context: the model's window, the size of each request, and the
 * compaction that keeps a long session inside the window (context.h).
 *
 * The notebook keeps the whole conversation; this file keeps a view of
 * it: summary_upto (messages before it are replaced by the summary,
 * which rides at the head of the first kept question) and elide_upto
 * (tool results before it go as their first lines). Per-message
 * estimates are cached by index, so a turn's bookkeeping costs the new
 * messages, not the whole session. The model's table and the token
 * estimator are ctxsize.c's, the question to an Ollama server for its
 * size ctxprobe.c's (it answers by callback). */
#include "terp/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/llm.h"
#include "terp/util.h"

#include "ctxprobe.h"
#include "ctxsize.h"

#define MSG_OVERHEAD	CTXSIZE_MSG_OVERHEAD
#define TOOLS_OVERHEAD	150	/* the python_exec tool's definition */
#define SYS_OVERHEAD	8
#define ELIDE_LINES	3	/* kept of an elided tool result */
#define ELIDE_LINE_MAX	160	/* bytes kept of each such line */

/* The summary the model is asked for, and the bytes kept of its reply. */
#define SUMMARY_BYTES	4096

static const char summary_system[] =
    "You compress a data-analysis conversation so that it can continue within "
    "the model's context window. Write a concise summary of the conversation "
    "below, in plain text, at most " "250" " words: every question the user asked, "
    "every number, result and conclusion given in the answers (exactly as "
    "written), the names of dataframes, variables and files defined in the "
    "Python session, and anything the user asked to remember. Do not call any "
    "tool; answer with the summary only.";

/* ------------------------------------------------------------ state */

enum role { R_OTHER, R_USER, R_ASSISTANT, R_TOOL };

struct mc {
	long	 full, elided;	/* estimates; elided < 0: not computed */
	char	*etext;		/* the elided text, once made (owned) */
	int	 role;
	int	 cell;		/* a tool result's cell, 0 if none */
	int	 question;	/* 1-based question number of a user message */
};

struct context {
	struct notebook	*nb;
	struct llm	*m;
	event_fn	 emit;
	void		*arg;

	char		*provider, *model;
	long		 override, table, server, refused;
	int		 server_warned;

	struct mc	*mc;
	int		 nmc, cap;
	int		 nquestions;

	/* the view */
	int		 summary_upto;
	char		*summary;
	long		 summary_tokens;
	int		 summary_questions;	/* questions it covers */
	int		 elide_upto;
	int		 gen;			/* bumped when the view changes */
	/* raw_view's sum over the entries a sync does not fill again (all
	 * but the last), for one view: every request walked them all,
	 * 12,000 at 3,000 questions, two or three times. rv_n 0: none */
	int		 rv_gen, rv_summary, rv_elide, rv_n;
	long		 rv_sum;
	cJSON		*view;
	int		 nview;			/* its items */
	/* nothing summarised or elided: the notebook's own messages are
	 * the view (no reference object per message made for it) */
	int		 direct;
	uint64_t	 mc_nbgen;		/* notebook_gen the cache is of */
	uint64_t	 stamp;			/* context_stamp, of gen and */
	uint64_t	 stamp_nb;		/* this notebook_gen */
	int		 stamp_gen;

	/* calibration: the last request as sent */
	long		 sys_tokens;		/* of the last system prompt */
	char		*sys_text;		/* it (owned), NULL: none yet */
	size_t		 sys_len;
	long		 sent_raw;		/* its raw estimate */
	int		 sent_gen;
	long		 usage_mark;		/* notebook input tokens then */
	int		 awaiting;		/* its usage not seen yet */
	long		 reported;		/* the provider's count for it */
	double		 ratio;			/* reported / raw, last seen */
	long		 last_size;		/* for the status bar */

	/* the summary call */
	int		 busy;
	int		 cut;
	struct buf	 reply;
	void		(*then)(void *, const char *);
	void		*then_arg;
	long		 before;

	/* the server probe (ctxprobe.h) */
	struct ctxprobe	 probe;
	/* a request waiting for the probe's answer */
	int		 waiting, wait_force;
	char		*wait_sys;
};

static void probe_done(void *arg, const struct ctxprobe *p);

static void
emit_notice(struct context *cx, const char *text)
{
	struct event ev = { .type = EV_NOTICE, .text = text, .len = strlen(text) };

	if (cx->emit)
		cx->emit(cx->arg, &ev);
}

struct context *
context_new(struct notebook *nb, struct llm *m, long window, event_fn emit,
    void *arg)
{
	struct context *cx = xcalloc(1, sizeof *cx);

	cx->nb = nb;
	cx->m = m;
	cx->emit = emit;
	cx->arg = arg;
	cx->override = window > 0 ? window : 0;
	cx->ratio = 1.0;
	cx->sys_tokens = 0;
	buf_init(&cx->reply, SUMMARY_BYTES * 4);
	ctxprobe_init(&cx->probe, probe_done, cx);
	if (m != NULL)
		context_set_model(cx, llm_provider(m), llm_model(m));
	{
		/* A resumed notebook's summary goes on being sent. */
		int upto;
		const char *s = notebook_summary(nb, &upto, NULL);
		if (s != NULL)
			context_set_summary(cx, upto, s);
	}
	return cx;
}

void
context_free(struct context *cx)
{
	if (cx == NULL)
		return;
	ctxprobe_free(&cx->probe);
	free(cx->provider);
	free(cx->model);
	for (int i = 0; i < cx->cap; i++)
		free(cx->mc[i].etext);
	free(cx->mc);
	free(cx->summary);
	free(cx->wait_sys);
	free(cx->sys_text);
	cJSON_Delete(cx->view);
	buf_free(&cx->reply);
	free(cx);
}

static int
is_ollama(const struct context *cx)
{
	return cx->provider && strcmp(cx->provider, "ollama") == 0;
}

long
context_window(const struct context *cx)
{
	long w;

	if (cx->override > 0)
		w = cx->override;
	else if (cx->server > 0)
		w = cx->server;
	else if (is_ollama(cx))
		w = CONTEXT_OLLAMA_DEFAULT;
	else if (cx->table > 0)
		w = cx->table;
	else
		w = 8192;	/* an unknown model: a small window is the safe guess */
	if (cx->refused > 0 && cx->refused < w)
		w = cx->refused;
	return w;
}

const char *
context_window_source(const struct context *cx)
{
	if (cx->refused > 0 && cx->refused < (cx->override > 0 ? cx->override :
	    cx->server > 0 ? cx->server : cx->table > 0 ? cx->table : 8192))
		return "server refusal";
	if (cx->override > 0)
		return "--context-window";
	if (cx->server > 0)
		return "server";
	if (is_ollama(cx))
		return "ollama default";
	if (cx->table > 0)
		return "table " CONTEXT_TABLE_DATE;
	return "default";
}

void
context_set_model(struct context *cx, const char *provider, const char *model)
{
	if (provider != cx->provider) {
		free(cx->provider);
		cx->provider = provider ? xstrdup(provider) : NULL;
	}
	if (model != cx->model) {
		free(cx->model);
		cx->model = model ? xstrdup(model) : NULL;
	}
	cx->table = context_window_of(provider, model);
	cx->server = 0;
	cx->refused = 0;
}

void
context_set_server_window(struct context *cx, long tokens)
{
	if (tokens > 0)
		cx->server = tokens;
}

long
context_reserve(const struct context *cx)
{
	long r = context_window(cx) / 4;

	r = r < 256 ? 256 : r > 4096 ? 4096 : r;
	/* the model's reasoning budget is output too (--reasoning), kept
	 * free as long as it leaves half the window to the conversation */
	if (cx->m != NULL) {
		long think = llm_reasoning_reserve(llm_config_of(cx->m));
		if (think > context_window(cx) / 2 - r)
			think = context_window(cx) / 2 - r;
		if (think > 0)
			r += think;
	}
	return r;
}

static long
budget(const struct context *cx)
{
	return context_window(cx) - context_reserve(cx);
}

/* ------------------------------------------------------------ the cache */

static int
cell_of(const struct notebook *nb, const char *call_id)
{
	if (call_id == NULL)
		return 0;
	for (int i = notebook_ncells(nb); i >= 1; i--) {
		const struct cell *c = notebook_cell(nb, i);
		if (c && c->tool_call_id && strcmp(c->tool_call_id, call_id) == 0)
			return c->n;
	}
	return 0;
}

static void
fill(struct context *cx, int i, const cJSON *m)
{
	const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
	struct mc *e = &cx->mc[i];

	e->full = context_estimate_message(m);
	e->elided = -1;
	free(e->etext);
	e->etext = NULL;
	e->role = !role ? R_OTHER : strcmp(role, "user") == 0 ? R_USER :
	    strcmp(role, "assistant") == 0 ? R_ASSISTANT :
	    strcmp(role, "tool") == 0 ? R_TOOL : R_OTHER;
	e->cell = 0;
	e->question = 0;
	if (e->role == R_TOOL)
		e->cell = cell_of(cx->nb, cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(m, "tool_call_id")));
}

/* Message i of the notebook: a list walk, from whichever end is
 * nearer (cJSON's lists are doubly linked, the notebook keeps the
 * last); a request's view starts near the end. NULL past the end. */
static const cJSON *
msg_at(const struct context *cx, int i)
{
	int n = notebook_nmessages(cx->nb);
	const cJSON *m;

	if (i < 0 || i >= n)
		return NULL;
	if (i < n / 2)
		return cJSON_GetArrayItem(notebook_messages(cx->nb), i);
	m = notebook_message(cx->nb, n - 1);
	for (int k = n - 1; k > i && m != NULL; k--)
		m = m->prev;
	return m;
}

/* Brings the cache up to the notebook's messages; the last one is
 * measured again (an agent may complete it in place). Returns n. */
static int
sync_cache(struct context *cx)
{
	int n = notebook_nmessages(cx->nb), from = cx->nmc;
	const cJSON *m;
	int i;

	if (cx->nmc > 0 && cx->mc_nbgen != notebook_gen(cx->nb) && n >= cx->nmc) {
		/* A message there changed (an insert, a replacement): the
		 * cache by index is measured again, the view made anew. */
		from = 0;
		cx->gen++;
	} else if (n < cx->nmc) {
		/* The notebook was rebuilt: start over. */
		from = 0;
		cx->summary_upto = cx->elide_upto = 0;
		free(cx->summary);
		cx->summary = NULL;
		cx->gen++;
	} else if (from > 0)
		from--;
	cx->mc_nbgen = notebook_gen(cx->nb);
	if (n > cx->cap) {
		int old = cx->cap;
		cx->cap = n + n / 2 + 16;
		cx->mc = xrealloc(cx->mc, (size_t)cx->cap * sizeof *cx->mc);
		memset(cx->mc + old, 0, (size_t)(cx->cap - old) * sizeof *cx->mc);
	}
	if (from == n)
		return n;
	/* cJSON arrays are doubly linked lists: the last cached entry is
	 * reached back from the notebook's last message (kept), a few
	 * steps, not by a walk from the head every request. */
	m = msg_at(cx, from);
	cx->nquestions = 0;
	for (i = from - 1; i >= 0; i--)
		if (cx->mc[i].role == R_USER) {
			cx->nquestions = cx->mc[i].question;
			break;
		}
	for (i = from; i < n && m != NULL; i++, m = m->next) {
		fill(cx, i, m);
		if (cx->mc[i].role == R_USER)
			cx->mc[i].question = ++cx->nquestions;
	}
	cx->nmc = n;
	return n;
}

/* An elided tool result: its first lines and where the rest is. A new
 * string. */
static char *
elided_text(const struct context *cx, const cJSON *m, int cell)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "content"));
	struct buf b;
	int lines = 0;
	const char *p;

	if (s == NULL)
		s = "";
	for (p = s; *p; p++)
		if (*p == '\n')
			lines++;
	if (p > s && p[-1] != '\n')
		lines++;
	buf_init(&b, 4096);
	p = s;
	for (int k = 0; k < ELIDE_LINES && *p; k++) {
		size_t len = strcspn(p, "\n");
		buf_add(&b, p, len < ELIDE_LINE_MAX ? len : ELIDE_LINE_MAX);
		if (len > ELIDE_LINE_MAX)
			buf_adds(&b, "...");
		buf_addc(&b, '\n');
		p += len + (p[len] == '\n');
	}
	if (cell > 0)
		buf_printf(&b, "[elided: cell [%d], %d lines, still in the notebook]", cell, lines);
	else
		buf_printf(&b, "[elided: %d lines]", lines);
	(void)cx;
	return buf_take(&b);
}

/* Message i's elided text, made once (owned by the cache). */
static const char *
etext(struct context *cx, int i, const cJSON *m)
{
	if (cx->mc[i].etext == NULL)
		cx->mc[i].etext = elided_text(cx, m, cx->mc[i].cell);
	return cx->mc[i].etext;
}

static long
elided_tokens(struct context *cx, int i, const cJSON *m)
{
	if (cx->mc[i].elided < 0) {
		const char *s = etext(cx, i, m);
		cx->mc[i].elided = MSG_OVERHEAD + ctxsize_str(m, "tool_call_id") +
		    context_estimate_text(s, strlen(s));
		if (cx->mc[i].elided > cx->mc[i].full)
			cx->mc[i].elided = cx->mc[i].full;
	}
	return cx->mc[i].elided;
}

/* The raw estimate of the view: per message as cached. */
static long
raw_view(struct context *cx, long sys, int summary_upto, int elide_upto)
{
	long t = sys + SYS_OVERHEAD + TOOLS_OVERHEAD;

	if (summary_upto > 0 && cx->summary)
		t += cx->summary_tokens + 40;
	/* Along the cache, not the message list (a pointer chase per
	 * message, every request): a message is looked up only for an
	 * elided estimate not made yet, once. From the last sum of the
	 * entries that stay (sync_cache fills the last one again, or all
	 * with a new gen). */
	int i = summary_upto;
	long sum = 0;

	if (cx->rv_n > summary_upto && cx->rv_n < cx->nmc && cx->rv_gen == cx->gen &&
	    cx->rv_summary == summary_upto && cx->rv_elide == elide_upto) {
		i = cx->rv_n;
		sum = cx->rv_sum;
	}
	for (; i < cx->nmc; i++) {
		if (i == cx->nmc - 1 && i > summary_upto) {
			cx->rv_gen = cx->gen;
			cx->rv_summary = summary_upto;
			cx->rv_elide = elide_upto;
			cx->rv_n = i;
			cx->rv_sum = sum;
		}
		sum += (cx->mc[i].role == R_TOOL && i < elide_upto) ?
		    elided_tokens(cx, i, cx->mc[i].elided < 0 ?
		    notebook_message(cx->nb, i) : NULL) : cx->mc[i].full;
	}
	return t + sum;
}

static long
sys_tokens(struct context *cx, const char *system)
{
	size_t n;

	/* the same prompt every turn as a rule: a compare, not an estimate */
	if (system == NULL)
		return cx->sys_tokens;
	n = strlen(system);
	if (cx->sys_text == NULL || n != cx->sys_len ||
	    memcmp(system, cx->sys_text, n) != 0) {
		free(cx->sys_text);
		cx->sys_text = xstrndup(system, n);
		cx->sys_len = n;
		cx->sys_tokens = context_estimate_text(system, n);
	}
	return cx->sys_tokens;
}

/* Takes the provider's count for the last request, once it came. */
static void
take_usage(struct context *cx)
{
	const struct usage *u = notebook_usage(cx->nb);
	long d;

	if (!cx->awaiting || u == NULL)
		return;
	d = u->input_tokens - cx->usage_mark;
	if (d <= 0)
		return;
	cx->awaiting = 0;
	cx->reported = d;
	cx->last_size = d;
	if (cx->sent_raw > 0) {
		cx->ratio = (double)d / (double)cx->sent_raw;
		if (cx->ratio < 0.5)
			cx->ratio = 0.5;
		if (cx->ratio > 2.0)
			cx->ratio = 2.0;
	}
}

static long
scaled(const struct context *cx, long raw)
{
	/* Only ever scaled up: an estimator that leans high stays high. */
	return cx->ratio > 1.0 ? (long)((double)raw * cx->ratio + 0.5) : raw;
}

long
context_estimate(struct context *cx, const char *system)
{
	long sys, raw;

	sync_cache(cx);
	take_usage(cx);
	sys = sys_tokens(cx, system);
	raw = raw_view(cx, sys, cx->summary_upto, cx->elide_upto);
	/* The provider's count for what was sent, the estimate for what
	 * is new; after the view changed, the estimate scaled by what the
	 * provider counted last time. */
	if (cx->reported > 0 && cx->sent_gen == cx->gen && !cx->awaiting &&
	    raw >= cx->sent_raw)
		return cx->reported + scaled(cx, raw - cx->sent_raw);
	return scaled(cx, raw);
}

int
context_percent(const struct context *cx)
{
	const struct usage *u = notebook_usage(cx->nb);
	long w = context_window(cx), size = cx->last_size;

	/* the provider's count once it came, as the next estimate takes it
	 * (take_usage): the bar must not wait for that estimate */
	if (cx->awaiting && u != NULL && u->input_tokens - cx->usage_mark > 0)
		size = u->input_tokens - cx->usage_mark;
	if (size <= 0 || w <= 0)
		return -1;
	return (int)((size * 100 + w / 2) / w);
}

/* ------------------------------------------------------------ the plan */

/* The last user message (the current question) and the last assistant
 * message after it (results after that one are the latest). */
static void
anchors(const struct context *cx, int *q, int *last_asst)
{
	*q = -1;
	*last_asst = -1;
	for (int i = cx->nmc - 1; i >= 0; i--) {
		if (cx->mc[i].role == R_ASSISTANT && *last_asst < 0 && *q < 0)
			*last_asst = i;
		if (cx->mc[i].role == R_USER) {
			*q = i;
			break;
		}
	}
}

static long
summary_allowance(const struct context *cx)
{
	long a = context_window(cx) / 10;

	return (a > 700 ? 700 : a) + 40;
}

void
context_plan(struct context *cx, const char *system, long target,
    struct context_plan *p)
{
	const cJSON *m;
	int q, la, i;
	long est, bud = budget(cx), saved;

	memset(p, 0, sizeof *p);
	est = context_estimate(cx, system);
	p->before = p->after = est;
	p->elide_upto = cx->elide_upto;
	if (target <= 0)
		target = bud;
	if (est <= target) {
		p->fits = 1;
		return;
	}
	anchors(cx, &q, &la);
	if (q < 0)
		q = cx->nmc;
	/* 1. The oldest tool results before the current question. */
	i = cx->elide_upto > cx->summary_upto ? cx->elide_upto : cx->summary_upto;
	m = msg_at(cx, i);
	for (; i < q && m && est > target; i++, m = m->next) {
		if (cx->mc[i].role == R_TOOL)
			est -= scaled(cx, cx->mc[i].full - elided_tokens(cx, i, m));
		p->elide_upto = i + 1;
	}
	p->after = est;
	if (est <= target) {
		p->fits = 1;
		return;
	}
	/* 2. Summarise whole questions, oldest first, up to the current
	 * one: the fewest that bring the request a third under the target
	 * with the summary in, so that summary calls (the model's time and
	 * the user's money) stay rare. */
	if (q > cx->summary_upto) {
		long allow = summary_allowance(cx) - (cx->summary ? cx->summary_tokens + 40 : 0);
		long starget = target - target / 3;
		saved = 0;
		m = msg_at(cx, cx->summary_upto);
		for (i = cx->summary_upto; i < q && m; i++, m = m->next) {
			saved += scaled(cx, (cx->mc[i].role == R_TOOL && i < p->elide_upto) ?
			    elided_tokens(cx, i, m) : cx->mc[i].full);
			if (i + 1 < cx->nmc && cx->mc[i + 1].role == R_USER &&
			    est - saved + allow <= starget)
				break;
		}
		p->summarise_to = i + 1 < q ? i + 1 : q;
		est = est - saved + allow;
	}
	/* 3. Still too much: the current question's earlier results, all
	 * but the latest. */
	if (est > target && la > q) {
		i = p->elide_upto > q ? p->elide_upto : q;
		m = msg_at(cx, i);
		for (; i < la && m && est > target; i++, m = m->next) {
			if (cx->mc[i].role == R_TOOL)
				est -= scaled(cx, cx->mc[i].full - elided_tokens(cx, i, m));
			p->elide_upto = i + 1;
		}
	}
	p->after = est;
	p->fits = est <= target;
}

/* ------------------------------------------------------------ the view */

static const char summary_head[] =
    "Summary of the earlier conversation (questions 1-%d, summarised to fit the "
    "model's context window; their cells and full outputs are still in the "
    "notebook, and the Python session keeps its variables):\n%s\n\nQuestion %d follows.\n\n";

/* The view's item for message i (m): a new item, the summary's head
 * with the first kept question, an elided tool result, or a reference
 * to the notebook's message. */
static cJSON *
view_item(struct context *cx, int i, const cJSON *m)
{
	cJSON *c;

	if (i == cx->summary_upto && cx->summary && i > 0 &&
	    cx->mc[i].role == R_USER) {
		const char *q = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(m, "content"));
		char *s = xasprintf(summary_head, cx->summary_questions,
		    cx->summary, cx->summary_questions + 1);
		char *all = xasprintf("%s%s", s, q ? q : "");
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "role", "user");
		cJSON_AddStringToObject(c, "content", all);
		free(s);
		free(all);
	} else if (cx->mc[i].role == R_TOOL && i < cx->elide_upto) {
		const cJSON *f;
		c = cJSON_CreateObject();
		cJSON_ArrayForEach(f, m) {
			if (f->string && strcmp(f->string, "content") == 0)
				cJSON_AddItemToObject(c, "content",
				    cJSON_CreateStringReference(etext(cx, i, m)));
			else if (f->string)
				cJSON_AddItemReferenceToObject(c, f->string, (cJSON *)f);
		}
	} else {
		/* A reference: the notebook's message is sent as is. */
		c = cJSON_CreateObjectReference(m->child);
	}
	if (c == NULL)
		fatal("out of memory (cJSON)");
	return c;
}

const cJSON *
context_messages(struct context *cx, const char *system)
{
	const cJSON *m;
	long sys;
	int keep = 0, i;

	sync_cache(cx);
	take_usage(cx);
	sys = sys_tokens(cx, system);
	if (cx->summary_upto == 0 && cx->elide_upto == 0) {
		/* The view would be a reference to every message (a resumed
		 * session's first request made thousands): the notebook's
		 * array is sent as it is. Its stamp follows the same rule as
		 * a view's; a change of mode is a new one (the nodes differ). */
		keep = !cx->direct || cx->stamp == 0 || cx->stamp_gen != cx->gen ||
		    cx->stamp_nb != notebook_gen(cx->nb) ? -1 : 1;
		cJSON_Delete(cx->view);
		cx->view = NULL;
		cx->nview = cx->nmc;
		cx->direct = 1;
	} else if (cx->direct) {
		cx->direct = 0;		/* cx->view is NULL: made anew */
	}
	/* Neither the view nor the messages there changed since the last
	 * one (its stamp's): the conversation only grew. Its items stay
	 * but the last (a message completed in place is made again); the
	 * new messages are added. */
	if (cx->direct) {
		/* the notebook's messages (above) */
	} else if (cx->view != NULL && cx->stamp != 0 && cx->stamp_gen == cx->gen &&
	    cx->stamp_nb == notebook_gen(cx->nb) && cx->nview > 1 &&
	    cx->nview <= cx->nmc - cx->summary_upto) {
		keep = cx->nview - 1;
		cJSON_Delete(cJSON_DetachItemViaPointer(cx->view, cx->view->child->prev));
	} else {
		cJSON_Delete(cx->view);
		cx->view = cJSON_CreateArray();
		if (cx->view == NULL)
			fatal("out of memory (cJSON)");
	}
	if (!cx->direct) {
		cx->nview = keep;
		m = msg_at(cx, cx->summary_upto + keep);
		for (i = cx->summary_upto + keep; i < cx->nmc && m; i++, m = m->next) {
			cJSON_AddItemToArray(cx->view, view_item(cx, i, m));
			cx->nview++;
		}
	}
	if (keep == 0 || keep == -1) {
		/* another view: another stamp (the high bit: never a
		 * notebook_gen) */
		static uint64_t stamps;
		cx->stamp = (UINT64_C(1) << 63) | ++stamps;
		cx->stamp_gen = cx->gen;
		cx->stamp_nb = notebook_gen(cx->nb);
	}
	/* Calibration: what the provider will count for this request. */
	cx->sent_raw = raw_view(cx, sys, cx->summary_upto, cx->elide_upto);
	cx->sent_gen = cx->gen;
	cx->usage_mark = notebook_usage(cx->nb) ? notebook_usage(cx->nb)->input_tokens : 0;
	cx->awaiting = 1;
	cx->reported = 0;
	cx->last_size = scaled(cx, cx->sent_raw);
	if (cx->server > 0 && cx->last_size > cx->server && !cx->server_warned) {
		char *w = xasprintf("warning: this request (about %ld tokens) is larger than "
		    "the server's context size (%ld tokens): the server may silently drop "
		    "the start of the conversation; set the server's context size, or "
		    "--context-window %ld", cx->last_size, cx->server, cx->server);
		cx->server_warned = 1;
		emit_notice(cx, w);
		free(w);
	}
	return cx->direct ? notebook_messages(cx->nb) : cx->view;
}

uint64_t
context_stamp(const struct context *cx)
{
	return cx->stamp;
}

int
context_parts(struct context *cx, const char *system, struct context_part **parts)
{
	struct context_part *p;
	int n = 0;
	const cJSON *m;

	sync_cache(cx);
	sys_tokens(cx, system);
	p = xcalloc((size_t)cx->nmc + 2, sizeof *p);
	p[n++] = (struct context_part){ CONTEXT_SYSTEM, -1, 0,
	    scaled(cx, cx->sys_tokens + SYS_OVERHEAD + TOOLS_OVERHEAD) };
	if (cx->summary && cx->summary_upto > 0)
		p[n++] = (struct context_part){ CONTEXT_SUMMARY, -1, 0,
		    scaled(cx, cx->summary_tokens + 40) };
	m = msg_at(cx, cx->summary_upto);
	for (int i = cx->summary_upto; i < cx->nmc && m; i++, m = m->next) {
		struct context_part *e = &p[n++];
		e->msg = i;
		e->cell = cx->mc[i].cell;
		e->tokens = scaled(cx, cx->mc[i].full);
		switch (cx->mc[i].role) {
		case R_USER:
			e->kind = CONTEXT_QUESTION;
			break;
		case R_TOOL:
			e->kind = i < cx->elide_upto ? CONTEXT_ELIDED : CONTEXT_CELL;
			if (i < cx->elide_upto)
				e->tokens = scaled(cx, elided_tokens(cx, i, m));
			break;
		default:
			e->kind = CONTEXT_ANSWER;
			break;
		}
	}
	*parts = p;
	return n;
}

const char *
context_summary(const struct context *cx, int *upto)
{
	if (upto)
		*upto = cx->summary ? cx->summary_upto : 0;
	return cx->summary;
}

/* ------------------------------------------------------------ summary */

static void
add_capped(struct buf *b, const char *s, size_t cap)
{
	size_t n = strlen(s);

	if (n <= cap) {
		buf_add(b, s, n);
	} else {
		buf_add(b, s, cap);
		buf_adds(b, " [...]");
	}
	buf_addc(b, '\n');
}

/* The conversation to summarise, messages [from, to), as plain text
 * with each part capped at cap bytes. A new string. */
static char *
transcript(struct context *cx, int from, int to, size_t cap)
{
	const cJSON *m = msg_at(cx, from);
	struct buf b;

	buf_init(&b, (size_t)-1 / 2);
	if (cx->summary)
		buf_printf(&b, "Summary of questions 1-%d so far:\n%s\n\n",
		    cx->summary_questions, cx->summary);
	for (int i = from; i < to && m; i++, m = m->next) {
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "content"));
		const cJSON *c;
		switch (cx->mc[i].role) {
		case R_USER:
			buf_printf(&b, "Question %d: ", cx->mc[i].question);
			add_capped(&b, s ? s : "", cap);
			break;
		case R_ASSISTANT:
			if (s && *s) {
				buf_adds(&b, "Answer: ");
				add_capped(&b, s, cap);
			}
			cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) {
				const char *a = cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(c, "arguments"));
				cJSON *j = a ? cJSON_Parse(a) : NULL;
				const char *code = j ? cJSON_GetStringValue(
				    cJSON_GetObjectItemCaseSensitive(j, "code")) : NULL;
				buf_adds(&b, "Code:\n");
				add_capped(&b, code ? code : a ? a : "", cap);
				cJSON_Delete(j);
			}
			break;
		case R_TOOL:
			buf_adds(&b, "Output:\n");
			add_capped(&b, etext(cx, i, m), cap);
			break;
		default:
			break;
		}
	}
	return buf_take(&b);
}

int
context_set_summary(struct context *cx, int upto, const char *text)
{
	size_t n = strlen(text);
	int nupto;
	const char *ns = notebook_summary(cx->nb, &nupto, NULL);

	sync_cache(cx);
	if (upto <= 0 || upto >= cx->nmc || cx->mc[upto].role != R_USER)
		return -1;
	/* Recorded in the notebook (and so in the journal) once. */
	if (ns == NULL || nupto != upto || strcmp(ns, text) != 0)
		notebook_set_summary(cx->nb, upto, text);
	free(cx->summary);
	cx->summary = xstrndup(text, n < SUMMARY_BYTES ? n : SUMMARY_BYTES);
	cx->summary_tokens = context_estimate_text(cx->summary, strlen(cx->summary));
	cx->summary_questions = cx->mc[upto].question - 1;
	cx->summary_upto = upto;
	if (cx->elide_upto < upto)
		cx->elide_upto = upto;
	cx->gen++;
	return 0;
}

static void
s_text(void *arg, const char *delta, size_t len)
{
	struct context *cx = arg;

	buf_add(&cx->reply, delta, len);
}

static void
s_usage(void *arg, const struct usage *u)
{
	struct context *cx = arg;
	struct event ev = { .type = EV_USAGE, .usage = u };

	notebook_add_usage(cx->nb, u);
	/* Not the main request's count. */
	cx->usage_mark += u->input_tokens;
	ev.total = notebook_usage(cx->nb);
	if (cx->emit)
		cx->emit(cx->arg, &ev);
}

static void
s_sent(void *arg, const char *what, const char *body, size_t len)
{
	struct context *cx = arg;
	char *w = xasprintf("summary for the context window: %s", what ? what : "");
	struct event ev = { .type = EV_REQUEST, .text = w, .len = len };

	notebook_add_sent(cx->nb, w, body, len);
	if (cx->emit)
		cx->emit(cx->arg, &ev);
	free(w);
}

static void
s_notice(void *arg, const char *msg)
{
	emit_notice(arg, msg);
}

static void
finish(struct context *cx, const char *err)
{
	void (*then)(void *, const char *) = cx->then;

	cx->busy = 0;
	cx->then = NULL;
	if (then)
		then(cx->then_arg, err);
}

static void
s_done(void *arg, const char *stop)
{
	struct context *cx = arg;
	const char *s = buf_str(&cx->reply);
	char *note;
	int q;

	(void)stop;
	s += strspn(s, " \t\r\n");
	if (*s == '\0') {
		finish(cx, "the model's summary was empty");
		return;
	}
	if (context_set_summary(cx, cx->cut, s) < 0) {
		buf_reset(&cx->reply);
		finish(cx, "the conversation changed during the summary call");
		return;
	}
	q = cx->summary_questions;
	buf_reset(&cx->reply);
	note = xasprintf("context: questions 1-%d summarised by the model to fit the "
	    "context window (%ld -> %ld tokens of %ld); their cells stay in the notebook",
	    q, cx->before, context_estimate(cx, NULL), context_window(cx));
	emit_notice(cx, note);
	free(note);
	finish(cx, NULL);
}

static void
s_error(void *arg, const struct llm_error *e)
{
	struct context *cx = arg;
	char *msg = xasprintf("the summary call failed: %s", e->msg);

	buf_reset(&cx->reply);
	finish(cx, msg);
	free(msg);
}

static const struct llm_cbs summary_cbs = {
	.text = s_text, .usage = s_usage, .sent = s_sent, .notice = s_notice,
	.done = s_done, .error = s_error,
};

static int
start_summary(struct context *cx, int cut, char **err)
{
	long room = budget(cx) - context_estimate_text(summary_system,
	    sizeof summary_system - 1) - TOOLS_OVERHEAD - 64;
	cJSON *msgs, *m;
	char *t = NULL;
	int r;

	/* The call itself must fit: cap each part until it does. */
	for (size_t cap = 2000; ; cap /= 2) {
		free(t);
		t = transcript(cx, cx->summary_upto, cut, cap);
		if (context_estimate_text(t, strlen(t)) <= room || cap < 64)
			break;
	}
	if (context_estimate_text(t, strlen(t)) > room) {
		/* Too many questions even so: keep the latest part. */
		size_t keep = (size_t)(room > 0 ? room : 0) * 3, n = strlen(t);
		if (keep < n)
			memmove(t, t + (n - keep), keep + 1);
	}
	msgs = cJSON_CreateArray();
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", t);
	cJSON_AddItemToArray(msgs, m);
	free(t);
	buf_reset(&cx->reply);
	cx->cut = cut;
	cx->busy = 1;
	r = llm_request(cx->m, summary_system, msgs, &summary_cbs, cx, err);
	cJSON_Delete(msgs);
	if (r < 0)
		cx->busy = 0;
	return r;
}

int
context_prepare(struct context *cx, const char *system, int force,
    void (*then)(void *arg, const char *err), void *arg, char **err)
{
	struct context_plan p;
	long target;

	if (cx->busy && (cx->m == NULL || !llm_busy(cx->m)))
		cx->busy = 0;	/* cancelled under us (Ctrl-C) */
	if (ctxprobe_busy(&cx->probe) && then != NULL) {
		/* The server is telling its context size: the first request
		 * waits for it (a local server answers at once; the probe's
		 * own timeouts bound the wait). */
		free(cx->wait_sys);
		cx->wait_sys = system ? xstrdup(system) : NULL;
		cx->wait_force = force;
		cx->then = then;
		cx->then_arg = arg;
		cx->waiting = 1;
		return 1;
	}
	if (cx->busy || (cx->m && llm_busy(cx->m))) {
		*err = xstrdup("the model is busy; compact after the question");
		return -1;
	}
	if (force > 1 && cx->refused == 0)
		context_refused(cx, NULL);	/* what was sent is too much */
	target = budget(cx);
	context_plan(cx, system, 0, &p);
	if (p.before <= target && !force)
		return 0;
	/* Compacting: aim lower than the limit, so that the next turns do
	 * not compact again at once. */
	target = target * 3 / 5;
	cx->before = p.before;
	context_plan(cx, system, target, &p);
	if (p.elide_upto != cx->elide_upto) {
		char *note = xasprintf("context: older tool outputs elided to their first "
		    "lines (%ld -> %ld tokens of %ld); the cells stay in the notebook",
		    p.before, p.summarise_to > 0 ? p.before : p.after, context_window(cx));
		cx->elide_upto = p.elide_upto;
		cx->gen++;
		if (p.summarise_to <= 0)
			emit_notice(cx, note);
		free(note);
	}
	if (p.summarise_to <= cx->summary_upto || cx->m == NULL)
		return 0;
	cx->then = then;
	cx->then_arg = arg;
	if (start_summary(cx, p.summarise_to, err) < 0) {
		cx->then = NULL;
		return -1;
	}
	return 1;
}

/* The window a server's "too long" message names, or 0. */
static long
named_window(const char *msg)
{
	static const char *const before[] = {
		"maximum context length is ",	/* OpenAI, Azure, vLLM */
		"available context size (",	/* llama.cpp */
		"context length of ",
		NULL,
	};
	const char *p;

	if (msg == NULL)
		return 0;
	for (int i = 0; before[i]; i++)
		if ((p = strstr(msg, before[i])) != NULL)
			return strtol(p + strlen(before[i]), NULL, 10);
	/* Anthropic: "prompt is too long: 208310 tokens > 200000 maximum" */
	if ((p = strstr(msg, " tokens > ")) != NULL)
		return strtol(p + 10, NULL, 10);
	return 0;
}

void
context_refused(struct context *cx, const char *msg)
{
	long w = named_window(msg);

	if (w <= 0 || w > 100000000)
		w = cx->last_size * 9 / 10;
	if (w > 0 && (cx->refused == 0 || w < cx->refused))
		cx->refused = w;
}

int
context_busy(const struct context *cx)
{
	return cx->busy && cx->m && llm_busy(cx->m);
}

void
context_cancel(struct context *cx)
{
	if (cx->busy && cx->m)
		llm_cancel(cx->m);
	cx->busy = 0;
	cx->waiting = 0;
	cx->then = NULL;
}

/* ------------------------------------------------------------ probe */

static void
probe_apply(struct context *cx, const struct ctxprobe *p)
{
	if (cx->table == 0)
		cx->table = p->model_len;
	if (p->num_ctx > 0) {
		char *note;
		context_set_server_window(cx, p->num_ctx);
		if (cx->override > p->num_ctx) {
			note = xasprintf("warning: the server's context size for %s is %ld "
			    "tokens, smaller than --context-window %ld: requests larger than "
			    "that lose their start silently", cx->model ? cx->model : "the model",
			    p->num_ctx, cx->override);
			emit_notice(cx, note);
			free(note);
		}
	}
}

/* The probe is over (answered or not): its size applies, and a request
 * that waited for it goes on. */
static void
probe_done(void *arg, const struct ctxprobe *p)
{
	struct context *cx = arg;

	probe_apply(cx, p);
	if (cx->waiting) {
		void (*then)(void *, const char *) = cx->then;
		void *targ = cx->then_arg;
		char *err = NULL;
		int rc;
		cx->waiting = 0;
		cx->then = NULL;
		rc = context_prepare(cx, cx->wait_sys, cx->wait_force, then, targ, &err);
		if (rc == 0)
			then(targ, NULL);
		else if (rc < 0) {
			then(targ, err);
			free(err);
		}
	}
}

int
context_probe(struct context *cx, struct loop *l, const char *provider,
    const char *base_url, const char *model)
{
	if (provider == NULL || strcmp(provider, "ollama") != 0 || base_url == NULL ||
	    model == NULL || l == NULL || ctxprobe_busy(&cx->probe))
		return -1;
	return ctxprobe_start(&cx->probe, l, base_url, cx->model);
}
