/* llm: one small interface over the model providers. A provider answers
 * a request with the notebook's neutral conversation (notebook.h):
 * either over HTTP, encoding it into its API's request and decoding the
 * streamed reply (libcurl multi inside terp's loop), or locally (the
 * recorded demo). Either way the reply comes back through the same
 * provider-neutral callbacks. A new provider is one new file and one
 * line in llm.c's table. */
#ifndef TERP_LLM_H
#define TERP_LLM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "terp/loop.h"
#include "terp/notebook.h"

/* Settings, from flags > config file > environment > defaults. */
struct llm_config {
	char	*provider;	/* openai, azure, anthropic, ollama, demo */
	char	*model;		/* or the Azure deployment */
	char	*base_url;
	char	*api_key;	/* never written anywhere by terp */
	char	*api_version;	/* Azure */
	int	 max_retries;	/* 4 */
	long	 connect_timeout_ms;	/* 10 s */
	long	 idle_timeout_ms;	/* a stream silent this long fails: 120 s */
	int	 max_tokens;	/* Anthropic needs one: 4096 */
	char	*demo_script;	/* the demo provider's recording */
	/* --reasoning / reasoning =: how hard the model thinks
	 * (enum llm_reasoning; DEFAULT sends nothing: the provider's own
	 * default). Anthropic: thinking.budget_tokens, OpenAI and Azure:
	 * reasoning_effort, Ollama: reasoning_effort ("none" for off). */
	int	 reasoning;
	/* --show-reasoning: -p writes the model's reasoning to stderr */
	int	 show_reasoning;
	/* --api / api =: OpenAI's and Azure's API (enum llm_api) */
	int	 api;
	/* Where base_url and api_key came from, for messages that name the
	 * fix ("--base-url", "OPENAI_API_KEY", "api_key_cmd in PATH"): set
	 * by llm_config_resolve, NULL when unknown. */
	char	*base_url_from;
	char	*api_key_from;
};

/* The visible text of one reply is bounded: a reply that would pass
 * this fails with LLM_ERR_BAD_REPLY before the byte that passes it is
 * delivered, so a caller's buffer of this size always holds all that
 * was shown. */
#define LLM_REPLY_TEXT_MAX	(4u << 20)

/* Why a request failed: a typed fact for the caller's control flow; the
 * message is for people only. */
enum llm_err {
	LLM_ERR_NET,		/* no HTTP answer: DNS, connect, TLS, timeout */
	LLM_ERR_HTTP,		/* the server refused the request, no kind below */
	LLM_ERR_AUTH,		/* the key or its permissions (401, 403) */
	LLM_ERR_RATE,		/* too many requests or tokens for now (429) */
	LLM_ERR_QUOTA,		/* billing quota or spend limit: waiting won't help */
	LLM_ERR_SERVER,		/* the server's own trouble (5xx, overloaded) */
	LLM_ERR_CONTEXT,	/* the conversation exceeds the model's context */
	LLM_ERR_CUT,		/* the stream ended before the reply was complete */
	LLM_ERR_BAD_REPLY,	/* a reply that breaks its API or terp's bounds */
	LLM_ERR_CANCELLED,	/* never delivered by llm (llm_cancel is silent);
				 * for callers recording why a reply ended */
};

struct llm_error {
	enum llm_err	 kind;
	/* The response's HTTP status: 0 when none came, 200 (or another
	 * 2xx) for an error reported inside a streamed reply. */
	int		 http_status;
	const char	*msg;		/* one line for people */
	/* Asking again later may work (a rate limit, a cut stream), as
	 * opposed to a wrong key, an exhausted quota or a too long
	 * conversation. llm itself already retried what it could. */
	int		 retryable;
};

/* The kind's name ("net", "http", "auth", "rate", "quota", "server",
 * "context", "cut", "bad_reply", "cancelled"): stable, for records that
 * must outlive a reordering of the enum. A static string. */
const char *llm_err_name(enum llm_err kind);

enum llm_api {
	LLM_API_AUTO,		/* Responses for the reasoning families, else Chat */
	LLM_API_CHAT,		/* Chat Completions */
	LLM_API_RESPONSES,	/* the Responses API */
};

enum llm_reasoning {
	LLM_REASONING_DEFAULT,	/* not set: the provider's default */
	LLM_REASONING_OFF,
	LLM_REASONING_LOW,
	LLM_REASONING_MEDIUM,
	LLM_REASONING_HIGH,
};
/* The level named s ("off", "low", "medium", "high", "default"), or -1. */
int llm_reasoning_parse(const char *s);
/* Its name (a static string). */
const char *llm_reasoning_name(int level);
/* Anthropic's thinking budget for cfg's level in tokens: 0 without
 * thinking (off, or not set: the API's default is off). */
int llm_thinking_budget(const struct llm_config *cfg);
/* Output tokens a request may use beyond the answer's max_tokens for
 * the model's reasoning: what the context window must keep free. */
long llm_reasoning_reserve(const struct llm_config *cfg);

/* Neutral stream callbacks. Exactly one of done or error ends a request. */
struct llm_cbs {
	/* A piece of the model's visible text. */
	void (*text)(void *arg, const char *delta, size_t len);
	/* A complete tool call; args is the raw JSON text of the arguments
	 * (may be invalid JSON: the agent answers with an error result). */
	void (*tool_call)(void *arg, const char *id, const char *name,
	    const char *args);
	void (*usage)(void *arg, const struct usage *u);
	/* Optional (NULL: ignored). A piece of the model's reasoning as it
	 * streams, for showing only: never part of the answer. */
	void (*reasoning)(void *arg, const char *delta, size_t len);
	/* Optional. A complete reasoning item in the provider's own shape
	 * (JSON text of an object: an Anthropic thinking or
	 * redacted_thinking block with its signature, an OpenAI reasoning
	 * item with its encrypted_content), to be kept byte for byte in the
	 * assistant message's "reasoning" array and sent back. */
	void (*reasoning_item)(void *arg, const char *json);
	/* Optional. The code of a python_exec call still streaming: all of
	 * it so far (whole UTF-8 characters), each time it grows; call
	 * numbers the reply's parts from 0 (a new number: a new call). For
	 * showing only: the call that runs comes whole in tool_call. */
	void (*tool_code)(void *arg, int call, const char *code, size_t len);
	/* The request went out: body as sent (for the notebook's ledger). */
	void (*sent)(void *arg, const char *what, const char *body, size_t len);
	/* Informational: "429 rate limited; retrying in 2.0 s (1/4)". */
	void (*notice)(void *arg, const char *msg);
	void (*done)(void *arg, const char *stop_reason);
	/* The kind, the HTTP status and one clear line ("401 Unauthorized:
	 * the API key was rejected"); e and its strings are valid during
	 * the call only. */
	void (*error)(void *arg, const struct llm_error *e);
};

struct llm;

/* Fills cfg from the environment and $XDG_CONFIG_HOME/terp/config;
 * fields already set (from flags) win. Returns 0, or -1 with a one-line
 * *err listing the options when no provider can be chosen. */
int llm_config_resolve(struct llm_config *cfg, char **err);
void llm_config_free(struct llm_config *cfg);
/* Whether the n bytes at name are a provider of llm.c's table. */
int llm_is_provider(const char *name, size_t n);

/* Creates a provider client. cfg is copied. NULL with *err on failure. */
struct llm *llm_new(struct loop *l, const struct llm_config *cfg, char **err);
void llm_free(struct llm *m);

/* Starts a streamed request with the system prompt, the conversation
 * (borrowed for the call only; it is encoded at once) and the one tool,
 * python_exec(code). Callbacks fire from the loop. Returns 0, or -1
 * with *err when a request is already running. */
int llm_request(struct llm *m, const char *system, const cJSON *messages,
    const struct llm_cbs *cbs, void *arg, char **err);
/* A promise about the next llm_request's messages, so that its encoding
 * need not compare the whole conversation with the last request's: two
 * requests vouched with the same nonzero stamp have the earlier one's
 * messages unchanged at the same places in the later one (it only
 * grew). The caller changes the stamp with every change to a message
 * already sent (notebook_gen, context_stamp); 0 (the default): none.
 * Used up by the next llm_request. */
void llm_vouch(struct llm *m, uint64_t stamp);
/* From the sent callback only: the request's body (as passed to it) is
 * the caller's from now on instead of a copy's worth: malloc'd, its
 * length then a NUL. The caller must keep it unchanged until the request
 * is over (it is still sent, and sent again by a retry), then frees it
 * (or gives it to llm_cache_body_give_tagged with *tag for a later body,
 * which then need not write again what it still holds). NULL: the
 * backend keeps its body; copy it. *shared: how many leading bytes the
 * body has in common with the one the previous call handed on (0:
 * unknown), known from how both were built, so they need not be
 * compared. */
char *llm_sent_body_take(struct llm *m, size_t *shared, uint64_t *tag);
/* Aborts the running request at once; no callback fires after it. */
void llm_cancel(struct llm *m);
int llm_busy(const struct llm *m);

/* The i-th question to suggest to the user (the demo's recorded
 * questions, which it answers; borrowed while m lives), or NULL. */
const char *llm_suggest(const struct llm *m, int i);
const char *llm_provider(const struct llm *m);
const char *llm_model(const struct llm *m);
/* The base URL as configured (NULL: the provider's default). */
const char *llm_base_url(const struct llm *m);
int llm_set_model(struct llm *m, const char *model);
/* The client's settings (borrowed, valid while m lives). */
const struct llm_config *llm_config_of(const struct llm *m);

#endif
