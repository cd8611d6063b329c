/* convo: a model conversation built through the notebook's update
 * functions (see convo.h). */
#include <stdlib.h>
#include <string.h>

#include "convo.h"

cJSON *
convo_msg(const char *role, const char *content)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "role", role);
	if (content)
		cJSON_AddStringToObject(m, "content", content);
	else
		cJSON_AddNullToObject(m, "content");
	return m;
}

cJSON *
convo_call(const char *id, const char *code)
{
	cJSON *m = convo_msg("assistant", NULL), *a = cJSON_AddArrayToObject(m, "tool_calls");
	cJSON *c = cJSON_CreateObject(), *args = cJSON_CreateObject();
	char *s;

	cJSON_AddStringToObject(args, "code", code);
	s = cJSON_PrintUnformatted(args);
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "name", "python_exec");
	cJSON_AddStringToObject(c, "arguments", s);
	cJSON_AddItemToArray(a, c);
	free(s);
	cJSON_Delete(args);
	return m;
}

cJSON *
convo_tool(const char *id, const char *content)
{
	cJSON *m = convo_msg("tool", content);

	cJSON_AddStringToObject(m, "tool_call_id", id);
	cJSON_AddBoolToObject(m, "is_error", 0);
	return m;
}

void
convo_add(struct notebook *nb, cJSON *m)
{
	const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(m, "role"));
	const char *content = cJSON_GetStringValue(cJSON_GetObjectItem(m, "content"));
	cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");

	if (strcmp(role, "user") == 0)
		notebook_add_question(nb, content, NULL);
	else if (strcmp(role, "assistant") == 0)
		notebook_add_reply(nb, content, calls ? cJSON_Duplicate(calls, 1) : NULL);
	else
		notebook_add_tool_result(nb, cJSON_GetStringValue(cJSON_GetObjectItem(m,
		    "tool_call_id")), content, 0);
	cJSON_Delete(m);
}
