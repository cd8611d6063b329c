/* The demo provider through llm.h: the recorded replies come back in
 * order for each step of a question, streamed in pieces; an unknown
 * question gets the polite explanation. Uses examples/demo.json. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/util.h"

struct drun {
	struct buf	 text, calls;
	char		*stop;
	int		 ended, ntext;
};

static void
d_text(void *arg, const char *s, size_t n)
{
	struct drun *r = arg;
	r->ntext++;
	buf_add(&r->text, s, n);
}

static void
d_call(void *arg, const char *id, const char *name, const char *args)
{
	struct drun *r = arg;
	buf_printf(&r->calls, "[%s|%s|%s]", id, name, args);
}

static void
d_done(void *arg, const char *stop)
{
	struct drun *r = arg;
	r->ended = 1;
	r->stop = xstrdup(stop);
}

static void
d_error(void *arg, const struct llm_error *e)
{
	struct drun *r = arg;
	r->ended = 1;
	cr_assert_fail("demo error: %s", e->msg);
}

static const struct llm_cbs dcbs = {
	.text = d_text, .tool_call = d_call, .done = d_done, .error = d_error,
};

static void
step(struct loop *l, struct llm *m, const char *conv, struct drun *r)
{
	cJSON *msgs = cJSON_Parse(conv);
	char *err = NULL;
	int64_t end = now_ms() + 10000;

	memset(r, 0, sizeof *r);
	buf_init(&r->text, 1 << 16);
	buf_init(&r->calls, 1 << 16);
	cr_assert_eq(llm_request(m, NULL, msgs, &dcbs, r, &err), 0);
	cJSON_Delete(msgs);
	while (!r->ended && now_ms() < end)
		loop_run_once(l, 50);
	cr_assert(r->ended);
	cr_assert_eq(llm_busy(m), 0);
}

static void
drun_free(struct drun *r)
{
	buf_free(&r->text);
	buf_free(&r->calls);
	free(r->stop);
}

Test(llm_demo, replays_the_recorded_steps)
{
	struct llm_config cfg = { .provider = "demo", .model = "recorded",
	    .demo_script = "examples/demo.json" };
	struct loop *l = loop_new();
	char *err = NULL;
	struct llm *m = llm_new(l, &cfg, &err);
	struct drun r;

	cr_assert_not_null(m, "%s", err);
	step(l, m, "[{\"role\":\"user\",\"content\":\"What month had the highest "
	    "revenue per dollar of marketing spend, per channel?\"}]", &r);
	cr_assert_str_eq(r.stop, "tool_calls");
	cr_assert(r.ntext > 2, "streamed in pieces");
	cr_assert(strstr(buf_str(&r.calls), "[demo_0_0_0|python_exec|{\"code\":\"import pandas"));
	cr_assert(strstr(buf_str(&r.calls), "/workspace/data/sales.csv"));
	drun_free(&r);
	/* Third step (two assistant turns done): the final answer. */
	step(l, m, "[{\"role\":\"user\",\"content\":\"what month had the highest revenue "
	    "per dollar of marketing spend per channel\"},"
	    "{\"role\":\"assistant\",\"content\":null},{\"role\":\"tool\",\"content\":\"\"},"
	    "{\"role\":\"assistant\",\"content\":null},{\"role\":\"tool\",\"content\":\"\"}]", &r);
	cr_assert_str_eq(r.stop, "stop");
	cr_assert_str_eq(buf_str(&r.calls), "");
	cr_assert(strstr(buf_str(&r.text), "2023-12, with 10.05"), "%s", buf_str(&r.text));
	drun_free(&r);
	step(l, m, "[{\"role\":\"user\",\"content\":\"Forecast next year please\"}]", &r);
	cr_assert(strstr(buf_str(&r.text), "only knows its two recorded questions"));
	cr_assert(strstr(buf_str(&r.text), "OPENAI_API_KEY"));
	drun_free(&r);
	llm_free(m);
	loop_free(l);
}

/* llm_common.c's provider names (what the configuration accepts) and
 * llm.c's table (what llm_new opens) are two lists: they must agree. */
Test(llm, every_name_the_config_accepts_opens_and_no_other)
{
	static const char *const names[] = { "openai", "azure", "anthropic", "ollama",
	    "demo" };
	struct loop *l = loop_new();

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct llm_config cfg = { .provider = (char *)names[i], .model = "m",
		    .base_url = "http://127.0.0.1:9/v1", .api_key = "sk-x",
		    .max_tokens = 100 };
		char *err = NULL;
		struct llm *m;

		cr_assert(llm_is_provider(names[i], strlen(names[i])), "%s", names[i]);
		m = llm_new(l, &cfg, &err);
		cr_assert(m != NULL || strstr(err, "unknown provider") == NULL,
		    "%s: %s", names[i], err);
		llm_free(m);
		free(err);
	}
	cr_assert(!llm_is_provider("openai2", 7));
	cr_assert(!llm_is_provider("open", 4));
	loop_free(l);
}
