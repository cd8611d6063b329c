/* json_text: cJSON's unformatted printing, done faster (json_text.h).
 * Strings escape what cJSON escapes (", \, the C0 controls; UTF-8 and
 * DEL as they are); a number prints as cJSON prints it: an integer
 * below 1e15 as its digits (what "%1.15g" gives it), anything
 * else by cJSON's own rule ("%1.15g", "%1.17g" when that does not read
 * back within an epsilon, null for NaN and infinities). */
#include "terp/json_text.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bytes a JSON string may hold as they are: not ", \ or a C0
 * control. */
static int
plain(unsigned char c)
{
	return c >= 32 && c != '"' && c != '\\';
}

int
json_text_str(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run;

	if (buf_addc(b, '"') < 0)
		return -1;
	if (s == NULL)
		return buf_addc(b, '"');
	for (run = s;; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[6];
		size_t n = 2;

		if (plain(c))
			continue;
		if (buf_add(b, run, (size_t)(s - run)) < 0)
			return -1;
		if (c == '\0')
			break;
		run = s + 1;
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		}
		if (buf_add(b, esc, n) < 0)
			return -1;
	}
	return buf_addc(b, '"');
}

static int
put_num(struct buf *b, double d)
{
	char s[32];
	int n;

	if (isnan(d) || isinf(d))
		return buf_add(b, "null", 4);
	if (d == floor(d) && fabs(d) < 1e15) {
		/* digits from the end, as "%1.15g" writes an integer */
		long long v = (long long)d;
		unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v :
		    (unsigned long long)v;
		char *p = s + sizeof s;
		do {
			*--p = (char)('0' + u % 10);
			u /= 10;
		} while (u != 0);
		if (v < 0 || signbit(d))	/* -0 too, as "%1.15g" */
			*--p = '-';
		return buf_add(b, p, (size_t)(s + sizeof s - p));
	}
	n = snprintf(s, sizeof s, "%1.15g", d);
	if (n > 0) {	/* cJSON's test: equal within an epsilon */
		double t = strtod(s, NULL);
		if (fabs(t - d) > fmax(fabs(t), fabs(d)) * DBL_EPSILON)
			n = snprintf(s, sizeof s, "%1.17g", d);
	}
	if (n <= 0 || (size_t)n >= sizeof s)
		return buf_add(b, "null", 4);
	return buf_add(b, s, (size_t)n);
}

int
json_text(struct buf *b, const cJSON *v)
{
	const cJSON *c;

	if (v == NULL)
		return buf_add(b, "null", 4);
	switch (v->type & 0xff) {
	case cJSON_NULL:
		return buf_add(b, "null", 4);
	case cJSON_False:
		return buf_add(b, "false", 5);
	case cJSON_True:
		return buf_add(b, "true", 4);
	case cJSON_Number:
		return put_num(b, v->valuedouble);
	case cJSON_String:
		return json_text_str(b, v->valuestring);
	case cJSON_Raw:
		return v->valuestring ? buf_adds(b, v->valuestring) : 0;
	case cJSON_Array:
		if (buf_addc(b, '[') < 0)
			return -1;
		for (c = v->child; c != NULL; c = c->next)
			if ((c != v->child && buf_addc(b, ',') < 0) || json_text(b, c) < 0)
				return -1;
		return buf_addc(b, ']');
	case cJSON_Object:
		if (buf_addc(b, '{') < 0)
			return -1;
		for (c = v->child; c != NULL; c = c->next)
			if ((c != v->child && buf_addc(b, ',') < 0) ||
			    json_text_str(b, c->string ? c->string : "") < 0 ||
			    buf_addc(b, ':') < 0 || json_text(b, c) < 0)
				return -1;
		return buf_addc(b, '}');
	default:
		return -1;
	}
}

void
json_array_insert(cJSON *array, int at, cJSON *item)
{
	cJSON *after = cJSON_GetArrayItem(array, at);

	if (after == NULL) {
		cJSON_AddItemToArray(array, item);
		return;
	}
	/* cJSON's lists: the first item's prev is the last item */
	item->next = after;
	item->prev = after->prev;
	if (after == array->child)
		array->child = item;
	else
		after->prev->next = item;
	after->prev = item;
}

const cJSON *
json_get(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

const char *
json_str(const cJSON *o, const char *k)
{
	const cJSON *v = json_get(o, k);

	return cJSON_IsString(v) && v->valuestring != NULL ? v->valuestring : NULL;
}

const cJSON *
json_obj(const cJSON *o, const char *k)
{
	const cJSON *v = json_get(o, k);

	return cJSON_IsObject(v) ? v : NULL;
}

const cJSON *
json_arr(const cJSON *o, const char *k)
{
	const cJSON *v = json_get(o, k);

	return cJSON_IsArray(v) ? v : NULL;
}

int
json_num(const cJSON *o, const char *k, double *out)
{
	const cJSON *v = json_get(o, k);

	if (!cJSON_IsNumber(v))
		return -1;
	*out = v->valuedouble;
	return 0;
}

double
json_num_in(const cJSON *o, const char *k, double lo, double hi, double dflt)
{
	double d;

	/* !(a <= b) also refuses NaN. */
	if (json_num(o, k, &d) < 0 || !(d >= lo && d <= hi))
		return dflt;
	return d;
}
