/* convo: a model conversation built through the notebook's update
 * functions, as the agent builds it (a question, a reply that calls
 * python_exec, the tool's result, the answer). Shared by the context
 * tests (tests/unit/test_context.c) and the context benchmark
 * (bench/context.c); no Criterion in it, so the benchmark links it too. */
#ifndef TERP_TEST_CONVO_H
#define TERP_TEST_CONVO_H

#include <cjson/cJSON.h>

#include "terp/notebook.h"

/* Returns a new message {"role":role,"content":content} (content null
 * when NULL); the caller owns it. */
cJSON	*convo_msg(const char *role, const char *content);

/* Returns a new assistant message with no text and one python_exec
 * call (id, code as its JSON arguments); the caller owns it. */
cJSON	*convo_call(const char *id, const char *code);

/* Returns a new tool result message for call id; the caller owns it. */
cJSON	*convo_tool(const char *id, const char *content);

/* Adds message m through the notebook's update function of its role
 * (user: a question; assistant: a reply with its tool calls; else a
 * tool result) and frees m. */
void	 convo_add(struct notebook *nb, cJSON *m);

#endif
