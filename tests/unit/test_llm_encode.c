/* Unit tests for request encoding (a conversation with tool results,
 * in each provider's format), the Azure URL styles, the config file
 * parser with bad lines, and llm_config_resolve's precedence. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/config.h"
#include "terp/llm_provider.h"
#include "terp/util.h"

static const char conv[] = "["
    "{\"role\":\"user\",\"content\":\"Best month?\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
    " {\"id\":\"c1\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\":\\\"1/0\\\"}\"},"
    " {\"id\":\"c2\",\"name\":\"python_exec\",\"arguments\":\"{bad\"}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ZeroDivisionError\",\"is_error\":true},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"invalid JSON arguments\",\"is_error\":true},"
    "{\"role\":\"user\",\"content\":\"Also note cell [3]\"},"
    "{\"role\":\"assistant\",\"content\":\"March.\"}]";

/* The JSON text of the value at a path like "messages.2.tool_calls". */
static char *
at(const cJSON *j, const char *path)
{
	char *p = xstrdup(path), *save = NULL, *tok, *s;
	const cJSON *v = j;

	for (tok = strtok_r(p, ".", &save); tok && v; tok = strtok_r(NULL, ".", &save)) {
		if (*tok >= '0' && *tok <= '9')
			v = cJSON_GetArrayItem(v, atoi(tok));
		else
			v = cJSON_GetObjectItemCaseSensitive(v, tok);
	}
	free(p);
	s = v ? cJSON_PrintUnformatted(v) : xstrdup("(none)");
	return s;
}

static void
expect(const cJSON *j, const char *path, const char *want)
{
	char *got = at(j, path);
	cr_assert_str_eq(got, want, "at %s", path);
	free(got);
}

Test(encode, openai_conversation_with_tool_results)
{
	cJSON *msgs = cJSON_Parse(conv), *b;

	b = llm_openai_encode(LLM_OPENAI, "gpt-x", "SYS", msgs);
	expect(b, "model", "\"gpt-x\"");
	expect(b, "messages.0", "{\"role\":\"system\",\"content\":\"SYS\"}");
	expect(b, "messages.1", "{\"role\":\"user\",\"content\":\"Best month?\"}");
	expect(b, "messages.2", "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
	    "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"python_exec\","
	    "\"arguments\":\"{\\\"code\\\":\\\"1/0\\\"}\"}},"
	    "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"python_exec\","
	    "\"arguments\":\"{bad\"}}]}");
	expect(b, "messages.3", "{\"role\":\"tool\",\"tool_call_id\":\"c1\","
	    "\"content\":\"Error: ZeroDivisionError\"}");
	expect(b, "messages.4.tool_call_id", "\"c2\"");
	expect(b, "messages.5", "{\"role\":\"user\",\"content\":\"Also note cell [3]\"}");
	expect(b, "messages.6", "{\"role\":\"assistant\",\"content\":\"March.\"}");
	expect(b, "messages.7", "(none)");
	expect(b, "tools.0.type", "\"function\"");
	expect(b, "tools.0.function.name", "\"python_exec\"");
	expect(b, "tools.0.function.parameters.required", "[\"code\"]");
	expect(b, "tools.0.function.parameters.properties.code.type", "\"string\"");
	expect(b, "tool_choice", "\"auto\"");
	expect(b, "stream", "true");
	expect(b, "stream_options", "{\"include_usage\":true}");
	expect(b, "max_tokens", "(none)");
	expect(b, "parallel_tool_calls", "(none)");
	cJSON_Delete(b);
	/* Local servers: no tool_choice; history arguments must be JSON. */
	b = llm_openai_encode(LLM_LOCAL, "llama", NULL, msgs);
	expect(b, "messages.0.role", "\"user\"");
	expect(b, "messages.1.tool_calls.1.function.arguments", "\"{}\"");
	expect(b, "tool_choice", "(none)");
	cJSON_Delete(b);
	cJSON_Delete(msgs);
}

Test(encode, anthropic_conversation_with_tool_results)
{
	cJSON *msgs = cJSON_Parse(conv), *b;

	b = llm_anthropic_encode("claude-x", 1000, "SYS", msgs);
	expect(b, "model", "\"claude-x\"");
	expect(b, "max_tokens", "1000");
	expect(b, "system", "[{\"type\":\"text\",\"text\":\"SYS\","
	    "\"cache_control\":{\"type\":\"ephemeral\"}}]");
	expect(b, "messages.0", "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"Best month?\"}]}");
	expect(b, "messages.1", "{\"role\":\"assistant\",\"content\":["
	    "{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"python_exec\",\"input\":{\"code\":\"1/0\"}},"
	    "{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"python_exec\",\"input\":{}}]}");
	/* Both results open one user message; the next question joins it. */
	expect(b, "messages.2", "{\"role\":\"user\",\"content\":["
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":\"ZeroDivisionError\",\"is_error\":true},"
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"c2\",\"content\":\"invalid JSON arguments\",\"is_error\":true},"
	    "{\"type\":\"text\",\"text\":\"Also note cell [3]\"}]}");
	expect(b, "messages.3", "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"March.\",\"cache_control\":{\"type\":\"ephemeral\"}}]}");
	expect(b, "messages.4", "(none)");
	expect(b, "tools.0.name", "\"python_exec\"");
	expect(b, "tools.0.input_schema.required", "[\"code\"]");
	expect(b, "tool_choice", "{\"type\":\"auto\"}");
	expect(b, "stream", "true");
	cJSON_Delete(b);
	cJSON_Delete(msgs);
}

Test(encode, azure_url_styles_and_auth)
{
	struct llm_config c = { .provider = "azure", .model = "dep1",
	    .base_url = "https://res.example.test/", .api_key = "k" };
	char *err = NULL, *u;
	struct llm_wire w;
	cJSON *msgs = cJSON_Parse("[]");

	u = llm_openai_url(LLM_AZURE, &c, &err);
	cr_assert_str_eq(u, "https://res.example.test/openai/deployments/dep1/"
	    "chat/completions?api-version=2024-10-21");
	free(u);
	c.api_version = "2025-01-01-preview";
	c.base_url = "https://res.example.test/openai";
	u = llm_openai_url(LLM_AZURE, &c, &err);
	cr_assert_str_eq(u, "https://res.example.test/openai/deployments/dep1/"
	    "chat/completions?api-version=2025-01-01-preview");
	free(u);
	c.base_url = "https://res.example.test/openai/v1/";
	u = llm_openai_url(LLM_AZURE, &c, &err);
	cr_assert_str_eq(u, "https://res.example.test/openai/v1/chat/completions");
	free(u);
	/* v1: the deployment goes in "model"; the key in api-key. */
	memset(&w, 0, sizeof w);
	cr_assert_eq(llm_azure_codec.prepare(&c, NULL, msgs, &w, &err), 0);
	cr_assert(strstr(w.body, "\"model\":\"dep1\""));
	cr_assert_str_eq(w.headers[2], "api-key: k");
	cr_assert_null(w.headers[3]);
	llm_wire_free(&w);
	c.base_url = NULL;
	cr_assert_null(llm_openai_url(LLM_AZURE, &c, &err));
	cr_assert(strstr(err, "AZURE_OPENAI_ENDPOINT"));
	free(err);
	cJSON_Delete(msgs);
}

Test(config, parses_comments_quotes_and_overrides)
{
	struct config c = { 0 };
	char *err = NULL;
	const char *t = "# terp\n\n  provider = openai\nmodel=\"gpt-x\"\r\n"
	    "api_key_cmd = pass show openai # not a comment\nmodel = gpt-y\n"
	    "theme =   dark  \n";

	cr_assert_eq(config_parse(&c, t, strlen(t), "config", &err), 0, "%s", err);
	cr_assert_str_eq(config_get(&c, "provider"), "openai");
	cr_assert_str_eq(config_get(&c, "model"), "gpt-y");
	cr_assert_str_eq(config_get(&c, "api_key_cmd"), "pass show openai # not a comment");
	cr_assert_str_eq(config_get(&c, "theme"), "dark");
	cr_assert_null(config_get(&c, "memory"));
	config_free(&c);
}

static void
bad(const char *text, const char *want)
{
	struct config c = { 0 };
	char *err = NULL;

	cr_assert_eq(config_parse(&c, text, strlen(text), "cfg", &err), -1);
	cr_assert_str_eq(err, want);
	free(err);
	config_free(&c);
}

Test(config, bad_lines_name_their_line)
{
	bad("provider = openai\ncolour = red\n", "cfg:2: unknown key 'colour'");
	/* a typo names the key meant (issue 25, item 14) */
	bad("them = light\n", "cfg:1: unknown key 'them'; did you mean theme?");
	bad("max_turn = 3\n", "cfg:1: unknown key 'max_turn'; did you mean max_turns?");
	bad("# c\n\nprovider openai\n", "cfg:3: expected `key = value`");
	bad(" = x\n", "cfg:1: missing key before '='");
	bad("model = a\nmodel\n", "cfg:2: expected `key = value`");
}

static void
write_config(const char *dir, const char *text)
{
	char *p = xasprintf("%s/terp", dir), *f;
	FILE *fp;

	mkdir_p(p, 0700);
	f = xasprintf("%s/config", p);
	fp = fopen(f, "w");
	fputs(text, fp);
	fclose(fp);
	free(p);
	free(f);
}

static char *
tmpdir(void)
{
	char t[] = "/tmp/terp-cfg-XXXXXX";
	cr_assert_not_null(mkdtemp(t));
	return xstrdup(t);
}

static void
clear_env(void)
{
	const char *v[] = { "OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT",
	    "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_DEPLOYMENT", "AZURE_OPENAI_API_VERSION",
	    "OPENAI_API_VERSION", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL" };
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		unsetenv(v[i]);
}

Test(config, resolve_precedence_flags_file_env)
{
	struct llm_config c;
	char *dir = tmpdir(), *err = NULL;

	clear_env();
	setenv("XDG_CONFIG_HOME", dir, 1);
	/* Nothing configured: one line listing the options. */
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), -1);
	cr_assert(strstr(err, "no model configured") == err);
	cr_assert(strstr(err, "--provider demo") && !strchr(err, '\n'));
	free(err);
	llm_config_free(&c);
	/* Env order: Anthropic first. */
	setenv("OPENAI_API_KEY", "sk-o", 1);
	setenv("ANTHROPIC_API_KEY", "sk-a", 1);
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.provider, "anthropic");
	cr_assert_str_eq(c.api_key, "sk-a");
	cr_assert_str_eq(c.api_key_from, "ANTHROPIC_API_KEY");
	cr_assert_null(c.base_url_from);	/* the provider's own */
	cr_assert_eq(c.max_retries, 4);
	cr_assert_eq(c.max_tokens, 4096);
	llm_config_free(&c);
	/* The file beats env; its key comes from a command. */
	write_config(dir, "provider = openai\nmodel = gpt-file\n"
	    "api_key_cmd = printf 'sk-cmd\\n'\nmax_retries = 2\nidle_timeout = 30s\n");
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.provider, "openai");
	cr_assert_str_eq(c.model, "gpt-file");
	cr_assert_str_eq(c.api_key, "sk-cmd");
	cr_assert(strncmp(c.api_key_from, "api_key_cmd in /", 16) == 0, "%s", c.api_key_from);
	cr_assert(strstr(c.api_key_from, "/terp/config") != NULL, "%s", c.api_key_from);
	cr_assert_eq(c.max_retries, 2);
	cr_assert_eq(c.idle_timeout_ms, 30000);
	llm_config_free(&c);
	/* Flags beat the file; provider:model splits; ollama needs no key. */
	memset(&c, 0, sizeof c);
	c.model = xstrdup("ollama:qwen2.5:7b");
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.provider, "ollama");
	cr_assert_str_eq(c.model, "qwen2.5:7b");
	cr_assert_str_eq(c.base_url, "http://localhost:11434/v1");
	cr_assert_str_eq(c.base_url_from, "the default");
	llm_config_free(&c);
	/* a flag's URL is the flag's */
	memset(&c, 0, sizeof c);
	c.provider = xstrdup("ollama");
	c.base_url = xstrdup("http://127.0.0.1:9/v1");
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.base_url_from, "--base-url");
	llm_config_free(&c);
	/* A model with a colon that is not a provider stays whole. */
	memset(&c, 0, sizeof c);
	c.provider = xstrdup("ollama");
	c.model = xstrdup("llama3.1:8b");
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.model, "llama3.1:8b");
	llm_config_free(&c);
	/* A failing key command and a bad file are errors. */
	write_config(dir, "provider = openai\napi_key_cmd = exit 3\n");
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), -1);
	cr_assert_str_eq(err, "api_key_cmd failed (exit status 3)");
	free(err);
	llm_config_free(&c);
	write_config(dir, "provider = openai\nmax_retries = lots\n");
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), -1);
	cr_assert(strstr(err, "max_retries must be a number"), "%s", err);
	free(err);
	llm_config_free(&c);
	write_config(dir, "providr = openai\n");
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), -1);
	cr_assert(strstr(err, "/terp/config:1: unknown key 'providr'"), "%s", err);
	free(err);
	llm_config_free(&c);
	free(dir);
}

Test(config, azure_from_env)
{
	struct llm_config c;
	char *dir = tmpdir(), *err = NULL;

	clear_env();
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("AZURE_OPENAI_API_KEY", "az", 1);
	setenv("AZURE_OPENAI_ENDPOINT", "https://r.example.test", 1);
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), -1);
	cr_assert(strstr(err, "AZURE_OPENAI_DEPLOYMENT"), "%s", err);
	free(err);
	llm_config_free(&c);
	setenv("AZURE_OPENAI_DEPLOYMENT", "dep", 1);
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.provider, "azure");
	cr_assert_str_eq(c.model, "dep");
	cr_assert_str_eq(c.api_version, "2024-10-21");
	llm_config_free(&c);
	/* the openai SDK's variable, under terp's own (issue 25, item 14) */
	setenv("OPENAI_API_VERSION", "2025-01-01-preview", 1);
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.api_version, "2025-01-01-preview");
	llm_config_free(&c);
	setenv("AZURE_OPENAI_API_VERSION", "2024-06-01", 1);
	memset(&c, 0, sizeof c);
	cr_assert_eq(llm_config_resolve(&c, &err), 0, "%s", err);
	cr_assert_str_eq(c.api_version, "2024-06-01");
	llm_config_free(&c);
	clear_env();
	free(dir);
}
