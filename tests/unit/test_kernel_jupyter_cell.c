/* kernel_jupyter_cell: the running cell's messages, outcome and result,
 * from messages as a hostile server may send them (fields missing or of
 * the wrong type, an error without details). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel_jupyter_cell.h"

struct seen {
	char	 out[256];
	int	 stderr_n;
	int	 images;
};

static void
on_out(void *arg, int stream, const char *p, size_t n)
{
	struct seen *s = arg;

	strncat(s->out, p, n < sizeof s->out - strlen(s->out) - 1 ? n :
	    sizeof s->out - strlen(s->out) - 1);
	s->stderr_n += stream == 1;
}

static void
on_img(void *arg, const char *png)
{
	struct seen *s = arg;

	(void)png;
	s->images++;
}

static const struct jcell_cbs cbs = { on_out, on_img };

static void
msg(struct jcell *c, struct seen *s, const char *type, const char *json)
{
	cJSON *m = cJSON_Parse(json);

	cr_assert_not_null(m, "%s", json);
	jcell_message(c, type, m, &cbs, s);
	cJSON_Delete(m);
}

Test(jupyter_cell, messages_kept_and_passed_on)
{
	struct jcell c = { .active = 1 };
	struct seen s = { .out = "" };

	msg(&c, &s, "stream", "{\"name\":\"stdout\",\"text\":\"hi \"}");
	msg(&c, &s, "stream", "{\"name\":\"stderr\",\"text\":\"warn \"}");
	msg(&c, &s, "stream", "{\"name\":7,\"text\":\"dropped\"}");
	msg(&c, &s, "stream", "{\"name\":\"stdout\"}");
	msg(&c, &s, "display_data", "{\"data\":{\"text/plain\":\"df\"}}");
	msg(&c, &s, "display_data", "{\"data\":{\"image/png\":\"iVBO\",\"text/plain\":\"<Figure>\"}}");
	msg(&c, &s, "execute_result", "{\"data\":{\"text/plain\":\"42\"}}");
	msg(&c, &s, "display_data", "{\"data\":[1,2]}");
	msg(&c, &s, "comm_open", "{\"data\":{\"text/plain\":\"not shown\"}}");
	cr_assert_str_eq(s.out, "hi warn df\n");
	cr_assert_eq(s.stderr_n, 1);
	cr_assert_eq(s.images, 1);
	cr_assert_eq(c.figs, 1);
	cr_assert_str_eq(c.value, "42");
	jcell_clear(&c);
	cr_assert_null(c.value);
}

Test(jupyter_cell, outcomes)
{
	struct jcell c = { .active = 1 };
	cJSON *ok = cJSON_Parse("{\"status\":\"ok\",\"user_expressions\":{\"terp_out\":"
	    "{\"status\":\"ok\",\"data\":{\"text/plain\":\"'123'\"}}}}");
	cJSON *bad = cJSON_Parse("{\"status\":[]}");
	char *why;

	jcell_reply(&c, ok, "terp_out", 64);
	cr_assert(c.got_reply);
	cr_assert_eq(jcell_outcome(&c, 5000, &why), CELL_OK);
	cr_assert_null(why);
	jcell_clear(&c);

	/* a status that is no string is an error, and one without details
	 * still gets a name and a value */
	jcell_reply(&c, bad, "terp_out", 64);
	cr_assert_null(c.fp);
	cr_assert_eq(jcell_outcome(&c, 5000, &why), CELL_ERROR);
	cr_assert_str_eq(c.ename, "Error");
	cr_assert(strstr(c.evalue, "without details") != NULL);
	jcell_clear(&c);

	/* an error after an interrupt for the time limit is a timeout */
	jcell_reply(&c, bad, "terp_out", 64);
	c.stop = JCELL_STOP_TIMEOUT;
	cr_assert_eq(jcell_outcome(&c, 5000, &why), CELL_TIMEOUT);
	cr_assert(strstr(why, "time limit of 5 s") != NULL, "%s", why);
	free(why);
	jcell_clear(&c);

	c.stop = JCELL_STOP_USER;
	msg(&c, &(struct seen){ .out = "" }, "error",
	    "{\"ename\":\"KeyboardInterrupt\",\"evalue\":\"\",\"traceback\":[]}");
	cr_assert_eq(jcell_outcome(&c, 5000, &why), CELL_INTERRUPTED);
	cr_assert_str_eq(c.ename, "KeyboardInterrupt");
	free(why);
	jcell_clear(&c);

	c.lost_reply = 1;
	jcell_reply(&c, ok, "terp_out", 2);	/* the fingerprint over its bound: none */
	cr_assert_null(c.fp);
	cr_assert_eq(jcell_outcome(&c, 5000, &why), CELL_INTERRUPTED);
	cr_assert(strstr(why, "dropped") != NULL, "%s", why);
	free(why);
	jcell_clear(&c);
	cJSON_Delete(ok);
	cJSON_Delete(bad);
}

Test(jupyter_cell, result)
{
	struct jcell c = { .active = 1, .n = 3, .start_us = 1000000 };
	struct kernel_result r;

	c.value = strdup("7");
	jcell_result(&c, CELL_OK, NULL, 0, 3500000, &r);
	cr_assert_eq(r.status, CELL_OK);
	cr_assert_eq(r.duration_us, 2500000);
	cr_assert_eq(r.duration_ms, 2500);
	cr_assert_str_eq(r.value, "7");
	cr_assert_eq(r.state_lost, 0);
	jcell_clear(&c);
}
