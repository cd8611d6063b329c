/* libFuzzer target for number tracing: the input is split at its first
 * two NUL bytes into a cell output, an answer and a question (each
 * copied to a buffer of its exact size, so a read past the end is
 * caught). Besides "no crash, no leak", it checks that every hit lies
 * inside the answer, in order and without overlap, that a traced hit
 * points inside the source it names, that the traced count is right,
 * and that the order sources are added in does not change the result. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/numtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *
part(const uint8_t **p, const uint8_t *end, size_t *len)
{
	const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
	size_t n = z == NULL ? (size_t)(end - *p) : (size_t)(z - *p);
	char *s = malloc(n > 0 ? n : 1);

	if (s == NULL)
		abort();
	memcpy(s, *p, n);
	*len = n;
	*p = z == NULL ? end : z + 1;
	return s;
}

static void
check(const struct numtrace_hit *h, size_t n, size_t traced, size_t alen,
    const size_t *srclen)
{
	size_t t = 0, end = 0;

	for (size_t i = 0; i < n; i++) {
		if (h[i].len == 0 || h[i].off < end || h[i].off + h[i].len > alen)
			abort();
		end = h[i].off + h[i].len;
		if (!isfinite(h[i].value))
			abort();
		if (h[i].line == 0) {
			if (h[i].cell != 0 || h[i].src_len != 0)
				abort();
			continue;
		}
		t++;
		if (h[i].cell < 1 || h[i].cell > 2 || h[i].line < 0 ||
		    h[i].src_len == 0 ||
		    h[i].src_off + h[i].src_len > srclen[h[i].cell - 1])
			abort();
	}
	if (t != traced)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	size_t olen, alen, qlen, n1, n2, t1, t2, srclen[2];
	char *out = part(&p, end, &olen);
	char *ans = part(&p, end, &alen);
	char *q = part(&p, end, &qlen);
	/* the second source: the second half of the output */
	struct numtrace_source src[2] = {
		{ 1, NUMTRACE_STDOUT, out, olen },
		{ 2, NUMTRACE_VALUE, out + olen / 2, olen - olen / 2 },
	};
	struct numtrace_index *a = numtrace_index_new();
	struct numtrace_index *b = numtrace_index_new();
	struct numtrace_hit *h1, *h2;

	srclen[0] = src[0].len;
	srclen[1] = src[1].len;
	numtrace_index_add(a, &src[0]);
	numtrace_index_add(a, &src[1]);
	numtrace_index_add(b, &src[1]);
	numtrace_index_add(b, &src[0]);
	if (numtrace_index_count(a) != numtrace_index_count(b))
		abort();
	n1 = numtrace_index_match(a, ans, alen, q, qlen, &h1, &t1);
	n2 = numtrace_index_match(b, ans, alen, q, qlen, &h2, &t2);
	check(h1, n1, t1, alen, srclen);
	if (n1 != n2 || t1 != t2 ||
	    (n1 > 0 && memcmp(h1, h2, n1 * sizeof *h1) != 0))
		abort();
	free(h1);
	free(h2);
	/* the output as the answer, against itself */
	n1 = numtrace_index_match(a, out, olen, NULL, 0, &h1, &t1);
	check(h1, n1, t1, olen, srclen);
	free(h1);
	numtrace_index_drop_cell(a, 1);
	numtrace_index_drop_cell(a, 2);
	if (numtrace_index_count(a) != 0)
		abort();
	numtrace_index_free(a);
	numtrace_index_free(b);
	free(out);
	free(ans);
	free(q);
	return 0;
}
