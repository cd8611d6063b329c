/* Unit tests for the pure halves of the providers: the OpenAI and
 * Anthropic stream decoders fed recorded streams through the real SSE
 * parser (split at every byte), and the retry-after and error-body
 * helpers of llm.c. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/llm_provider.h"
#include "terp/retry_after.h"
#include "terp/sse.h"

struct rec {
	struct buf	 text;
	struct buf	 calls;
	struct usage	 u;
	int		 nusage;
	const struct llm_codec *p;
	struct llm_dec	*dec;
	enum llm_dec_status st;
};

static void
r_text(void *arg, const char *s, size_t n)
{
	struct rec *r = arg;
	buf_add(&r->text, s, n);
}

static void
r_call(void *arg, const char *id, const char *name, const char *args)
{
	struct rec *r = arg;
	buf_printf(&r->calls, "[%s|%s|%s]", id, name, args);
}

static void
r_usage(void *arg, const struct usage *u)
{
	struct rec *r = arg;
	r->u = *u;
	r->nusage++;
}

static const struct llm_sink sink = { r_text, r_call, r_usage, NULL, NULL, NULL };

static int
r_event(void *arg, const struct sse_event *ev)
{
	struct rec *r = arg;

	if (r->st != LLM_DEC_MORE)
		return 1;
	r->st = llm_dec_event(r->dec, ev->type, ev->data, ev->len);
	return 0;
}

/* Runs stream through an SSE parser and a fresh decoder, cut after
 * `at` bytes. Fills r (caller frees with rec_free). */
static void
run(struct rec *r, const struct llm_codec *p, const char *stream,
    size_t at)
{
	struct sse *s;
	size_t len = strlen(stream);

	memset(r, 0, sizeof *r);
	buf_init(&r->text, 1 << 20);
	buf_init(&r->calls, 1 << 20);
	r->p = p;
	r->dec = llm_dec_new(p, &sink, r);
	r->st = LLM_DEC_MORE;
	s = sse_new(1 << 16, 1 << 20, r_event, r);
	if (at > len)
		at = len;
	sse_feed(s, stream, at);
	sse_feed(s, stream + at, len - at);
	sse_finish(s);
	sse_free(s);
	if (r->st == LLM_DEC_MORE)
		r->st = llm_dec_eof(r->dec);
}

static void
rec_free(struct rec *r)
{
	llm_dec_free(r->dec);
	buf_free(&r->text);
	buf_free(&r->calls);
}

/* Every split of the stream gives the same text, calls and status. */
/* The error message of a failed decoder; *retryable when asked. */
static const char *
dec_error(const struct llm_dec *d, int *retryable)
{
	const struct llm_error *e = llm_dec_error(d);
	if (retryable != NULL)
		*retryable = e->retryable;
	return e->msg;
}

static void
check(const struct llm_codec *p, const char *stream, const char *text,
    const char *calls, enum llm_dec_status st, const char *stop)
{
	size_t len = strlen(stream);

	for (size_t at = 0; at <= len; at++) {
		struct rec r;
		run(&r, p, stream, at);
		cr_assert_eq(r.st, st, "status at split %zu: %d (%s)", at, r.st,
		    r.st == LLM_DEC_ERROR ? dec_error(r.dec, NULL) : "");
		cr_assert_str_eq(buf_str(&r.text), text, "text at split %zu", at);
		cr_assert_str_eq(buf_str(&r.calls), calls, "calls at split %zu: %s",
		    at, buf_str(&r.calls));
		if (stop != NULL)
			cr_assert_str_eq(llm_dec_stop_reason(r.dec), stop);
		rec_free(&r);
	}
}

#define CH(x) "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\"," \
    "\"choices\":[{\"index\":0,\"delta\":" x "}]}\n\n"

Test(openai_decode, two_tool_calls_args_split_in_escape_and_utf8)
{
	/* Arguments are cut inside a JSON escape (\" and \n) and inside
	 * the two bytes of "é" (raw bytes in separate deltas). */
	const char *s =
	    CH("{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null")
	    CH("{\"content\":\"Let me check.\"}")
	    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"call_A\",\"type\":\"function\","
	       "\"function\":{\"name\":\"python_exec\",\"arguments\":\"\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"co\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"de\\\": \\\"print(\\\\\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"caf\xc3\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\xa9\\\\\\\")\\\\\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"n\\\"}\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":1,\"id\":\"call_B\",\"type\":\"function\","
	       "\"function\":{\"name\":\"python_exec\",\"arguments\":\"\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"code\\\": \\\"1+1\\\"}\"}}]}")
	    "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
	    "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":149,"
	    "\"completion_tokens\":60,\"total_tokens\":209,\"prompt_tokens_details\":{\"cached_tokens\":128}}}\n\n"
	    "data: [DONE]\n\n";
	struct rec r;

	check(&llm_openai_codec, s, "Let me check.",
	    "[call_A|python_exec|{\"code\": \"print(\\\"caf\xc3\xa9\\\")\\n\"}]"
	    "[call_B|python_exec|{\"code\": \"1+1\"}]", LLM_DEC_END, "tool_calls");
	run(&r, &llm_openai_codec, s, 0);
	cr_assert_eq(r.nusage, 1);
	cr_assert_eq(r.u.input_tokens, 149);
	cr_assert_eq(r.u.output_tokens, 60);
	cr_assert_eq(r.u.cached_tokens, 128);
	rec_free(&r);
}

Test(openai_decode, azure_filter_chunks)
{
	const char *s =
	    "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\","
	    "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"finish_reason\":null,\"delta\":{\"content\":\"Hello\"},"
	    "\"content_filter_results\":{\"hate\":{\"filtered\":false}}}]}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"content_filter_results\":{},"
	    "\"content_filter_offsets\":{\"check_offset\":4}}]}\n\n"
	    "data: {\"choices\":null}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"finish_reason\":\"stop\"}]}\n\n"
	    "data: [DONE]\n\n";

	check(&llm_azure_codec, s, "Hello world", "", LLM_DEC_END, "stop");
}

Test(openai_decode, ollama_whole_calls_missing_index_and_id)
{
	/* Old Ollama: whole calls, no index, finish_reason "stop" on the
	 * same chunk, no [DONE] before EOF on some builds. */
	const char *s =
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\","
	    "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"python_exec\","
	    "\"arguments\":\"{\\\"code\\\":\\\"a=1\\\"}\"}},"
	    "{\"type\":\"function\",\"function\":{\"name\":\"python_exec\","
	    "\"arguments\":\"{\\\"code\\\":\\\"b=2\\\"}\"}}]},\"finish_reason\":null}]}\n\n"
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_3\","
	    "\"function\":{\"name\":\"python_exec\",\"arguments\":{\"code\":\"c=3\"}}}]},"
	    "\"finish_reason\":\"stop\"}]}\n\n";

	check(&llm_ollama_codec, s, "",
	    "[call_1|python_exec|{\"code\":\"a=1\"}]"
	    "[call_2|python_exec|{\"code\":\"b=2\"}]"
	    "[call_3|python_exec|{\"code\":\"c=3\"}]", LLM_DEC_END, "stop");
}

Test(openai_decode, duplicate_index_new_id_is_a_new_call)
{
	const char *s =
	    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"x1\",\"function\":{\"name\":\"python_exec\",\"arguments\":\"{}\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"x1\",\"function\":{\"name\":\"python_exec\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"x2\",\"function\":{\"name\":\"python_exec\",\"arguments\":\"\"}}]}")
	    "data: [DONE]\n";

	check(&llm_openai_codec, s, "",
	    "[x1|python_exec|{}][x2|python_exec|{}]", LLM_DEC_END, NULL);
}

Test(openai_decode, error_inside_200_stream)
{
	const char *s = CH("{\"content\":\"Hi\"}")
	    "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n";
	struct rec r;
	int retry = 0;

	check(&llm_openai_codec, s, "Hi", "", LLM_DEC_ERROR, NULL);
	run(&r, &llm_openai_codec, s, 0);
	cr_assert(strstr(dec_error(r.dec, &retry),
	    "The server had an error") != NULL);
	cr_assert_eq(retry, 1);
	rec_free(&r);
}

Test(openai_decode, llama_error_field_and_flat_vllm_error)
{
	struct rec r;

	run(&r, &llm_openai_codec, "error: {\"code\":400,\"message\":\"context too long\","
	    "\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n", 0);
	cr_assert_eq(r.st, LLM_DEC_ERROR);
	cr_assert(strstr(dec_error(r.dec, NULL), "context too long"));
	rec_free(&r);
	run(&r, &llm_openai_codec, "data: {\"object\":\"error\",\"message\":\"bad\","
	    "\"type\":\"BadRequestError\",\"code\":400}\n\n", 0);
	cr_assert_eq(r.st, LLM_DEC_ERROR);
	rec_free(&r);
}

Test(openai_decode, cut_stream_is_an_error_unless_finished)
{
	struct rec r;

	/* No finish_reason, no [DONE]: cut. The half call is not given. */
	check(&llm_openai_codec, CH("{\"content\":\"par\"}")
	    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"python_exec\",\"arguments\":\"{\\\"co\"}}]}"),
	    "par", "", LLM_DEC_ERROR, NULL);
	/* A finish_reason but no [DONE] (llama.cpp): complete. */
	run(&r, &llm_openai_codec, "data: {\"choices\":[{\"index\":0,\"delta\":"
	    "{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n", 0);
	cr_assert_eq(r.st, LLM_DEC_END);
	rec_free(&r);
	/* Garbage data is an error, not a crash. */
	run(&r, &llm_openai_codec, "data: {not json\n\n", 0);
	cr_assert_eq(r.st, LLM_DEC_ERROR);
	rec_free(&r);
}

#define AE(t, x) "event: " t "\ndata: " x "\n\n"

Test(anthropic_decode, tool_use_stream_with_ping_and_cache_usage)
{
	const char *s =
	    AE("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
	       "\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":377,"
	       "\"cache_creation_input_tokens\":10,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}")
	    AE("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
	    AE("ping", "{\"type\": \"ping\"}")
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"I'll \xc3\xa9\"}}")
	    AE("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
	    AE("content_block_start", "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
	       "\"id\":\"toolu_1\",\"name\":\"python_exec\",\"input\":{}}}")
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}")
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"code\\\": \\\"x = \\\\\"}}")
	    "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"\\\\\\\"\\\"\"}}")
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"}\"}}")
	    AE("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}")
	    AE("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":65}}")
	    AE("message_stop", "{\"type\":\"message_stop\"}");
	struct rec r;

	check(&llm_anthropic_codec, s, "I'll \xc3\xa9",
	    "[toolu_1|python_exec|{\"code\": \"x = \\\"\\\"\"}]", LLM_DEC_END, "tool_use");
	run(&r, &llm_anthropic_codec, s, 0);
	cr_assert_eq(r.nusage, 1);
	cr_assert_eq(r.u.input_tokens, 377 + 10 + 2000);
	cr_assert_eq(r.u.cached_tokens, 2000);
	cr_assert_eq(r.u.output_tokens, 65);
	rec_free(&r);
}

Test(anthropic_decode, overloaded_error_event)
{
	struct rec r;
	int retry = 0;

	run(&r, &llm_anthropic_codec,
	    AE("message_start", "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}")
	    AE("error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"), 0);
	cr_assert_eq(r.st, LLM_DEC_ERROR);
	cr_assert(strstr(dec_error(r.dec, &retry), "Overloaded"));
	cr_assert_eq(retry, 1);
	rec_free(&r);
}

Test(anthropic_decode, truncated_tool_block_is_dropped_and_eof_is_error)
{
	check(&llm_anthropic_codec,
	    AE("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
	       "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"python_exec\",\"input\":{}}}")
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
	       "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"code\\\": \\\"pri\"}}")
	    AE("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}")
	    AE("message_stop", "{\"type\":\"message_stop\"}"),
	    "", "", LLM_DEC_END, "max_tokens");
	check(&llm_anthropic_codec,
	    AE("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
	    AE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half\"}}"),
	    "half", "", LLM_DEC_ERROR, NULL);
}

Test(llm_helpers, retry_after)
{
	cr_assert_eq(retry_after_ms(NULL, "2", 0), 2000);
	cr_assert_eq(retry_after_ms(NULL, "1.5", 0), 1500);
	cr_assert_eq(retry_after_ms("250", "9", 0), 250);
	cr_assert_eq(retry_after_ms("12.7", NULL, 0), 12);
	cr_assert_eq(retry_after_ms("x", "3", 0), 3000);
	cr_assert_eq(retry_after_ms(NULL, "soon", 0), -1);
	cr_assert_eq(retry_after_ms(NULL, NULL, 0), -1);
	cr_assert_eq(retry_after_ms(NULL, "-1", 0), -1);
	/* 784111777 = Sun, 06 Nov 1994 08:49:37 GMT */
	cr_assert_eq(retry_after_ms(NULL, "Sun, 06 Nov 1994 08:49:37 GMT",
	    784111777 - 30), 30000);
	cr_assert_eq(retry_after_ms(NULL, "Sun, 06 Nov 1994 08:49:37 GMT",
	    784111777 + 30), 0);
}

static void
check_msg(const char *body, const char *want, const char *want_type)
{
	char *type, *m = llm_error_body_message(body, strlen(body), &type);
	cr_assert_str_eq(m, want);
	if (want_type == NULL)
		cr_assert_null(type, "type %s", type);
	else
		cr_assert_str_eq(type, want_type);
	free(m);
	free(type);
}

Test(llm_helpers, error_bodies_of_every_shape)
{
	check_msg("{\"error\":{\"message\":\"You exceeded\\nyour quota\",\"type\":\"insufficient_quota\","
	    "\"param\":null,\"code\":\"insufficient_quota\"}}", "You exceeded your quota",
	    "insufficient_quota");
	check_msg("{\"error\":{\"code\":\"429\",\"message\":\"Requests ... retry after 33 seconds\"}}",
	    "Requests ... retry after 33 seconds", "429");
	check_msg("{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: x\"}}",
	    "model: x", "not_found_error");
	check_msg("{\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}",
	    "Loading model", "unavailable_error");
	check_msg("{\"object\":\"error\",\"message\":\"too long\",\"type\":\"BadRequestError\",\"code\":400}",
	    "too long", "BadRequestError");
	check_msg("{\"error\":\"plain string\"}", "plain string", NULL);
	check_msg("{\"detail\":\"Not Found\"}", "Not Found", NULL);
	check_msg("<html><head><title>502 Bad Gateway</title></head></html>", "502 Bad Gateway", NULL);
	check_msg("upstream \x1b[31mfailed\n", "upstream [31mfailed", NULL);
}

Test(llm_helpers, status_messages)
{
	struct llm_config c = { .provider = "openai", .model = "gpt-x" };
	const char *b = "{\"error\":{\"message\":\"Incorrect API key provided\"}}";
	char *m;

	m = llm_status_message(&c, 401, b, strlen(b));
	cr_assert_str_eq(m, "401 Unauthorized: the API key was rejected by openai "
	    "(Incorrect API key provided)");
	free(m);
	c.api_key_from = "OPENAI_API_KEY";
	m = llm_status_message(&c, 401, b, strlen(b));
	cr_assert_str_eq(m, "401 Unauthorized: the API key from OPENAI_API_KEY was "
	    "rejected by openai (Incorrect API key provided)");
	free(m);
	c.api_key_from = NULL;
	m = llm_unreachable_hint(&c);
	cr_assert_str_eq(m, "is the server running? check --base-url / OPENAI_BASE_URL");
	free(m);
	c.provider = "azure";
	c.base_url_from = "AZURE_OPENAI_ENDPOINT";
	m = llm_unreachable_hint(&c);
	cr_assert_str_eq(m, "is the server running? check --base-url / "
	    "AZURE_OPENAI_ENDPOINT (this URL is from AZURE_OPENAI_ENDPOINT)");
	free(m);
	c.provider = "openai";
	c.base_url_from = NULL;
	m = llm_status_message(&c, 404, "{}", 2);
	cr_assert(strstr(m, "404 Not Found") == m && strstr(m, "'gpt-x'"), "%s", m);
	free(m);
	c.provider = "azure";
	c.model = "my-deploy";
	m = llm_status_message(&c, 404, "", 0);
	cr_assert(strstr(m, "no deployment 'my-deploy'"), "%s", m);
	cr_assert_null(strchr(m, '\n'));
	free(m);
	m = llm_status_message(&c, 503, "Service Unavailable\r\n\r\nplease wait", 34);
	cr_assert_str_eq(m, "503 Service Unavailable: Service Unavailable please wait");
	free(m);
}

/* Error kinds, from the bodies real servers send (host names in them
 * replaced). The kind drives retries and, later, the context budget. */

struct kcase {
	long		 status;
	const char	*body;
	enum llm_err	 kind;
};

static void
check_kinds(const struct kcase *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		enum llm_err k = llm_error_kind(c[i].status, c[i].body,
		    strlen(c[i].body));
		cr_assert_eq(k, c[i].kind, "case %zu (%ld %s): %s, want %s", i,
		    c[i].status, c[i].body, llm_err_name(k),
		    llm_err_name(c[i].kind));
	}
}

Test(llm_errors, openai_and_azure_bodies)
{
	static const struct kcase c[] = {
		{ 401, "{\"error\":{\"message\":\"Incorrect API key provided: sk-abc***xyz. You can "
		  "find your API key at https://example.invalid/account/api-keys.\",\"type\":"
		  "\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}", LLM_ERR_AUTH },
		{ 403, "{\"error\":{\"code\":\"unsupported_country_region_territory\",\"message\":"
		  "\"Country, region, or territory not supported\",\"param\":null,\"type\":"
		  "\"request_forbidden\"}}", LLM_ERR_AUTH },
		{ 429, "{\"error\":{\"message\":\"Rate limit reached for gpt-4o in organization "
		  "org-abc on tokens per min (TPM): Limit 30000, Used 29877, Requested 1372. Please "
		  "try again in 2.498s.\",\"type\":\"tokens\",\"param\":null,\"code\":"
		  "\"rate_limit_exceeded\"}}", LLM_ERR_RATE },
		{ 429, "{\"error\":{\"message\":\"You exceeded your current quota, please check your "
		  "plan and billing details.\",\"type\":\"insufficient_quota\",\"param\":null,"
		  "\"code\":\"insufficient_quota\"}}", LLM_ERR_QUOTA },
		{ 400, "{\"error\":{\"message\":\"This model's maximum context length is 128000 "
		  "tokens. However, your messages resulted in 130512 tokens. Please reduce the length "
		  "of the messages.\",\"type\":\"invalid_request_error\",\"param\":\"messages\","
		  "\"code\":\"context_length_exceeded\"}}", LLM_ERR_CONTEXT },
		{ 400, "{\"error\":{\"message\":\"Invalid value for 'content': expected a string, "
		  "got null.\",\"type\":\"invalid_request_error\",\"param\":\"messages.[1].content\","
		  "\"code\":null}}", LLM_ERR_HTTP },
		{ 500, "{\"error\":{\"message\":\"The server had an error while processing your "
		  "request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}",
		  LLM_ERR_SERVER },
		{ 503, "{\"error\":{\"message\":\"The engine is currently overloaded, please try "
		  "again later\",\"type\":\"server_error\",\"param\":null,\"code\":null}}", LLM_ERR_SERVER },
		/* Azure: string codes, no type. */
		{ 401, "{\"error\":{\"code\":\"401\",\"message\":\"Access denied due to invalid "
		  "subscription key or wrong API endpoint. Make sure to provide a valid key for an "
		  "active subscription and use a correct regional API endpoint for your resource.\"}}",
		  LLM_ERR_AUTH },
		{ 404, "{\"error\":{\"code\":\"DeploymentNotFound\",\"message\":\"The API deployment "
		  "for this resource does not exist. If you created the deployment within the last 5 "
		  "minutes, please wait a moment and try again.\"}}", LLM_ERR_HTTP },
		{ 429, "{\"error\":{\"code\":\"429\",\"message\":\"Requests to the "
		  "ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview "
		  "have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry "
		  "after 33 seconds.\"}}", LLM_ERR_RATE },
		{ 400, "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. "
		  "However, your messages resulted in 8765 tokens. Please reduce the length of the "
		  "messages.\",\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":"
		  "\"context_length_exceeded\"}}", LLM_ERR_CONTEXT },
		{ 400, "{\"error\":{\"message\":\"The response was filtered due to the prompt "
		  "triggering Azure OpenAI's content management policy.\",\"type\":null,\"param\":"
		  "\"prompt\",\"code\":\"content_filter\",\"status\":400,\"innererror\":{\"code\":"
		  "\"ResponsibleAIPolicyViolation\",\"content_filter_result\":{\"jailbreak\":"
		  "{\"filtered\":true,\"detected\":true}}}}}", LLM_ERR_HTTP },
	};

	check_kinds(c, sizeof c / sizeof c[0]);
}

Test(llm_errors, anthropic_bodies)
{
	static const struct kcase c[] = {
		{ 401, "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":"
		  "\"invalid x-api-key\"},\"request_id\":\"req_011CSHoEeqs5C35K2UUqR7Fy\"}", LLM_ERR_AUTH },
		{ 403, "{\"type\":\"error\",\"error\":{\"type\":\"permission_error\",\"message\":"
		  "\"Your API key does not have permission to use the specified resource.\"}}",
		  LLM_ERR_AUTH },
		{ 400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
		  "\"prompt is too long: 208310 tokens > 200000 maximum\"},\"request_id\":\"req_01\"}",
		  LLM_ERR_CONTEXT },
		{ 400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
		  "\"Your credit balance is too low to access the Anthropic API. Please go to Plans & "
		  "Billing to upgrade or purchase credits.\"}}", LLM_ERR_QUOTA },
		{ 429, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":"
		  "\"This request would exceed the rate limit for your organization of 50,000 input "
		  "tokens per minute.\"}}", LLM_ERR_RATE },
		{ 429, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":"
		  "\"You have reached your specified API usage limits.\",\"details\":{\"error_code\":"
		  "\"enforced_spend_limit_reached\"}}}", LLM_ERR_QUOTA },
		{ 529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
		  "\"Overloaded\"}}", LLM_ERR_SERVER },
		{ 500, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":"
		  "\"Internal server error\"}}", LLM_ERR_SERVER },
		{ 413, "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"message\":"
		  "\"Request exceeds the maximum allowed number of bytes.\"}}", LLM_ERR_HTTP },
	};

	check_kinds(c, sizeof c / sizeof c[0]);
}

Test(llm_errors, local_server_and_proxy_bodies)
{
	static const struct kcase c[] = {
		/* llama.cpp, current and before it had a type for it */
		{ 400, "{\"error\":{\"code\":400,\"message\":\"request (4476 tokens) exceeds the "
		  "available context size (4096 tokens)\",\"type\":\"exceed_context_size_error\","
		  "\"n_prompt_tokens\":4476,\"n_ctx\":4096}}", LLM_ERR_CONTEXT },
		{ 400, "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available "
		  "context size, try increasing it\",\"type\":\"invalid_request_error\"}}",
		  LLM_ERR_CONTEXT },
		{ 503, "{\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":"
		  "\"unavailable_error\"}}", LLM_ERR_SERVER },
		{ 500, "{\"code\":500,\"message\":\"Cannot use tools with stream\",\"type\":"
		  "\"server_error\"}", LLM_ERR_SERVER },
		/* vLLM's flat body */
		{ 400, "{\"object\":\"error\",\"message\":\"This model's maximum context length is "
		  "2048 tokens. However, you requested 2100 tokens (1600 in the messages, 500 in the "
		  "completion). Please reduce the length of the messages or completion.\",\"type\":"
		  "\"BadRequestError\",\"param\":null,\"code\":400}", LLM_ERR_CONTEXT },
		/* Ollama: api_error is its name for a missing model, not a crash */
		{ 404, "{\"error\":{\"message\":\"model \\\"llama3.1\\\" not found, try pulling it "
		  "first\",\"type\":\"api_error\",\"param\":null,\"code\":null}}", LLM_ERR_HTTP },
		{ 400, "{\"error\":\"the input length exceeds the context length\"}", LLM_ERR_CONTEXT },
		{ 502, "<html><head><title>502 Bad Gateway</title></head></html>", LLM_ERR_SERVER },
		{ 422, "{\"detail\":[{\"loc\":[\"body\",\"messages\"],\"msg\":\"field required\"}]}",
		  LLM_ERR_HTTP },
	};

	check_kinds(c, sizeof c / sizeof c[0]);
}

/* Errors inside a 200 stream: kind, and whether a retry may help. */
static void
stream_err(const struct llm_codec *p, const char *stream, enum llm_err kind,
    int retryable)
{
	struct rec r;
	const struct llm_error *e;

	run(&r, p, stream, 0);
	cr_assert_eq(r.st, LLM_DEC_ERROR, "%s", stream);
	e = llm_dec_error(r.dec);
	cr_assert_eq(e->kind, kind, "%s: %s (%s)", stream, llm_err_name(e->kind), e->msg);
	cr_assert_eq(e->retryable, retryable, "%s", stream);
	cr_assert(e->msg != NULL && *e->msg != '\0');
	rec_free(&r);
}

Test(llm_errors, inside_the_stream)
{
	struct buf big;
	struct rec r;
	struct sse *s;
	size_t n;

	stream_err(&llm_openai_codec, CH("{\"content\":\"Hi\"}")
	    "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n",
	    LLM_ERR_SERVER, 1);
	stream_err(&llm_openai_codec, "error: {\"code\":400,\"message\":\"the request exceeds the "
	    "available context size, try increasing it\",\"type\":\"invalid_request_error\"}\n\n"
	    "data: [DONE]\n\n", LLM_ERR_CONTEXT, 0);
	stream_err(&llm_ollama_codec, "data: {\"error\":{\"code\":400,\"message\":\"request (4476 "
	    "tokens) exceeds the available context size (4096 tokens)\",\"type\":"
	    "\"exceed_context_size_error\",\"n_prompt_tokens\":4476,\"n_ctx\":4096}}\n\n",
	    LLM_ERR_CONTEXT, 0);
	stream_err(&llm_openai_codec, "data: {\"object\":\"error\",\"message\":\"bad\","
	    "\"type\":\"BadRequestError\",\"code\":400}\n\n", LLM_ERR_HTTP, 0);
	stream_err(&llm_anthropic_codec, AE("error", "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"overloaded_error\",\"message\":\"Overloaded\"}}"), LLM_ERR_SERVER, 1);
	stream_err(&llm_anthropic_codec, AE("error", "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"rate_limit_error\",\"message\":\"slow down\"}}"), LLM_ERR_RATE, 1);
	stream_err(&llm_anthropic_codec, AE("error", "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"prompt is too long: 208310 tokens > 200000 "
	    "maximum\"}}"), LLM_ERR_CONTEXT, 0);
	/* Cut: no [DONE] nor finish_reason; no message_stop. */
	stream_err(&llm_openai_codec, CH("{\"content\":\"par\"}"), LLM_ERR_CUT, 1);
	stream_err(&llm_anthropic_codec, AE("message_start", "{\"type\":\"message_start\","
	    "\"message\":{\"usage\":{\"input_tokens\":1}}}"), LLM_ERR_CUT, 1);
	/* Broken replies. */
	stream_err(&llm_openai_codec, "data: {not json\n\n", LLM_ERR_BAD_REPLY, 0);
	stream_err(&llm_anthropic_codec, "event: message_start\ndata: [\n\n", LLM_ERR_BAD_REPLY, 0);
	/* Arguments past their bound fail the reply instead of being cut. */
	n = LLM_DEC_ARGS_MAX + 100;
	buf_init(&big, n + 1024);
	buf_adds(&big, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":"
	    "[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"python_exec\","
	    "\"arguments\":\"");
	for (size_t i = 0; i < n; i++)
		buf_addc(&big, 'x');
	buf_adds(&big, "\"}}]}}]}\n\n");
	memset(&r, 0, sizeof r);
	buf_init(&r.text, 1 << 20);
	buf_init(&r.calls, 1 << 20);
	r.p = &llm_openai_codec;
	r.dec = llm_dec_new(r.p, &sink, &r);
	s = sse_new(n + 1024, n + 1024, r_event, &r);
	sse_feed(s, big.data, big.len);
	sse_finish(s);
	sse_free(s);
	buf_free(&big);
	cr_assert_eq(r.st, LLM_DEC_ERROR);
	cr_assert_eq(llm_dec_error(r.dec)->kind, LLM_ERR_BAD_REPLY);
	cr_assert(strstr(llm_dec_error(r.dec)->msg, "too big"), "%s",
	    llm_dec_error(r.dec)->msg);
	cr_assert_str_eq(buf_str(&r.calls), "");
	rec_free(&r);
}

Test(llm_errors, names_are_distinct)
{
	for (int a = LLM_ERR_NET; a <= LLM_ERR_CANCELLED; a++) {
		cr_assert_str_neq(llm_err_name((enum llm_err)a), "unknown");
		for (int b = a + 1; b <= LLM_ERR_CANCELLED; b++)
			cr_assert_str_neq(llm_err_name((enum llm_err)a),
			    llm_err_name((enum llm_err)b));
	}
	cr_assert_str_eq(llm_err_name(LLM_ERR_CONTEXT), "context");
	cr_assert_str_eq(llm_err_name((enum llm_err)99), "unknown");
}

/* Found by fuzz_llm_openai: numbers out of long's range (a cast that
 * is undefined) in usage and error codes are ignored or kept as text. */
Test(llm_errors, huge_numbers_from_the_server)
{
	struct rec r;
	char *type, *m;
	const char *err = "{\"error\":{\"message\":\"x\",\"code\":4e83}}";

	run(&r, &llm_openai_codec, CH("{\"content\":\"a\"}")
	    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4e83,"
	    "\"completion_tokens\":-1e300,\"prompt_tokens_details\":{\"cached_tokens\":1e999}}}\n\n"
	    "data: [DONE]\n\n", 0);
	cr_assert_eq(r.st, LLM_DEC_END);
	cr_assert_eq(r.nusage, 1);
	cr_assert_eq(r.u.input_tokens, 0);
	cr_assert_eq(r.u.output_tokens, 0);
	cr_assert_eq(r.u.cached_tokens, 0);
	rec_free(&r);
	run(&r, &llm_anthropic_codec,
	    AE("message_start", "{\"type\":\"message_start\",\"message\":{\"usage\":"
	       "{\"input_tokens\":9e18,\"cache_read_input_tokens\":9e18,\"output_tokens\":3}}}")
	    AE("message_stop", "{\"type\":\"message_stop\"}"), 0);
	cr_assert_eq(r.st, LLM_DEC_END);
	cr_assert_eq(r.u.output_tokens, 3);
	rec_free(&r);
	m = llm_error_body_message(err, strlen(err), &type);
	cr_assert_str_eq(m, "x");
	cr_assert_str_eq(type, "4e+83");
	free(m);
	free(type);
	cr_assert_eq(llm_error_kind(400, err, strlen(err)), LLM_ERR_HTTP);
}

/* Thinking blocks: their text streams as reasoning (never as text), and
 * each block comes whole at its stop with its signature joined, the
 * redacted one as it came; at every split of the stream. */
static void
t_reason(void *arg, const char *s, size_t n)
{
	struct rec *r = arg;
	buf_adds(&r->text, "<r:");
	buf_add(&r->text, s, n);
	buf_adds(&r->text, ">");
}

static void
t_item(void *arg, const char *json)
{
	struct rec *r = arg;
	buf_printf(&r->calls, "{item %s}", json);
}

static const struct llm_sink think_sink = { r_text, r_call, r_usage, t_reason, t_item, NULL };

#define TE(t, d) "event: " t "\ndata: " d "\n\n"

Test(anthropic_decode, thinking_and_redacted_blocks_kept_whole)
{
	const char *s =
	    TE("message_start", "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}")
	    TE("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}")
	    TE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me \"}}")
	    TE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"think 42\"}}")
	    TE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}")
	    TE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"x+/=\"}}")
	    TE("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
	    TE("content_block_start", "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"Zm9v\"}}")
	    TE("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}")
	    TE("content_block_start", "{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
	    TE("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"It is 7.\"}}")
	    TE("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":2}")
	    TE("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}")
	    TE("message_stop", "{\"type\":\"message_stop\"}");
	size_t len = strlen(s);

	for (size_t at = 0; at <= len; at += 7) {
		struct rec r;
		struct sse *p;

		memset(&r, 0, sizeof r);
		buf_init(&r.text, 1 << 20);
		buf_init(&r.calls, 1 << 20);
		r.dec = llm_dec_new(&llm_anthropic_codec, &think_sink, &r);
		r.st = LLM_DEC_MORE;
		p = sse_new(1 << 16, 1 << 20, r_event, &r);
		sse_feed(p, s, at);
		sse_feed(p, s + at, len - at);
		sse_finish(p);
		sse_free(p);
		cr_assert_eq(r.st, LLM_DEC_END);
		cr_assert_str_eq(buf_str(&r.text), "<r:Let me ><r:think 42>It is 7.");
		cr_assert_str_eq(buf_str(&r.calls),
		    "{item {\"type\":\"thinking\",\"thinking\":\"Let me think 42\","
		    "\"signature\":\"EqQBx+/=\"}}"
		    "{item {\"type\":\"redacted_thinking\",\"data\":\"Zm9v\"}}");
		rec_free(&r);
	}
}
