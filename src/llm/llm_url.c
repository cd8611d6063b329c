/* llm_url: the OpenAI-style endpoint URLs (see llm_url.h). */
#include "terp/llm_url.h"

#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

char *
llm_url_trim(const char *s)
{
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		n--;
	return xstrndup(s, n);
}

char *
llm_url_azure(const struct llm_config *cfg, const char *path, int deployments, char **err)
{
	char *base, *url;
	size_t n;

	if (cfg->base_url == NULL || *cfg->base_url == '\0') {
		*err = xstrdup("azure: no endpoint (set AZURE_OPENAI_ENDPOINT "
		    "or base_url)");
		return NULL;
	}
	base = llm_url_trim(cfg->base_url);
	/* v1 style: .../openai/v1, the deployment goes in "model". */
	if (strstr(base, "/openai/v1") != NULL) {
		url = xasprintf("%s/%s", base, path);
		free(base);
		return url;
	}
	if (deployments && (cfg->model == NULL || *cfg->model == '\0')) {
		free(base);
		*err = xstrdup("azure: no deployment (set "
		    "AZURE_OPENAI_DEPLOYMENT or --model)");
		return NULL;
	}
	/* Classic: the endpoint may already end in /openai. */
	n = strlen(base);
	if (n >= 7 && strcmp(base + n - 7, "/openai") == 0)
		base[n - 7] = '\0';
	if (deployments)
		url = xasprintf("%s/openai/deployments/%s/%s?api-version=%s", base,
		    cfg->model, path, cfg->api_version && *cfg->api_version ?
		    cfg->api_version : "2024-10-21");
	else
		url = xasprintf("%s/openai/v1/%s", base, path);
	free(base);
	return url;
}
