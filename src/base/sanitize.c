/* sanitize: terminal-safe text. See the header for the rules. */
#include "terp/sanitize.h"

#include <stdio.h>
#include <string.h>

#include "terp/util.h"

size_t
utf8_decode(const char *str, size_t n, unsigned *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned c, min;
	size_t len;

	*cp = 0xFFFD;
	if (n == 0)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xC2 && c <= 0xDF) {
		len = 2; c &= 0x1F; min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3; c &= 0x0F; min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4; c &= 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

size_t
utf8_complete_prefix(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = n, back = 0;

	/* Walk back over at most 3 continuation bytes to the lead byte. */
	while (i > 0 && back < 4 && (s[i - 1] & 0xC0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return n;
	{
		unsigned c = s[i - 1];
		size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (need > 1 && back + 1 < need && c >= 0xC2 && c <= 0xF4)
			return i - 1;
	}
	return n;
}

int
sanitize_is_control(unsigned cp)
{
	return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) ||
	    cp == 0x061C || cp == 0x200E || cp == 0x200F ||
	    (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

int
sanitize_append(struct buf *out, const char *in, size_t len, int flags,
    size_t *colp)
{
	size_t col = colp ? *colp : 0;
	size_t i = 0;
	char esc[16];

	while (i < len) {
		unsigned cp;
		size_t k = utf8_decode(in + i, len - i, &cp);
		if (k == 0) {
			if (buf_add(out, "\xEF\xBF\xBD", 3) < 0)
				return -1;
			col++;
			i++;
			continue;
		}
		if (flags & SANITIZE_UTF8_ONLY) {
			if (buf_add(out, in + i, k) < 0)
				return -1;
			i += k;
			continue;
		}
		if (cp == '\r' && (flags & SANITIZE_CR_AS_NL)) {
			if (i + 1 < len && in[i + 1] == '\n') {
				i++;
				continue;
			}
			cp = '\n';
		}
		if (cp == '\n' && (flags & SANITIZE_KEEP_NL)) {
			if (buf_addc(out, '\n') < 0)
				return -1;
			col = 0;
		} else if (cp == '\t' && (flags & SANITIZE_EXPAND_TABS)) {
			do {
				if (buf_addc(out, ' ') < 0)
					return -1;
				col++;
			} while (col % 8 != 0);
		} else if (cp == '\t' && (flags & SANITIZE_KEEP_TAB)) {
			if (buf_addc(out, '\t') < 0)
				return -1;
			col++;
		} else if (sanitize_is_control(cp)) {
			int n = snprintf(esc, sizeof esc, "\\u%04x", cp);
			if (buf_add(out, esc, (size_t)n) < 0)
				return -1;
			col += (size_t)n;
		} else {
			if (buf_add(out, in + i, k) < 0)
				return -1;
			col++;
		}
		i += k;
	}
	if (colp)
		*colp = col;
	return 0;
}

char *
sanitize_str(const char *in, size_t len, int flags)
{
	struct buf b;

	buf_init(&b, (size_t)-1 / 2);
	sanitize_append(&b, in, len, flags, NULL);
	return buf_take(&b);
}

int
sanitize_json_inert(struct buf *out, const char *json, size_t len)
{
	size_t i = 0;
	char esc[16];

	while (i < len) {
		unsigned cp;
		size_t k = utf8_decode(json + i, len - i, &cp);
		if (k == 0) {
			if (buf_add(out, "\xEF\xBF\xBD", 3) < 0)
				return -1;
			i++;
			continue;
		}
		/* C0 is escaped by the printer, and '\n', '\t' may be the
		 * layout of an indented JSON text: leave them. */
		if (cp >= 0x7F && sanitize_is_control(cp)) {
			int n = snprintf(esc, sizeof esc, "\\u%04x", cp);
			if (buf_add(out, esc, (size_t)n) < 0)
				return -1;
		} else if (buf_add(out, json + i, k) < 0) {
			return -1;
		}
		i += k;
	}
	return 0;
}

char *
sanitize_filename(const char *name, size_t max)
{
	const char *base = strrchr(name, '/');
	size_t n, j = 0;
	char *s;

	if (max < 8)
		max = 8;
	base = base ? base + 1 : name;
	n = strlen(base);
	s = xmalloc(max + 1);
	for (size_t i = 0; i < n && j < max; ) {
		unsigned char c = (unsigned char)base[i];
		unsigned cp;
		size_t k = c < 0x80 ? 1 : utf8_decode(base + i, n - i, &cp);
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '+' ||
		    (c == '.' && j > 0))
			s[j++] = (char)c;
		else
			s[j++] = '_';
		i += k ? k : 1;
	}
	if (j == 0)
		s[j++] = '_';
	s[j] = '\0';
	return s;
}
