/* llm_url: the endpoint URLs the OpenAI-style codecs share (Chat
 * Completions in llm_openai.c, Responses in llm_responses.c): Azure
 * OpenAI's two URL shapes, built in one place, and the base URL's
 * trailing slashes. */
#ifndef TERP_LLM_URL_H
#define TERP_LLM_URL_H

#include "terp/llm.h"

/* s without its trailing '/'s. New string. */
char *llm_url_trim(const char *s);

/* Azure OpenAI's URL for the API at path ("chat/completions",
 * "responses") from cfg->base_url: an endpoint on the v1 API
 * (".../openai/v1") gets "/<path>", the deployment then goes in the
 * body's "model". Any other endpoint (".../openai" or bare) is classic:
 * with deployments set, ".../openai/deployments/<cfg->model>/<path>
 * ?api-version=<cfg->api_version or 2024-10-21>" (no model: an error);
 * without (an API Azure serves on v1 only), ".../openai/v1/<path>".
 * Returns a new string, or NULL with *err (caller frees). */
char *llm_url_azure(const struct llm_config *cfg, const char *path, int deployments,
    char **err);

#endif
