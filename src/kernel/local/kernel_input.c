/* kernel_input: a cell's input() requests, bounded (kernel_input.h). */
#include "kernel_input.h"

#include <string.h>

#include "terp/sanitize.h"

void
kinput_cell(struct kinput *in, int may)
{
	in->may = may != 0;
	in->open = in->count = 0;
}

int
kinput_request(struct kinput *in, const struct kframe *f, char **prompt,
    const char **refusal)
{
	size_t n;

	if (!in->may)
		return 0;
	if (in->open || in->count >= KINPUT_MAX) {
		*refusal = in->open ? "an input request is already open" :
		    "too many input requests in one cell";
		return -1;
	}
	in->open = 1;
	in->count++;
	n = f->prompt ? strlen(f->prompt) : 0;
	if (n > KINPUT_PROMPT)
		n = utf8_complete_prefix(f->prompt, KINPUT_PROMPT);
	*prompt = sanitize_str(f->prompt ? f->prompt : "", n, 0);
	return 1;
}

cJSON *
kinput_reply(struct kinput *in, int cell, const char *line)
{
	if (!in->open)
		return NULL;
	in->open = 0;
	if (line != NULL && strlen(line) > KINPUT_REPLY_MAX)
		return kinput_answer(cell, NULL, "the line typed is too long", 0);
	return kinput_answer(cell, line, NULL, line == NULL);
}

cJSON *
kinput_answer(int cell, const char *value, const char *error, int eof)
{
	cJSON *cmd = cJSON_CreateObject();

	cJSON_AddStringToObject(cmd, "op", "input_reply");
	cJSON_AddNumberToObject(cmd, "id", cell);
	if (eof)
		cJSON_AddTrueToObject(cmd, "eof");
	else if (error != NULL)
		cJSON_AddStringToObject(cmd, "error", error);
	else
		cJSON_AddStringToObject(cmd, "value", value);
	return cmd;
}
