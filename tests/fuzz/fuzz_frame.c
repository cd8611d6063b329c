/* libFuzzer target for the host's reading of the driver's protocol
 * (kernel_frame). Besides "no crash, no leak", it checks properties:
 * the lines do not depend on how the stream is cut into reads, every
 * host name made from a parsed name is safe, and no size past the caps
 * is admitted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/kernel_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_host(const char *h, size_t max)
{
	if (strchr(h, '/') != NULL || h[0] == '.' || h[0] == '-' || h[0] == '\0' ||
	    strcmp(h, "..") == 0 || strlen(h) > max)
		abort();
}

/* The host name and its numbered variants (chart-2.png ...) are safe. */
static void
check_name(const char *name)
{
	char *h = kframe_host_name(name);
	char *d = kframe_display_name(name);

	(void)kframe_name_problem(name);
	check_host(h, KFRAME_HOST_NAME_MAX);
	for (int i = 1; i <= 1000; i *= 10) {
		char *c = kframe_host_candidate(h, i);
		check_host(c, KFRAME_HOST_NAME_MAX + 8);
		free(c);
	}
	free(h);
	free(d);
}

/* A frame's size against the caps: an admitted artifact fits them. */
static void
check_admit(const struct kframe *f)
{
	static const struct kframe_caps caps = { 1000, 4, 8, 5000 };
	struct kframe_usage use = { 3, 7, 4000 };
	uint64_t size;

	if (!f->has_size || f->size < 0)
		return;
	size = (uint64_t)f->size;
	if (kframe_admit(&caps, &use, size, 0, 0) == KF_ADMIT &&
	    (size > caps.size_max || use.bytes + size > caps.session_bytes))
		abort();
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
				check_admit(&f);
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
