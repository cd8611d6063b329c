/* export: turns a notebook into an .ipynb (nbformat 4.5) or a Markdown
 * file. Both walk the conversation in order and place each cell where
 * the model called it; cells run by hand go before the next question. */
#include "terp/export.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/answer_trace.h"
#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/json_text.h"
#include "terp/sanitize.h"
#include "terp/outdisp.h"
#include "terp/util.h"

#include "export_paths.h"

/* ---- walking the notebook in reading order ------------------------ */

/* A cell by the tool call that made it: the walker's index, sorted by
 * id, then by number (the first cell of an id is the one taken). */
struct call_cell {
	const char		*id;
	const struct cell	*cell;
};

struct walker {
	const struct notebook	*nb;
	char			*done;		/* per cell: emitted */
	int			 lo;		/* every cell below is done */
	struct call_cell	*calls;		/* ncalls, sorted */
	int			 ncalls;
	const struct question	**qat;		/* per message: its question */
	int			*next;		/* per message: next_called_cell */
	int			 nmsgs;
	export_walk_fn		 emit;
	void			*arg;
	int			 final;		/* the reply emitted is an answer */
	const struct question	*q;		/* the question emitted last */
};

static const cJSON *
array_or_null(const cJSON *a)
{
	return cJSON_IsArray(a) ? a : NULL;
}

static int
call_cell_cmp(const void *a, const void *b)
{
	const struct call_cell *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c != 0 ? c : (x->cell->n > y->cell->n) - (x->cell->n < y->cell->n);
}

/* The walker's indexes, so that a walk is linear in the notebook: a
 * lookup per call and per question, each a scan of all before. */
static void
index_notebook(struct walker *w)
{
	const struct notebook *nb = w->nb;
	int n = notebook_ncells(nb), nq = notebook_nquestions(nb);

	w->calls = xcalloc((size_t)n + 1, sizeof *w->calls);
	for (int i = 1; i <= n; i++) {
		const struct cell *c = notebook_cell(nb, i);
		if (c->tool_call_id != NULL)
			w->calls[w->ncalls++] = (struct call_cell){ c->tool_call_id, c };
	}
	qsort(w->calls, (size_t)w->ncalls, sizeof *w->calls, call_cell_cmp);
	w->nmsgs = cJSON_GetArraySize(notebook_messages(nb));
	w->qat = xcalloc((size_t)w->nmsgs + 1, sizeof *w->qat);
	for (int k = 0; k < nq; k++) {	/* a later one wins, as notebook_question_at */
		const struct question *q = notebook_question(nb, k);
		if (q != NULL && q->msg >= 0 && q->msg < w->nmsgs)
			w->qat[q->msg] = q;
	}
}

/* The first cell the call id made, or NULL. */
static const struct cell *
cell_by_call(const struct walker *w, const char *id)
{
	int lo = 0, hi = w->ncalls;

	if (id == NULL)
		return NULL;
	while (lo < hi) {	/* the first entry not below id */
		int mid = lo + (hi - lo) / 2;
		if (strcmp(w->calls[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->ncalls && strcmp(w->calls[lo].id, id) == 0 ?
	    w->calls[lo].cell : NULL;
}

static void
emit_cells_before(struct walker *w, int limit)
{
	int n = notebook_ncells(w->nb);

	for (; w->lo < limit && w->lo <= n; w->lo++)
		if (!w->done[w->lo]) {
			w->done[w->lo] = 1;
			if (!notebook_cell(w->nb, w->lo)->dropped)	/* `d` took it out */
				w->emit(w->arg, EXPORT_CELL, NULL, notebook_cell(w->nb, w->lo));
		}
}

/* The first cell number message m calls, or INT_MAX. */
static int
first_called_cell(const struct walker *w, const cJSON *m)
{
	const cJSON *call, *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");

	cJSON_ArrayForEach(call, array_or_null(calls)) {
		const struct cell *c = cell_by_call(w, json_str(call, "id"));
		if (c != NULL)
			return c->n;
	}
	return INT_MAX;
}

/* w->next[i]: the first cell number the model calls after message i,
 * or INT_MAX; each message's own first call, then carried back from
 * the end (a walk ahead from every question was quadratic in a chat of
 * questions without cells). */
static void
index_next_calls(struct walker *w)
{
	const cJSON *m;
	int k = 0, after = INT_MAX;

	w->next = xcalloc((size_t)w->nmsgs + 1, sizeof *w->next);
	cJSON_ArrayForEach(m, notebook_messages(w->nb))
		if (k < w->nmsgs)
			w->next[k++] = first_called_cell(w, m);
	for (int i = k - 1; i >= 0; i--) {
		int own = w->next[i];
		w->next[i] = after;
		if (own != INT_MAX)
			after = own;
	}
}

static void
walk(struct walker *w)
{
	const cJSON *msgs = notebook_messages(w->nb), *m;
	int i = 0, n = notebook_ncells(w->nb);

	w->done = xcalloc((size_t)n + 2, 1);
	w->lo = 1;
	index_notebook(w);
	index_next_calls(w);
	cJSON_ArrayForEach(m, msgs) {
		const char *role = json_str(m, "role");
		const char *content = json_str(m, "content");
		const cJSON *call, *calls;

		if (role == NULL) {
			i++;
			continue;
		}
		if (strcmp(role, "user") == 0) {
			/* the question alone, without the notes sent with
			 * it (hand-run cells appear as cells of their own) */
			const struct question *q = i < w->nmsgs ? w->qat[i] : NULL;
			emit_cells_before(w, i < w->nmsgs ? w->next[i] : INT_MAX);
			w->q = q;
			w->emit(w->arg, EXPORT_QUESTION, q ? q->text :
			    content ? content : "", NULL);
		} else if (strcmp(role, "assistant") == 0) {
			char *why = notebook_reasoning_text(m);
			if (why != NULL)	/* above the reply, never it */
				w->emit(w->arg, EXPORT_REASONING, why, NULL);
			free(why);
			calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
			w->final = cJSON_GetArraySize(array_or_null(calls)) == 0;
			if (content != NULL && content[0] != '\0')
				w->emit(w->arg, EXPORT_REPLY, content, NULL);
			w->final = 0;
			cJSON_ArrayForEach(call, array_or_null(calls)) {
				const struct cell *c = cell_by_call(w,
				    json_str(call, "id"));
				if (c == NULL || w->done[c->n])
					continue;
				emit_cells_before(w, c->n);
				w->done[c->n] = 1;
				if (!c->dropped)
					w->emit(w->arg, EXPORT_CELL, NULL, c);
			}
		}
		i++;
	}
	emit_cells_before(w, n + 1);
	free(w->done);
	free(w->calls);
	free(w->qat);
	free(w->next);
}

void
export_walk(const struct notebook *nb, export_walk_fn fn, void *arg)
{
	struct walker w = { .nb = nb, .emit = fn, .arg = arg };

	walk(&w);
}

/* ---- the answers' numbers ------------------------------------------ */

/* Traces each final answer against the cells walked before it (the
 * session's at that point), as -p and the TUI did when it came. */
struct export_nums {
	const struct walker	*w;
	struct answer_tracer	*t;
	char			*question;
	int			 upto;		/* the last cell walked */
};

static void
nums_init(struct export_nums *x, const struct walker *w)
{
	memset(x, 0, sizeof *x);
	x->w = w;
	x->t = answer_tracer_new();
}

static void
nums_free(struct export_nums *x)
{
	answer_tracer_free(x->t);
	free(x->question);
}

/* Follows the walk; for a final answer, appends its footnote list to b. */
static void
nums_item(struct export_nums *x, enum export_item k, const char *text,
    const struct cell *c, struct buf *b)
{
	struct answer_trace tr;

	if (k == EXPORT_CELL) {
		if (c->n > x->upto)
			x->upto = c->n;
		return;
	}
	if (k == EXPORT_QUESTION) {
		free(x->question);
		x->question = xstrdup(text);
		return;
	}
	if (!x->w->final || x->upto == 0)
		return;
	answer_tracer_sync(x->t, x->w->nb, x->upto);
	answer_tracer_trace(x->t, text, x->question, &tr);
	if (tr.n > 0 && b->len > 0 && buf_str(b)[b->len - 1] != '\n')
		buf_addc(b, '\n');	/* the list is a block of its own */
	answer_trace_footnotes(&tr, b);
	answer_trace_free(&tr);
}

/* ---- text helpers ------------------------------------------------- */

/* The model's reasoning as a collapsed note: an HTML details block
 * (Jupyter and Markdown viewers fold it), its text quoted and escaped
 * so that nothing in it renders as markup. */
static void
add_reasoning_note(struct buf *b, const char *text)
{
	buf_adds(b, "<details><summary>Model reasoning</summary>\n\n");
	for (const char *p = text; *p != '\0'; ) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		buf_adds(b, "> ");
		for (size_t i = 0; i < n; i++) {
			switch (p[i]) {
			case '<': buf_adds(b, "&lt;"); break;
			case '>': buf_adds(b, "&gt;"); break;
			case '&': buf_adds(b, "&amp;"); break;
			case '\r': break;
			default:
				if (strchr("\\`*_[]#|~", p[i]) != NULL)
					buf_addc(b, '\\');
				buf_addc(b, p[i]);
			}
		}
		buf_addc(b, '\n');
		p += n + (nl != NULL);
	}
	buf_adds(b, "\n</details>\n");
}

/* Valid UTF-8 for JSON: invalid bytes become U+FFFD, NULs are dropped.
 * Control characters stay (JSON escapes them; Jupyter renders ANSI). */
static char *
utf8_fix(const char *p, size_t n)
{
	struct buf b;

	buf_init(&b, (size_t)-1);
	for (size_t i = 0; i < n; ) {
		unsigned cp;
		size_t k;
		if ((unsigned char)p[i] < 0x80) {
			if (p[i] != '\0')
				buf_addc(&b, p[i]);
			i++;
		} else if ((k = utf8_decode(p + i, n - i, &cp)) == 0) {
			buf_adds(&b, "\xef\xbf\xbd");
			i++;
		} else {
			buf_add(&b, p + i, k);
			i += k;
		}
	}
	return buf_take(&b);
}

/* nbformat's multiline string: a list of lines, each keeping its "\n". */
static cJSON *
lines_json(const char *s)
{
	cJSON *a = cJSON_CreateArray();

	while (*s != '\0') {
		const char *nl = strchr(s, '\n');
		size_t k = nl ? (size_t)(nl - s) + 1 : strlen(s);
		char *line = xstrndup(s, k);
		cJSON_AddItemToArray(a, cJSON_CreateString(line));
		free(line);
		s += k;
	}
	return a;
}

static int
has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* A reader never sees half a notebook. */
static int
write_atomic(const char *path, const char *text, size_t len, char **err)
{
	if (write_file_atomic(path, text, len, 0644, WRITE_SYNC) < 0) {
		*err = xasprintf("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- ipynb ------------------------------------------------------------ */

static void add_md_text(struct buf *b, const char *s);

/* "*No answer: cancelled by the user*" under a question that ended
 * without one (else a question alone reads as if it were never
 * finished, or as if the cells after it answered it). */
static void
add_unanswered(struct buf *b, const struct question *q)
{
	char *why;
	size_t n;

	if (q == NULL || q->unanswered == NULL)
		return;
	n = strlen(q->unanswered);
	if (n > 300)
		n = utf8_complete_prefix(q->unanswered, 300);
	why = xstrndup(q->unanswered, n);
	buf_adds(b, "\n*No answer: ");
	add_md_text(b, why);
	buf_adds(b, n < strlen(q->unanswered) ? "…*\n" : "*\n");
	free(why);
}

struct nbw {
	cJSON		*cells;
	int		 nmd;
	struct export_paths	 paths;
	int		 first_code;	/* index in cells; -1: none yet */
};

static void
add_markdown(struct nbw *w, const char *md)
{
	cJSON *c = cJSON_CreateObject();
	char id[32];

	snprintf(id, sizeof id, "md-%d", ++w->nmd);
	cJSON_AddStringToObject(c, "cell_type", "markdown");
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
	cJSON_AddItemToObject(c, "source", lines_json(md));
	cJSON_AddItemToArray(w->cells, c);
}

static void
add_stream(cJSON *outs, const char *name, const char *text)
{
	cJSON *o;

	if (text[0] == '\0')
		return;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "output_type", "stream");
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddItemToObject(o, "text", lines_json(text));
	cJSON_AddItemToArray(outs, o);
}

/* s[0..n) as an output: a display region as display_data in its own
 * MIME type, prints as a stream. */
static void
add_piece(cJSON *outs, const char *s, size_t n, const struct outdisp_span *sp)
{
	char *txt = utf8_fix(s, n);

	if (sp == NULL) {
		add_stream(outs, "stdout", txt);
	} else if (txt[0] != '\0') {
		cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateObject();
		size_t k = strlen(txt);
		if (k > 0 && txt[k - 1] == '\n')
			txt[k - 1] = '\0';	/* Jupyter's displays have none */
		cJSON_AddStringToObject(o, "output_type", "display_data");
		if (sp->markdown)
			cJSON_AddItemToObject(data, "text/markdown", lines_json(txt));
		cJSON_AddItemToObject(data, "text/plain", lines_json(txt));
		cJSON_AddItemToObject(o, "data", data);
		cJSON_AddItemToObject(o, "metadata", cJSON_CreateObject());
		cJSON_AddItemToArray(outs, o);
	}
	free(txt);
}

/* stdout in Jupyter's outputs: the prints as streams and each display
 * (display(), Markdown, a display_id's last update) in its place. */
static void
add_stdout(cJSON *outs, const struct cell *c)
{
	struct outdisp_span *sp;
	size_t len, nsp, at = 0;
	char *raw = cell_output_spans(c, 0, &len, &sp, &nsp);

	for (size_t i = 0; i < nsp; i++) {
		if (sp[i].off > at)
			add_piece(outs, raw + at, sp[i].off - at, NULL);
		add_piece(outs, raw + sp[i].off, sp[i].len, &sp[i]);
		at = sp[i].off + sp[i].len;
	}
	if (len > at)
		add_piece(outs, raw + at, len - at, NULL);
	free(sp);
	free(raw);
}

static void
add_display_text(cJSON *outs, const char *text)
{
	cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "output_type", "display_data");
	cJSON_AddItemToObject(data, "text/plain", lines_json(text));
	cJSON_AddItemToObject(o, "data", data);
	cJSON_AddItemToObject(o, "metadata", cJSON_CreateObject());
	cJSON_AddItemToArray(outs, o);
}

static void
add_artifact(cJSON *outs, const struct artifact *a)
{
	static const char magic[8] = "\x89PNG\r\n\x1a\n";
	char *png, *b64, *note;
	/* the sandbox's name on one line (a newline could fake a line of
	 * output); the JSON printer escapes the rest */
	char *name = sanitize_str(a->name, strlen(a->name), 0);
	size_t len;
	cJSON *o, *data;

	if (!has_suffix(a->name, ".png")) {
		note = xasprintf("[file %s: %llu bytes, saved at %s]", name,
		    (unsigned long long)a->bytes, a->path);
		add_display_text(outs, note);
		free(note);
		free(name);
		return;
	}
	png = read_file(a->path, EXPORT_IMAGE_MAX, &len);
	if (png == NULL || len < 8 || memcmp(png, magic, 8) != 0) {
		note = xasprintf("[image %s not embedded: %s]", name,
		    png == NULL ? (errno == EFBIG ? "larger than the export cap" :
		    strerror(errno)) : "not a PNG file");
		add_display_text(outs, note);
		free(note);
		free(png);
		free(name);
		return;
	}
	b64 = base64_encode(png, len, NULL);
	free(png);
	o = cJSON_CreateObject();
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "output_type", "display_data");
	cJSON_AddStringToObject(data, "image/png", b64);
	note = xasprintf("<%s>", name);
	cJSON_AddStringToObject(data, "text/plain", note);
	free(note);
	free(name);
	free(b64);
	cJSON_AddItemToObject(o, "data", data);
	cJSON_AddItemToObject(o, "metadata", cJSON_CreateObject());
	cJSON_AddItemToArray(outs, o);
}

static void
add_code(struct nbw *w, const struct notebook *nb, const struct cell *c)
{
	cJSON *o = cJSON_CreateObject(), *outs, *meta, *terp;
	char id[32];
	int ran = c->status != CELL_PENDING && c->status != CELL_RUNNING;
	char *code = utf8_fix(c->code, strlen(c->code));
	char *here = export_paths_rewrite(&w->paths, code);

	if (w->first_code < 0)
		w->first_code = cJSON_GetArraySize(w->cells);
	snprintf(id, sizeof id, "cell-%d", c->n);
	cJSON_AddStringToObject(o, "cell_type", "code");
	cJSON_AddStringToObject(o, "id", id);
	if (ran)
		cJSON_AddNumberToObject(o, "execution_count", c->n);
	else
		cJSON_AddNullToObject(o, "execution_count");
	meta = cJSON_AddObjectToObject(o, "metadata");
	terp = cJSON_AddObjectToObject(meta, "terp");
	cJSON_AddStringToObject(terp, "author",
	    c->author == CELL_BY_USER ? "user" : "model");
	cJSON_AddStringToObject(terp, "status", cell_status_name(c->status));
	cJSON_AddNumberToObject(terp, "duration_ms", (double)c->duration_ms);
	if (here != NULL)
		cJSON_AddStringToObject(terp, "sandbox_source", code);
	cJSON_AddItemToObject(o, "source", lines_json(here ? here : code));
	free(here);
	free(code);
	outs = cJSON_AddArrayToObject(o, "outputs");
	add_stdout(outs, c);
	{
		size_t len;
		char *raw = cell_output(c, 1, &len), *txt = utf8_fix(raw, len);
		add_stream(outs, "stderr", txt);
		free(raw);
		free(txt);
	}
	for (int i = 0; i < notebook_nartifacts(nb); i++) {
		const struct artifact *a = notebook_artifact(nb, i);
		if (a->cell == c->n)
			add_artifact(outs, a);
	}
	if (c->status == CELL_ERROR) {
		cJSON *e = cJSON_CreateObject(), *tb = cJSON_CreateArray();
		char *tbs = utf8_fix(c->traceback ? c->traceback : "",
		    c->traceback ? strlen(c->traceback) : 0);
		char *p = tbs;
		cJSON_AddStringToObject(e, "output_type", "error");
		cJSON_AddStringToObject(e, "ename", c->ename ? c->ename : "Error");
		cJSON_AddStringToObject(e, "evalue", c->evalue ? c->evalue : "");
		while (*p != '\0') {
			char *nl = strchr(p, '\n');
			if (nl != NULL)
				*nl = '\0';
			cJSON_AddItemToArray(tb, cJSON_CreateString(p));
			if (nl == NULL)
				break;
			p = nl + 1;
		}
		free(tbs);
		cJSON_AddItemToObject(e, "traceback", tb);
		cJSON_AddItemToArray(outs, e);
	} else if (c->status != CELL_OK && c->status != CELL_PENDING) {
		char *note = xasprintf("[terp: cell %s%s%s]\n",
		    cell_status_name(c->status), c->reason ? ": " : "",
		    c->reason ? c->reason : "");
		add_stream(outs, "stderr", note);
		free(note);
	}
	if (c->value != NULL && c->status == CELL_OK) {
		cJSON *r = cJSON_CreateObject(), *data = cJSON_CreateObject();
		char *v = utf8_fix(c->value, strlen(c->value));
		cJSON_AddStringToObject(r, "output_type", "execute_result");
		cJSON_AddNumberToObject(r, "execution_count", c->n);
		cJSON_AddItemToObject(data, "text/plain", lines_json(v));
		free(v);
		cJSON_AddItemToObject(r, "data", data);
		cJSON_AddItemToObject(r, "metadata", cJSON_CreateObject());
		cJSON_AddItemToArray(outs, r);
	}
	cJSON_AddItemToArray(w->cells, o);
}

struct ipynb_walk {
	struct nbw		 w;
	const struct notebook	*nb;
	struct export_nums	 nums;
};

static void
ipynb_item(void *arg, enum export_item k, const char *text, const struct cell *c)
{
	struct ipynb_walk *iw = arg;
	struct buf b;
	char *fixed;

	if (k == EXPORT_CELL) {
		nums_item(&iw->nums, k, text, c, NULL);
		add_code(&iw->w, iw->nb, c);
		return;
	}
	fixed = utf8_fix(text, strlen(text));
	if (k == EXPORT_REASONING) {
		buf_init(&b, (size_t)-1);
		add_reasoning_note(&b, fixed);
		add_markdown(&iw->w, buf_str(&b));
		buf_free(&b);
		free(fixed);
		return;
	}
	buf_init(&b, (size_t)-1);
	if (k == EXPORT_QUESTION)
		nums_item(&iw->nums, k, fixed, c, NULL);
	if (k == EXPORT_QUESTION) {
		/* a quoted block, each line prefixed */
		buf_adds(&b, "**Question:**\n\n");
		for (char *p = fixed; *p != '\0'; ) {
			char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			buf_adds(&b, "> ");
			buf_add(&b, p, n);
			buf_addc(&b, '\n');
			p += n + (nl != NULL);
		}
		add_unanswered(&b, iw->nums.w->q);
	} else {
		buf_adds(&b, fixed);
		nums_item(&iw->nums, k, fixed, c, &b);
	}
	add_markdown(&iw->w, buf_str(&b));
	buf_free(&b);
	free(fixed);
}

/* The first code cell: the paths the others were given
 * (export_paths_init). */
static void
add_setup(struct nbw *w)
{
	char *code = export_paths_setup(&w->paths);
	cJSON *o, *meta, *rest;

	if (code == NULL || w->first_code < 0) {
		free(code);
		return;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cell_type", "code");
	cJSON_AddStringToObject(o, "id", "terp-paths");
	cJSON_AddNullToObject(o, "execution_count");
	meta = cJSON_AddObjectToObject(o, "metadata");
	cJSON_AddTrueToObject(cJSON_AddObjectToObject(meta, "terp"), "paths");
	cJSON_AddItemToObject(o, "source", lines_json(code));
	cJSON_AddArrayToObject(o, "outputs");
	free(code);
	/* in place of the first code cell (cJSON_InsertItemInArray of
	 * cJSON 1.7.15 refuses an index past the first: moved by hand) */
	rest = cJSON_CreateArray();
	while (cJSON_GetArraySize(w->cells) > w->first_code)
		cJSON_AddItemToArray(rest, cJSON_DetachItemFromArray(w->cells,
		    w->first_code));
	cJSON_AddItemToArray(w->cells, o);
	while (cJSON_GetArraySize(rest) > 0)
		cJSON_AddItemToArray(w->cells, cJSON_DetachItemFromArray(rest, 0));
	cJSON_Delete(rest);
}

/* The notebook's first cell: Jupyter runs the model's code outside
 * terp's sandbox, as the user (SANDBOX.md: what an export is). */
static const char unsandboxed_note[] =
    "**Exported from terp.** The code cells below were written by a language "
    "model and ran in terp's sandbox (no network, no files but the data). "
    "Re-running this notebook in Jupyter runs that code on this machine "
    "**unsandboxed**, with your permissions, your files and your network: "
    "read it before you run it.\n";

/* Puts the note above every other cell. */
static void
add_note_first(struct nbw *w)
{
	cJSON *rest = cJSON_CreateArray(), *c;

	while (cJSON_GetArraySize(w->cells) > 0)
		cJSON_AddItemToArray(rest, cJSON_DetachItemFromArray(w->cells, 0));
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "cell_type", "markdown");
	cJSON_AddStringToObject(c, "id", "terp-unsandboxed");
	cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
	cJSON_AddItemToObject(c, "source", lines_json(unsandboxed_note));
	cJSON_AddItemToArray(w->cells, c);
	while (cJSON_GetArraySize(rest) > 0)
		cJSON_AddItemToArray(w->cells, cJSON_DetachItemFromArray(rest, 0));
	cJSON_Delete(rest);
}

static char *
ipynb_string(const struct notebook *nb, const char *dir)
{
	struct ipynb_walk iw = { .nb = nb };
	struct walker w = { .nb = nb, .emit = ipynb_item, .arg = &iw };
	cJSON *doc = cJSON_CreateObject(), *meta, *ks, *li, *cm, *terp, *u;
	const struct usage *us = notebook_usage(nb);
	struct buf b;
	char *s;

	cJSON_AddNumberToObject(doc, "nbformat", 4);
	cJSON_AddNumberToObject(doc, "nbformat_minor", 5);
	meta = cJSON_AddObjectToObject(doc, "metadata");
	ks = cJSON_AddObjectToObject(meta, "kernelspec");
	cJSON_AddStringToObject(ks, "display_name", "Python 3 (ipykernel)");
	cJSON_AddStringToObject(ks, "language", "python");
	cJSON_AddStringToObject(ks, "name", "python3");
	li = cJSON_AddObjectToObject(meta, "language_info");
	cJSON_AddStringToObject(li, "name", "python");
	cm = cJSON_AddObjectToObject(li, "codemirror_mode");
	cJSON_AddStringToObject(cm, "name", "ipython");
	cJSON_AddNumberToObject(cm, "version", 3);
	cJSON_AddStringToObject(li, "file_extension", ".py");
	cJSON_AddStringToObject(li, "mimetype", "text/x-python");
	cJSON_AddStringToObject(li, "nbconvert_exporter", "python");
	cJSON_AddStringToObject(li, "pygments_lexer", "ipython3");
	terp = cJSON_AddObjectToObject(meta, "terp");
	u = cJSON_AddObjectToObject(terp, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", (double)us->input_tokens);
	cJSON_AddNumberToObject(u, "output_tokens", (double)us->output_tokens);
	cJSON_AddNumberToObject(u, "cached_tokens", (double)us->cached_tokens);
	iw.w.cells = cJSON_AddArrayToObject(doc, "cells");
	iw.w.first_code = -1;
	export_paths_init(&iw.w.paths, nb, dir);
	nums_init(&iw.nums, &w);
	walk(&w);
	nums_free(&iw.nums);
	add_setup(&iw.w);
	add_note_first(&iw.w);
	export_paths_free(&iw.w.paths);
	s = cJSON_Print(doc);
	cJSON_Delete(doc);
	if (s == NULL)
		fatal("out of memory (cJSON)");
	/* as terp's JSON lines: C1, DEL and bidi controls escaped, so that
	 * the file shown on a terminal cannot drive it */
	buf_init(&b, (size_t)-1);
	sanitize_json_inert(&b, s, strlen(s));
	free(s);
	return buf_take(&b);
}

char *
export_ipynb_string(const struct notebook *nb)
{
	char *dir = export_paths_absolute("."), *s = ipynb_string(nb, dir);

	free(dir);
	return s;
}

int
export_ipynb(const struct notebook *nb, const char *path, char **err)
{
	char *abs = export_paths_absolute(path), *slash = strrchr(abs, '/');
	char *dir = slash == abs ? xstrdup("/") : xstrndup(abs, (size_t)(slash - abs));
	char *s = ipynb_string(nb, dir);
	int rc;
	size_t len = strlen(s);

	s = xrealloc(s, len + 2);
	s[len++] = '\n';
	s[len] = '\0';
	rc = write_atomic(path, s, len, err);
	free(s);
	free(abs);
	free(dir);
	return rc;
}

/* ---- markdown ----------------------------------------------------- */

/* Percent-encodes what would end a Markdown link target. */
static void
add_link_target(struct buf *b, const char *p)
{
	for (; *p != '\0'; p++) {
		unsigned char ch = (unsigned char)*p;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("/._-~", ch) != NULL)
			buf_addc(b, (char)ch);
		else
			buf_printf(b, "%%%02X", ch);
	}
}

/* A code fence longer than any backtick run inside text (at least 3):
 * no line of the text can close it, however long its run (CommonMark
 * closes a fence only with a run at least as long as the opening). */
static void
add_fenced(struct buf *b, const char *info, const char *text)
{
	size_t run = 0, longest = 0, n;

	for (const char *p = text; *p != '\0'; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	n = longest < 3 ? 3 : longest + 1;
	for (size_t i = 0; i < n; i++)
		buf_addc(b, '`');
	buf_printf(b, "%s\n%s", info, text);
	if (text[0] != '\0' && text[strlen(text) - 1] != '\n')
		buf_addc(b, '\n');
	for (size_t i = 0; i < n; i++)
		buf_addc(b, '`');
	buf_adds(b, "\n\n");
}

/* Inline text the reader sees as written, whoever chose it (artifact
 * names come from the sandbox): on one line (controls, newlines
 * included, become visible escapes), no HTML (<, >, &, " as entities),
 * and nothing that ends a link text or starts a code span or emphasis
 * (a backslash before \ ` * _ [ ] ( ) ~). */
static void
add_md_text(struct buf *b, const char *s)
{
	char *clean = sanitize_str(s, strlen(s), 0);

	for (const char *p = clean; *p != '\0'; p++) {
		switch (*p) {
		case '<':	buf_adds(b, "&lt;"); break;
		case '>':	buf_adds(b, "&gt;"); break;
		case '&':	buf_adds(b, "&amp;"); break;
		case '"':	buf_adds(b, "&quot;"); break;
		default:
			if (strchr("\\`*_[]()~", *p) != NULL)
				buf_addc(b, '\\');
			buf_addc(b, *p);
		}
	}
	free(clean);
}

struct md_walk {
	struct buf		 b;
	const struct notebook	*nb;
	struct export_nums	 nums;
	char			*dir;	/* absolute folder of the .md */
};

static char *
md_clean(const char *s, size_t len)
{
	return sanitize_str(s, len, SANITIZE_KEEP_NL | SANITIZE_KEEP_TAB |
	    SANITIZE_CR_AS_NL);
}

static void
md_cell(struct md_walk *mw, const struct cell *c)
{
	struct buf *b = &mw->b;
	char *code = md_clean(c->code, strlen(c->code));

	buf_printf(b, "**[%d]** %s%s\n\n", c->n,
	    c->author == CELL_BY_USER ? "run by hand" : "written by the model",
	    c->status == CELL_OK ? "" : c->status == CELL_ERROR ? ", raised an error" :
	    c->status == CELL_TIMEOUT ? ", timed out" :
	    c->status == CELL_INTERRUPTED ? ", interrupted" :
	    c->status == CELL_CRASHED ? ", crashed" : ", not run");
	add_fenced(b, "python", code);
	free(code);
	for (int s = 0; s < 2; s++) {
		size_t len;
		char *raw = cell_output(c, s, &len), *cut, *txt;
		if (len == 0) {
			free(raw);
			continue;
		}
		cut = text_truncate(raw, len, EXPORT_MD_OUTPUT);
		txt = md_clean(cut, strlen(cut));
		buf_adds(b, s ? "stderr:\n\n" : "Output:\n\n");
		add_fenced(b, "text", txt);
		free(raw);
		free(cut);
		free(txt);
	}
	if (c->value != NULL && c->status == CELL_OK) {
		char *cut = text_truncate(c->value, strlen(c->value),
		    EXPORT_MD_OUTPUT);
		char *txt = md_clean(cut, strlen(cut));
		buf_adds(b, "Value:\n\n");
		add_fenced(b, "text", txt);
		free(cut);
		free(txt);
	}
	if (c->status == CELL_ERROR && c->traceback != NULL) {
		char *cut = text_truncate(c->traceback, strlen(c->traceback),
		    EXPORT_MD_OUTPUT);
		char *txt = md_clean(cut, strlen(cut));
		buf_adds(b, "Error:\n\n");
		add_fenced(b, "text", txt);
		free(cut);
		free(txt);
	} else if (c->reason != NULL && c->status != CELL_OK) {
		buf_addc(b, '*');
		add_md_text(b, c->reason);
		buf_adds(b, "*\n\n");
	}
	for (int i = 0; i < notebook_nartifacts(mw->nb); i++) {
		const struct artifact *a = notebook_artifact(mw->nb, i);
		char *abs, *rel;
		if (a->cell != c->n)
			continue;
		abs = export_paths_absolute(a->path);
		rel = export_relpath(mw->dir, abs);
		buf_adds(b, has_suffix(a->name, ".png") ||
		    has_suffix(a->name, ".jpg") || has_suffix(a->name, ".svg") ?
		    "![" : "[");
		add_md_text(b, a->name);
		buf_adds(b, "](");
		add_link_target(b, rel);
		buf_adds(b, ")\n\n");
		free(abs);
		free(rel);
	}
}

static void
md_item(void *arg, enum export_item k, const char *text, const struct cell *c)
{
	struct md_walk *mw = arg;
	char *t;

	if (k == EXPORT_CELL) {
		nums_item(&mw->nums, k, text, c, NULL);
		md_cell(mw, c);
		return;
	}
	t = md_clean(text, strlen(text));
	if (k == EXPORT_REASONING) {
		add_reasoning_note(&mw->b, t);
		buf_addc(&mw->b, '\n');
		free(t);
		return;
	}
	if (k == EXPORT_QUESTION) {
		nums_item(&mw->nums, k, t, c, NULL);
		buf_adds(&mw->b, "## Question\n\n");
		for (char *p = t; *p != '\0'; ) {
			char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			buf_adds(&mw->b, "> ");
			buf_add(&mw->b, p, n);
			buf_addc(&mw->b, '\n');
			p += n + (nl != NULL);
		}
		add_unanswered(&mw->b, mw->nums.w->q);
		buf_addc(&mw->b, '\n');
	} else {
		buf_adds(&mw->b, t);
		buf_adds(&mw->b, "\n");
		nums_item(&mw->nums, k, t, c, &mw->b);
		buf_adds(&mw->b, "\n");
	}
	free(t);
}

int
export_markdown(const struct notebook *nb, const char *path, char **err)
{
	struct md_walk mw = { .nb = nb };
	struct walker w = { .nb = nb, .emit = md_item, .arg = &mw };
	char *abs = export_paths_absolute(path), *slash;
	int rc;

	slash = strrchr(abs, '/');
	mw.dir = slash == abs ? xstrdup("/") : xstrndup(abs, (size_t)(slash - abs));
	free(abs);
	buf_init(&mw.b, (size_t)-1);
	buf_adds(&mw.b, "# terp notebook\n\n");
	nums_init(&mw.nums, &w);
	walk(&w);
	nums_free(&mw.nums);
	rc = write_atomic(path, buf_str(&mw.b), mw.b.len, err);
	buf_free(&mw.b);
	free(mw.dir);
	return rc;
}

/* The artifacts an export cannot embed or link (their file gone, or
 * unreadable): how many, the first one's name and why in *first. Only
 * those journalled where they are (an absolute path): journals of
 * before that recorded a path relative to a folder they did not name,
 * and export as they did (the note in the notebook says why). */
static int
artifacts_missing(const struct notebook *nb, char **first)
{
	int n = 0;

	*first = NULL;
	for (int i = 0; i < notebook_nartifacts(nb); i++) {
		const struct artifact *a = notebook_artifact(nb, i);
		if (a->path[0] != '/' || access(a->path, R_OK) == 0)
			continue;
		if (n++ == 0) {
			char *name = sanitize_str(a->name, strlen(a->name), 0);
			*first = xasprintf("%s (%s: %s)", name, a->path, strerror(errno));
			free(name);
		}
	}
	return n;
}

int
export_file(const struct notebook *nb, const char *path, char **err)
{
	char *first;
	int rc, missing;

	if (has_suffix(path, ".ipynb"))
		rc = export_ipynb(nb, path, err);
	else if (has_suffix(path, ".md") || has_suffix(path, ".markdown"))
		rc = export_markdown(nb, path, err);
	else {
		*err = xasprintf("cannot tell the format of %s: name it .ipynb or .md",
		    path);
		return -1;
	}
	/* written, but not whole: said, and an error for scripts */
	if (rc == 0 && (missing = artifacts_missing(nb, &first)) > 0) {
		*err = xasprintf("wrote %s, but %d artifact%s could not be %s: %s%s",
		    path, missing, missing == 1 ? "" : "s",
		    has_suffix(path, ".ipynb") ? "embedded" : "linked", first,
		    missing > 1 ? " and more" : "");
		free(first);
		rc = -1;
	}
	return rc;
}
