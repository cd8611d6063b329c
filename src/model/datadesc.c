/* datadesc: data files described for the model (datadesc.h). */
#include "terp/datadesc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "terp/dirsum.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define SAMPLE		((size_t)64 << 10)	/* of a text, from its start */
#define GZ_IN_MAX	((size_t)1 << 20)	/* compressed bytes read */
#define ZIP_DIR_MAX	((size_t)1 << 20)	/* a workbook's directory */
#define ZIP_MEMBER_MAX	((size_t)256 << 10)	/* a member inflated */
#define PQ_FOOTER_MAX	((size_t)2 << 20)
#define NAMES_MAX	40			/* column names listed */
#define NAMES_BYTES	1500
#define ROWS_SHOWN	2
#define ROW_BYTES	200
#define SHEETS_MAX	20
#define TYPE_ROWS	200			/* rows whose values type columns */

/* ------------------------------------------------------------ reading */

/* Up to n bytes at off into a new buffer (*got: how many). */
static char *
read_at(int fd, off_t off, size_t n, size_t *got)
{
	char *p = xmalloc(n + 1);
	size_t have = 0;

	while (have < n) {
		ssize_t k = pread(fd, p + have, n - have, off + (off_t)have);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	p[have] = '\0';
	*got = have;
	return p;
}

static void
say(struct buf *b, const char *indent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say(struct buf *b, const char *indent, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	buf_printf(b, "%s%s\n", indent, s);
	free(s);
}

/* n with thousands separators. */
static const char *
grouped(char out[32], uint64_t n)
{
	char raw[24];
	int len = snprintf(raw, sizeof raw, "%llu", (unsigned long long)n), o = 0;

	for (int i = 0; i < len; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = raw[i];
	}
	out[o] = '\0';
	return out;
}

/* ------------------------------------------------------------ delimited text */

enum vtype { T_NONE, T_BOOL, T_INT, T_FLOAT, T_DATE, T_TEXT };
static const char *const type_names[] = { "empty", "bool", "int", "float", "date", "text" };

static enum vtype
value_type(const char *s, size_t n)
{
	char tmp[64], *end;

	while (n > 0 && (*s == ' ' || *s == '"'))
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '"' || s[n - 1] == '\r'))
		n--;
	if (n == 0)
		return T_NONE;
	if ((n == 4 && strncasecmp(s, "true", 4) == 0) ||
	    (n == 5 && strncasecmp(s, "false", 5) == 0))
		return T_BOOL;
	if (n >= 10 && isdigit((unsigned char)s[0]) && isdigit((unsigned char)s[3]) &&
	    s[4] == '-' && isdigit((unsigned char)s[5]) && s[7] == '-')
		return T_DATE;
	if (n >= sizeof tmp)
		return T_TEXT;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (!isdigit((unsigned char)tmp[0]) && tmp[0] != '-' && tmp[0] != '+' &&
	    tmp[0] != '.')
		return T_TEXT;
	errno = 0;
	(void)strtoll(tmp, &end, 10);
	if (*end == '\0')
		return T_INT;
	(void)strtod(tmp, &end);
	return *end == '\0' ? T_FLOAT : T_TEXT;
}

static enum vtype
merge_type(enum vtype a, enum vtype b)
{
	if (a == T_NONE)
		return b;
	if (b == T_NONE || a == b)
		return a;
	if ((a == T_INT && b == T_FLOAT) || (a == T_FLOAT && b == T_INT))
		return T_FLOAT;
	return T_TEXT;
}

/* One record of delimited text from p (up to end): calls field() per
 * field; returns where the next record starts, or NULL when the record
 * does not end before end (cut by the sample). Quotes as RFC 4180. */
struct rec_cb {
	void	(*field)(void *arg, int col, const char *s, size_t n);
	void	*arg;
};

static const char *
record(const char *p, const char *end, char sep, const struct rec_cb *cb,
    int *ncols)
{
	int col = 0;

	for (;;) {
		const char *f = p;
		int quoted = p < end && *p == '"';
		if (quoted) {
			for (p++; p < end; p++)
				if (*p == '"') {
					if (p + 1 < end && p[1] == '"')
						p++;
					else
						break;
				}
			if (p >= end)
				return NULL;
			p++;
		}
		while (p < end && *p != sep && *p != '\n')
			p++;
		if (p >= end)
			return NULL;
		if (cb != NULL)
			cb->field(cb->arg, col, f, (size_t)(p - f));
		col++;
		if (*p == '\n') {
			*ncols = col;
			return p + 1;
		}
		p++;
	}
}

struct cols {
	int		 n, cap;
	char		**name;
	enum vtype	*type;
	int		 over;	/* values past the header's columns */
};

static void
on_name(void *arg, int col, const char *s, size_t n)
{
	struct cols *c = arg;

	if (col >= c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->name = xrealloc(c->name, (size_t)c->cap * sizeof *c->name);
		c->type = xrealloc(c->type, (size_t)c->cap * sizeof *c->type);
	}
	while (n > 0 && (s[n - 1] == '\r'))
		n--;
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
		s++, n -= 2;
	c->name[col] = sanitize_str(s, n < 80 ? n : 80, 0);
	c->type[col] = T_NONE;
	c->n = col + 1;
}

static void
on_value(void *arg, int col, const char *s, size_t n)
{
	struct cols *c = arg;

	if (col >= c->n) {
		c->over = 1;
		return;
	}
	c->type[col] = merge_type(c->type[col], value_type(s, n));
}

/* The separator: a tab for .tsv; else the most frequent of , \t ; |
 * in the first line. */
static char
guess_sep(const char *p, size_t n, const char *path)
{
	static const char cand[] = ",\t;|";
	size_t count[4] = { 0 }, best = 0;
	const char *ext = strrchr(path, '.');
	const char *nl = memchr(p, '\n', n);

	if (ext != NULL && (strcasecmp(ext, ".tsv") == 0 ||
	    strcasecmp(ext, ".tab") == 0))
		return '\t';
	if (nl != NULL)
		n = (size_t)(nl - p);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 4; k++)
			count[k] += p[i] == cand[k];
	for (int k = 1; k < 4; k++)
		if (count[k] > count[best])
			best = (size_t)k;
	return count[best] > 0 ? cand[best] : ',';
}

static const char *
sep_name(char sep)
{
	switch (sep) {
	case '\t':	return "tabs";
	case ';':	return "semicolons";
	case '|':	return "'|'";
	default:	return "commas";
	}
}

/* A sample line as shown: as it is (tabs kept, not escaped as
 * \u0009), cut at ROW_BYTES. */
static void
show_row(struct buf *b, const char *indent, const char *p, size_t n)
{
	int cut = n > ROW_BYTES;
	char *clean;

	while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == '\n'))
		n--;
	if (cut)
		n = ROW_BYTES;
	while (cut && n > 0 && ((unsigned char)p[n] & 0xc0) == 0x80)
		n--;
	clean = sanitize_str(p, n, SANITIZE_KEEP_TAB);
	buf_printf(b, "%s  %s%s\n", indent, clean, cut ? " [... line cut]" : "");
	free(clean);
}

/* Describes delimited text: s (n bytes) is the start of the data (all
 * of it when whole), of total bytes in all (0: not known). */
static void
describe_text(struct buf *b, const char *indent, const char *path,
    const char *s, size_t n, int whole, uint64_t total)
{
	char sep = guess_sep(s, n, path), g[32], g2[32];
	struct cols c = { 0 };
	struct rec_cb names = { on_name, &c }, values = { on_value, &c };
	const char *p, *end = s + n, *rows_at;
	const char *shown[ROWS_SHOWN];
	size_t shown_len[ROWS_SHOWN];
	uint64_t rows = 0;
	int nc = 0, nshown = 0;
	size_t names_bytes = 0;
	int listed = 0;

	if (n == 0) {
		say(b, indent, "empty");
		return;
	}
	p = record(s, end, sep, &names, &nc);
	if (p == NULL && !whole) {
		/* the header does not end in the sample: say so, and what of
		 * it was seen (its last, cut field left out) */
		fmt_bytes(g2, sizeof g2, n);
		say(b, indent, "header: longer than the %s read; its first %s "
		    "columns (separated by %s) are seen, more follow",
		    g2, grouped(g, (uint64_t)c.n), sep_name(sep));
		rows_at = NULL;
	} else {
		if (p == NULL) {	/* a last line without its newline */
			p = end;
		}
		rows_at = p;
	}
	/* the rows: counted in the sample, typed from the first ones */
	for (p = rows_at; p != NULL && p < end; ) {
		const char *next = record(p, end, sep,
		    rows < TYPE_ROWS ? &values : NULL, &nc);
		if (next == NULL) {
			if (whole && p < end) {
				rows++;
				if (nshown < ROWS_SHOWN) {
					shown[nshown] = p;
					shown_len[nshown++] = (size_t)(end - p);
				}
			}
			break;
		}
		if (nshown < ROWS_SHOWN) {
			shown[nshown] = p;
			shown_len[nshown++] = (size_t)(next - p);
		}
		rows++;
		p = next;
	}
	if (rows_at != NULL)
		say(b, indent, "columns: %d, separated by %s", c.n, sep_name(sep));
	buf_printf(b, "%s  ", indent);
	for (int i = 0; i < c.n; i++) {
		size_t k = strlen(c.name[i]);
		if (listed >= NAMES_MAX || names_bytes + k > NAMES_BYTES)
			break;
		/* a column without a value in the sample: no type said */
		buf_printf(b, "%s%s%s%s%s", i ? ", " : "", c.name[i],
		    c.type[i] != T_NONE ? " (" : "", c.type[i] != T_NONE ?
		    type_names[c.type[i]] : "", c.type[i] != T_NONE ? ")" : "");
		names_bytes += k + 10;
		listed++;
	}
	if (listed < c.n)
		buf_printf(b, ", [... and %s more columns]",
		    grouped(g, (uint64_t)(c.n - listed)));
	buf_addc(b, '\n');
	if (rows_at != NULL) {
		if (whole)
			say(b, indent, "rows: %s (after the header)", grouped(g, rows));
		else if (rows > 0 && total > 0) {
			double per = (double)(p - rows_at) / (double)rows;
			fmt_bytes(g2, sizeof g2, n);
			say(b, indent, "rows: about %s (estimated from the first %s)",
			    grouped(g, (uint64_t)((double)(total - (uint64_t)(rows_at - s)) /
			    per)), g2);
		} else
			say(b, indent, "rows: more than %s", grouped(g, rows));
		if (c.over)
			say(b, indent, "some rows have more fields than the header");
	}
	if (nshown > 0) {
		say(b, indent, "first rows:");
		for (int i = 0; i < nshown; i++)
			show_row(b, indent, shown[i], shown_len[i]);
	}
	for (int i = 0; i < c.n; i++)
		free(c.name[i]);
	free(c.name);
	free(c.type);
}

/* ------------------------------------------------------------ gzip */

/* Inflates what of in (n bytes) fits in out_max: gzip or zlib framing
 * (window_bits), or raw deflate (-15). *out_len gets the size. */
static char *
inflate_some(const char *in, size_t n, int window_bits, size_t out_max,
    size_t *out_len, int *whole)
{
	z_stream z;
	char *out = xmalloc(out_max + 1);
	int r;

	memset(&z, 0, sizeof z);
	*out_len = 0;
	*whole = 0;
	if (inflateInit2(&z, window_bits) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)out_max;
	r = inflate(&z, Z_NO_FLUSH);
	*whole = r == Z_STREAM_END;
	*out_len = out_max - z.avail_out;
	out[*out_len] = '\0';
	inflateEnd(&z);
	if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
		free(out);
		return NULL;
	}
	return out;
}

static void
describe_gzip(struct buf *b, const char *indent, const char *path, int fd,
    uint64_t size)
{
	size_t n, got, isize_n;
	char *in = read_at(fd, 0, GZ_IN_MAX, &n), *out, *tail, *inner;
	uint64_t isize = 0;
	int whole;
	const char *ext;

	out = inflate_some(in, n, 16 + MAX_WBITS, SAMPLE, &got, &whole);
	free(in);
	if (out == NULL) {
		say(b, indent, "gzip-compressed, but its start does not inflate");
		return;
	}
	/* the uncompressed size (mod 4 GiB) from the trailer */
	tail = read_at(fd, size >= 4 ? (off_t)(size - 4) : 0, 4, &isize_n);
	if (isize_n == 4)
		isize = (uint64_t)(unsigned char)tail[0] | (uint64_t)(unsigned char)tail[1] << 8 |
		    (uint64_t)(unsigned char)tail[2] << 16 | (uint64_t)(unsigned char)tail[3] << 24;
	free(tail);
	inner = xstrdup(path);
	ext = strrchr(inner, '.');
	if (ext != NULL)
		inner[ext - inner] = '\0';	/* sales.csv.gz: sales.csv */
	if (memchr(out, '\0', got) != NULL) {
		say(b, indent, "gzip-compressed binary data");
	} else {
		char g[32];
		if (isize > 0)
			fmt_bytes(g, sizeof g, isize);
		say(b, indent, "gzip-compressed text (about %s uncompressed); "
		    "pandas reads it as is (compression is inferred from .gz):",
		    isize > 0 ? g : "? bytes");
		describe_text(b, indent, inner, out, got, whole,
		    whole ? got : isize);
	}
	free(inner);
	free(out);
}

/* ------------------------------------------------------------ zip / xlsx */

static uint32_t
le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint16_t
le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Member name of a zip (central directory dir, dn bytes) inflated into a
 * new string (at most ZIP_MEMBER_MAX), or NULL. */
static char *
zip_member(int fd, const unsigned char *dir, size_t dn, const char *name,
    size_t *len)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i + 46 <= dn; ) {
		const unsigned char *e = dir + i;
		size_t fn, xn, cn;
		if (le32(e) != 0x02014b50)
			return NULL;
		fn = le16(e + 28);
		xn = le16(e + 30);
		cn = le16(e + 32);
		if (i + 46 + fn > dn)
			return NULL;
		if (fn == nl && memcmp(e + 46, name, nl) == 0) {
			uint16_t method = le16(e + 10);
			uint32_t csize = le32(e + 20), off = le32(e + 42);
			size_t hn, got;
			char *h = read_at(fd, off, 30, &hn), *data, *out;
			int whole;
			if (hn < 30 || le32((unsigned char *)h) != 0x04034b50) {
				free(h);
				return NULL;
			}
			off += 30 + le16((unsigned char *)h + 26) + le16((unsigned char *)h + 28);
			free(h);
			if (csize > ZIP_MEMBER_MAX)
				csize = ZIP_MEMBER_MAX;
			data = read_at(fd, off, csize, &got);
			if (method == 0) {
				*len = got;
				return data;
			}
			out = method == 8 ? inflate_some(data, got, -MAX_WBITS,
			    ZIP_MEMBER_MAX, len, &whole) : NULL;
			free(data);
			return out;
		}
		i += 46 + fn + xn + cn;
	}
	return NULL;
}

/* The value of attribute attr in the tag at p (up to its '>'), new. */
static char *
xml_attr(const char *p, const char *attr)
{
	const char *gt = strchr(p, '>'), *a;
	size_t an = strlen(attr);

	for (a = p; gt != NULL && (a = strstr(a, attr)) != NULL && a < gt; a += an) {
		if ((a[-1] == ' ' || a[-1] == '\t' || a[-1] == '\n') &&
		    a[an] == '=' && (a[an + 1] == '"' || a[an + 1] == '\'')) {
			const char *v = a + an + 2, *q = strchr(v, a[an + 1]);
			if (q == NULL || q > gt)
				return NULL;
			return sanitize_str(v, (size_t)(q - v), 0);
		}
	}
	return NULL;
}

static void
describe_xlsx(struct buf *b, const char *indent, int fd, uint64_t size)
{
	size_t n, dn, wn;
	off_t from = size > 65557 ? (off_t)(size - 65557) : 0;
	unsigned char *end = (unsigned char *)read_at(fd, from, (size_t)(size - (uint64_t)from), &n);
	unsigned char *eocd = NULL, *dir;
	char *wb, *p;
	int sheets = 0, more = 0;

	for (size_t i = n >= 22 ? n - 22 : 0; n >= 22; i--) {
		if (le32(end + i) == 0x06054b50) {
			eocd = end + i;
			break;
		}
		if (i == 0)
			break;
	}
	if (eocd == NULL) {
		free(end);
		say(b, indent, "not a readable zip (no central directory): not an .xlsx workbook?");
		return;
	}
	dn = le32(eocd + 12);
	if (dn > ZIP_DIR_MAX)
		dn = ZIP_DIR_MAX;
	dir = (unsigned char *)read_at(fd, le32(eocd + 16), dn, &dn);
	free(end);
	wb = zip_member(fd, dir, dn, "xl/workbook.xml", &wn);
	if (wb == NULL) {
		say(b, indent, "a zip without xl/workbook.xml: not an .xlsx workbook");
		free(dir);
		return;
	}
	say(b, indent, "Excel workbook; pandas reads a sheet with "
	    "pd.read_excel(path, sheet_name=...) (needs openpyxl); sheets:");
	for (p = wb; (p = strstr(p, "<sheet ")) != NULL; p++) {
		char *name = xml_attr(p, "name"), member[64], *sx, *dim = NULL;
		size_t sn;
		if (sheets >= SHEETS_MAX) {
			more++;
			free(name);
			continue;
		}
		sheets++;
		/* Excel names the parts in order: the dimension is near the
		 * start of each */
		snprintf(member, sizeof member, "xl/worksheets/sheet%d.xml", sheets);
		sx = zip_member(fd, dir, dn, member, &sn);
		if (sx != NULL) {
			char *d = strstr(sx, "<dimension ");
			dim = d ? xml_attr(d, "ref") : NULL;
		}
		buf_printf(b, "%s  %s%s%s%s\n", indent, name ? name : "?",
		    dim ? " (cells " : "", dim ? dim : "", dim ? ")" : "");
		free(dim);
		free(sx);
		free(name);
	}
	if (more > 0)
		say(b, indent, "  [... and %d more sheets]", more);
	if (sheets == 0)
		say(b, indent, "  (none found)");
	free(wb);
	free(dir);
}

/* ------------------------------------------------------------ Parquet */

/* Thrift's compact protocol, as much as FileMetaData needs. */
struct tc {
	const unsigned char	*p, *end;
	int			 bad;
};

static uint64_t
tc_varint(struct tc *t)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (t->p >= t->end) {
			t->bad = 1;
			return 0;
		}
		v |= (uint64_t)(*t->p & 0x7f) << shift;
		if (!(*t->p++ & 0x80))
			return v;
	}
	t->bad = 1;
	return 0;
}

static int64_t
tc_zigzag(struct tc *t)
{
	uint64_t v = tc_varint(t);

	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void tc_skip(struct tc *t, int type, int depth);

static void
tc_skip_struct(struct tc *t, int depth)
{
	while (!t->bad && t->p < t->end) {
		int b = *t->p++, type = b & 0x0f;
		if (type == 0)
			return;
		if ((b >> 4) == 0)
			(void)tc_zigzag(t);
		tc_skip(t, type, depth + 1);
	}
	t->bad = 1;
}

static void
tc_skip(struct tc *t, int type, int depth)
{
	uint64_t n;

	if (depth > 32) {
		t->bad = 1;
		return;
	}
	switch (type) {
	case 1: case 2:		/* bool in the type */
		return;
	case 3:			/* byte */
		if (t->p < t->end)
			t->p++;
		else
			t->bad = 1;
		return;
	case 4: case 5: case 6:	/* i16 i32 i64 */
		(void)tc_varint(t);
		return;
	case 7:			/* double */
		if (t->end - t->p < 8)
			t->bad = 1;
		else
			t->p += 8;
		return;
	case 8:			/* binary */
		n = tc_varint(t);
		if (n > (uint64_t)(t->end - t->p))
			t->bad = 1;
		else
			t->p += n;
		return;
	case 9: case 10: {	/* list, set */
		int b, et;
		if (t->p >= t->end) {
			t->bad = 1;
			return;
		}
		b = *t->p++;
		et = b & 0x0f;
		n = (uint64_t)(b >> 4) == 15 ? tc_varint(t) : (uint64_t)(b >> 4);
		for (uint64_t i = 0; i < n && !t->bad; i++)
			tc_skip(t, et == 1 || et == 2 ? 3 : et, depth + 1);
		return;
	}
	case 11: {		/* map */
		int kv;
		n = tc_varint(t);
		if (n == 0)
			return;
		if (t->p >= t->end) {
			t->bad = 1;
			return;
		}
		kv = *t->p++;
		for (uint64_t i = 0; i < n && !t->bad; i++) {
			tc_skip(t, kv >> 4, depth + 1);
			tc_skip(t, kv & 0x0f, depth + 1);
		}
		return;
	}
	case 12:
		tc_skip_struct(t, depth);
		return;
	default:
		t->bad = 1;
	}
}

struct pq_col {
	char	*name;
	int	 type, converted, children, logical;
};

/* One SchemaElement: type (1), name (4), num_children (5),
 * converted_type (6), logicalType (10, which union member). */
static void
pq_element(struct tc *t, struct pq_col *c)
{
	int last = 0;

	memset(c, 0, sizeof *c);
	c->type = c->converted = c->logical = -1;
	while (!t->bad && t->p < t->end) {
		int b = *t->p++, type = b & 0x0f, id;
		if (type == 0)
			return;
		id = (b >> 4) ? last + (b >> 4) : (int)tc_zigzag(t);
		last = id;
		if (id == 1 && type == 5)
			c->type = (int)tc_zigzag(t);
		else if (id == 4 && type == 8) {
			uint64_t n = tc_varint(t);
			if (n > (uint64_t)(t->end - t->p)) {
				t->bad = 1;
				return;
			}
			free(c->name);
			c->name = sanitize_str((const char *)t->p, n < 80 ? n : 80, 0);
			t->p += n;
		} else if (id == 5 && type == 5)
			c->children = (int)tc_zigzag(t);
		else if (id == 6 && type == 5)
			c->converted = (int)tc_zigzag(t);
		else if (id == 10 && type == 12) {
			/* the union's one field id names the logical type */
			if (t->p < t->end && (*t->p & 0x0f) != 0 && (*t->p >> 4) != 0)
				c->logical = *t->p >> 4;
			tc_skip_struct(t, 1);
		} else
			tc_skip(t, type, 1);
	}
	t->bad = 1;
}

static const char *
pq_type(const struct pq_col *c)
{
	static const char *const phys[] = { "bool", "int32", "int64", "int96",
	    "float", "double", "bytes", "fixed bytes" };
	/* LogicalType's members: 1 string, 2 map, 3 list, 4 enum, 5 decimal,
	 * 6 date, 7 time, 8 timestamp, 10 integer, 12 json, 14 uuid */
	switch (c->logical) {
	case 1:	return "string";
	case 4:	return "enum";
	case 5:	return "decimal";
	case 6:	return "date";
	case 7:	return "time";
	case 8:	return "timestamp";
	case 12: return "json";
	case 14: return "uuid";
	default: break;
	}
	switch (c->converted) {
	case 0:	return "string";
	case 5:	return "decimal";
	case 6:	return "date";
	case 9: case 10: return "timestamp";
	default: break;
	}
	if (c->children > 0)
		return "group";
	return c->type >= 0 && c->type < 8 ? phys[c->type] : "?";
}

static void
describe_parquet(struct buf *b, const char *indent, int fd, uint64_t size)
{
	size_t n, got;
	char *tail = read_at(fd, size >= 8 ? (off_t)(size - 8) : 0, 8, &n), *foot;
	uint32_t flen;
	struct tc t;
	struct pq_col *cols = NULL;
	int ncols = 0, last = 0, listed = 0;
	int64_t rows = -1;
	char g[32];
	size_t names_bytes = 0;

	if (n < 8 || memcmp(tail + 4, "PAR1", 4) != 0) {
		free(tail);
		say(b, indent, "no Parquet footer (the file does not end in PAR1)");
		return;
	}
	flen = le32((unsigned char *)tail);
	free(tail);
	if (flen > PQ_FOOTER_MAX || flen + 8 > size) {
		say(b, indent, "Parquet, with a footer of %u bytes (not read: "
		    "over %zu)", flen, PQ_FOOTER_MAX);
		return;
	}
	foot = read_at(fd, (off_t)(size - 8 - flen), flen, &got);
	t = (struct tc){ (unsigned char *)foot, (unsigned char *)foot + got, 0 };
	while (!t.bad && t.p < t.end) {
		int byte = *t.p++, type = byte & 0x0f, id;
		if (type == 0)
			break;
		id = (byte >> 4) ? last + (byte >> 4) : (int)tc_zigzag(&t);
		last = id;
		if (id == 2 && type == 9) {
			int lb = t.p < t.end ? *t.p++ : 0;
			uint64_t k = (lb >> 4) == 15 ? tc_varint(&t) : (uint64_t)(lb >> 4);
			if (k > 100000)
				t.bad = 1;
			for (uint64_t i = 0; i < k && !t.bad; i++) {
				cols = xrealloc(cols, (size_t)(ncols + 1) * sizeof *cols);
				pq_element(&t, &cols[ncols++]);
			}
		} else if (id == 3 && type == 6) {
			rows = tc_zigzag(&t);
		} else
			tc_skip(&t, type, 0);
	}
	if (t.bad || ncols == 0) {
		say(b, indent, "Parquet, but its footer does not parse");
	} else {
		/* element 0 is the root; a flat file's columns follow */
		say(b, indent, "Parquet: %s rows (from its footer), %d columns; "
		    "pd.read_parquet reads it (needs pyarrow or fastparquet):",
		    rows >= 0 ? grouped(g, (uint64_t)rows) : "?", ncols - 1);
		buf_printf(b, "%s  ", indent);
		for (int i = 1; i < ncols; i++) {
			size_t k = cols[i].name ? strlen(cols[i].name) : 1;
			if (listed >= NAMES_MAX || names_bytes + k > NAMES_BYTES)
				break;
			buf_printf(b, "%s%s (%s)", i > 1 ? ", " : "",
			    cols[i].name ? cols[i].name : "?", pq_type(&cols[i]));
			names_bytes += k + 10;
			listed++;
		}
		if (listed < ncols - 1)
			buf_printf(b, ", [... and %d more columns]", ncols - 1 - listed);
		buf_addc(b, '\n');
	}
	for (int i = 0; i < ncols; i++)
		free(cols[i].name);
	free(cols);
	free(foot);
}

/* ------------------------------------------------------------ the entry */

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* A folder: its files counted (dirsum.h: bounded, no symlink followed),
 * the first names, and the first file described. Takes fd. */
static void
describe_folder(struct buf *b, const char *indent, const char *path, int fd)
{
	struct dirsum s;
	char *line, *first, *in2;

	if (dirsum_walk(fd, &s, NULL, NULL) < 0) {
		say(b, indent, "cannot be read here: %s", strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	line = dirsum_line(&s);
	say(b, indent, "a folder (read-only): %s%s", line, s.too_many || s.too_deep ?
	    " or more (the count stopped)" : "");
	free(line);
	if (s.nnames == 0)
		return;
	buf_printf(b, "%sfiles: ", indent);
	for (int i = 0; i < s.nnames; i++) {
		char *n = sanitize_str(s.names[i], strlen(s.names[i]), 0);	/* one line */
		buf_printf(b, "%s%s", i ? ", " : "", n);
		free(n);
	}
	buf_adds(b, s.files > (uint64_t)s.nnames ? ", ...\n" : "\n");
	line = sanitize_str(s.names[0], strlen(s.names[0]), 0);
	say(b, indent, "the first, %s:", line);
	free(line);
	first = xasprintf("%s/%s", path, s.names[0]);
	in2 = xasprintf("%s  ", indent);
	datadesc_describe(b, first, in2);
	free(first);
	free(in2);
}

void
datadesc_describe(struct buf *b, const char *path, const char *indent)
{
	struct stat st;
	unsigned char magic[4] = { 0 };
	size_t mn, at = b->len;
	char *m;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		describe_folder(b, indent, path, fd);
		return;
	}
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		say(b, indent, "cannot be read here: %s", fd < 0 ? strerror(errno) :
		    "not a regular file");
		if (fd >= 0)
			close(fd);
		return;
	}
	m = read_at(fd, 0, 4, &mn);
	memcpy(magic, m, mn);
	free(m);
	if (mn >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		describe_gzip(b, indent, path, fd, (uint64_t)st.st_size);
	} else if (mn == 4 && memcmp(magic, "PAR1", 4) == 0) {
		describe_parquet(b, indent, fd, (uint64_t)st.st_size);
	} else if (mn == 4 && memcmp(magic, "PK\3\4", 4) == 0 &&
	    (ends_with(path, ".xlsx") || ends_with(path, ".xlsm"))) {
		describe_xlsx(b, indent, fd, (uint64_t)st.st_size);
	} else if (ends_with(path, ".csv") || ends_with(path, ".tsv") ||
	    ends_with(path, ".txt") || ends_with(path, ".tab") ||
	    ends_with(path, ".psv")) {
		size_t n;
		char *s = read_at(fd, 0, SAMPLE, &n);
		describe_text(b, indent, path, s, n, (uint64_t)n == (uint64_t)st.st_size &&
		    n < SAMPLE, (uint64_t)st.st_size);
		free(s);
	}
	close(fd);
	if (b->len - at > DATADESC_TEXT_MAX) {
		b->len = at + DATADESC_TEXT_MAX;
		while (b->len > at && ((unsigned char)b->data[b->len] & 0xc0) == 0x80)
			b->len--;
		b->data[b->len] = '\0';
		buf_printf(b, "\n%s[... description cut]\n", indent);
	}
}
