/* outcap: head + tail capture of unbounded streams, and the head/tail
 * truncation used for tool results. */
#include "terp/outcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

void
outcap_init(struct outcap *c, size_t head_max, size_t tail_max)
{
	memset(c, 0, sizeof *c);
	c->head_max = head_max;
	c->tail_max = tail_max;
}

void
outcap_free(struct outcap *c)
{
	free(c->head);
	free(c->tail);
	memset(c, 0, sizeof *c);
}

void
outcap_add(struct outcap *c, const char *p, size_t n)
{
	c->total += n;
	if (c->head_len < c->head_max) {
		size_t k = c->head_max - c->head_len;
		if (k > n)
			k = n;
		if (c->head_len + k > c->head_cap) {
			/* grown as the output comes: a cell that prints a
			 * line holds a few bytes, not the head's bound (per
			 * cell, for the whole session) */
			size_t cap = c->head_cap ? c->head_cap : 256;
			while (cap < c->head_len + k)
				cap *= 2;
			if (cap > c->head_max)
				cap = c->head_max;
			c->head = xrealloc(c->head, cap);
			c->head_cap = cap;
		}
		memcpy(c->head + c->head_len, p, k);
		c->head_len += k;
		p += k;
		n -= k;
	}
	if (n == 0 || c->tail_max == 0)
		return;
	if (c->tail == NULL)
		c->tail = xmalloc(c->tail_max);
	if (n >= c->tail_max) {
		memcpy(c->tail, p + n - c->tail_max, c->tail_max);
		c->tail_start = 0;
		c->tail_len = c->tail_max;
		return;
	}
	while (n > 0) {
		size_t end = (c->tail_start + c->tail_len) % c->tail_max;
		size_t k = c->tail_max - end;
		if (k > n)
			k = n;
		memcpy(c->tail + end, p, k);
		p += k;
		n -= k;
		if (c->tail_len + k <= c->tail_max) {
			c->tail_len += k;
		} else {
			size_t over = c->tail_len + k - c->tail_max;
			c->tail_start = (c->tail_start + over) % c->tail_max;
			c->tail_len = c->tail_max;
		}
	}
}

uint64_t
outcap_dropped(const struct outcap *c)
{
	return c->total - c->head_len - c->tail_len;
}

char *
outcap_render(const struct outcap *c, size_t *lenp)
{
	uint64_t dropped = outcap_dropped(c);
	char marker[96] = "";
	size_t mlen = 0, len, off = 0;
	char *s;

	if (dropped > 0) {
		char b[32];
		fmt_bytes(b, sizeof b, dropped);
		mlen = (size_t)snprintf(marker, sizeof marker,
		    "%s[... %llu bytes (%s) of output dropped ...]\n",
		    (c->head_len > 0 && c->head[c->head_len - 1] != '\n') ? "\n" : "",
		    (unsigned long long)dropped, b);
	}
	len = c->head_len + mlen + c->tail_len;
	s = xmalloc(len + 1);
	if (c->head_len)
		memcpy(s, c->head, c->head_len);
	off = c->head_len;
	memcpy(s + off, marker, mlen);
	off += mlen;
	for (size_t i = 0; i < c->tail_len; i++)
		s[off + i] = c->tail[(c->tail_start + i) % c->tail_max];
	s[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return s;
}

/* Moves i back to the start of a UTF-8 sequence. */
static size_t
utf8_floor(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

/* The cut line: the bytes cut (those dropped before included), and
 * where the rest is: the notebook, or nowhere past what it kept. */
static size_t
cut_marker(char *m, size_t size, uint64_t cut, uint64_t dropped,
    uint64_t total)
{
	char all[32];

	if (dropped == 0)
		return (size_t)snprintf(m, size, "\n[... %llu bytes cut; the full "
		    "output is in the notebook ...]\n", (unsigned long long)cut);
	fmt_bytes(all, sizeof all, total);
	return (size_t)snprintf(m, size, "\n[... %llu bytes cut; the cell printed "
	    "%s in all and the notebook kept only its start and end (%llu bytes "
	    "dropped), the rest is lost ...]\n", (unsigned long long)cut, all,
	    (unsigned long long)dropped);
}

char *
text_truncate_of(const char *s, size_t len, size_t limit, uint64_t dropped,
    uint64_t total)
{
	char marker[256];
	size_t mlen, keep, head, tail_from;
	char *out;

	if (len <= limit)
		return xstrndup(s, len);
	mlen = cut_marker(marker, sizeof marker, (uint64_t)len + dropped,
	    dropped, total);
	keep = limit > mlen ? limit - mlen : 0;
	head = utf8_floor(s, keep / 2);
	tail_from = utf8_floor(s, len - (keep - keep / 2));
	if (tail_from < head)
		tail_from = head;
	/* restate the real number cut now that the boundaries are known */
	mlen = cut_marker(marker, sizeof marker, (uint64_t)(tail_from - head) +
	    dropped, dropped, total);
	out = xmalloc(head + mlen + (len - tail_from) + 1);
	memcpy(out, s, head);
	memcpy(out + head, marker, mlen);
	memcpy(out + head + mlen, s + tail_from, len - tail_from);
	out[head + mlen + len - tail_from] = '\0';
	return out;
}

char *
text_truncate(const char *s, size_t len, size_t limit)
{
	return text_truncate_of(s, len, limit, 0, 0);
}

size_t
outcap_head_part(const struct outcap *c, size_t n)
{
	uint64_t before = c->total - n;

	if (before >= c->head_max)
		return 0;
	return (size_t)(c->head_max - before) < n ? (size_t)(c->head_max - before) : n;
}

char *
outcap_rest(const struct outcap *c, size_t *lenp)
{
	size_t len;
	char *all, *rest;

	if (c->total <= c->head_len)
		return NULL;
	all = outcap_render(c, &len);
	rest = xstrndup(all + c->head_len, len - c->head_len);
	if (lenp)
		*lenp = len - c->head_len;
	free(all);
	return rest;
}
