/* kernel_jupyter_msg: the Jupyter messages the backend builds and reads.
 * A frame from the server is hostile: anything but a kernel message is
 * refused whole; a traceback loses its colour codes and is cut at
 * KFRAME_TEXT_MAX, saying so. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel_frame.h"
#include "terp/kernel_jupyter_msg.h"
#include "terp/kernel_jupyter_rest.h"

Test(kernel_jupyter_msg, built_messages_read_back)
{
	char id[40];
	char *txt = jmsg_text("execute_request", "shell", "sess-1",
	    jmsg_execute_content("1+1", 0, "fp", "len(x)"), id);
	struct jmsg m;
	const cJSON *ue;

	cr_assert_eq(strlen(id), 36);
	cr_assert_eq(jmsg_parse(txt, strlen(txt), &m), 0);
	cr_assert_str_eq(m.type, "execute_request");
	cr_assert_str_eq(m.channel, "shell");
	cr_assert_null(m.parent);
	cr_assert_str_eq(cJSON_GetObjectItem(m.content, "code")->valuestring, "1+1");
	ue = cJSON_GetObjectItem(m.content, "user_expressions");
	cr_assert_str_eq(cJSON_GetObjectItem(ue, "fp")->valuestring, "len(x)");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(m.content, "allow_stdin")));
	cJSON_Delete(m.json);
	free(txt);
}

Test(kernel_jupyter_msg, non_messages_are_refused)
{
	const char *bad[] = { "", "null", "[]", "{}", "{\"header\":{}}",
	    "{\"header\":{\"msg_type\":5},\"content\":{}}",
	    "{\"header\":{\"msg_type\":\"stream\"}}",
	    "{\"header\":{\"msg_type\":\"stream\"},\"content\":\"x\"}",
	    "{\"header\":{\"msg_type\":\"stream\"},\"content\":{}" };
	struct jmsg m;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(jmsg_parse(bad[i], strlen(bad[i]), &m), -1, "%s", bad[i]);
		cr_assert_null(m.json);
	}
	{
		const char *ok = "{\"header\":{\"msg_type\":\"status\"},\"parent_header\":"
		    "{\"msg_id\":\"p1\"},\"content\":{\"execution_state\":\"idle\"}}";
		cr_assert_eq(jmsg_parse(ok, strlen(ok), &m), 0);
		cr_assert_str_eq(m.parent, "p1");
		cr_assert_null(m.channel);
		cJSON_Delete(m.json);
	}
}

Test(kernel_jupyter_msg, user_expressions)
{
	cJSON *c = cJSON_Parse("{\"user_expressions\":{\"a\":{\"status\":\"ok\",\"data\":"
	    "{\"text/plain\":\"'/srv/x'\"}},\"b\":{\"status\":\"error\"},\"c\":5}}");

	cr_assert_str_eq(jmsg_user_expr_text(c, "a"), "'/srv/x'");
	cr_assert_null(jmsg_user_expr_text(c, "b"));
	cr_assert_null(jmsg_user_expr_text(c, "c"));
	cr_assert_null(jmsg_user_expr_text(c, "d"));
	cJSON_Delete(c);
}

Test(kernel_jupyter_msg, tracebacks_lose_colours_and_are_cut)
{
	cJSON *c = cJSON_Parse("{\"traceback\":[\"\\u001b[0;31mValueError\\u001b[0m: x\","
	    "5,\"\\u001b]8;;link\\u0007line 2\"]}");
	char *t = jmsg_traceback(c), *big;
	cJSON *arr, *cb;
	size_t n = KFRAME_TEXT_MAX + 1000;

	cr_assert_str_eq(t, "ValueError: x\nline 2\n");
	free(t);
	cJSON_Delete(c);
	cb = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(cb, "traceback");
	for (int i = 0; i < 3; i++) {
		big = malloc(n + 1);
		memset(big, 'a', n);
		big[n] = '\0';
		cJSON_AddItemToArray(arr, cJSON_CreateString(big));
		free(big);
	}
	t = jmsg_traceback(cb);
	cr_assert(strstr(t, "[cut by terp at 256 KiB]") != NULL);
	cr_assert_leq(strlen(t), KFRAME_TEXT_MAX + 64);
	free(t);
	cJSON_Delete(cb);
	cb = cJSON_Parse("{\"traceback\":[]}");
	cr_assert_null(jmsg_traceback(cb));
	cJSON_Delete(cb);
}

Test(kernel_jupyter_msg, wrapped_base64_and_paths)
{
	size_t n;
	char *d = jmsg_b64_decode("aGVs\nbG8=\r\n", &n), *p;

	cr_assert_not_null(d);
	cr_assert_eq(n, 5);
	cr_assert_eq(memcmp(d, "hello", 5), 0);
	free(d);
	cr_assert_null(jmsg_b64_decode("not base64!", &n));
	p = jrest_path("/api/contents/", "terp-1/out/a b#?.png", "?content=1");
	cr_assert_str_eq(p, "/api/contents/terp-1/out/a%20b%23%3F.png?content=1");
	free(p);
}
