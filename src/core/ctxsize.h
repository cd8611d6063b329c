/* ctxsize: the sizes the context reckons with that need no conversation:
 * the window a model's name gives (a table, CONTEXT_TABLE_DATE) and the
 * token estimate of a text and of one message. Pure functions, no
 * state. Their public names (context_window_of, context_estimate_text,
 * context_estimate_message) are declared in terp/context.h, whose
 * callers use them; this header holds what only context.c shares.
 * Private to src/core. */
#ifndef TERP_CORE_CTXSIZE_H
#define TERP_CORE_CTXSIZE_H

#include <cjson/cJSON.h>

#define CTXSIZE_MSG_OVERHEAD	4	/* role and separators, per message */

/* The estimate of o's string member key, 0 when it has none. */
long ctxsize_str(const cJSON *o, const char *key);

#endif
