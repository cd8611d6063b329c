/* llm_provider: the contract inside the llm layer, between llm.c (the
 * provider table and llm.h's interface) and what answers a request:
 *
 *   backend  runs one request at a time and reports through llm_cbs:
 *            llm_http.c (HTTP + SSE, retries) or llm_demo.c (a recorded
 *            analysis replayed from a file, no network);
 *   codec    what an HTTP provider adds: how a request is encoded and
 *            how its stream's events are read (llm_openai.c,
 *            llm_anthropic.c), on top of the decoding all APIs share
 *            (llm_decode.c). Codecs touch no network and no file, so
 *            they are unit-tested and fuzzed alone.
 *
 * Internal to the llm layer, its tests and fuzz targets. */
#ifndef TERP_LLM_PROVIDER_H
#define TERP_LLM_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/utf8carry.h"

struct llm_codec;

/* ------------------------------------------------------------ providers */

struct llm_backend {
	/* A backend for cfg (borrowed: it outlives the backend and may
	 * change between requests, e.g. the model). codec is the entry's
	 * (NULL for local backends). NULL with *err on failure. */
	void	*(*open)(struct loop *l, const struct llm_config *cfg,
		    const struct llm_codec *codec, char **err);
	/* Starts a request (conversation borrowed for the call). Reports
	 * through out (borrowed until done or error) from the loop only,
	 * never from inside request. 0, or -1 with *err. */
	int	 (*request)(void *b, const char *system, const cJSON *messages,
		    const struct llm_cbs *out, void *arg, char **err);
	/* Stops the running request, if any: no callback fires after it.
	 * Safe from inside one of the request's callbacks. */
	void	 (*cancel)(void *b);
	void	 (*close)(void *b);
	/* The i-th question this backend can answer well (the demo's
	 * recorded ones), borrowed while b lives, or NULL past the last.
	 * NULL entry: none (a real model answers anything). */
	const char *(*suggest)(void *b, int i);
	/* From the sent callback only: hands the request's body on (see
	 * llm_sent_body_take), or NULL when it cannot. NULL entry: never. */
	char	*(*take_body)(void *b, size_t *shared, uint64_t *tag);
};

/* One line of llm.c's table. */
struct llm_provider {
	const char			*name;
	const struct llm_backend	*backend;
	const struct llm_codec		*codec;	/* NULL: not over HTTP */
};

extern const struct llm_backend llm_http_backend;
extern const struct llm_backend llm_demo_backend;

/* The one tool, python_exec(code). */
#define LLM_TOOL_NAME	"python_exec"
extern const char llm_tool_description[];
extern const char llm_code_description[];

/* The tool's JSON schema, {"type":"object","properties":{"code":...},
 * "required":["code"]}: what OpenAI calls "parameters" and Anthropic
 * "input_schema". The caller owns the tree. */
cJSON *llm_tool_schema(void);

/* ------------------------------------------------------------ codecs */

/* What a body is, for whoever keeps it: its tag (llm_cache.h: give its
 * storage back with it), and how many leading bytes it shares with the
 * body built before it, tagged ref (0: unknown). */
struct llm_body_info {
	uint64_t id, ref;
	size_t	 shared;
};

/* One HTTP request, as a codec encodes it. All strings are owned. */
struct llm_wire {
	char	*url;
	char	**headers;	/* "Name: value", NULL-terminated */
	char	*body;
	size_t	 body_len;
	char	*what;		/* for the ledger: "openai gpt-4o" */
	int	 body_kept;	/* body handed on (take_body): not ours to
				 * reuse or free, still read until the
				 * request ends */
	struct llm_body_info body_info;	/* 0s: a body nobody knows */
};
void llm_wire_free(struct llm_wire *w);
/* Appends a header to w (copied). */
void llm_wire_header(struct llm_wire *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Where a decoder delivers what it decoded. */
struct llm_sink {
	void	(*text)(void *arg, const char *s, size_t n);
	void	(*tool_call)(void *arg, const char *id, const char *name,
		    const char *args);
	void	(*usage)(void *arg, const struct usage *u);
	/* May be NULL: reasoning text to show; a reasoning item to keep. */
	void	(*reasoning)(void *arg, const char *s, size_t n);
	void	(*reasoning_item)(void *arg, const char *json);
	/* May be NULL: the code of the tool call in slot `call` decoded so
	 * far (llm_argcode), whole each time, as its arguments stream. */
	void	(*tool_code)(void *arg, int call, const char *code, size_t n);
};

/* A decoder's state after an event. */
enum llm_dec_status {
	LLM_DEC_MORE,		/* go on */
	LLM_DEC_END,		/* the reply is complete */
	LLM_DEC_ERROR,		/* the stream carried an error, or is broken */
};

/* The most any codec allows: decoded, so that a reply with too many
 * calls is answered (the agent runs AGENT_CALLS_PER_REPLY of them and
 * tells the model about the rest) instead of failing the question. */
#define LLM_DEC_SLOTS		1024
#define LLM_DEC_ARGS_MAX	(4u << 20)	/* one tool call's arguments */
#define LLM_DEC_ARGS_TOTAL	(64u << 20)	/* all of one reply's */

/* A part of the reply being assembled: a tool call (or, for codecs that
 * number their content blocks, a text block). */
struct llm_argcode;
struct llm_slot {
	int		 index;	/* the server's number; -1 when it sent none */
	int		 tool;	/* a tool call, handed over when closed */
	int		 open;	/* not closed yet */
	char		*id;	/* first seen wins; NULL until seen */
	char		*name;
	struct buf	 args;	/* argument fragments, joined */
	/* its code decoded as it streams (owned; NULL when the sink does
	 * not show code early) */
	struct llm_argcode *code;
};

/* A decoder: the state all codecs share. Codecs read it and change it
 * through the llm_dec_* helpers below, except slot[] and priv which
 * are theirs to search and use. */
struct llm_dec {
	const struct llm_codec	*codec;
	const struct llm_sink	*sink;
	void			*arg;
	void			*priv;	/* codec->priv_size zeroed bytes */
	struct llm_slot		 slot[LLM_DEC_SLOTS];
	int			 nslots;
	size_t			 args_total;	/* bytes in every slot's args */
	struct usage		 usage;	/* delivered once, at the end */
	int			 have_usage;
	char			*stop;	/* the stop reason, when one came */
	struct utf8carry	 carry;	/* text cut inside a character */
	enum llm_dec_status	 st;
	struct llm_error	 err;	/* after ERROR; msg owned */
};

struct llm_codec {
	/* Encodes a request into w; 0, or -1 with *err. */
	int	(*prepare)(const struct llm_config *cfg, const char *system,
		    const cJSON *messages, struct llm_wire *w, char **err);
	/* Reads one SSE event (data without surrounding white space; the
	 * "error" events all APIs may send are handled before). Ends or
	 * fails the reply through the helpers. */
	void	(*event)(struct llm_dec *d, const char *type, const char *data,
		    size_t len);
	/* The body ended before the reply did: ends it if what came is
	 * complete enough (a finish reason without [DONE]), else fails. */
	void	(*eof)(struct llm_dec *d);
	const char	*default_stop;	/* when the stream named none */
	int		 max_slots;	/* <= LLM_DEC_SLOTS */
	size_t		 priv_size;
	/* Optional: the codec that answers cfg's requests instead (the
	 * OpenAI and Azure entries: Chat or Responses by cfg->api and
	 * the model's family); NULL: this one. */
	const struct llm_codec *(*pick)(const struct llm_config *cfg);
};

/* OpenAI Chat Completions and its relatives. */
enum llm_openai_flavor { LLM_OPENAI, LLM_AZURE, LLM_LOCAL };
extern const struct llm_codec llm_openai_codec;
extern const struct llm_codec llm_azure_codec;
extern const struct llm_codec llm_ollama_codec;
/* The request body for a conversation (a new cJSON the caller frees). */
cJSON *llm_openai_encode(enum llm_openai_flavor f, const char *model,
    const char *system, const cJSON *messages);
/* The same body as JSON text, byte for byte cJSON_PrintUnformatted of
 * the above, written without the tree (new string; *len its length).
 * The messages' bytes are kept for the next call and reused for the
 * messages that compare equal (one process-wide cache: call it from
 * the loop's thread only). */
char *llm_openai_body(enum llm_openai_flavor f, const char *model,
    const char *system, const cJSON *messages, size_t *len);
/* llm_openai_body, and what the body is in *info. The storage taken
 * (llm_cache_body_take_tagged) keeps what its tag says it holds of this
 * body: those bytes are not written again. */
char *llm_openai_body_info(enum llm_openai_flavor f, const char *model,
    const char *system, const cJSON *messages, size_t *len,
    struct llm_body_info *info);
/* The URL of the chat completions endpoint (new string), or NULL. */
char *llm_openai_url(enum llm_openai_flavor f, const struct llm_config *cfg,
    char **err);

/* OpenAI's Responses API (llm_responses.c), for OpenAI and Azure. */
extern const struct llm_codec llm_responses_codec;
extern const struct llm_codec llm_azure_responses_codec;
/* Whether cfg's requests go to the Responses API: api = responses, or
 * api unset and a reasoning model family (o1, o3, o4, gpt-5, codex). */
int llm_responses_wanted(const struct llm_config *cfg);
int llm_responses_reasoning_model(const char *model);
/* The request body (a new cJSON) and the endpoint (new string, NULL
 * with *err). */
cJSON *llm_responses_encode(const struct llm_config *cfg, const char *model,
    const char *system, const cJSON *messages);
char *llm_responses_url(const struct llm_config *cfg, int azure, char **err);

/* Anthropic Messages. */
extern const struct llm_codec llm_anthropic_codec;
cJSON *llm_anthropic_encode(const char *model, int max_tokens,
    const char *system, const cJSON *messages);
/* The same body as JSON text, byte for byte cJSON_PrintUnformatted of
 * the above, each message's blocks encoded once and reused while the
 * message stays the same (llm_cache.h; one process-wide cache: call it
 * from the loop's thread only). New string; *len its length. */
char *llm_anthropic_body(const char *model, int max_tokens, const char *system,
    const cJSON *messages, size_t *len);
/* The same with extended thinking: budget > 0 adds "thinking" with
 * budget_tokens (max_tokens grows by it) and sends back the messages'
 * thinking blocks ("reasoning", notebook.h) before their text and
 * tool_use; budget 0 is the two above (no thinking blocks sent). */
cJSON *llm_anthropic_encode_thinking(const char *model, int max_tokens,
    int budget, const char *system, const cJSON *messages);
char *llm_anthropic_body_thinking(const char *model, int max_tokens,
    int budget, const char *system, const cJSON *messages, size_t *len);

/* ------------------------------------------------------------ decoding
 * (llm_decode.c) */

/* A decoder for one reply of codec c (sink and arg borrowed). */
struct llm_dec *llm_dec_new(const struct llm_codec *c,
    const struct llm_sink *sink, void *arg);
void llm_dec_free(struct llm_dec *d);
/* Feeds one SSE event; returns the state after it. Once END or ERROR,
 * nothing more is read. */
enum llm_dec_status llm_dec_event(struct llm_dec *d, const char *type,
    const char *data, size_t len);
/* The body is over: END, or ERROR (LLM_ERR_CUT) if the reply was not. */
enum llm_dec_status llm_dec_eof(struct llm_dec *d);
/* The stop reason (valid while d lives). */
const char *llm_dec_stop_reason(const struct llm_dec *d);
/* After ERROR: kind, message and whether it is transient (http_status
 * is left 0 for the transport to fill). Owned by d. */
const struct llm_error *llm_dec_error(const struct llm_dec *d);

/* Helpers for codecs; all do nothing once the reply ended or failed. */

/* Visible text: passed on in whole UTF-8 sequences. */
void llm_dec_text(struct llm_dec *d, const char *s, size_t n);
/* Reasoning text (shown apart, never the answer's) and a complete
 * reasoning item (printed and passed on; item stays the caller's). */
void llm_dec_reasoning(struct llm_dec *d, const char *s, size_t n);
void llm_dec_reasoning_item(struct llm_dec *d, const cJSON *item);
/* A new open slot, or NULL when the codec's max_slots are used. */
struct llm_slot *llm_dec_slot_new(struct llm_dec *d, int index, int tool);
/* The latest slot with this index, or NULL. */
struct llm_slot *llm_dec_slot_find(struct llm_dec *d, int index);
/* Sets a slot's id or name unless already set (servers repeat them;
 * they are never joined). NULL and "" are ignored. */
void llm_dec_slot_names(struct llm_slot *s, const char *id, const char *name);
/* Appends an argument fragment: 0, or -1 after failing the reply
 * (LLM_ERR_BAD_REPLY) when the arguments pass LLM_DEC_ARGS_MAX. */
int llm_dec_slot_args(struct llm_dec *d, struct llm_slot *s, const char *p,
    size_t n);
/* Closes a slot: a tool call is handed over whole (text held back is
 * passed on first, to keep the order). */
void llm_dec_slot_close(struct llm_dec *d, struct llm_slot *s);
/* Usage numbers to fill in (the APIs send totals: overwrite). */
struct usage *llm_dec_usage(struct llm_dec *d);
void llm_dec_set_stop(struct llm_dec *d, const char *reason);
/* The reply is complete: text held back goes, then open tool calls
 * are handed over in order (close_open) or dropped as cut short, then
 * the usage. */
void llm_dec_end(struct llm_dec *d, int close_open);
/* Fails the reply with a message made of fmt. */
void llm_dec_fail(struct llm_dec *d, enum llm_err kind, int retryable,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A JSON number as a long: 0, or -1 (out untouched) when v is not a
 * number or is out of range (servers' numbers are not trusted). */
int llm_json_long(const cJSON *v, long *out);
/* The JSON of an event's data (caller deletes), or NULL: for empty data
 * (nothing to do), for data that is not JSON (the reply fails) and for
 * an error object of any shape (the reply fails with it). */
cJSON *llm_dec_json(struct llm_dec *d, const char *data, size_t len);

/* ------------------------------------------------------------ errors
 * (llm_decode.c) */

/* The message inside an error body (JSON of any known shape, or text):
 * a new one-line string, never NULL. *type gets the error type or code
 * when there is one (new string or NULL). */
char *llm_error_body_message(const char *body, size_t len, char **type);
/* What kind of failure an error answer is: the HTTP status (200 for an
 * error inside a stream) and the body's type, code and message. */
enum llm_err llm_error_kind(long status, const char *body, size_t len);
/* The one-line message for a failed HTTP status (a 401 names where the
 * key came from). New string. */
char *llm_status_message(const struct llm_config *cfg, long status,
    const char *body, size_t len);
/* What to check when the provider's server cannot be reached: "is the
 * server running? check --base-url / OPENAI_BASE_URL (this URL is from
 * --base-url)", the variable being the provider's. A static-free new
 * string. */
char *llm_unreachable_hint(const struct llm_config *cfg);
/* Makes s one line of at most max bytes (in place). */
void llm_one_line(char *s, size_t max);

#endif
