/* kernel_aca's pure parts: what the token command prints and what the
 * session pool answers. Every input here comes from outside terp. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/digest.h"
#include "terp/kernel_aca.h"
#include "terp/util.h"

/* A JWT (unsigned) whose payload is the JSON text payload. */
static char *
make_jwt(const char *payload)
{
	size_t n;
	char *b = base64_encode(payload, strlen(payload), &n), *s;

	/* base64url without padding, as JWTs are written */
	for (char *p = b; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	while (n > 0 && b[n - 1] == '=')
		b[--n] = '\0';
	s = xasprintf("eyJhbGciOiJub25lIn0.%s.c2ln", b);
	free(b);
	return s;
}

/* ------------------------------------------------------------ JWT */

Test(aca_jwt, exp_and_aud)
{
	char aud[64];
	int64_t exp;
	char *t = make_jwt("{\"aud\":\"api://x.example.invalid\",\"exp\":1893456000}");

	cr_assert_eq(aca_jwt_claims(t, &exp, aud, sizeof aud), 0);
	cr_assert_eq(exp, 1893456000);
	cr_assert_str_eq(aud, "api://x.example.invalid");
	free(t);
}

Test(aca_jwt, aud_list_and_control_characters)
{
	char aud[8];
	int64_t exp;
	char *t = make_jwt("{\"aud\":[\"a\\u001b[2Jbcdefghij\",\"z\"]}");

	cr_assert_eq(aca_jwt_claims(t, &exp, aud, sizeof aud), 0);
	cr_assert_eq(exp, 0);
	cr_assert_str_eq(aud, "a[2Jbcd");	/* escape dropped, cut to fit */
	free(t);
}

Test(aca_jwt, not_a_jwt)
{
	int64_t exp = 5;

	cr_assert_eq(aca_jwt_claims("opaque-token", &exp, NULL, 0), -1);
	cr_assert_eq(exp, 0);
	cr_assert_eq(aca_jwt_claims("a..b", &exp, NULL, 0), -1);
	cr_assert_eq(aca_jwt_claims("a.!!!!.b", &exp, NULL, 0), -1);
	cr_assert_eq(aca_jwt_claims("a.eyJ.b", &exp, NULL, 0), -1);	/* 3 chars: no */
	cr_assert_eq(aca_jwt_claims("a.WzFd.b", &exp, NULL, 0), -1);	/* [1]: no object */
}

Test(aca_jwt, absurd_exp_ignored)
{
	int64_t exp;
	char *t = make_jwt("{\"exp\":1e300}");

	cr_assert_eq(aca_jwt_claims(t, &exp, NULL, 0), 0);
	cr_assert_eq(exp, 0);
	free(t);
}

/* ------------------------------------------------------------ token output */

Test(aca_token, bare_token_trimmed)
{
	const char *why = NULL;
	int64_t exp;
	char *t = aca_token_parse("  abc.DEF-123_x\n", 16, &exp, &why);

	cr_assert_str_eq(t, "abc.DEF-123_x");
	cr_assert_eq(exp, 0);
	free(t);
}

Test(aca_token, jwt_exp_read)
{
	const char *why;
	int64_t exp;
	char *j = make_jwt("{\"exp\":1700000000}");
	char *t = aca_token_parse(j, strlen(j), &exp, &why);

	cr_assert_str_eq(t, j);
	cr_assert_eq(exp, 1700000000);
	free(t);
	free(j);
}

Test(aca_token, az_json)
{
	const char *out = "{\n  \"accessToken\": \"tok-abcdefgh\",\n  \"expiresOn\": "
	    "\"2030-01-01 00:00:00.000000\",\n  \"expires_on\": 1893456000,\n"
	    "  \"tokenType\": \"Bearer\"\n}\n";
	const char *why;
	int64_t exp;
	char *t = aca_token_parse(out, strlen(out), &exp, &why);

	cr_assert_str_eq(t, "tok-abcdefgh");
	cr_assert_eq(exp, 1893456000);
	free(t);
	out = "{\"accessToken\":\"tok-abcdefgh\",\"expires_on\":\"1893456001\"}";
	t = aca_token_parse(out, strlen(out), &exp, &why);
	cr_assert_eq(exp, 1893456001);
	free(t);
}

Test(aca_token, refused_and_never_quoted)
{
	const char *bad[] = { "", "  \n", "two words-secretsecret", "line1\nline2secret",
	    "{\"tokenType\":\"Bearer\"}", "{nope secretsecret", "short", "tok\x1b[31msecret" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *why = NULL;
		int64_t exp;
		cr_assert_null(aca_token_parse(bad[i], strlen(bad[i]), &exp, &why), "%zu", i);
		cr_assert_not_null(why);
		cr_assert_null(strstr(why, "secret"), "%s", why);
	}
}

Test(aca_token, too_long)
{
	char *big = xmalloc(20000);
	const char *why;
	int64_t exp;

	memset(big, 'a', 19999);
	big[19999] = '\0';
	cr_assert_null(aca_token_parse(big, strlen(big), &exp, &why));
	cr_assert_str_eq(why, "its output is too long to be a token");
	free(big);
}

/* ------------------------------------------------------------ redaction */

Test(aca_redact, first_line_only)
{
	const char *e = "\n  \nERROR: Please run 'az login' to set up an account.\nmore\n";
	char *l = aca_redact_line(e, strlen(e), NULL);

	cr_assert_str_eq(l, "ERROR: Please run 'az login' to set up an account.");
	free(l);
}

Test(aca_redact, tokens_and_secret)
{
	char *j = make_jwt("{\"exp\":1}");
	char *e = xasprintf("bad %s and opaque-SECRETVALUE-1234 and %s end", j,
	    "AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjjjKKKKllll0000");
	char *l = aca_redact_line(e, strlen(e), "opaque-SECRETVALUE-1234");

	cr_assert_str_eq(l, "bad [redacted] and [redacted] and [redacted] end");
	free(l);
	free(e);
	free(j);
}

/* Found by fuzz_aca: a secret holding the byte terp marks redactions
 * with was found again after each mark, for ever. The timeout only
 * stops the old code's endless loop; the call takes microseconds. */
Test(aca_redact, secret_holding_the_mark, .timeout = 60)
{
	const char e[] = "ab\x01\x01\x01\x01\x01\x01\x01\x01" "cd";
	char *l = aca_redact_line(e, sizeof e - 1, "\x01\x01\x01\x01\x01\x01\x01\x01");

	cr_assert_str_eq(l, "ab[redacted]cd");
	free(l);
}

Test(aca_redact, controls_escaped_and_cut)
{
	char line[600];
	char *l;

	memset(line, 'a', sizeof line);
	memcpy(line, "x\x1b]0;t\x07y ", 9);
	for (size_t i = 9; i < sizeof line; i += 10)
		line[i] = ' ';	/* no long runs: nothing redacted */
	l = aca_redact_line(line, sizeof line, NULL);
	cr_assert_null(strchr(l, '\x1b'));
	cr_assert_null(strchr(l, '\x07'));
	cr_assert_not_null(strstr(l, "\\u001b"));
	cr_assert_leq(strlen(l), 200);
	free(l);
}

/* ------------------------------------------------------------ executions */

Test(aca_exec, properties_shape)
{
	const char *b = "{\"$id\":\"1\",\"properties\":{\"$id\":\"2\",\"status\":\"Success\","
	    "\"stdout\":\"hello world\\n\",\"stderr\":\"\",\"result\":42,"
	    "\"executionTimeInMilliseconds\":33}}";
	struct aca_exec e;
	const char *why;

	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert(e.ok);
	cr_assert_str_eq(e.out, "hello world\n");
	cr_assert_str_eq(e.value, "42");
	cr_assert_eq(e.ms, 33);
	aca_exec_free(&e);
}

Test(aca_exec, executions_shape)
{
	const char *b = "{\"id\":\"x\",\"identifier\":\"s\",\"executionType\":\"Synchronous\","
	    "\"status\":\"Succeeded\",\"result\":{\"stdout\":\"63\\n\",\"stderr\":\"w\","
	    "\"executionResult\":true,\"executionTimeInMilliseconds\":4}}";
	struct aca_exec e;
	const char *why;

	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert(e.ok);
	cr_assert_str_eq(e.out, "63\n");
	cr_assert_str_eq(e.err, "w");
	cr_assert_str_eq(e.value, "True");
	aca_exec_free(&e);
}

Test(aca_exec, stable_flat_shape)
{
	const char *b = "{\"id\":\"1\",\"status\":\"Success\",\"stdout\":\"\",\"stderr\":\"\","
	    "\"result\":63,\"executionTimeInMilliseconds\":4}";
	struct aca_exec e;
	const char *why;

	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert_str_eq(e.value, "63");
	aca_exec_free(&e);
}

Test(aca_exec, failure_and_timeout)
{
	const char *b = "{\"status\":\"Failed\",\"result\":{\"stdout\":\"\",\"stderr\":\"\"},"
	    "\"error\":{\"error\":{\"code\":\"ExecutionTimeout\",\"message\":\"m\"}}}";
	struct aca_exec e;
	const char *why;

	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert(!e.ok);
	cr_assert(e.timed_out);
	cr_assert_str_eq(e.code, "ExecutionTimeout");
	aca_exec_free(&e);
	b = "{\"properties\":{\"status\":\"Failure\",\"stderr\":\"Traceback\","
	    "\"error\":{\"code\":\"E\",\"message\":\"KeyError: 'a'\"}}}";
	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert(!e.ok && !e.timed_out);
	cr_assert_str_eq(e.message, "KeyError: 'a'");
	aca_exec_free(&e);
}

Test(aca_exec, values)
{
	const char *cases[][2] = {
		{ "\"\"", NULL }, { "null", NULL }, { "\"'abc'\"", "'abc'" },
		{ "2.5", "2.5" }, { "-3", "-3" }, { "false", "False" },
		{ "[1,{\"a\":2}]", "[1,{\"a\":2}]" }, { "1e300", "1.0000000000000001e+300" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *b = xasprintf("{\"properties\":{\"status\":\"Success\",\"result\":%s}}",
		    cases[i][0]);
		struct aca_exec e;
		const char *why;
		cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
		if (cases[i][1] == NULL)
			cr_assert_null(e.value, "%s", cases[i][0]);
		else
			cr_assert_str_eq(e.value, cases[i][1]);
		aca_exec_free(&e);
		free(b);
	}
}

Test(aca_exec, image)
{
	const char *b = "{\"properties\":{\"status\":\"Success\",\"result\":{\"type\":\"image\","
	    "\"format\":\"png\",\"base64_data\":\"iVBORw0KGgo=\"}}}";
	struct aca_exec e;
	const char *why;

	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert_str_eq(e.image, "iVBORw0KGgo=");
	cr_assert_str_eq(e.image_fmt, "png");
	cr_assert_null(e.value);
	aca_exec_free(&e);
	/* a format that could name a path is not taken */
	b = "{\"properties\":{\"status\":\"Success\",\"result\":{\"type\":\"image\","
	    "\"format\":\"../x\",\"base64_data\":\"AA==\"}}}";
	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert_null(e.image_fmt);
	aca_exec_free(&e);
}

Test(aca_exec, refused)
{
	const char *bad[] = { "", "{", "[]", "{\"properties\":{}}",
	    "{\"status\":\"Running\"}", "{\"status\":\"0\"}", "{\"status\":5}" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct aca_exec e;
		const char *why = NULL;
		cr_assert_eq(aca_exec_parse(bad[i], strlen(bad[i]), &e, &why), -1, "%s", bad[i]);
		cr_assert_not_null(why);
		cr_assert_null(e.json);
	}
}

Test(aca_exec, wrong_types_ignored)
{
	const char *b = "{\"properties\":{\"status\":\"Success\",\"stdout\":5,\"stderr\":[\"a\"],"
	    "\"executionTimeInMilliseconds\":\"x\"}}";
	struct aca_exec e;
	const char *why;

	cr_assert_eq(aca_exec_parse(b, strlen(b), &e, &why), 0);
	cr_assert_str_eq(e.out, "");
	cr_assert_str_eq(e.err, "");
	cr_assert_eq(e.ms, -1);
	aca_exec_free(&e);
}

/* ------------------------------------------------------------ listings */

Test(aca_files, properties_shape)
{
	const char *b = "{\"$id\":\"1\",\"value\":[{\"$id\":\"2\",\"properties\":{\"$id\":\"3\","
	    "\"filename\":\"test1.txt\",\"size\":16,\"lastModifiedTime\":"
	    "\"2024-05-02T07:21:07.9922617Z\"}}]}";
	struct aca_file *f;
	const char *why;
	int skipped, n = aca_files_parse(b, strlen(b), 10, &f, &skipped, &why);

	cr_assert_eq(n, 1);
	cr_assert_eq(skipped, 0);
	cr_assert_str_eq(f[0].name, "test1.txt");
	cr_assert_eq(f[0].size, 16);
	cr_assert_str_eq(f[0].mtime, "2024-05-02T07:21:07.9922617Z");
	aca_files_free(f, n);
}

Test(aca_files, executions_shape_skips_folders)
{
	const char *b = "{\"value\":[{\"name\":\"out\",\"type\":\"directory\",\"sizeInBytes\":0},"
	    "{\"name\":\"c.png\",\"type\":\"file\",\"sizeInBytes\":3,\"lastModifiedAt\":\"t\"}],"
	    "\"nextLink\":null}";
	struct aca_file *f;
	const char *why;
	int skipped, n = aca_files_parse(b, strlen(b), 10, &f, &skipped, &why);

	cr_assert_eq(n, 1);
	cr_assert_eq(skipped, 0);
	cr_assert_str_eq(f[0].name, "c.png");
	aca_files_free(f, n);
}

Test(aca_files, hostile_entries)
{
	const char *b = "{\"value\":[5,{\"properties\":\"x\"},"
	    "{\"name\":\"../../etc/passwd\",\"sizeInBytes\":1},"
	    "{\"name\":\"..\",\"sizeInBytes\":1},{\"name\":\"\",\"sizeInBytes\":1},"
	    "{\"name\":\"e\\u001b.png\",\"sizeInBytes\":1},"
	    "{\"name\":\"neg\",\"sizeInBytes\":-1},{\"name\":\"frac\",\"sizeInBytes\":1.5},"
	    "{\"name\":\"big\",\"sizeInBytes\":1e300},{\"name\":\"str\",\"sizeInBytes\":\"1\"},"
	    "{\"name\":\"ok\",\"sizeInBytes\":1},{\"name\":\"ok\",\"sizeInBytes\":2},"
	    "{\"name\":\"a\",\"sizeInBytes\":1},{\"name\":\"b\",\"sizeInBytes\":1}]}";
	struct aca_file *f;
	const char *why;
	int skipped, n = aca_files_parse(b, strlen(b), 2, &f, &skipped, &why);

	cr_assert_eq(n, 2);
	cr_assert_str_eq(f[0].name, "ok");
	cr_assert_eq(f[0].size, 1);
	cr_assert_str_eq(f[1].name, "a");
	cr_assert_eq(skipped, 12);	/* 10 unusable, a duplicate, one past max */
	aca_files_free(f, n);
}

Test(aca_files, refused)
{
	struct aca_file *f;
	const char *why;
	int skipped;

	cr_assert_eq(aca_files_parse("{}", 2, 10, &f, &skipped, &why), -1);
	cr_assert_eq(aca_files_parse("[]", 2, 10, &f, &skipped, &why), -1);
	cr_assert_eq(aca_files_parse("{\"value\":{}}", 12, 10, &f, &skipped, &why), -1);
}

/* ------------------------------------------------------------ options */

Test(aca_opts, checks)
{
	struct aca_opts o;
	char *err = NULL;

	aca_opts_default(&o);
	o.endpoint = "https://pool.example.invalid/subscriptions/s/sessionPools/p/";
	o.token_env = "T";
	cr_assert_eq(aca_check_opts(&o, &err), 0);
	o.identifier = "abc";	/* too short */
	cr_assert_eq(aca_check_opts(&o, &err), -1);
	cr_assert_not_null(strstr(err, "identifier"));
	free(err);
	o.identifier = "a|b-c&d^e%f$g#h(i)j{k}l[m]n;o<p>";
	cr_assert_eq(aca_check_opts(&o, &err), 0);
	o.identifier = "has space";
	cr_assert_eq(aca_check_opts(&o, &err), -1);
	free(err);
	o.identifier = NULL;
	o.token_env = NULL;
	cr_assert_eq(aca_check_opts(&o, &err), -1);
	cr_assert_not_null(strstr(err, "no token source"));
	free(err);
	o.token_cmd = "true";
	o.endpoint = "http://localhost:9/x";
	cr_assert_eq(aca_check_opts(&o, &err), 0);
	o.endpoint = "http://pool.example.invalid/x";
	cr_assert_eq(aca_check_opts(&o, &err), -1);
	cr_assert_not_null(strstr(err, "https"));
	free(err);
}
