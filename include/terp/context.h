/* context: the model's context window and what terp puts into it.
 *
 * Knows each model's window (a small built-in table, the user's
 * override, what a local server reports), estimates the size of the
 * next request (the provider's reported input tokens for what was
 * already sent, an estimate for what is new), and compacts the
 * conversation when it would not fit with room for the reply: first the
 * oldest tool outputs shrink to their first lines plus "elided: cell
 * [k], N lines, still in the notebook", then older questions and
 * answers are summarised by one model call.
 *
 * Compaction never edits the notebook: the notebook keeps the whole
 * conversation (the journal and exports read it); the context keeps a
 * view of it (how far the summary reaches, which tool outputs are
 * elided) and builds the messages to send from the two. Never dropped:
 * the system prompt (with the data description), the current question
 * and the latest results. */
#ifndef TERP_CONTEXT_H
#define TERP_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "terp/event.h"
#include "terp/loop.h"
#include "terp/notebook.h"

struct llm;

/* When the built-in table was taken from the providers' model pages. */
#define CONTEXT_TABLE_DATE	"2025-08"

/* Ollama answers through its OpenAI-compatible endpoint with the
 * server's own context size, 4096 tokens unless the server or model
 * says otherwise, whatever the model could take: the size to assume
 * until the server tells. */
#define CONTEXT_OLLAMA_DEFAULT	4096

/* The window of model (tokens) from the built-in table, or 0 when it
 * is not there. provider may be NULL. Names match by prefix, the
 * longest entry first ("gpt-4o-mini-2024-07-18" is gpt-4o-mini's);
 * "ollama"-style tags after ':' are ignored ("llama3.1:8b"). */
long context_window_of(const char *provider, const char *model);

/* An estimate of the tokens of n bytes of text for today's BPE
 * tokenisers: letter runs about 4 bytes a token, digits 3, each
 * punctuation mark and non-ASCII character one, runs of spaces one. It
 * leans high on purpose: compacting a little early is harmless, a
 * request the server refuses is not. */
long context_estimate_text(const char *s, size_t n);
/* Of one neutral message (notebook.h): its texts plus a small
 * per-message overhead. */
long context_estimate_message(const cJSON *m);

/* One entry of what the next request holds (context_parts). */
enum context_part_kind {
	CONTEXT_SYSTEM,		/* the system prompt with the data description */
	CONTEXT_SUMMARY,	/* the model's summary of earlier questions */
	CONTEXT_QUESTION,	/* a user message */
	CONTEXT_ANSWER,		/* an assistant message (text and/or calls) */
	CONTEXT_CELL,		/* a tool result, whole */
	CONTEXT_ELIDED,		/* a tool result cut to its first lines */
};

struct context_part {
	enum context_part_kind	 kind;
	int			 msg;		/* notebook message index; -1 */
	int			 cell;		/* for results: the cell, or 0 */
	long			 tokens;	/* as estimated */
};

/* The plan's verdict for the next request (context_plan). */
struct context_plan {
	long	 before;	/* estimated tokens as things are */
	long	 after;		/* after the elisions below */
	int	 elide_upto;	/* tool results before this message: elided */
	int	 summarise_to;	/* > 0: summarise messages up to this one */
	int	 fits;		/* after fits under the budget (summary aside) */
};

struct context;

/* A context over nb (borrowed; it must outlive the context). window is
 * the user's override in tokens (0: none). The llm (NULL: no model)
 * makes the summary calls; emit(arg, ev) hears what compaction did
 * (notices, the summary's request and usage). Both borrowed. */
struct context *context_new(struct notebook *nb, struct llm *m, long window,
    event_fn emit, void *arg);
void context_free(struct context *cx);

/* The window in tokens and where it came from ("--context-window",
 * "table", "server", "default"). */
long context_window(const struct context *cx);
const char *context_window_source(const struct context *cx);
/* Sets the model (the table is read again unless the user overrode
 * the window). */
void context_set_model(struct context *cx, const char *provider,
    const char *model);
/* The server reported its context size (tokens): it becomes the window
 * unless the user overrode it, and a request estimated larger than it
 * gets one warning. */
void context_set_server_window(struct context *cx, long tokens);
/* The tokens kept free for the reply. */
long context_reserve(const struct context *cx);

/* The estimated size of a request of system plus the view of the
 * conversation as it stands. */
long context_estimate(struct context *cx, const char *system);
/* The share of the window the last request (or the estimate of the
 * next, if larger) uses, 0..100+; -1 before anything was measured. */
int context_percent(const struct context *cx);

/* What would be done to bring a request of system under target tokens
 * (the budget when target is 0): pure, changes nothing. */
void context_plan(struct context *cx, const char *system, long target,
    struct context_plan *p);

/* Before a request: when it fits (with room for the reply) returns 0
 * at once; else elides what the plan says and, when that is not
 * enough, starts the summary call and returns 1: then(arg, NULL) or
 * then(arg, "why") follows from the loop. force 1 compacts even when
 * the estimate fits (by hand: /compact); force 2 is for a request the
 * server refused as too long (after context_refused; without it, 90%
 * of what was sent becomes the window). system NULL: the last one seen. Returns -1 with *err when nothing can be
 * done (a summary call is already running). */
int context_prepare(struct context *cx, const char *system, int force,
    void (*then)(void *arg, const char *err), void *arg, char **err);
/* The server refused the last request as too long; msg is its error
 * line. The window it names ("maximum context length is N tokens",
 * "> N maximum", "context size (N tokens)") becomes the window; when
 * it names none, 90% of what was sent does. */
void context_refused(struct context *cx, const char *msg);
/* Whether a summary call is running. */
int context_busy(const struct context *cx);
/* Drops a running summary call (Ctrl-C): then never fires. */
void context_cancel(struct context *cx);

/* The messages to send: the view of the conversation (owned by the
 * context, valid until the next call into it). Records the request's
 * estimate, so that the usage the provider reports for it calibrates
 * the next estimate. */
const cJSON *context_messages(struct context *cx, const char *system);
/* The stamp of the last view context_messages made, for llm_vouch: the
 * same while neither the view (a compaction, an elision) nor the
 * notebook's messages already there (notebook_gen) changed, and no
 * other view or notebook of the process ever had it; 0 before the
 * first view. */
uint64_t context_stamp(const struct context *cx);

/* What the next request holds, in order: *parts is a new array (caller
 * frees); returns its length. */
int context_parts(struct context *cx, const char *system,
    struct context_part **parts);
/* Installs text (copied, bounded) as the summary of messages [0, upto);
 * upto must be a question's start, not the first. What a summary call
 * does when it is over; also for a summary recorded before. Returns 0
 * or -1. */
int context_set_summary(struct context *cx, int upto, const char *text);
/* The summary (NULL when none) and how many messages it replaces. */
const char *context_summary(const struct context *cx, int *upto);

/* Asks a local server for its context size (Ollama: /api/show's
 * num_ctx and context_length, /api/ps's context_length of the loaded
 * model) without blocking; the answer goes to context_set_server_window.
 * base_url is the provider's (".../v1" is cut). Returns 0, or -1 when
 * the provider has no such question. */
int context_probe(struct context *cx, struct loop *l, const char *provider,
    const char *base_url, const char *model);

#endif
