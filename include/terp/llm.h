/* llm: one small interface over the model providers. A provider encodes
 * the notebook's neutral conversation (notebook.h) into its own request,
 * streams the reply over http (libcurl multi inside terp's loop) and
 * decodes it into provider-neutral callbacks. A new provider is one new
 * file (llm_<name>.c) and one line in llm.c's table. */
#ifndef TERP_LLM_H
#define TERP_LLM_H

#include <stddef.h>

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
};

/* Neutral stream callbacks. Exactly one of done or error ends a request. */
struct llm_cbs {
	/* A piece of the model's visible text. */
	void (*text)(void *arg, const char *delta, size_t len);
	/* A complete tool call; args is the raw JSON text of the arguments
	 * (may be invalid JSON: the agent answers with an error result). */
	void (*tool_call)(void *arg, const char *id, const char *name,
	    const char *args);
	void (*usage)(void *arg, const struct usage *u);
	/* The request went out: body as sent (for the notebook's ledger). */
	void (*sent)(void *arg, const char *what, const char *body, size_t len);
	/* Informational: "429 rate limited; retrying in 2.0 s (1/4)". */
	void (*notice)(void *arg, const char *msg);
	void (*done)(void *arg, const char *stop_reason);
	/* One clear line: "401 Unauthorized: the API key was rejected". */
	void (*error)(void *arg, const char *msg);
};

struct llm;

/* Fills cfg from the environment and $XDG_CONFIG_HOME/terp/config;
 * fields already set (from flags) win. Returns 0, or -1 with a one-line
 * *err listing the options when no provider can be chosen. */
int llm_config_resolve(struct llm_config *cfg, char **err);
void llm_config_free(struct llm_config *cfg);

/* Creates a provider client. cfg is copied. NULL with *err on failure. */
struct llm *llm_new(struct loop *l, const struct llm_config *cfg, char **err);
void llm_free(struct llm *m);

/* Starts a streamed request with the system prompt, the conversation
 * (borrowed for the call only; it is encoded at once) and the one tool,
 * python_exec(code). Callbacks fire from the loop. Returns 0, or -1
 * with *err when a request is already running. */
int llm_request(struct llm *m, const char *system, const cJSON *messages,
    const struct llm_cbs *cbs, void *arg, char **err);
/* Aborts the running request at once; no callback fires after it. */
void llm_cancel(struct llm *m);
int llm_busy(const struct llm *m);

const char *llm_provider(const struct llm *m);
const char *llm_model(const struct llm *m);
int llm_set_model(struct llm *m, const char *model);

#endif
