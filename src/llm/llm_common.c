/* llm_common: what the codecs and the configuration share, below llm.c
 * (which picks a codec: were these there, each codec and llm_config.c
 * would call back up into it). The one tool's description and schema,
 * the provider names, the reasoning levels. */
#include "terp/llm.h"

#include <string.h>

#include "terp/llm_provider.h"

const char llm_tool_description[] =
    "Run Python code in the notebook's persistent sandboxed Python session "
    "(like a Jupyter kernel: variables, imports and loaded data survive "
    "between calls). Data files are under /workspace/data (read-only); save "
    "charts and files to /workspace/out. Returns stdout, stderr, the value "
    "of the last expression and any traceback. The network is off unless the "
    "user allowed hosts (the system prompt says which).";
const char llm_code_description[] = "The Python code to run.";

cJSON *
llm_tool_schema(void)
{
	cJSON *p = cJSON_CreateObject(), *props, *code, *req;

	cJSON_AddStringToObject(p, "type", "object");
	props = cJSON_AddObjectToObject(p, "properties");
	code = cJSON_AddObjectToObject(props, "code");
	cJSON_AddStringToObject(code, "type", "string");
	cJSON_AddStringToObject(code, "description", llm_code_description);
	req = cJSON_AddArrayToObject(p, "required");
	cJSON_AddItemToArray(req, cJSON_CreateString("code"));
	return p;
}

/* The names of llm.c's provider table (its own, with the backends; a
 * unit test holds the two lists equal). */
static const char *const provider_names[] = {
	"openai", "azure", "anthropic", "ollama", "demo",
};

int
llm_is_provider(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof provider_names / sizeof provider_names[0]; i++)
		if (strlen(provider_names[i]) == n &&
		    strncmp(provider_names[i], name, n) == 0)
			return 1;
	return 0;
}

static const char *const reasoning_names[] = {
	[LLM_REASONING_DEFAULT] = "default",
	[LLM_REASONING_OFF] = "off",
	[LLM_REASONING_LOW] = "low",
	[LLM_REASONING_MEDIUM] = "medium",
	[LLM_REASONING_HIGH] = "high",
};

int
llm_reasoning_parse(const char *s)
{
	for (int i = 0; s != NULL && i <= LLM_REASONING_HIGH; i++)
		if (strcmp(s, reasoning_names[i]) == 0)
			return i;
	return -1;
}

const char *
llm_reasoning_name(int level)
{
	if (level < 0 || level > LLM_REASONING_HIGH)
		return "default";
	return reasoning_names[level];
}

int
llm_thinking_budget(const struct llm_config *cfg)
{
	/* The API's minimum is 1024; these leave room to think through an
	 * analysis step without making every turn slow. */
	switch (cfg->reasoning) {
	case LLM_REASONING_LOW:		return 2048;
	case LLM_REASONING_MEDIUM:	return 8192;
	case LLM_REASONING_HIGH:	return 24576;
	default:			return 0;
	}
}

