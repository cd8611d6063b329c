/* Unit tests for llm_openai_body: the request body written as text is
 * byte for byte the cJSON tree llm_openai_encode builds, printed, for
 * every flavour, with and without model and system prompt, and with
 * strings that need every kind of escape. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/llm_provider.h"

static const char conv[] = "["
    "{\"role\":\"user\",\"content\":\"Best month? \\\"quoted\\\" back\\\\slash\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
    " {\"id\":\"c1\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\":\\\"1/0\\\\n\\\"}\"},"
    " {\"id\":\"c2\",\"name\":\"python_exec\",\"arguments\":\"{bad\"},"
    " {\"name\":\"python_exec\"}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ZeroDivisionError\",\"is_error\":true},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"error: said so\",\"is_error\":true},"
    "{\"role\":\"tool\",\"content\":\"\\u0001\\u001f\\b\\f\\n\\r\\t caf\\u00e9 \\u2603\"},"
    "{\"content\":\"no role: left out\"},"
    "{\"role\":\"user\",\"content\":\"\"},"
    "{\"role\":\"user\"},"
    "{\"role\":\"assistant\",\"content\":\"\"},"
    "{\"role\":\"assistant\",\"content\":\"March.\"},"
    "{\"role\":\"system\",\"content\":\"odd role: a user\"}]";

static void
same(enum llm_openai_flavor f, const char *model, const char *system, const cJSON *msgs)
{
	cJSON *tree = llm_openai_encode(f, model, system, msgs);
	char *want = cJSON_PrintUnformatted(tree), *got;
	size_t len = 0;

	got = llm_openai_body(f, model, system, msgs, &len);
	cr_assert_str_eq(got, want, "flavour %d model %s system %s", (int)f,
	    model ? model : "(null)", system ? system : "(null)");
	cr_assert_eq(len, strlen(want));
	free(got);
	free(want);
	cJSON_Delete(tree);
}

Test(body, text_equals_the_printed_tree)
{
	cJSON *msgs = cJSON_Parse(conv), *empty = cJSON_CreateArray();
	enum llm_openai_flavor fl[] = { LLM_OPENAI, LLM_AZURE, LLM_LOCAL };

	cr_assert_not_null(msgs);
	for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
		same(fl[i], "gpt-x", "SYS \"with\" quotes\n", msgs);
		same(fl[i], NULL, NULL, msgs);
		same(fl[i], "", "", msgs);
		same(fl[i], "m", "S", empty);
	}
	cJSON_Delete(msgs);
	cJSON_Delete(empty);
}
