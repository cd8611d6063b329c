/* Unit tests of jsonout's lines: a line all below DEL goes out as
 * printed; one with DEL, a C1 or a bidi control anywhere (every place
 * within and across the eight-byte words the check reads) has it
 * escaped, and decodes to the same text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/event.h"
#include "terp/jsonout.h"

/* The one line jsonout writes for a text event of s. */
static char *
line_of(const char *s)
{
	char *out = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&out, &n);
	struct jsonout *j = jsonout_new(fp);
	struct event ev = { .type = EV_TEXT, .text = s, .len = strlen(s) };

	jsonout_event(j, &ev);
	fclose(fp);
	free(j);
	return out;
}

static void
decodes_to(const char *line, const char *s)
{
	cJSON *o = cJSON_Parse(line);

	cr_assert_not_null(o, "%s", line);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "delta")), s);
	cJSON_Delete(o);
}

Test(jsonout, controls_escaped_wherever_they_stand)
{
	static const char *const bad[] = { "\x7f", "\xc2\x9d", "\xe2\x80\xae" };
	static const char *const esc[] = { "\\u007f", "\\u009d", "\\u202e" };
	char s[64], *l;

	for (int k = 0; k < 3; k++) {
		for (int at = 0; at < 24; at++) {
			memset(s, 'a', (size_t)at);
			strcpy(s + at, bad[k]);
			strcat(s, "~~~~~~~~~~");
			l = line_of(s);
			cr_assert_not_null(strstr(l, esc[k]), "%d at %d: %s", k, at, l);
			cr_assert_null(strstr(l, bad[k]), "%d at %d raw", k, at);
			decodes_to(l, s);
			free(l);
		}
	}
	/* all below DEL: as printed, '~' (0x7e) and controls cJSON escapes */
	l = line_of("plain ~ text\twith \"quotes\" \x01 and more words");
	cr_assert_str_eq(l, "{\"type\":\"text\",\"delta\":\"plain ~ text\\twith "
	    "\\\"quotes\\\" \\u0001 and more words\"}\n");
	free(l);
	/* other UTF-8 passes as it is */
	l = line_of("caf\xc3\xa9 \xe2\x98\x83");
	cr_assert_not_null(strstr(l, "caf\xc3\xa9 \xe2\x98\x83"), "%s", l);
	free(l);
}
