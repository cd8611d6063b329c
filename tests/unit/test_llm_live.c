/* End-to-end tests of the llm layer: real requests through http.c and
 * terp's loop against tests/fake_model.py (spawned per test on
 * 127.0.0.1): retry-after then success, 503 forever, cut streams,
 * cancel, in-stream errors and the idle timeout. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/util.h"

struct fake {
	pid_t	 pid;
	int	 port;
	char	 dir[64];
	char	 log[96];
};

static void
fake_start(struct fake *f, const char *script)
{
	char path[128];
	int p[2];
	FILE *fp;

	strcpy(f->dir, "/tmp/terp-llm-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(path, sizeof path, "%s/script.json", f->dir);
	snprintf(f->log, sizeof f->log, "%s/log.jsonl", f->dir);
	fp = fopen(path, "w");
	fputs(script, fp);
	fclose(fp);
	cr_assert_eq(pipe(p), 0);
	f->pid = fork();
	cr_assert_geq(f->pid, 0);
	if (f->pid == 0) {
		/* A failed assertion ends the test process without
		 * fake_stop: the server must not outlive it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		/* any python 3 will do (the standard library only); the
		 * path is the checkout's (checkout.c) */
		execlp("python3", "python3", "tests/fake_model.py", path, f->log,
		    (char *)NULL);
		execl("/usr/bin/python3", "python3", "tests/fake_model.py", path,
		    f->log, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	fp = fdopen(p[0], "r");
	cr_assert_eq(fscanf(fp, "%d", &f->port), 1, "fake_model did not start (python3 "
	    "running tests/fake_model.py on 127.0.0.1: is loopback up?)");
	fclose(fp);
}

static void
fake_stop(struct fake *f)
{
	char cmd[128];

	if (f->pid > 0) {	/* never kill(-1, ...) */
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		cr_log_warn("cleanup failed");
}

/* Number of requests the fake server saw. */
static int
fake_requests(struct fake *f, char **log)
{
	size_t len;
	char *s = read_file(f->log, 1 << 20, &len);
	int n = 0;

	for (char *p = s; p != NULL && *p; p++)
		n += *p == '\n';
	if (log != NULL)
		*log = s;
	else
		free(s);
	return n;
}

struct run {
	struct loop	*loop;
	struct llm	*m;
	struct buf	 text, calls, notices;
	char		*stop, *error;
	struct llm_error err;	/* msg points to error */
	int		 ended, after_end, cancel_on_text;
	int		 ntext;
	size_t		 text_bytes;
};

static void
c_text(void *arg, const char *s, size_t n)
{
	struct run *r = arg;
	r->after_end += r->ended;
	r->ntext++;
	r->text_bytes += n;
	buf_add(&r->text, s, n);
	if (r->cancel_on_text) {
		llm_cancel(r->m);
		r->ended = 1;
	}
}

static void
c_call(void *arg, const char *id, const char *name, const char *args)
{
	struct run *r = arg;
	r->after_end += r->ended;
	buf_printf(&r->calls, "[%s|%s|%s]", id, name, args);
}

static void
c_notice(void *arg, const char *msg)
{
	struct run *r = arg;
	buf_printf(&r->notices, "%s\n", msg);
}

static void
c_done(void *arg, const char *stop)
{
	struct run *r = arg;
	r->after_end += r->ended;
	r->ended = 1;
	r->stop = xstrdup(stop);
}

static void
c_error(void *arg, const struct llm_error *e)
{
	struct run *r = arg;
	r->after_end += r->ended;
	r->ended = 1;
	r->error = xstrdup(e->msg);
	r->err = *e;
	r->err.msg = r->error;
}

static const struct llm_cbs cbs = {
	.text = c_text, .tool_call = c_call, .notice = c_notice,
	.done = c_done, .error = c_error,
};

static void
run_init(struct run *r, struct fake *f, const char *provider, int retries,
    long idle_ms)
{
	struct llm_config cfg;
	char *url = xasprintf("http://127.0.0.1:%d/v1", f->port), *err = NULL;

	memset(r, 0, sizeof *r);
	memset(&cfg, 0, sizeof cfg);
	cfg.provider = (char *)provider;
	cfg.model = "fake-model";
	cfg.base_url = url;
	cfg.api_key = "sk-test-key";
	cfg.max_retries = retries;
	cfg.connect_timeout_ms = 2000;
	cfg.idle_timeout_ms = idle_ms;
	cfg.max_tokens = 100;
	r->loop = loop_new();
	r->m = llm_new(r->loop, &cfg, &err);
	cr_assert_not_null(r->m, "%s", err);
	free(url);
	buf_init(&r->text, 1 << 16);
	buf_init(&r->calls, 1 << 16);
	buf_init(&r->notices, 1 << 16);
}

static void
run_free(struct run *r)
{
	llm_free(r->m);
	loop_free(r->loop);
	buf_free(&r->text);
	buf_free(&r->calls);
	buf_free(&r->notices);
	free(r->stop);
	free(r->error);
}

/* Asks, then runs the loop until the end or max_ms. */
static void
ask(struct run *r, int64_t max_ms)
{
	cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
	char *err = NULL;
	int64_t end = now_ms() + max_ms;

	cr_assert_eq(llm_request(r->m, "sys", msgs, &cbs, r, &err), 0, "%s", err);
	cJSON_Delete(msgs);
	cr_assert_eq(llm_busy(r->m), 1);
	while (!r->ended && now_ms() < end)
		loop_run_once(r->loop, 50);
	cr_assert(r->ended, "the request did not end in %ld ms", (long)max_ms);
}

Test(llm_live, rate_limited_then_success, .timeout = 20)
{
	struct fake f;
	struct run r;
	char *log;

	fake_start(&f, "{\"turns\":["
	    "{\"status\":429,\"headers\":{\"retry-after-ms\":\"30\"},"
	    " \"body\":{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}},"
	    "{\"openai\":{\"text\":\"h\xc3\xa9llo\",\"text_split\":2,"
	    " \"tool_calls\":[{\"id\":\"call_9\",\"code\":\"print(\\\"\xc3\xa9\\\")\"}],"
	    " \"args_split\":3},\"chunk_bytes\":5}]}");
	run_init(&r, &f, "openai", 3, 5000);
	ask(&r, 10000);
	cr_assert_null(r.error, "%s", r.error);
	cr_assert_str_eq(r.stop, "tool_calls");
	cr_assert_str_eq(buf_str(&r.text), "h\xc3\xa9llo");
	cr_assert_str_eq(buf_str(&r.calls),
	    "[call_9|python_exec|{\"code\": \"print(\\\"\xc3\xa9\\\")\"}]");
	cr_assert(strstr(buf_str(&r.notices), "429 Too Many Requests: Rate limit "
	    "reached; retrying in 0.0 s (1/3)") != NULL, "%s", buf_str(&r.notices));
	cr_assert_eq(fake_requests(&f, &log), 2);
	cr_assert(strstr(log, "\"authorization\": \"Bearer sk-test-key\""), "%s", log);
	cr_assert(strstr(log, "\"path\": \"/v1/chat/completions\""));
	cr_assert(strstr(log, "\"stream\": true"));
	cr_assert(strstr(log, "\"include_usage\": true"));
	free(log);
	cr_assert_eq(llm_busy(r.m), 0);
	cr_assert_eq(r.after_end, 0);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, unavailable_forever_gives_up, .timeout = 20)
{
	struct fake f;
	struct run r;

	fake_start(&f, "{\"turns\":[{\"status\":503,\"repeat\":true,"
	    "\"headers\":{\"retry-after\":\"0.01\"},"
	    "\"body\":{\"error\":{\"message\":\"engine overloaded\",\"type\":\"server_error\"}}}]}");
	run_init(&r, &f, "openai", 3, 5000);
	ask(&r, 10000);
	cr_assert_str_eq(r.error, "503 Service Unavailable: engine overloaded "
	    "(gave up after 3 retries)");
	cr_assert_eq(r.err.kind, LLM_ERR_SERVER);
	cr_assert_eq(r.err.http_status, 503);
	cr_assert_eq(r.err.retryable, 1);
	cr_assert_eq(fake_requests(&f, NULL), 4);
	cr_assert(strstr(buf_str(&r.notices), "(3/3)") != NULL);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, unauthorized_is_not_retried, .timeout = 20)
{
	struct fake f;
	struct run r;

	fake_start(&f, "{\"turns\":[{\"status\":401,\"body\":{\"type\":\"error\","
	    "\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}}]}");
	run_init(&r, &f, "anthropic", 3, 5000);
	ask(&r, 10000);
	cr_assert_str_eq(r.error, "401 Unauthorized: the API key was rejected by "
	    "anthropic (invalid x-api-key)");
	cr_assert_eq(r.err.kind, LLM_ERR_AUTH);
	cr_assert_eq(r.err.http_status, 401);
	cr_assert_eq(r.err.retryable, 0);
	cr_assert_eq(fake_requests(&f, NULL), 1);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, cut_after_output_is_reported_not_retried, .timeout = 20)
{
	struct fake f;
	struct run r;

	fake_start(&f, "{\"turns\":[{\"openai\":{\"text\":\"partial\"},\"cut_after\":2},"
	    "{\"openai\":{\"text\":\"never\"}}]}");
	run_init(&r, &f, "openai", 3, 5000);
	ask(&r, 10000);
	cr_assert_str_eq(buf_str(&r.text), "partial");
	cr_assert_not_null(r.error);
	cr_assert(strstr(r.error, "cut midway") != NULL, "%s", r.error);
	cr_assert(strstr(r.error, "incomplete") != NULL, "%s", r.error);
	cr_assert_eq(r.err.kind, LLM_ERR_CUT);
	cr_assert_eq(r.err.http_status, 200);
	cr_assert_eq(fake_requests(&f, NULL), 1);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, cut_before_output_is_retried, .timeout = 20)
{
	struct fake f;
	struct run r;

	fake_start(&f, "{\"turns\":[{\"openai\":{\"text\":\"lost\"},\"cut_after\":1},"
	    "{\"openai\":{\"text\":\"second try\"}}]}");
	run_init(&r, &f, "openai", 3, 5000);
	ask(&r, 10000);
	cr_assert_null(r.error, "%s", r.error);
	cr_assert_str_eq(buf_str(&r.text), "second try");
	cr_assert(strstr(buf_str(&r.notices), "cut midway") != NULL);
	cr_assert_eq(fake_requests(&f, NULL), 2);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, anthropic_overloaded_in_stream_then_success, .timeout = 20)
{
	struct fake f;
	struct run r;
	char *log;

	fake_start(&f, "{\"turns\":["
	    "{\"events\":[{\"event\":\"error\",\"data\":{\"type\":\"error\","
	    "  \"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}]},"
	    "{\"anthropic\":{\"text\":\"Sure.\",\"tool_calls\":[{\"id\":\"toolu_1\","
	    "  \"code\":\"1+1\"}],\"args_split\":4}}]}");
	run_init(&r, &f, "anthropic", 2, 5000);
	ask(&r, 10000);
	cr_assert_null(r.error, "%s", r.error);
	cr_assert_str_eq(r.stop, "tool_use");
	cr_assert_str_eq(buf_str(&r.text), "Sure.");
	cr_assert_str_eq(buf_str(&r.calls), "[toolu_1|python_exec|{\"code\": \"1+1\"}]");
	cr_assert_eq(fake_requests(&f, &log), 2);
	cr_assert(strstr(log, "\"x-api-key\": \"sk-test-key\""));
	cr_assert(strstr(log, "\"anthropic-version\": \"2023-06-01\""));
	cr_assert(strstr(log, "\"path\": \"/v1/messages\""));
	free(log);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, error_inside_200_after_text_is_an_error, .timeout = 20)
{
	struct fake f;
	struct run r;

	fake_start(&f, "{\"turns\":[{\"events\":["
	    "{\"data\":{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}},"
	    "{\"data\":{\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}}]}]}");
	run_init(&r, &f, "openai", 3, 5000);
	ask(&r, 10000);
	cr_assert_str_eq(buf_str(&r.text), "Hel");
	cr_assert_str_eq(r.error, "the model's stream reported an error: The server had an error");
	cr_assert_eq(r.err.kind, LLM_ERR_SERVER);
	cr_assert_eq(r.err.http_status, 200);
	cr_assert_eq(fake_requests(&f, NULL), 1);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, cancel_from_the_text_callback, .timeout = 20)
{
	struct fake f;
	struct run r;
	int64_t end;

	fake_start(&f, "{\"turns\":[{\"openai\":{\"text\":\"aaaaaaaaaaaaaaaaaaaa\","
	    "\"text_split\":1},\"chunk_delay\":0.05}]}");
	run_init(&r, &f, "openai", 3, 5000);
	r.cancel_on_text = 1;
	ask(&r, 10000);
	cr_assert_eq(llm_busy(r.m), 0);
	/* Nothing more may arrive. */
	end = now_ms() + 400;
	while (now_ms() < end)
		loop_run_once(r.loop, 50);
	cr_assert_eq(r.ntext, 1);
	cr_assert_null(r.stop);
	cr_assert_null(r.error);
	run_free(&r);
	fake_stop(&f);
}

static void
cancel_now(struct loop *l, void *arg)
{
	struct run *r = arg;
	(void)l;
	llm_cancel(r->m);
	r->ended = 1;
}

Test(llm_live, cancel_while_waiting_is_immediate, .timeout = 20)
{
	struct fake f;
	struct run r;
	int64_t t0, end;

	/* The server answers after 30 s, past the test's own timeout: a
	 * cancel that waited for it (not a slow machine) fails, at ask()'s
	 * safety net. */
	fake_start(&f, "{\"turns\":[{\"delay\":30,\"openai\":{\"text\":\"late\"}}]}");
	run_init(&r, &f, "openai", 3, 60000);
	loop_timer_add(r.loop, 200, cancel_now, &r);
	t0 = now_ms();
	ask(&r, 15000);
	cr_assert_lt(now_ms() - t0, 15000, "the cancel waited for the server's answer");
	cr_assert_eq(llm_busy(r.m), 0);
	end = now_ms() + 300;
	while (now_ms() < end)
		loop_run_once(r.loop, 50);
	cr_assert_eq(r.ntext, 0);
	cr_assert_null(r.stop);
	cr_assert_null(r.error);
	/* The client is reusable at once. */
	r.ended = 0;
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, silent_stream_hits_the_idle_timeout, .timeout = 20)
{
	struct fake f;
	struct run r;

	/* the server hangs far longer than the safety net of ask() */
	fake_start(&f, "{\"turns\":[{\"openai\":{\"text\":\"x\",\"done\":false},"
	    "\"cut_after\":2,\"hang\":60}]}");
	run_init(&r, &f, "openai", 0, 300);
	ask(&r, 15000);
	cr_assert_str_eq(buf_str(&r.text), "x");
	cr_assert(strstr(r.error, "no data from the server") != NULL, "%s", r.error);
	cr_assert_eq(r.err.kind, LLM_ERR_CUT);
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, connection_refused_is_retried_then_reported, .timeout = 20)
{
	struct fake f;
	struct run r;

	/* A port nobody listens on: start and stop a server. */
	fake_start(&f, "{\"turns\":[]}");
	kill(f.pid, SIGTERM);
	waitpid(f.pid, NULL, 0);
	run_init(&r, &f, "ollama", 1, 5000);
	ask(&r, 10000);
	cr_assert(strstr(r.error, "cannot reach http://127.0.0.1:") == r.error, "%s", r.error);
	cr_assert(strstr(r.error, "(gave up after 1 retry)") != NULL, "%s", r.error);
	cr_assert_eq(r.err.kind, LLM_ERR_NET);
	cr_assert_eq(r.err.http_status, 0);
	run_free(&r);
	f.pid = 0;
	fake_stop(&f);
}

/* One failed request, not retried although retries are allowed. */
static void
fails_once(const char *provider, const char *script, enum llm_err kind,
    int status, const char *msg_part)
{
	struct fake f;
	struct run r;

	fake_start(&f, script);
	run_init(&r, &f, provider, 3, 5000);
	ask(&r, 10000);
	cr_assert_not_null(r.error);
	cr_assert_eq(r.err.kind, kind, "%s: %s", llm_err_name(r.err.kind), r.error);
	cr_assert_eq(r.err.http_status, status);
	cr_assert_eq(r.err.retryable, 0);
	cr_assert(strstr(r.error, msg_part) != NULL, "%s", r.error);
	cr_assert_eq(fake_requests(&f, NULL), 1);
	cr_assert_str_eq(buf_str(&r.notices), "");
	run_free(&r);
	fake_stop(&f);
}

Test(llm_live, quota_spend_limit_and_context_are_not_retried, .timeout = 20)
{
	fails_once("openai", "{\"turns\":[{\"status\":429,\"body\":{\"error\":{"
	    "\"message\":\"You exceeded your current quota, please check your plan and "
	    "billing details.\",\"type\":\"insufficient_quota\",\"param\":null,"
	    "\"code\":\"insufficient_quota\"}}}]}", LLM_ERR_QUOTA, 429, "quota exhausted");
	fails_once("anthropic", "{\"turns\":[{\"status\":429,\"body\":{\"type\":\"error\","
	    "\"error\":{\"type\":\"rate_limit_error\",\"message\":\"You have reached your "
	    "specified API usage limits.\",\"details\":{\"error_code\":"
	    "\"enforced_spend_limit_reached\"}}}}]}", LLM_ERR_QUOTA, 429, "usage limits");
	fails_once("openai", "{\"turns\":[{\"status\":400,\"body\":{\"error\":{"
	    "\"message\":\"This model's maximum context length is 128000 tokens. However, "
	    "your messages resulted in 130512 tokens.\",\"type\":\"invalid_request_error\","
	    "\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}}]}",
	    LLM_ERR_CONTEXT, 400, "maximum context length");
	fails_once("anthropic", "{\"turns\":[{\"events\":[{\"event\":\"error\",\"data\":"
	    "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
	    "\"message\":\"prompt is too long: 208310 tokens > 200000 maximum\"}}}]}]}",
	    LLM_ERR_CONTEXT, 200, "prompt is too long");
}

Test(llm_live, reply_text_past_its_bound_is_an_error, .timeout = 20)
{
	struct fake f;
	struct run r;
	size_t n = LLM_REPLY_TEXT_MAX + 1000;
	char *text = xmalloc(n + 1), *script;

	/* "é" in every 64 KiB piece: the bound must not cut a character
	 * either (a UTF-8 carry never holds more than 3 bytes). */
	memset(text, 'a', n);
	text[n] = '\0';
	for (size_t i = 100; i + 1 < n; i += 65536) {
		text[i] = '\xc3';
		text[i + 1] = '\xa9';
	}
	script = xasprintf("{\"turns\":[{\"openai\":{\"text\":\"%s\","
	    "\"text_split\":65536}},{\"openai\":{\"text\":\"never\"}}]}", text);
	free(text);
	fake_start(&f, script);
	free(script);
	run_init(&r, &f, "openai", 3, 20000);
	ask(&r, 50000);
	cr_assert_null(r.stop);
	cr_assert_not_null(r.error, "the reply went through whole");
	cr_assert_eq(r.err.kind, LLM_ERR_BAD_REPLY);
	cr_assert(strstr(r.error, "passed 4 MiB") != NULL, "%s", r.error);
	cr_assert_leq(r.text_bytes, LLM_REPLY_TEXT_MAX);
	cr_assert_gt(r.text_bytes, LLM_REPLY_TEXT_MAX - 70000);
	cr_assert_eq(fake_requests(&f, NULL), 1);
	cr_assert_eq(llm_busy(r.m), 0);
	cr_assert_eq(r.after_end, 0);
	run_free(&r);
	fake_stop(&f);
}

/* The easy handle of a finished request is kept for the next (http.c):
 * nothing of the first answer may show in the second, here a server
 * gone since (no status, no text, a network error). */
Test(llm_live, a_kept_handle_carries_nothing_over, .timeout = 20)
{
	struct fake f;
	struct run r;

	fake_start(&f, "{\"turns\":[{\"openai\":{\"text\":\"first\"}}]}");
	run_init(&r, &f, "openai", 0, 5000);
	ask(&r, 10000);
	cr_assert_null(r.error, "%s", r.error);
	cr_assert_str_eq(buf_str(&r.text), "first");
	kill(f.pid, SIGTERM);
	waitpid(f.pid, NULL, 0);
	f.pid = 0;
	r.ended = 0;
	buf_reset(&r.text);
	ask(&r, 10000);
	cr_assert_not_null(r.error);
	cr_assert(strstr(r.error, "cannot reach http://127.0.0.1:") == r.error, "%s", r.error);
	cr_assert_eq(r.err.kind, LLM_ERR_NET);
	cr_assert_eq(r.err.http_status, 0);
	cr_assert_str_eq(buf_str(&r.text), "");
	cr_assert_eq(r.after_end, 0);
	run_free(&r);
	fake_stop(&f);
}

/* A body of many upload buffers (curl sends one per call) goes out in
 * a few turns of the loop, not one turn (a poll of every descriptor)
 * per buffer: a request holds the whole conversation. 8 MB is 129 of
 * curl's buffers; the fake reads it all and answers. */
Test(llm_live, a_big_body_goes_out_in_few_turns_of_the_loop, .timeout = 20)
{
	struct fake f;
	struct run r;
	cJSON *msgs = cJSON_CreateArray(), *m = cJSON_CreateObject();
	size_t big = 8u << 20, len;
	char *s = xmalloc(big + 1), *err = NULL, *log;
	int turns = 0;
	int64_t end;

	memset(s, 'x', big);
	memcpy(s + big - 8, "THE-END!", 8);
	s[big] = '\0';
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", s);
	cJSON_AddItemToArray(msgs, m);
	fake_start(&f, "{\"turns\":[{\"openai\":{\"text\":\"read it\"}}]}");
	run_init(&r, &f, "openai", 0, 10000);
	cr_assert_eq(llm_request(r.m, "sys", msgs, &cbs, &r, &err), 0, "%s", err);
	end = now_ms() + 20000;
	while (!r.ended && now_ms() < end) {
		loop_run_once(r.loop, 50);
		turns++;
	}
	cr_assert(r.ended);
	cr_assert_null(r.error, "%s", r.error);
	cr_assert_str_eq(buf_str(&r.text), "read it");
	cr_assert_lt(turns, 64, "%d turns of the loop for 129 buffers", turns);
	log = read_file(f.log, 32u << 20, &len);
	cr_assert_not_null(log);
	cr_assert_not_null(strstr(log, "xxxxTHE-END!"), "the body arrived whole");
	free(log);
	free(s);
	cJSON_Delete(msgs);
	run_free(&r);
	fake_stop(&f);
}
