/* textcall: a python_exec call a model wrote as text (textcall.h). */
#include "textcall.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/util.h"

/* Non-blank lines in the n bytes at p, each 200 bytes of a line
 * counting as one more (a paragraph on one line is no one line). */
static int
prose_lines(const char *p, size_t n)
{
	int lines = 0, blank = 1;
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			blank = 1;
			len = 0;
			continue;
		}
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\r')
			continue;
		if (blank)
			lines++;
		blank = 0;
		if (++len > 200) {
			lines++;
			len = 0;
		}
	}
	return lines;
}

char *
textcall_code(const char *text, int local)
{
	const char *open = strstr(text, "```python"), *b, *e;
	cJSON *j;
	char *code = NULL;

	if (open == NULL)
		open = strstr(text, "```py\n");
	if (open != NULL) {
		const char *start = strchr(open, '\n');
		const char *end = start ? strstr(start + 1, "```") : NULL;
		if (start == NULL || end == NULL || strstr(end + 3, "```python") != NULL)
			return NULL;
		b = open;
		e = end + 3;
		code = xstrndup(start + 1, (size_t)(end - start - 1));
	} else {
		/* {"name": "python_exec", "arguments": {"code": "..."}} */
		b = strchr(text, '{');
		e = strrchr(text, '}');
		if (b == NULL || e == NULL || e < b)
			return NULL;
		e++;
		j = cJSON_ParseWithLength(b, (size_t)(e - b));
		if (j != NULL) {
			const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(j, "name"));
			cJSON *args = cJSON_GetObjectItem(j, "arguments");
			if (args == NULL)
				args = cJSON_GetObjectItem(j, "parameters");
			if (name && strcmp(name, "python_exec") == 0 && cJSON_IsObject(args)) {
				const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(args, "code"));
				if (c)
					code = xstrdup(c);
			}
			cJSON_Delete(j);
		}
		if (code == NULL)
			return NULL;
	}
	{
		int before = prose_lines(text, (size_t)(b - text));
		int after = prose_lines(e, strlen(e));
		if (before + after <= 1 || (local && after == 0 && before <= 5))
			return code;
	}
	free(code);
	return NULL;
}
