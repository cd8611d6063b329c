/* agent: the turn loop. A question becomes a user message; each turn
 * asks the model, runs the python_exec calls of its reply in order as
 * cells, answers each call with a bounded result, and asks again, until
 * the model replies with text alone (the answer) or the turn cap is
 * reached. Kernel and model callbacks land here and leave as notebook
 * updates plus events for whichever frontend listens. */
#include "terp/agent.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/cost.h"
#include "terp/context.h"
#include "terp/ledger.h"
#include "terp/llm.h"
#include "terp/llm_cache.h"
#include "terp/netlog.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#include "agentfiles.h"
#include "cellout.h"
#include "prompt.h"
#include "textcall.h"

/* The bytes of an unknown tool's name repeated to the model and shown. */
#define TOOL_NAME_SHOWN	100

struct agent {
	struct prompt_files	 files;		/* the system prompt's data files */
	struct loop		*loop;
	struct notebook		*nb;
	struct kernel_opts	 kopts;		/* our copy: we stage the files */
	struct kernel_own_file	*own;		/* kopts.own_files (owned; names
						 * borrowed from nb) */
	struct kernel		*k;
	struct llm		*llm;
	struct agent_opts	 o;
	event_fn		 emit;
	void			*arg;

	/* the question in progress */
	int			 asking;
	int			 turn;
	int			 cancelled;
	const char		*stop_msg;	/* why, when not the user (borrowed) */
	struct buf		 text;		/* the reply being streamed */
	cJSON			*calls;		/* its tool calls */
	cJSON			*reasoning;	/* its reasoning items, as they came */
	struct buf		 rtext;		/* its reasoning text, as streamed */
	int			 next_call;
	int			 cell_running;	/* the model's cell, or 0 */
	int			 hand_running;	/* cells run by hand in flight */
	int			 hand_from;	/* prompt_hand_cells' start */
	struct buf		 notes;		/* things to tell the model next */
	int			 failed;
	struct usage		 last_usage;	/* the last model call's, priced */
	struct context		*cx;		/* the window; NULL without a model */
	int			 ctx_retried;	/* this turn's request was refused */
	int			 waiting_python;	/* agent_wait_python */
	/* the running cell's output on its way to the notebook and the
	 * frontends */
	struct cellout		 out;
	/* --ask: each model cell waits for agent_approve (EV_APPROVE) */
	int			 ask;
	char			*wait_id, *wait_code;	/* the call waiting */
	int			 edited_cell;	/* ran the user's version, or 0 */
	int			 kept_upto;	/* requests after the last body kept
						 * from the llm (0: none) */
};

static void agent_next_call(struct agent *a);
static void agent_turn(struct agent *a);
static void agent_send(struct agent *a, int force);
static void agent_session_dead(struct agent *a, const char *msg);

void
agent_opts_default(struct agent_opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_turns = 20;
	o->tool_output_limit = 4096;
}

static void
emit(struct agent *a, struct event *ev)
{
	if (a->emit)
		a->emit(a->arg, ev);
}

static void
emit_text(struct agent *a, enum event_type t, const char *text)
{
	struct event ev = { .type = t, .text = text, .len = text ? strlen(text) : 0 };
	emit(a, &ev);
}

static void
maybe_idle(struct agent *a)
{
	if (!a->asking && a->hand_running == 0) {
		struct event ev = { .type = EV_IDLE };
		emit(a, &ev);
	}
}

/* ------------------------------------------------------------ kernel side */

/* Raw output: coalesced (cellout.h). */
static void
on_output(void *arg, int n, int stream, const char *p, size_t len)
{
	struct agent *a = arg;

	cellout_add(&a->out, n, stream, p, len);
}

/* The cell asks for a line: what it printed before goes first. */
static void
on_input(void *arg, int n, const char *prompt, int password)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_INPUT, .cell = notebook_cell(a->nb, n),
	    .text = prompt, .len = strlen(prompt), .n = password != 0 };

	cellout_flush(&a->out, n, 0);
	emit(a, &ev);
}

int
agent_input_reply(struct agent *a, int cell, const char *line)
{
	return kernel_input_reply(a->k, cell, line);
}

static void
on_artifact(void *arg, int n, const char *name, const char *path, uint64_t bytes)
{
	struct agent *a = arg;
	const struct artifact *art = notebook_add_artifact(a->nb, n, name, path, bytes);
	struct event ev = { .type = EV_ARTIFACT, .cell = notebook_cell(a->nb, n),
	    .artifact = art };

	emit(a, &ev);
}

/* An egress ledger report: kept in the notebook, shown by whoever
 * listens. The cell is the kernel's attribution (the running one). */
static void
on_net(void *arg, int n, const struct egress_event *e)
{
	struct agent *a = arg;
	struct net_attempt na;
	const struct net_attempt *kept;

	ledger_from_egress(&na, n, e);
	if ((kept = notebook_add_net(a->nb, &na)) != NULL) {
		struct event ev = { .type = EV_NET, .cell = notebook_cell(a->nb, n),
		    .net = kept };
		emit(a, &ev);
	}
}

/* A package a cell installed: kept in the notebook (its journal), so
 * that a resume's replay can install it again first. */
static void
on_installed(void *arg, int n, const char *name, const char *version)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_PACKAGE, .cell = notebook_cell(a->nb, n),
	    .name = name, .text = version, .len = strlen(version) };

	notebook_add_package(a->nb, n, name, version);
	emit(a, &ev);
}

static void
on_state(void *arg, const struct kernel_status *st)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_KERNEL, .kstate = st->state,
	    .restarted = st->restarted, .state_lost = st->state_lost,
	    .text = st->msg, .len = st->msg ? strlen(st->msg) : 0 };

	if (st->restarted) {
		/* The model must know its variables are gone (a restart the
		 * user asked for is told by agent_restart). */
		const char *files = kernel_files_note(a->k);
		buf_printf(&a->notes, "Note: %s. All variables and imports are gone%s%s.\n",
		    st->msg, files ? "; " : "", files ? files : "");
	}
	emit(a, &ev);
	if (a->waiting_python && st->state != KERNEL_STARTING) {
		a->waiting_python = 0;
		if (a->asking && st->state != KERNEL_DEAD)
			agent_turn(a);
	}
	if (st->state == KERNEL_DEAD && a->asking)
		agent_session_dead(a, st->msg);
}

static void
add_tool_message(struct agent *a, const char *id, const char *content, int is_error)
{
	notebook_add_tool_result(a->nb, id, content, is_error);
}

static void
on_result(void *arg, int n, const struct kernel_result *r)
{
	struct agent *a = arg;
	struct cell *c = notebook_cell(a->nb, n);
	struct event ev = { .type = EV_RESULT, .cell = c };
	struct cell_result cr = {
		.status = r->status, .duration_ms = r->duration_ms,
		.duration_us = r->duration_us, .value = r->value,
		.value_wide = r->value_wide,
		.ename = r->ename, .evalue = r->evalue,
		.traceback = r->traceback, .reason = r->reason,
		.state_lost = r->state_lost,
	};

	cellout_flush(&a->out, n, 1);
	if (c == NULL)
		return;
	notebook_cell_result(a->nb, n, &cr);
	emit(a, &ev);

	if (a->asking && n == a->cell_running) {
		char *text = prompt_cell_result(a->nb, c, a->o.tool_output_limit);
		if (a->edited_cell == n) {
			/* the model must know its code is not what ran */
			size_t cl = strlen(c->code), cap = cl > 4096 ?
			    utf8_complete_prefix(c->code, 4096) : cl;
			char *t2 = xasprintf("The user edited your code before running it; "
			    "this ran instead:\n%.*s%s\n%s", (int)cap, c->code,
			    cap < cl ? "\n[... cut]" : "", text);
			free(text);
			text = t2;
			a->edited_cell = 0;
		}
		add_tool_message(a, c->tool_call_id, text, c->status != CELL_OK);
		c->told_model = 1;
		free(text);
		a->cell_running = 0;
		agent_next_call(a);
		return;
	}
	if (c->author == CELL_BY_USER && a->hand_running > 0) {
		a->hand_running--;
		maybe_idle(a);
	}
}

/* ------------------------------------------------------------ model side */

static void
m_text(void *arg, const char *delta, size_t len)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_TEXT, .text = delta, .len = len };
	int added = buf_add(&a->text, delta, len);

	/* the buffer holds LLM_REPLY_TEXT_MAX, which llm never passes: what
	 * the frontends show is what the conversation keeps */
	assert(added == 0);
	(void)added;
	emit(a, &ev);
}

static void
m_reasoning(void *arg, const char *delta, size_t len)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_REASONING, .text = delta, .len = len };

	(void)buf_add(&a->rtext, delta, len);	/* llm bounds it */
	emit(a, &ev);
}

/* The code of a call the model is still writing: shown, never kept
 * (the call comes whole to m_tool_call). */
static void
m_tool_code(void *arg, int call, const char *code, size_t len)
{
	struct event ev = { .type = EV_CODE, .text = code, .len = len, .n = call };

	emit(arg, &ev);
}

/* A reasoning item the provider wants back: kept as it came. */
static void
m_reasoning_item(void *arg, const char *json)
{
	struct agent *a = arg;
	cJSON *it = cJSON_Parse(json);

	if (cJSON_IsObject(it))
		cJSON_AddItemToArray(a->reasoning, it);
	else
		cJSON_Delete(it);
}

static void
m_tool_call(void *arg, const char *id, const char *name, const char *args)
{
	struct agent *a = arg;
	cJSON *c = cJSON_CreateObject();
	char idbuf[48];

	if (id == NULL || *id == '\0') {
		/* Some local servers send no id: make one up, stable per turn. */
		snprintf(idbuf, sizeof idbuf, "call_terp_%d_%d", a->turn,
		    cJSON_GetArraySize(a->calls));
		id = idbuf;
	}
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "name", name ? name : "");
	cJSON_AddStringToObject(c, "arguments", args ? args : "");
	cJSON_AddItemToArray(a->calls, c);
}

static void
m_usage(void *arg, const struct usage *u)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_USAGE, .usage = &a->last_usage };

	a->last_usage = *u;
	cost_price_usage(a->o.prices, llm_model(a->llm), &a->last_usage);
	notebook_add_usage(a->nb, &a->last_usage);
	ev.total = notebook_usage(a->nb);
	emit(a, &ev);
}

static void
m_sent(void *arg, const char *what, const char *body, size_t len)
{
	struct agent *a = arg;
	struct event ev = { .type = EV_REQUEST, .text = what, .len = len };
	size_t shared;
	uint64_t tag, back;
	char *kept = llm_sent_body_take(a->llm, &shared, &tag), *spare;

	/* The body itself, not a copy (1 MB at 3,000 questions): the
	 * notebook keeps it for NOTEBOOK_SENT_KEEP requests, well past the
	 * end of this one; the one it lets go is the next body's storage.
	 * What it shares with the llm's last body the journal's delta need
	 * not compare, if that is the notebook's newest (kept_upto). */
	assert(kept == NULL || kept == body);
	if (kept != NULL) {
		if (a->kept_upto == 0 || a->kept_upto != notebook_nsent(a->nb))
			shared = 0;
		spare = notebook_add_sent_tagged(a->nb, what, kept, len, shared,
		    tag, &back);
		a->kept_upto = notebook_nsent(a->nb);
		llm_cache_body_give_tagged(spare, back);
	} else {
		notebook_add_sent(a->nb, what, body, len);
	}
	emit(a, &ev);
}

static void
m_notice(void *arg, const char *msg)
{
	emit_text(arg, EV_NOTICE, msg);
}

static void
finish_question(struct agent *a)
{
	/* a question ends once: llm_cancel is silent, the kernel reports
	 * each result once */
	assert(a->asking);
	a->asking = 0;
	maybe_idle(a);
}

/* Ends the question with an error; e is the model's when it failed. */
static void
fail_question_as(struct agent *a, const char *msg, enum error_kind kind,
    const struct llm_error *e)
{
	struct event ev = { .type = EV_ERROR, .text = msg, .len = strlen(msg),
	    .error = kind };

	if (e != NULL) {
		ev.llm_err = e->kind;
		ev.http_status = e->http_status;
	}
	notebook_question_unanswered(a->nb, msg);	/* for an export */
	emit(a, &ev);
	finish_question(a);
}

static void
fail_question(struct agent *a, const char *msg, enum error_kind kind)
{
	fail_question_as(a, msg, kind, NULL);
}

static void
m_done(void *arg, const char *stop_reason)
{
	struct agent *a = arg;
	int ncalls = cJSON_GetArraySize(a->calls);
	char *fallback = NULL;

	assert(a->asking);	/* the model answers only a question */
	if (ncalls == 0 && a->text.len > 0 && (fallback = textcall_code(a->text.data,
	    llm_provider(a->llm) != NULL &&
	    strcmp(llm_provider(a->llm), "ollama") == 0))) {
		cJSON *c = cJSON_CreateObject(), *args = cJSON_CreateObject();
		char id[32], *s;
		snprintf(id, sizeof id, "call_terp_text_%d", a->turn);
		cJSON_AddStringToObject(args, "code", fallback);
		s = cJSON_PrintUnformatted(args);
		cJSON_AddStringToObject(c, "id", id);
		cJSON_AddStringToObject(c, "name", "python_exec");
		cJSON_AddStringToObject(c, "arguments", s);
		cJSON_AddItemToArray(a->calls, c);
		free(s);
		cJSON_Delete(args);
		free(fallback);
		ncalls = 1;
		emit_text(a, EV_NOTICE, "the model wrote its code as text instead of calling "
		    "python_exec; terp runs it as a cell");
	}
	if (ncalls == 0 && buf_str(&a->text)[strspn(buf_str(&a->text), " \t\r\n")] == '\0') {
		/* An empty answer is no answer: a script reading stdout must
		 * not take it for success. Nothing is added to the
		 * conversation (Anthropic rejects empty assistant turns). */
		char *s = xasprintf("the model's reply was empty (stop reason: %s)",
		    stop_reason && *stop_reason ? stop_reason : "none");
		fail_question(a, s, ERROR_EMPTY_REPLY);
		free(s);
		return;
	}
	if (stop_reason && (strcmp(stop_reason, "length") == 0 ||
	    strcmp(stop_reason, "max_tokens") == 0))
		emit_text(a, EV_NOTICE, "the model's reply reached its output token limit "
		    "and may be cut short");
	/* A local model's reasoning has no item of its own: kept as text,
	 * to show and export, never sent back. */
	if (cJSON_GetArraySize(a->reasoning) == 0 && a->rtext.len > 0) {
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "type", "text");
		cJSON_AddStringToObject(it, "text", buf_str(&a->rtext));
		cJSON_AddItemToArray(a->reasoning, it);
	}
	notebook_add_reply_reasoning(a->nb, buf_str(&a->text), a->calls,
	    a->reasoning);
	a->calls = cJSON_CreateArray();
	a->reasoning = cJSON_CreateArray();

	if (ncalls == 0) {
		char *answer = buf_take(&a->text);
		emit_text(a, EV_ANSWER, answer);
		free(answer);
		finish_question(a);
		return;
	}
	a->next_call = 0;
	agent_next_call(a);
}

/* A reply cut short (an error, a cancel): what the user already saw
 * stays in the conversation, so the model knows what it said. */
static void
keep_partial_reply(struct agent *a)
{
	if (a->text.len == 0)
		return;
	notebook_add_reply(a->nb, buf_str(&a->text), NULL);
	buf_reset(&a->text);
}

static void
m_error(void *arg, const struct llm_error *e)
{
	struct agent *a = arg;

	assert(a->asking);
	if (e->kind == LLM_ERR_CONTEXT && a->cx != NULL) {
		/* Too long for the server: compact once and ask again, then
		 * say so plainly. */
		if (!a->ctx_retried && a->text.len == 0 &&
		    cJSON_GetArraySize(a->calls) == 0) {
			a->ctx_retried = 1;
			context_refused(a->cx, e->msg);
			emit_text(a, EV_NOTICE, "the model's server refused the request as "
			    "too long for its context window; terp compacts the conversation "
			    "and asks again");
			agent_send(a, 2);
			return;
		}
		keep_partial_reply(a);
		{
			char *msg = xasprintf("the conversation does not fit the model's "
			    "context window (%ld tokens, %s) even after compacting: %s",
			    context_window(a->cx), context_window_source(a->cx), e->msg);
			fail_question_as(a, msg, ERROR_MODEL, e);
			free(msg);
		}
		return;
	}
	keep_partial_reply(a);
	fail_question_as(a, e->msg, ERROR_MODEL, e);
}

static const struct llm_cbs agent_llm_cbs = {
	.text = m_text, .tool_call = m_tool_call, .usage = m_usage,
	.reasoning = m_reasoning, .reasoning_item = m_reasoning_item,
	.tool_code = m_tool_code, .sent = m_sent, .notice = m_notice, .done = m_done, .error = m_error,
};

/* The last assistant message's tool calls. */
static cJSON *
last_calls(struct agent *a)
{
	cJSON *msgs = notebook_messages(a->nb);
	cJSON *m;

	for (m = msgs->child ? msgs->child->prev : NULL; m; m = (m == msgs->child ? NULL : m->prev)) {
		const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(m, "role"));
		if (role && strcmp(role, "assistant") == 0)
			return cJSON_GetObjectItem(m, "tool_calls");
	}
	return NULL;
}

/* A reply's calls past this many are answered "not run" (they are
 * decoded up to LLM_DEC_SLOTS): the model learns why and can ask again
 * with fewer, where a failed question told it nothing. */
#define CALLS_PER_REPLY	64

/* Answers call i of n (>= CALLS_PER_REPLY) without running it. */
static void
call_over_cap(struct agent *a, const char *id, int i, int n)
{
	char *msg;

	if (i == CALLS_PER_REPLY) {
		msg = xasprintf("the model made %d tool calls in one reply; terp "
		    "runs at most %d: the other %d were not run (the model is "
		    "told)", n, CALLS_PER_REPLY, n - CALLS_PER_REPLY);
		emit_text(a, EV_NOTICE, msg);
		free(msg);
	}
	msg = xasprintf("error: not run: at most %d tool calls of one reply are "
	    "run, and this reply had %d; calls 1 to %d ran. Call again for the "
	    "rest, fewer at a time (one cell can do the work of several)",
	    CALLS_PER_REPLY, n, CALLS_PER_REPLY);
	add_tool_message(a, id, msg, 1);
	free(msg);
}

/* Starts the model's call id as a new cell running code (edited: the
 * user's version of it). on_result goes on. */
static void
run_model_cell(struct agent *a, const char *id, const char *code, int edited)
{
	struct cell *cell = notebook_add_cell(a->nb, CELL_BY_MODEL, code, id);
	struct event ce = { .type = EV_CELL_START, .cell = cell };
	char *err = NULL;

	cell->started_ms = now_ms();
	a->edited_cell = edited ? cell->n : 0;
	emit(a, &ce);
	kernel_set_input(a->k, a->o.input_model);
	a->cell_running = cell->n;
	if (kernel_run(a->k, cell->n, cell->code, &err) < 0) {
		struct kernel_result r = { .status = CELL_CRASHED, .reason = err };
		on_result(a, cell->n, &r);
		free(err);
	}
}

/* The waiting call is answered without running (why: the tool result). */
static void
wait_drop(struct agent *a, const char *why)
{
	add_tool_message(a, a->wait_id, why, 1);
	free(a->wait_id);
	free(a->wait_code);
	a->wait_id = a->wait_code = NULL;
}

/* Runs the next tool call of the reply, or asks the model again. */
static void
agent_next_call(struct agent *a)
{
	cJSON *calls = last_calls(a);
	int n = cJSON_GetArraySize(calls);

	/* the model's calls run one at a time, within its question */
	assert(a->asking && a->cell_running == 0);
	while (a->next_call < n) {
		cJSON *c = cJSON_GetArrayItem(calls, a->next_call++);
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
		const char *args = cJSON_GetStringValue(cJSON_GetObjectItem(c, "arguments"));
		cJSON *j;
		const char *code;
		char *msg;
		struct event ev = { .type = EV_TOOL_CALL, .id = id, .name = name };

		if (a->cancelled) {
			if (a->stop_msg) {
				msg = xasprintf("not run: %s", a->stop_msg);
				add_tool_message(a, id, msg, 1);
				free(msg);
			} else
				add_tool_message(a, id, "cancelled by the user before it ran", 1);
			continue;
		}
		if (a->next_call > CALLS_PER_REPLY) {
			call_over_cap(a, id, a->next_call - 1, n);
			continue;
		}
		if (strcmp(name, "python_exec") != 0) {
			/* the name as the model sent it, capped: a 100,000-byte
			 * one is not echoed whole to the terminal and back */
			size_t nl = strlen(name), cap = nl > TOOL_NAME_SHOWN ?
			    utf8_complete_prefix(name, TOOL_NAME_SHOWN) : nl;
			msg = xasprintf("error: unknown tool \"%.*s%s\"; the only tool is python_exec "
			    "with one argument, code (a string of Python)", (int)cap, name,
			    cap < nl ? "…" : "");
			ev.text = args;
			ev.len = strlen(args);
			emit(a, &ev);
			add_tool_message(a, id, msg, 1);
			emit_text(a, EV_NOTICE, msg);
			free(msg);
			continue;
		}
		j = cJSON_Parse(*args ? args : "{}");
		code = j ? cJSON_GetStringValue(cJSON_GetObjectItem(j, "code")) : NULL;
		ev.text = code ? code : args;
		ev.len = strlen(ev.text);
		emit(a, &ev);
		if (j == NULL || code == NULL) {
			msg = j == NULL ?
			    xstrdup("error: the arguments were not valid JSON; call python_exec "
				"with {\"code\": \"<python>\"}") :
			    xstrdup("error: missing the required string argument \"code\"");
			add_tool_message(a, id, msg, 1);
			emit_text(a, EV_NOTICE, msg);
			free(msg);
			cJSON_Delete(j);
			continue;
		}
		if (a->ask) {
			/* the user looks first: agent_approve goes on */
			struct event ae = { .type = EV_APPROVE };
			a->wait_id = xstrdup(id);
			a->wait_code = xstrdup(code);
			cJSON_Delete(j);
			ae.id = a->wait_id;
			ae.text = a->wait_code;
			ae.len = strlen(a->wait_code);
			emit(a, &ae);
			return;
		}
		run_model_cell(a, id, code, 0);
		cJSON_Delete(j);
		return;	/* on_result continues */
	}
	if (a->cancelled) {
		if (a->stop_msg)
			fail_question(a, a->stop_msg, ERROR_SANDBOX);
		else
			fail_question(a, "interrupted by the user", ERROR_CANCELLED);
		return;
	}
	agent_turn(a);
}

/* The session died for good (only a restart by the user revives it). A
 * cell queued before the death never gets a result from the kernel, and
 * more turns cannot help the model, so the question ends here; every
 * call of the reply is still answered, which keeps the conversation
 * valid for the next question. */
static void
agent_session_dead(struct agent *a, const char *msg)
{
	char *why = xasprintf("the question was stopped: %s",
	    msg && *msg ? msg : "the Python session is not running");

	if (a->wait_id != NULL) {
		char *m = xasprintf("not run: %s", why);
		wait_drop(a, m);
		free(m);
		a->cancelled = 1;
		a->stop_msg = why;
		agent_next_call(a);	/* answers the rest, ends */
		a->stop_msg = NULL;
	} else if (a->llm && llm_busy(a->llm)) {
		llm_cancel(a->llm);
		keep_partial_reply(a);
		fail_question(a, why, ERROR_SANDBOX);
	} else if (a->cell_running != 0) {
		struct kernel_result r = { .status = CELL_CRASHED, .reason = msg };
		a->cancelled = 1;
		a->stop_msg = why;
		on_result(a, a->cell_running, &r);	/* answers the calls, ends */
		a->stop_msg = NULL;
	} else {
		fail_question(a, why, ERROR_SANDBOX);
	}
	free(why);
}

/* The system prompt: the user's (--system-prompt) or the built-in one. */
static char *
system_prompt(struct agent *a)
{
	if (a->o.system_prompt)
		return xstrdup(a->o.system_prompt);
	return prompt_system(&a->files, a->nb, a->k, a->kopts.allow_hosts);
}

/* The compaction's summary call is over: the request goes out. */
static void
ctx_ready(void *arg, const char *err)
{
	struct agent *a = arg;

	if (a->cancelled) {
		/* Ctrl-C while waiting on the local server's context size */
		fail_question(a, a->stop_msg ? a->stop_msg : "cancelled by the user",
		    ERROR_CANCELLED);
		return;
	}
	if (err != NULL) {
		char *msg = xasprintf("could not compact the conversation to fit the "
		    "model's context window: %s", err);
		fail_question(a, msg, ERROR_MODEL);
		free(msg);
		return;
	}
	agent_send(a, -1);
}

/* Asks the model, after making the conversation fit its window (force
 * as context_prepare's; -1: it was just made to fit). */
static void
agent_send(struct agent *a, int force)
{
	char *sys = system_prompt(a), *err = NULL;
	int r = 0;
	const cJSON *msgs = notebook_messages(a->nb);

	/* a request asked again must not keep a failed one's items */
	cJSON_Delete(a->reasoning);
	a->reasoning = cJSON_CreateArray();
	buf_reset(&a->rtext);
	if (a->cx != NULL && force >= 0)
		r = context_prepare(a->cx, sys, force, ctx_ready, a, &err);
	if (r == 0 && a->cx != NULL)
		msgs = context_messages(a->cx, sys);
	if (r == 0)	/* what was sent last time is not compared again */
		llm_vouch(a->llm, a->cx != NULL ? context_stamp(a->cx) :
		    notebook_gen(a->nb));
	if (r == 0 && llm_request(a->llm, sys, msgs, &agent_llm_cbs, a, &err) == 0) {
		free(sys);
		return;
	}
	free(sys);
	if (r == 1)
		return;		/* ctx_ready goes on */
	fail_question(a, err, ERROR_USAGE);
	free(err);
}

/* The first request of a session waits for the sandbox's word on its
 * Python (its "ready"), unless the probe's cache already answered: a
 * model told the wrong packages writes code that fails. Only a new or
 * changed interpreter pays this, once; on_state resumes the turn. */
static int
agent_wait_python(struct agent *a)
{
	if (a->o.system_prompt != NULL || kernel_python_info(a->k) != NULL ||
	    kernel_state(a->k) != KERNEL_STARTING)
		return 0;
	a->waiting_python = 1;
	return 1;
}

static void
agent_turn(struct agent *a)
{
	char *why;

	assert(a->asking);
	if (a->turn >= a->o.max_turns) {
		char *msg = xasprintf("stopped after %d model calls (--max-turns) without a final answer",
		    a->o.max_turns);
		fail_question(a, msg, ERROR_TURN_CAP);
		free(msg);
		return;
	}
	/* --max-cost: before the call, with the last call as its estimate */
	if ((why = cost_over_budget(a->o.prices, llm_model(a->llm), a->o.max_cost,
	    notebook_usage(a->nb), &a->last_usage)) != NULL) {
		fail_question(a, why, ERROR_MAX_COST);
		free(why);
		return;
	}
	if (agent_wait_python(a))
		return;
	a->turn++;
	{
		struct event ev = { .type = EV_TURN, .n = a->turn };
		emit(a, &ev);
	}
	buf_reset(&a->text);
	cJSON_Delete(a->calls);
	a->calls = cJSON_CreateArray();
	cJSON_Delete(a->reasoning);
	a->reasoning = cJSON_CreateArray();
	a->ctx_retried = 0;
	agent_send(a, 0);
}

/* ------------------------------------------------------------ public */

struct agent *
agent_new(struct loop *l, struct notebook *nb, const struct kernel_opts *kopts,
    struct llm *llm, const struct agent_opts *opts, event_fn fn, void *arg)
{
	struct agent *a = xcalloc(1, sizeof *a);
	int nown;
	static const struct kernel_cbs kcbs = {
		.output = on_output, .result = on_result,
		.artifact = on_artifact, .state = on_state, .net = on_net,
		.installed = on_installed, .input = on_input,
	};

	a->loop = l;
	a->nb = nb;
	a->kopts = *kopts;
	/* agent_load stages the files, so the notebook knows their paths */
	a->kopts.data_files = NULL;
	a->kopts.ndata = 0;
	a->llm = llm;
	if (opts)
		a->o = *opts;
	else
		agent_opts_default(&a->o);
	a->emit = fn;
	a->arg = arg;
	a->ask = a->o.ask != 0;
	/* llm never delivers more of one reply's text than this */
	buf_init(&a->text, LLM_REPLY_TEXT_MAX);
	buf_init(&a->notes, 64 * 1024);
	buf_init(&a->rtext, LLM_REPLY_TEXT_MAX);
	a->calls = cJSON_CreateArray();
	a->reasoning = cJSON_CreateArray();
	cellout_init(&a->out, l, nb, fn, arg);
	a->own = agentfiles_own(nb, a->kopts.out_dir, &nown);
	if (a->own != NULL) {
		a->kopts.own_files = a->own;
		a->kopts.nown = nown;
	}
	a->k = kernel_new(l, &a->kopts, &kcbs, a);
	if (llm != NULL) {
		a->cx = context_new(nb, llm, a->o.context_window, fn, arg);
		context_probe(a->cx, l, llm_provider(llm), llm_base_url(llm), llm_model(llm));
	}
	return a;
}

void
agent_free(struct agent *a)
{
	if (a == NULL)
		return;
	if (a->llm)
		llm_cancel(a->llm);
	context_free(a->cx);
	kernel_free(a->k);
	cellout_free(&a->out);
	buf_free(&a->text);
	buf_free(&a->notes);
	prompt_files_free(&a->files);
	cJSON_Delete(a->calls);
	cJSON_Delete(a->reasoning);
	buf_free(&a->rtext);
	free(a->own);
	free(a->wait_id);
	free(a->wait_code);
	free(a);
}

int
agent_start(struct agent *a, char **err)
{
	return kernel_start(a->k, err);
}

int
agent_ask(struct agent *a, const char *question, char **err)
{
	struct buf b;

	if (a->llm == NULL) {
		*err = xstrdup("no model is configured");
		return -1;
	}
	if (a->asking) {
		*err = xstrdup("a question is already running (Ctrl-C cancels it)");
		return -1;
	}
	/* Restart a stopped sandbox now, not at the model's first cell:
	 * the restart's note then goes out with this question. */
	if (kernel_state(a->k) == KERNEL_STOPPED && agent_start(a, err) < 0)
		return -1;
	buf_init(&b, 1 << 20);
	if (a->notes.len > 0) {
		buf_add(&b, a->notes.data, a->notes.len);
		buf_reset(&a->notes);
	}
	a->hand_from = prompt_hand_cells(a->nb, a->o.tool_output_limit,
	    a->hand_from, &b);
	notebook_add_question(a->nb, question, buf_str(&b));
	buf_free(&b);
	a->asking = 1;
	a->turn = 0;
	a->cancelled = 0;
	emit_text(a, EV_QUESTION, question);
	agent_turn(a);
	return 0;
}

int
agent_run_cell(struct agent *a, const char *code, char **err)
{
	struct cell *c = notebook_add_cell(a->nb, CELL_BY_USER, code, NULL);
	struct event ev = { .type = EV_CELL_START, .cell = c };

	c->started_ms = now_ms();
	a->hand_running++;
	emit(a, &ev);
	kernel_set_input(a->k, a->o.input_hand);
	if (kernel_run(a->k, c->n, c->code, err) < 0) {
		struct kernel_result r = { .status = CELL_CRASHED, .reason = *err };
		on_result(a, c->n, &r);
		return -1;
	}
	return c->n;
}

int
agent_rerun(struct agent *a, int n, char **err)
{
	struct cell *c = notebook_cell(a->nb, n);

	if (c == NULL) {
		*err = xasprintf("there is no cell [%d]", n);
		return -1;
	}
	int m = agent_run_cell(a, c->code, err);
	if (m > 0)
		notebook_cell(a->nb, m)->rerun_of = n;
	return m;
}

void
agent_cancel(struct agent *a)
{
	if (a->asking) {
		a->cancelled = 1;
		if (a->wait_id != NULL) {
			wait_drop(a, "cancelled by the user before it ran");
			agent_next_call(a);	/* answers the rest, ends */
			return;
		}
		if (a->waiting_python) {
			a->waiting_python = 0;
			fail_question(a, "cancelled by the user", ERROR_CANCELLED);
			return;
		}
		if (a->llm && llm_busy(a->llm)) {
			llm_cancel(a->llm);
			keep_partial_reply(a);
			fail_question(a, "cancelled by the user", ERROR_CANCELLED);
			return;
		}
	}
	if (kernel_busy(a->k))
		kernel_interrupt(a->k);
}

int
agent_drop_cell(struct agent *a, int n, char **err)
{
	const struct cell *c = notebook_cell(a->nb, n);

	if (c == NULL || c->dropped) {
		*err = xasprintf("no cell [%d] to drop", n);
		return -1;
	}
	/* the model's reply in flight still refers to its cells */
	if (agent_busy(a)) {
		*err = xstrdup("a question or a cell is running: drop the cell when it is over");
		return -1;
	}
	if (notebook_drop_cell(a->nb, n) < 0) {
		*err = xasprintf("cell [%d] cannot be dropped", n);
		return -1;
	}
	return 0;
}

void
agent_set_ask(struct agent *a, int on)
{
	a->ask = on != 0;
}

int
agent_asks(const struct agent *a)
{
	return a->ask;
}

int
agent_approve(struct agent *a, enum agent_verdict v, const char *code,
    char **err)
{
	char *id, *orig;

	if (a->wait_id == NULL) {
		*err = xstrdup("no cell of the model waits to run");
		return -1;
	}
	if (v == AGENT_SKIP) {
		wait_drop(a, "The user declined to run this code: it did not run. "
		    "Do not retry it unchanged; explain what it would do, or do "
		    "something else.");
		agent_next_call(a);
		return 0;
	}
	if (v == AGENT_ALWAYS)
		a->ask = 0;
	id = a->wait_id;
	orig = a->wait_code;
	a->wait_id = a->wait_code = NULL;
	if (code == NULL)
		code = orig;
	run_model_cell(a, id, code, strcmp(code, orig) != 0);
	free(id);
	free(orig);
	return 0;
}

int
agent_busy(const struct agent *a)
{
	return a->asking || a->hand_running > 0 || kernel_busy(a->k);
}

void
agent_set_width(struct agent *a, int cols)
{
	kernel_set_width(a->k, cols);
}

void
agent_note(struct agent *a, const char *text)
{
	size_t n = strlen(text);

	buf_add(&a->notes, text, n);
	if (n > 0 && text[n - 1] != '\n')
		buf_addc(&a->notes, '\n');
}

int
agent_reset(struct agent *a, char **err)
{
	if (kernel_reset(a->k, err) < 0)
		return -1;
	buf_adds(&a->notes, "Note: the user reset the Python namespace; all variables "
	    "and imports are gone.\n");
	return 0;
}

int
agent_restart(struct agent *a, char **err)
{
	if (kernel_restart(a->k, err) < 0)
		return -1;
	buf_adds(&a->notes, "Note: the user restarted the Python session; all variables "
	    "and imports are gone; files under /workspace are kept.\n");
	return 0;
}

char *
agent_load(struct agent *a, const char *path, int told, char **err)
{
	char *p = kernel_stage(a->k, path, err);

	if (p == NULL)
		return NULL;
	agentfiles_record(a->nb, path, p, told);
	if (told)
		buf_printf(&a->notes, "Note: the user loaded a new data file: %s\n", p);
	return p;
}

int
agent_egress(struct agent *a, int allow, const char *spec, char **err)
{
	int rc = allow ? kernel_egress_allow(a->k, spec, err) :
	    kernel_egress_deny(a->k, spec, err);

	if (rc < 0)
		return -1;
	/* the system prompt stays as it was: the model hears it here */
	if (allow)
		buf_printf(&a->notes, "Note: the user allowed network access to %s, through "
		    "the proxy the environment names (pip install from an index there "
		    "works).\n", spec);
	else
		buf_printf(&a->notes, "Note: the user withdrew network access to %s.\n", spec);
	return rc;
}

int
agent_set_model(struct agent *a, const char *model, char **err)
{
	if (a->llm == NULL) {
		*err = xstrdup("no model is configured");
		return -1;
	}
	if (llm_set_model(a->llm, model) < 0) {
		*err = xasprintf("cannot switch to model %s", model);
		return -1;
	}
	context_set_model(a->cx, llm_provider(a->llm), llm_model(a->llm));
	context_probe(a->cx, a->loop, llm_provider(a->llm), llm_base_url(a->llm),
	    llm_model(a->llm));
	return 0;
}

struct notebook *
agent_notebook(const struct agent *a)
{
	return a->nb;
}

const char *
agent_where(const struct agent *a)
{
	return kernel_where(a->k);
}

const char *
agent_isolation(const struct agent *a)
{
	return kernel_isolation(a->k);
}

const char *
agent_remote_session(struct agent *a)
{
	return a->k != NULL ? kernel_remote_session(a->k) : NULL;
}

char *
agent_python_label(const struct agent *a)
{
	return kernel_python_label(a->k);
}

void
agent_stop_sandbox(struct agent *a, const char *why)
{
	kernel_stop(a->k, why);
}

struct llm *
agent_llm(const struct agent *a)
{
	return a->llm;
}

struct context *
agent_context(const struct agent *a)
{
	return a->cx;
}
