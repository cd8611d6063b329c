/* llm_provider: the contract between llm.c (retries, transport, the
 * public interface of llm.h) and the provider files llm_<name>.c. Each
 * provider is pure: it encodes a request (url, headers, body) and
 * decodes SSE events into a sink, so both halves are unit-tested
 * without a network. Internal to the llm layer and its tests. */
#ifndef TERP_LLM_PROVIDER_H
#define TERP_LLM_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/notebook.h"

/* Where a decoder delivers what it decoded. */
struct llm_sink {
	void	(*text)(void *arg, const char *s, size_t n);
	void	(*tool_call)(void *arg, const char *id, const char *name,
		    const char *args);
	void	(*usage)(void *arg, const struct usage *u);
};

/* A decoder's verdict after an event. */
enum llm_dec_status {
	LLM_DEC_MORE,		/* go on */
	LLM_DEC_END,		/* the reply is complete */
	LLM_DEC_ERROR,		/* the stream carried an error, or is broken */
};

/* One HTTP request, as a provider encodes it. All strings are owned. */
struct llm_wire {
	char	*url;
	char	**headers;	/* "Name: value", NULL-terminated */
	char	*body;
	size_t	 body_len;
	char	*what;		/* for the ledger: "openai gpt-4o /chat/completions" */
};
void llm_wire_free(struct llm_wire *w);
/* Appends a header to w (copied). */
void llm_wire_header(struct llm_wire *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct llm_provider {
	const char	*name;
	/* Encodes a request; 0, or -1 with *err. */
	int	(*prepare)(const struct llm_config *cfg, const char *system,
		    const cJSON *messages, struct llm_wire *w, char **err);
	/* A decoder for one reply (sink and arg borrowed). */
	void	*(*dec_new)(const struct llm_sink *sink, void *arg);
	enum llm_dec_status (*dec_event)(void *d, const char *type,
		    const char *data, size_t len);
	/* The body ended without an END: END if what came is complete
	 * enough (e.g. a finish_reason without [DONE]), else ERROR. */
	enum llm_dec_status (*dec_eof)(void *d);
	const char	*(*dec_stop_reason)(void *d);
	/* After ERROR: a one-line message; *retryable when the error is
	 * transient (overloaded) and worth a retry if nothing was shown. */
	const char	*(*dec_error)(void *d, int *retryable);
	void	(*dec_free)(void *d);
};

/* The one tool, python_exec(code). */
#define LLM_TOOL_NAME	"python_exec"
extern const char llm_tool_description[];
extern const char llm_code_description[];

/* OpenAI Chat Completions and its relatives. */
enum llm_openai_flavor { LLM_OPENAI, LLM_AZURE, LLM_LOCAL };
extern const struct llm_provider llm_openai_provider;
extern const struct llm_provider llm_azure_provider;
extern const struct llm_provider llm_ollama_provider;
/* The request body for a conversation (a new cJSON the caller frees). */
cJSON *llm_openai_encode(enum llm_openai_flavor f, const char *model,
    const char *system, const cJSON *messages);
/* The URL of the chat completions endpoint (new string), or NULL. */
char *llm_openai_url(enum llm_openai_flavor f, const struct llm_config *cfg,
    char **err);

/* Anthropic Messages. */
extern const struct llm_provider llm_anthropic_provider;
cJSON *llm_anthropic_encode(const char *model, int max_tokens,
    const char *system, const cJSON *messages);

/* The demo: a recorded analysis replayed without any network. */
struct llm_demo;
/* Loads cfg->demo_script. NULL with *err. */
struct llm_demo *llm_demo_new(struct loop *l, const struct llm_config *cfg,
    char **err);
void llm_demo_free(struct llm_demo *d);
/* Replies to the conversation through cbs (borrowed until done/error,
 * which fire from loop timers). */
void llm_demo_request(struct llm_demo *d, const cJSON *messages,
    const struct llm_cbs *cbs, void *arg);
void llm_demo_cancel(struct llm_demo *d);

/* Shared helpers of llm.c, exported for the providers and tests. */

/* Milliseconds to wait from retry-after-ms (float ms) or retry-after
 * (seconds, possibly fractional, or an HTTP-date compared with now, a
 * Unix time). -1 when neither is usable. */
int64_t llm_retry_after_ms(const char *retry_after_ms, const char *retry_after,
    int64_t now);
/* The message inside an error body (JSON of any known shape, or text):
 * a new one-line string, never NULL. *type gets the error type or code
 * when there is one (new string or NULL). */
char *llm_error_body_message(const char *body, size_t len, char **type);
/* The one-line message for a failed HTTP status. New string. */
char *llm_status_message(const struct llm_config *cfg, long status,
    const char *body, size_t len);
/* Makes s one line of at most max bytes (in place). */
void llm_one_line(char *s, size_t max);

#endif
