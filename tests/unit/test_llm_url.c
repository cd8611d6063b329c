/* llm_url: Azure OpenAI's URL shapes built once for both codecs (Chat
 * Completions and Responses), checked through the codecs' own URL
 * functions so that the two cannot drift apart again. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/llm_provider.h"
#include "terp/llm_url.h"

static void
expect_url(char *u, const char *want)
{
	cr_assert_not_null(u, "no URL, want %s", want);
	cr_assert_str_eq(u, want);
	free(u);
}

Test(llm_url, azure_responses_shapes)
{
	struct llm_config c = { .provider = "azure", .model = "dep1" };
	char *err = NULL;

	c.base_url = "http://127.0.0.1:9/";
	expect_url(llm_responses_url(&c, 1, &err), "http://127.0.0.1:9/openai/v1/responses");
	c.base_url = "http://127.0.0.1:9/openai//";
	expect_url(llm_responses_url(&c, 1, &err), "http://127.0.0.1:9/openai/v1/responses");
	c.base_url = "http://127.0.0.1:9/openai/v1";
	expect_url(llm_responses_url(&c, 1, &err), "http://127.0.0.1:9/openai/v1/responses");
	/* Responses needs no deployment in the URL: none is no error */
	c.model = NULL;
	c.base_url = "http://127.0.0.1:9";
	expect_url(llm_responses_url(&c, 1, &err), "http://127.0.0.1:9/openai/v1/responses");
	c.base_url = "";
	cr_assert_null(llm_responses_url(&c, 1, &err));
	cr_assert(strstr(err, "AZURE_OPENAI_ENDPOINT") != NULL, "%s", err);
	free(err);
}

Test(llm_url, azure_chat_needs_a_deployment_on_classic_endpoints)
{
	struct llm_config c = { .provider = "azure", .base_url = "http://127.0.0.1:9/openai" };
	char *err = NULL;

	cr_assert_null(llm_openai_url(LLM_AZURE, &c, &err));
	cr_assert(strstr(err, "AZURE_OPENAI_DEPLOYMENT") != NULL, "%s", err);
	free(err);
	err = NULL;
	/* on v1 the deployment is the body's "model": no error here */
	c.base_url = "http://127.0.0.1:9/openai/v1";
	expect_url(llm_openai_url(LLM_AZURE, &c, &err),
	    "http://127.0.0.1:9/openai/v1/chat/completions");
	cr_assert_null(err);
}

Test(llm_url, both_codecs_build_through_one_function)
{
	struct llm_config c = { .provider = "azure", .model = "d",
	    .base_url = "http://127.0.0.1:9/openai/", .api_version = "2025-04-01" };
	char *err = NULL, *a, *b;

	a = llm_openai_url(LLM_AZURE, &c, &err);
	b = llm_url_azure(&c, "chat/completions", 1, &err);
	cr_assert_str_eq(a, b);
	cr_assert_str_eq(a, "http://127.0.0.1:9/openai/deployments/d/chat/completions"
	    "?api-version=2025-04-01");
	free(a);
	free(b);
	a = llm_responses_url(&c, 1, &err);
	b = llm_url_azure(&c, "responses", 0, &err);
	cr_assert_str_eq(a, b);
	free(a);
	free(b);
	a = llm_url_trim("http://127.0.0.1:9///");
	cr_assert_str_eq(a, "http://127.0.0.1:9");
	free(a);
}
