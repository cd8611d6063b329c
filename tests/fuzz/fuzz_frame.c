/* libFuzzer target for the host's reading of the driver's protocol
 * (kernel_frame). Besides "no crash, no leak", it checks properties:
 * the lines do not depend on how the stream is cut into reads, and
 * every host name made from a parsed name is safe. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/kernel_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_name(const char *name)
{
	char *h = kframe_host_name(name);
	char *d = kframe_display_name(name);

	(void)kframe_name_problem(name);
	if (strchr(h, '/') != NULL || h[0] == '.' || h[0] == '-' || h[0] == '\0' ||
	    strlen(h) > KFRAME_HOST_NAME_MAX)
		abort();
	free(h);
	free(d);
}

/* Feeds the input in pieces of step bytes (0: whole); every line is
 * parsed and recorded. Returns -1 when the reader refused a piece. */
static int
run(const uint8_t *s, size_t n, size_t step, struct buf *rec)
{
	struct kframe_reader r;
	const char *line;
	size_t len;

	kframe_reader_init(&r, 4096);
	for (size_t i = 0; i < n; ) {
		size_t k = step == 0 || n - i < step ? n - i : step;
		if (kframe_reader_add(&r, (const char *)s + i, k) < 0) {
			kframe_reader_free(&r);
			return -1;
		}
		i += k;
		while (kframe_reader_next(&r, &line, &len)) {
			struct kframe f;
			const char *why;
			buf_add(rec, line, len);
			buf_addc(rec, '\n');
			if (kframe_parse(line, len, &f, &why) == 0) {
				if (f.name)
					check_name(f.name);
				if (f.has_id && f.id < 1)
					abort();
				kframe_free(&f);
			}
		}
	}
	kframe_reader_free(&r);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf a, b;
	char *name;

	buf_init(&a, 1 << 24);
	buf_init(&b, 1 << 24);
	/* A whole read can fail where small ones pass (the bound counts the
	 * bytes not taken yet); when both pass, the lines are the same. */
	if (run(data, size, 0, &a) == 0 && run(data, size, 1 + (size % 7), &b) == 0 &&
	    (a.len != b.len || (a.len > 0 && memcmp(a.data, b.data, a.len) != 0)))
		abort();
	buf_free(&a);
	buf_free(&b);
	name = malloc(size + 1);
	memcpy(name, data, size);
	name[size] = '\0';
	check_name(name);
	free(name);
	return 0;
}
