/* kernel_jupyter_msg: the Jupyter messaging protocol (5.3) as the
 * backend speaks it over the kernel's WebSocket: messages built (a
 * header with a fresh msg_id, one JSON text per message) and read (each
 * field type-checked; whatever is not a kernel message is refused), the
 * pieces of a reply terp keeps (a user expression's text, a traceback
 * without its colour codes, cut at KFRAME_TEXT_MAX). No state. */
#ifndef TERP_KERNEL_JUPYTER_MSG_H
#define TERP_KERNEL_JUPYTER_MSG_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* A message read off the socket: the strings and content point into
 * json (cJSON_Delete it). */
struct jmsg {
	cJSON		*json;
	const char	*type;		/* header.msg_type */
	const char	*parent;	/* parent_header.msg_id, or NULL */
	const char	*channel;	/* or NULL */
	const cJSON	*content;	/* an object */
};

/* Reads one text frame. Returns 0, or -1 when it is not a kernel
 * message (then nothing is held). */
int jmsg_parse(const char *p, size_t n, struct jmsg *out);

/* n random bytes (the system's, else the clock's: never fails). */
void jmsg_random(unsigned char *p, size_t n);
/* A version 4 UUID into out[37]. */
void jmsg_uuid(char out[37]);
/* A message of type on channel for session, content consumed; its
 * msg_id into id[40]. The JSON text, a new string. */
char *jmsg_text(const char *type, const char *channel, const char *session,
    cJSON *content, char id[40]);
/* An execute_request's content; expr (NULL: none) as user expression
 * expr_name. */
cJSON *jmsg_execute_content(const char *code, int silent, const char *expr_name,
    const char *expr);
/* The text/plain of a user expression's result in an execute_reply, or
 * NULL when it failed or is not there. */
const char *jmsg_user_expr_text(const cJSON *content, const char *name);
/* An error message's traceback lines, joined, colour codes removed, cut
 * at KFRAME_TEXT_MAX (said). NULL when it has none. New string. */
char *jmsg_traceback(const cJSON *content);
/* Decodes base64 that may be wrapped in lines (Python's encodebytes, as
 * the contents API and some kernels send it). NULL when it is not. */
char *jmsg_b64_decode(const char *b64, size_t *n);

#endif
