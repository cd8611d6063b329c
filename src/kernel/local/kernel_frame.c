/* kernel_frame: the driver's protocol as the host reads it (line
 * splitting, frame parsing, artifact names and caps). Pure and hostile-
 * input safe: every field is checked for type and range before use. */
#include "terp/kernel_frame.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/json_text.h"
#include "terp/sanitize.h"
#include "terp/util.h"

/* ------------------------------------------------------------ lines */

void
kframe_reader_init(struct kframe_reader *r, size_t max)
{
	memset(r, 0, sizeof *r);
	r->max = max;
}

void
kframe_reader_free(struct kframe_reader *r)
{
	free(r->data);
	kframe_reader_init(r, r->max);
}

void
kframe_reader_reset(struct kframe_reader *r)
{
	r->len = r->off = r->scan = 0;
}

int
kframe_reader_add(struct kframe_reader *r, const char *p, size_t n)
{
	size_t pending = r->len - r->off;

	if (n > r->max || pending > r->max - n)
		return -1;
	if (r->off > 0) {
		/* Only the unfinished line moves, once per add: linear. */
		memmove(r->data, r->data + r->off, pending);
		r->scan -= r->off;
		r->len = pending;
		r->off = 0;
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n + 1)
			cap *= 2;
		if (cap > r->max + 1)
			cap = r->max + 1;
		r->data = xrealloc(r->data, cap);
		r->cap = cap;
	}
	if (n > 0)
		memcpy(r->data + r->len, p, n);
	r->len += n;
	r->data[r->len] = '\0';
	return 0;
}

int
kframe_reader_next(struct kframe_reader *r, const char **line, size_t *len)
{
	size_t from = r->scan > r->off ? r->scan : r->off;
	char *nl;

	if (r->len == 0 || from >= r->len) {
		r->scan = r->len;
		return 0;
	}
	nl = memchr(r->data + from, '\n', r->len - from);
	if (nl == NULL) {
		r->scan = r->len;
		return 0;
	}
	*line = r->data + r->off;
	*len = (size_t)(nl - (r->data + r->off));
	r->off = (size_t)(nl - r->data) + 1;
	r->scan = r->off;
	return 1;
}

/* ------------------------------------------------------------ frames */

static const struct {
	const char		*ev;
	enum kframe_type	 type;
} kframe_types[] = {
	{ "ready", KF_READY },
	{ "loaded", KF_LOADED },
	{ "result", KF_RESULT },
	{ "artifact", KF_ARTIFACT },
	{ "chunk", KF_CHUNK },
	{ "artifact_end", KF_ARTIFACT_END },
	{ "artifact_skip", KF_ARTIFACT_SKIP },
	{ "reset", KF_RESET },
	{ "pong", KF_PONG },
	{ "installed", KF_INSTALLED },
	{ "input", KF_INPUT },
};

/* An integral number in [lo, hi] (doubles hold integers up to 2^53). */
static int
int_field(const cJSON *o, const char *key, double lo, double hi, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double d;

	if (!cJSON_IsNumber(v))
		return 0;
	d = v->valuedouble;
	if (!(d >= lo && d <= hi) || d != (double)(int64_t)d)
		return 0;
	*out = d;
	return 1;
}

int
kframe_parse(const char *line, size_t len, struct kframe *f, const char **why)
{
	cJSON *j;
	const cJSON *e;
	const char *ev, *status;
	double d;

	memset(f, 0, sizeof *f);
	if ((j = cJSON_ParseWithLength(line, len)) == NULL) {
		*why = "a protocol frame that is not JSON";
		return -1;
	}
	if (!cJSON_IsObject(j) || (ev = json_str(j, "ev")) == NULL) {
		cJSON_Delete(j);
		*why = "a protocol frame without an event";
		return -1;
	}
	f->json = j;
	f->type = KF_UNKNOWN;
	for (size_t i = 0; i < sizeof kframe_types / sizeof kframe_types[0]; i++)
		if (strcmp(ev, kframe_types[i].ev) == 0)
			f->type = kframe_types[i].type;
	if (int_field(j, "id", 1, INT_MAX, &d)) {
		f->has_id = 1;
		f->id = (int)d;
	}
	if (int_field(j, "size", -1, 9007199254740992.0, &d)) {
		f->has_size = 1;
		f->size = (int64_t)d;
	}
	f->name = json_str(j, "name");
	f->reason = json_str(j, "reason");
	if ((f->data = json_str(j, "data")) != NULL)
		f->data_len = strlen(f->data);
	if (f->type == KF_INPUT) {
		f->prompt = json_str(j, "prompt");
		f->password = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "password"));
	}
	if (f->type == KF_RESULT) {
		status = json_str(j, "status");
		f->value = json_str(j, "value");
		f->value_wide = json_str(j, "value_wide");
		e = cJSON_GetObjectItemCaseSensitive(j, "error");
		if (cJSON_IsObject(e)) {
			f->ename = json_str(e, "ename");
			f->evalue = json_str(e, "evalue");
			f->traceback = json_str(e, "traceback");
		}
		f->ok = status != NULL && strcmp(status, "ok") == 0 && !cJSON_IsObject(e);
	}
	return 0;
}

void
kframe_free(struct kframe *f)
{
	cJSON_Delete(f->json);
	memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------ names */

const char *
kframe_name_problem(const char *name)
{
	size_t n = strlen(name), i = 0;

	if (n == 0)
		return "it has no name";
	if (n > KFRAME_NAME_MAX)
		return "its name is too long";
	while (i < n) {
		unsigned cp;
		size_t l = utf8_decode(name + i, n - i, &cp);
		if (l == 0)
			return "its name is not valid UTF-8";
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			return "its name has control characters";
		i += l;
	}
	return NULL;
}

char *
kframe_host_name(const char *in)
{
	size_t n = strlen(in), j = 0;
	char *s = xmalloc(n + 2);
	const char *dot;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_')
			s[j++] = (char)c;
		else if (c == '-') {
			s[j] = j == 0 ? '_' : '-';	/* "-rf" is no option */
			j++;
		} else if (c == '.') {
			if (j > 0)
				s[j++] = '.';		/* no hidden file, no ".." */
		} else if (c < 0x80 || (c & 0xC0) == 0xC0)
			s[j++] = '_';			/* one per character */
	}
	if (j == 0)
		s[j++] = '_';
	s[j] = '\0';
	if (j > KFRAME_HOST_NAME_MAX) {
		/* Cut the stem, keep a short extension: chart.png stays a png. */
		size_t ext = 0;
		if ((dot = strrchr(s, '.')) != NULL && strlen(dot) <= 16)
			ext = strlen(dot);
		memmove(s + KFRAME_HOST_NAME_MAX - ext, s + j - ext, ext + 1);
	}
	return s;
}

char *
kframe_host_candidate(const char *host, int i)
{
	const char *dot = strrchr(host, '.');

	if (i <= 1)
		return xstrdup(host);
	if (dot == NULL || dot == host)
		return xasprintf("%s-%d", host, i);
	return xasprintf("%.*s-%d%s", (int)(dot - host), host, i, dot);
}

char *
kframe_display_name(const char *name)
{
	size_t n = strlen(name);

	if (n > 200)
		n = utf8_complete_prefix(name, 200);
	return sanitize_str(name, n, 0);
}

/* ------------------------------------------------------------ caps */

enum kframe_refusal
kframe_admit(const struct kframe_caps *caps, const struct kframe_usage *use,
    uint64_t size, int replaces, uint64_t old_size)
{
	uint64_t base = use->bytes;

	if (size > caps->size_max)
		return KF_TOO_LARGE;
	if (use->cell >= caps->per_cell)
		return KF_CELL_CAP;
	if (!replaces && use->files >= caps->per_session)
		return KF_SESSION_CAP;
	if (replaces)
		base -= old_size < base ? old_size : base;
	if (size > caps->session_bytes || base > caps->session_bytes - size)
		return KF_BYTES_CAP;
	return KF_ADMIT;
}

char *
kframe_refusal_text(const struct kframe_caps *caps, enum kframe_refusal r,
    uint64_t size)
{
	char x[32], y[32];

	switch (r) {
	case KF_TOO_LARGE:
		fmt_bytes(x, sizeof x, size);
		fmt_bytes(y, sizeof y, caps->size_max);
		return xasprintf("too large (%s; the limit is %s)", x, y);
	case KF_CELL_CAP:
		return xasprintf("cap reached (%d artifacts per cell)", caps->per_cell);
	case KF_SESSION_CAP:
		return xasprintf("cap reached (%d artifact files per session)",
		    caps->per_session);
	case KF_BYTES_CAP:
		fmt_bytes(x, sizeof x, caps->session_bytes);
		return xasprintf("cap reached (%s of artifacts per session)", x);
	case KF_ADMIT:
		break;
	}
	return xstrdup("refused");
}

/* ---- result texts ------------------------------------------------------ */

char *
kframe_text_capn(const char *s, size_t n)
{
	size_t k;

	if (s == NULL)
		return NULL;
	if (n <= KFRAME_TEXT_MAX)
		return xstrndup(s, n);
	k = utf8_complete_prefix(s, KFRAME_TEXT_MAX);
	return xasprintf("%.*s... [cut by terp at %u KiB]", (int)k, s, KFRAME_TEXT_MAX >> 10);
}

char *
kframe_text_cap(const char *s)
{
	return s == NULL ? NULL : kframe_text_capn(s, strlen(s));
}
