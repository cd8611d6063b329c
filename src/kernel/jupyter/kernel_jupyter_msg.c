/* kernel_jupyter_msg: the Jupyter messaging protocol's messages (see
 * kernel_jupyter_msg.h): built for the kernel's channels and read from
 * them, without state. */
#include "terp/kernel_jupyter_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/json_text.h"
#include "terp/kernel_frame.h"
#include "terp/sanitize.h"
#include "terp/util.h"

void
jmsg_random(unsigned char *p, size_t n)
{
	if (getrandom(p, n, 0) != (ssize_t)n) {
		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)(now_us() >> (i % 8 * 7));
	}
}

void
jmsg_uuid(char out[37])
{
	unsigned char b[16];

	jmsg_random(b, sizeof b);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
	    b[12], b[13], b[14], b[15]);
}

/* Removes ANSI escape sequences (CSI and OSC, as IPython colours its
 * tracebacks) so that the traceback reads as the local one does; what
 * is left is still sanitized where it is shown. */
static char *
strip_ansi(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *r = xmalloc(n + 1);

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\x1b' && i + 1 < n && s[i + 1] == '[') {
			i += 2;
			while (i < n && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
				i++;
			continue;
		}
		if (s[i] == '\x1b' && i + 1 < n && s[i + 1] == ']') {
			i += 2;
			while (i < n && s[i] != '\a' && !(s[i] == '\x1b' && i + 1 < n && s[i + 1] == '\\'))
				i++;
			if (i < n && s[i] == '\x1b')
				i++;
			continue;
		}
		r[o++] = s[i];
	}
	r[o] = '\0';
	return r;
}

/* An ISO 8601 UTC time for a message header. */
static void
iso_now(char out[64])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    (int)(ts.tv_nsec / 1000 % 1000000));
}

cJSON *
jmsg_execute_content(const char *code, int silent, const char *expr_name, const char *expr)
{
	cJSON *c = cJSON_CreateObject(), *ue = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "code", code);
	cJSON_AddBoolToObject(c, "silent", silent);
	cJSON_AddBoolToObject(c, "store_history", !silent);
	if (expr != NULL)
		cJSON_AddStringToObject(ue, expr_name, expr);
	cJSON_AddItemToObject(c, "user_expressions", ue);
	cJSON_AddBoolToObject(c, "allow_stdin", 0);
	/* terp queues cells itself and sends one at a time. */
	cJSON_AddBoolToObject(c, "stop_on_error", 0);
	return c;
}

const char *
jmsg_user_expr_text(const cJSON *content, const char *name)
{
	const cJSON *ue = json_obj(content, "user_expressions"), *e, *data;
	const char *st;

	if (ue == NULL || (e = json_obj(ue, name)) == NULL)
		return NULL;
	if ((st = json_str(e, "status")) == NULL || strcmp(st, "ok") != 0)
		return NULL;
	if ((data = json_obj(e, "data")) == NULL)
		return NULL;
	return json_str(data, "text/plain");
}

char *
jmsg_b64_decode(const char *b64, size_t *n)
{
	size_t len = strlen(b64), o = 0;
	char *clean = xmalloc(len + 1), *data;

	for (size_t i = 0; i < len; i++)
		if (b64[i] != '\n' && b64[i] != '\r')
			clean[o++] = b64[i];
	clean[o] = '\0';
	data = base64_decode(clean, o, n);
	free(clean);
	return data;
}

char *
jmsg_text(const char *type, const char *channel, const char *session, cJSON *content,
    char id[40])
{
	cJSON *m = cJSON_CreateObject(), *h = cJSON_CreateObject();
	char date[64], *txt;

	jmsg_uuid(id);
	iso_now(date);
	cJSON_AddStringToObject(h, "msg_id", id);
	cJSON_AddStringToObject(h, "session", session);
	cJSON_AddStringToObject(h, "username", "terp");
	cJSON_AddStringToObject(h, "date", date);
	cJSON_AddStringToObject(h, "msg_type", type);
	cJSON_AddStringToObject(h, "version", "5.3");
	cJSON_AddItemToObject(m, "header", h);
	cJSON_AddItemToObject(m, "parent_header", cJSON_CreateObject());
	cJSON_AddItemToObject(m, "metadata", cJSON_CreateObject());
	cJSON_AddItemToObject(m, "content", content);
	cJSON_AddStringToObject(m, "channel", channel);
	cJSON_AddItemToObject(m, "buffers", cJSON_CreateArray());
	txt = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	if (txt == NULL)
		fatal("out of memory (cJSON)");
	return txt;
}

char *
jmsg_traceback(const cJSON *content)
{
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(content, "traceback"), *line;
	char *out = NULL;
	struct buf b;
	int cut = 0;

	/* Twice the cap before the colour codes go, then the cap. */
	buf_init(&b, 2 * KFRAME_TEXT_MAX);
	if (cJSON_IsArray(tb)) {
		cJSON_ArrayForEach(line, tb) {
			size_t ln, room = b.max - b.len;
			if (!cJSON_IsString(line))
				continue;
			if ((ln = strlen(line->valuestring)) + 1 > room) {
				buf_add(&b, line->valuestring, room);
				cut = 1;
				break;
			}
			buf_add(&b, line->valuestring, ln);
			buf_addc(&b, '\n');
		}
	}
	if (b.len > 0) {
		char *plain = strip_ansi(buf_str(&b));
		out = strlen(plain) > KFRAME_TEXT_MAX || !cut ? kframe_text_cap(plain) :
		    xasprintf("%.*s... [cut by terp at %u KiB]",
		    (int)utf8_complete_prefix(plain, strlen(plain)), plain, KFRAME_TEXT_MAX >> 10);
		free(plain);
	}
	buf_free(&b);
	return out;
}

int
jmsg_parse(const char *p, size_t n, struct jmsg *out)
{
	const cJSON *hdr, *phdr;
	cJSON *m = cJSON_ParseWithLength(p, n);

	memset(out, 0, sizeof *out);
	if (m == NULL || !cJSON_IsObject(m) || (hdr = json_obj(m, "header")) == NULL ||
	    (out->type = json_str(hdr, "msg_type")) == NULL ||
	    (out->content = json_obj(m, "content")) == NULL) {
		cJSON_Delete(m);
		memset(out, 0, sizeof *out);
		return -1;
	}
	phdr = json_obj(m, "parent_header");
	out->parent = phdr ? json_str(phdr, "msg_id") : NULL;
	out->channel = json_str(m, "channel");
	out->json = m;
	return 0;
}
