/* jsonout: JSON lines for scripts. Field names are a public interface:
 * later versions add events and fields, never change these. */
#include "terp/jsonout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/answer_trace.h"
#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/kernel.h"
#include "terp/netlog.h"
#include "terp/sanitize.h"
#include "terp/util.h"

struct jsonout {
	FILE	*fp;
	int	 kstate;	/* the last kernel state written, or -1 */
	int	 batch;		/* lines wait in pend for jsonout_flush */
	struct buf pend;	/* no storage between flushes */
};

struct jsonout *
jsonout_new(FILE *fp)
{
	struct jsonout *j = xcalloc(1, sizeof *j);
	j->fp = fp;
	j->kstate = -1;
	buf_init(&j->pend, (size_t)-1 / 2);
	return j;
}

void
jsonout_batch(struct jsonout *j)
{
	j->batch = 1;
}

void
jsonout_flush(void *arg)
{
	struct jsonout *j = arg;

	if (j->pend.len == 0)
		return;
	fwrite(j->pend.data, 1, j->pend.len, j->fp);
	fflush(j->fp);
	buf_free(&j->pend);	/* free() frees the jsonout: nothing kept */
	buf_init(&j->pend, (size_t)-1 / 2);
}

/* One line out: at once, or kept for jsonout_flush. */
static void
emit(struct jsonout *j, const struct buf *line)
{
	if (j->batch) {
		if (buf_add(&j->pend, line->data, line->len) < 0)
			fatal("out of memory (JSON line)");
		return;
	}
	fwrite(line->data, 1, line->len, j->fp);
	fflush(j->fp);
}

/* Whether a kernel event is news to a script: a change of state, a
 * restart, a lost state, or a start's progress ("uploading ... 2 MB of
 * 3 MB"). Not the running state around every cell (the cell and result
 * events say that), nor the state it goes back to after one. */
static int
kernel_news(struct jsonout *j, const struct event *ev)
{
	if (ev->kstate == KERNEL_BUSY && !ev->restarted && !ev->state_lost)
		return 0;
	if ((int)ev->kstate == j->kstate && ev->kstate != KERNEL_STARTING &&
	    !ev->restarted && !ev->state_lost)
		return 0;
	j->kstate = (int)ev->kstate;
	return 1;
}

/* JSON strings must be valid UTF-8; C0 controls are escaped by cJSON
 * itself, DEL, C1 and bidi controls by put(). */
static void
add_text(cJSON *o, const char *key, const char *s, size_t len)
{
	char *clean = sanitize_str(s ? s : "", s ? len : 0, SANITIZE_UTF8_ONLY);
	cJSON_AddStringToObject(o, key, clean);
	free(clean);
}

static void
add_str(cJSON *o, const char *key, const char *s)
{
	add_text(o, key, s, s ? strlen(s) : 0);
}

/* Prints one line. cJSON writes U+0080-U+009F (C1: U+009D starts an
 * OSC on many terminals), DEL and the bidi controls raw; a line shown on
 * a terminal must not drive it, so they go out as \uXXXX escapes. */
/* Whether the n bytes at p are all below DEL: nothing there for
 * sanitize_json_inert to change (no DEL, no C1 or bidi control, no
 * UTF-8 to check). Eight bytes at a time: a byte >= 0x7F sets its top
 * bit in itself or in itself plus one (a carry out of a 0xFF byte
 * only flags a word that has one already). */
static int
below_del(const char *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101u, tops = 0x8080808080808080u;
	size_t i = 0;
	uint64_t w;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		if ((w | (w + ones)) & tops)
			return 0;
	}
	for (; i < n; i++)
		if ((unsigned char)p[i] >= 0x7F)
			return 0;
	return 1;
}

static void
put(struct jsonout *j, cJSON *o)
{
	struct buf t, b;

	buf_init(&t, (size_t)-1 / 2);
	buf_init(&b, (size_t)-1 / 2);
	if (json_text(&t, o) < 0)
		fatal("out of memory (JSON line)");
	if (below_del(t.data, t.len)) {
		/* the common case: the line as printed */
		if (buf_addc(&t, '\n') < 0)
			fatal("out of memory (JSON line)");
		emit(j, &t);
	} else {
		if (sanitize_json_inert(&b, t.data, t.len) < 0 || buf_addc(&b, '\n') < 0)
			fatal("out of memory (JSON line)");
		emit(j, &b);
	}
	buf_free(&b);
	buf_free(&t);
	cJSON_Delete(o);
}

static cJSON *
obj(const char *type)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", type);
	return o;
}

static void
stream_event(struct jsonout *j, const struct event *ev)
{
	int s = ev->type == EV_STDERR;
	size_t n = ev->len;
	cJSON *o;

	if (ev->cell != NULL)
		n = outcap_head_part(&ev->cell->out[s], ev->len);
	if (n == 0)
		return;
	o = obj(s ? "stderr" : "stdout");
	cJSON_AddNumberToObject(o, "cell", ev->cell ? ev->cell->n : 0);
	add_text(o, "text", ev->text, n);
	put(j, o);
}

static void
result_event(struct jsonout *j, const struct cell *c)
{
	cJSON *o;

	/* What the head could not hold: marker and tail, before the result. */
	for (int s = 0; s < 2; s++) {
		size_t len;
		char *rest = outcap_rest(&c->out[s], &len);
		if (rest == NULL)
			continue;
		o = obj(s ? "stderr" : "stdout");
		cJSON_AddNumberToObject(o, "cell", c->n);
		add_text(o, "text", rest, len);
		put(j, o);
		free(rest);
	}
	o = obj("result");
	cJSON_AddNumberToObject(o, "cell", c->n);
	cJSON_AddStringToObject(o, "status", cell_status_name(c->status));
	cJSON_AddNumberToObject(o, "duration_ms", (double)c->duration_ms);
	cJSON_AddNumberToObject(o, "duration_us", (double)c->duration_us);
	if (c->value)
		add_str(o, "value", c->value);
	else
		cJSON_AddNullToObject(o, "value");
	if (c->ename) {
		cJSON *e = cJSON_CreateObject();
		add_str(e, "ename", c->ename);
		add_str(e, "evalue", c->evalue);
		add_str(e, "traceback", c->traceback);
		cJSON_AddItemToObject(o, "error", e);
	}
	if (c->reason)
		add_str(o, "reason", c->reason);
	if (c->state_lost)
		cJSON_AddBoolToObject(o, "state_lost", 1);
	cJSON_AddStringToObject(o, "author", c->author == CELL_BY_USER ? "user" : "model");
	for (int s = 0; s < 2; s++) {
		uint64_t dropped = outcap_dropped(&c->out[s]);
		if (dropped)
			cJSON_AddNumberToObject(o, s ? "stderr_dropped" : "stdout_dropped",
			    (double)dropped);
	}
	put(j, o);
}

void
jsonout_event(void *arg, const struct event *ev)
{
	struct jsonout *j = arg;
	cJSON *o = NULL;

	switch (ev->type) {
	case EV_SESSION:
		o = obj("session");
		add_str(o, "id", ev->text);
		add_str(o, "workspace", ev->name);
		add_str(o, "sandbox", ev->where);
		if (ev->isolation)
			add_str(o, "isolation", ev->isolation);
		break;
	case EV_KERNEL:
		if (!kernel_news(j, ev))
			return;
		o = obj("kernel");
		cJSON_AddStringToObject(o, "state", kernel_state_name(ev->kstate));
		add_str(o, "message", ev->text);
		/* the facts a script tests, not the message's words */
		if (ev->restarted)
			cJSON_AddTrueToObject(o, "restarted");
		if (ev->state_lost)
			cJSON_AddTrueToObject(o, "state_lost");
		break;
	case EV_CELL_START:
		o = obj("cell");
		cJSON_AddNumberToObject(o, "cell", ev->cell->n);
		cJSON_AddStringToObject(o, "author",
		    ev->cell->author == CELL_BY_USER ? "user" : "model");
		add_str(o, "code", ev->cell->code);
		break;
	case EV_STDOUT:
	case EV_STDERR:
		stream_event(j, ev);
		return;
	case EV_RESULT:
		result_event(j, ev->cell);
		return;
	case EV_ARTIFACT:
		o = obj("artifact");
		cJSON_AddNumberToObject(o, "cell", ev->artifact->cell);
		add_str(o, "name", ev->artifact->name);
		add_str(o, "path", ev->artifact->path);
		cJSON_AddNumberToObject(o, "bytes", (double)ev->artifact->bytes);
		break;
	case EV_QUESTION:
		o = obj("question");
		add_str(o, "text", ev->text);
		break;
	case EV_TURN:
		o = obj("turn");
		cJSON_AddNumberToObject(o, "n", ev->n);
		break;
	case EV_TEXT:
		o = obj("text");
		add_text(o, "delta", ev->text, ev->len);
		break;
	case EV_REASONING:
		o = obj("reasoning");
		add_text(o, "delta", ev->text, ev->len);
		break;
	case EV_TOOL_CALL:
		o = obj("tool_call");
		add_str(o, "id", ev->id);
		add_str(o, "name", ev->name);
		add_text(o, "code", ev->text, ev->len);
		break;
	case EV_USAGE:
		o = obj("usage");
		cJSON_AddNumberToObject(o, "input_tokens", (double)ev->usage->input_tokens);
		cJSON_AddNumberToObject(o, "output_tokens", (double)ev->usage->output_tokens);
		cJSON_AddNumberToObject(o, "cached_tokens", (double)ev->usage->cached_tokens);
		/* part of output_tokens, shown apart when the API counts it */
		if (ev->usage->reasoning_tokens > 0)
			cJSON_AddNumberToObject(o, "reasoning_tokens",
			    (double)ev->usage->reasoning_tokens);
		if (ev->total) {
			cJSON_AddNumberToObject(o, "total_input_tokens", (double)ev->total->input_tokens);
			cJSON_AddNumberToObject(o, "total_output_tokens", (double)ev->total->output_tokens);
		}
		if (ev->usage->priced)	/* dollars (cost.h) */
			cJSON_AddNumberToObject(o, "cost", ev->usage->cost);
		if (ev->total && ev->total->priced)
			cJSON_AddNumberToObject(o, "total_cost", ev->total->cost);
		break;
	case EV_ANSWER:
		o = obj("answer");
		add_str(o, "text", ev->text);
		if (ev->trace)
			cJSON_AddItemToObject(o, "numbers", answer_trace_json(ev->trace));
		break;
	case EV_ERROR:
		o = obj("error");
		add_str(o, "message", ev->text);
		cJSON_AddStringToObject(o, "kind", event_error_name(ev));
		if (ev->http_status > 0)
			cJSON_AddNumberToObject(o, "status", ev->http_status);
		else
			cJSON_AddNullToObject(o, "status");
		break;
	case EV_NOTICE:
		o = obj("notice");
		add_str(o, "message", ev->text);
		break;
	case EV_REQUEST:
		o = obj("request");
		add_str(o, "what", ev->text);
		cJSON_AddNumberToObject(o, "bytes", (double)ev->len);
		break;
	case EV_NET:
		if (ev->net == NULL || ev->net->open)
			return;	/* one event per attempt, when it ends */
		o = obj("net");
		netlog_json_add(o, ev->net);
		break;
	case EV_PACKAGE:
		o = obj("installed");
		if (ev->cell)
			cJSON_AddNumberToObject(o, "cell", ev->cell->n);
		add_str(o, "name", ev->name);
		add_str(o, "version", ev->text);
		break;
	case EV_IDLE:
	case EV_CODE:	/* the call comes whole as tool_call */
	case EV_APPROVE:	/* never headless (-p refuses --ask) */
	case EV_INPUT:	/* never headless (the cell is refused) */
		return;
	}
	if (o)
		put(j, o);
}
