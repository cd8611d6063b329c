/* kernel_frame: the host's reading of the driver's protocol. Every input
 * here is what a cell could forge. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel_frame.h"
#include "terp/util.h"

/* ------------------------------------------------------------ lines */

/* Feeds s in pieces of step bytes; returns the lines joined by '|'. */
static char *
split_lines(const char *s, size_t step, size_t max, int *failed)
{
	struct kframe_reader r;
	size_t n = strlen(s), got = 0;
	char *out = xcalloc(1, n + 2);
	const char *line;
	size_t len;

	*failed = 0;
	kframe_reader_init(&r, max);
	for (size_t i = 0; i < n; i += step) {
		size_t k = n - i < step ? n - i : step;
		if (kframe_reader_add(&r, s + i, k) < 0) {
			*failed = 1;
			break;
		}
		while (kframe_reader_next(&r, &line, &len)) {
			memcpy(out + got, line, len);
			got += len;
			out[got++] = '|';
		}
	}
	kframe_reader_free(&r);
	out[got] = '\0';
	return out;
}

Test(kframe_reader, lines_do_not_depend_on_how_the_bytes_arrive)
{
	const char *in = "{\"ev\":\"ready\"}\n\nabc\nlonger line here\nrest";
	int failed;

	for (size_t step = 1; step <= strlen(in); step++) {
		char *s = split_lines(in, step, 1024, &failed);
		cr_assert_not(failed);
		cr_assert_str_eq(s, "{\"ev\":\"ready\"}||abc|longer line here|", "step %zu", step);
		free(s);
	}
}

Test(kframe_reader, a_line_over_the_bound_fails_and_appends_nothing)
{
	struct kframe_reader r;
	const char *line;
	size_t len;

	kframe_reader_init(&r, 8);
	cr_assert_eq(kframe_reader_add(&r, "12345", 5), 0);
	cr_assert_eq(kframe_reader_add(&r, "6789", 4), -1);	/* 9 pending > 8 */
	cr_assert_eq(r.len, 5);
	cr_assert_eq(kframe_reader_add(&r, "\n", 1), 0);
	cr_assert_eq(kframe_reader_next(&r, &line, &len), 1);
	cr_assert_eq(len, 5);
	cr_assert(memcmp(line, "12345", 5) == 0);
	/* taken lines free their room */
	cr_assert_eq(kframe_reader_add(&r, "abcdefg\n", 8), 0);
	cr_assert_eq(kframe_reader_next(&r, &line, &len), 1);
	cr_assert_eq(len, 7);
	cr_assert_eq(kframe_reader_next(&r, &line, &len), 0);
	cr_assert(r.cap <= 9, "the buffer never grows past max + 1: %zu", r.cap);
	kframe_reader_free(&r);
}

Test(kframe_reader, reset_drops_a_partial_line)
{
	struct kframe_reader r;
	const char *line;
	size_t len;

	kframe_reader_init(&r, 64);
	kframe_reader_add(&r, "partial", 7);
	kframe_reader_reset(&r);
	kframe_reader_add(&r, "x\n", 2);
	cr_assert_eq(kframe_reader_next(&r, &line, &len), 1);
	cr_assert_eq(len, 1);
	kframe_reader_free(&r);
}

/* ------------------------------------------------------------ frames */

static struct kframe
parse_ok(const char *s)
{
	struct kframe f;
	const char *why = NULL;

	cr_assert_eq(kframe_parse(s, strlen(s), &f, &why), 0, "%s: %s", s, why);
	return f;
}

Test(kframe_parse, a_result)
{
	struct kframe f = parse_ok("{\"ev\":\"result\",\"id\":3,\"status\":\"ok\",\"value\":\"42\"}");

	cr_assert_eq(f.type, KF_RESULT);
	cr_assert(f.has_id && f.id == 3);
	cr_assert(f.ok);
	cr_assert_str_eq(f.value, "42");
	cr_assert_null(f.ename);
	kframe_free(&f);

	f = parse_ok("{\"ev\":\"result\",\"id\":3,\"status\":\"ok\",\"error\":{\"ename\":\"E\","
	    "\"evalue\":\"v\",\"traceback\":\"t\"}}");
	cr_assert_not(f.ok, "an error is no success, whatever the status says");
	cr_assert_str_eq(f.ename, "E");
	cr_assert_str_eq(f.traceback, "t");
	kframe_free(&f);
}

Test(kframe_parse, ids_must_be_positive_integers)
{
	const char *bad[] = { "0", "-1", "1.5", "\"1\"", "true", "null", "1e300",
	    "2147483648", "[1]", "{}" };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *s = xasprintf("{\"ev\":\"result\",\"id\":%s}", bad[i]);
		struct kframe f = parse_ok(s);
		cr_assert_not(f.has_id, "id %s", bad[i]);
		kframe_free(&f);
		free(s);
	}
	struct kframe f = parse_ok("{\"ev\":\"result\",\"id\":2147483647,\"ID\":5}");
	cr_assert(f.has_id && f.id == 2147483647);
	kframe_free(&f);
	f = parse_ok("{\"ev\":\"result\",\"ID\":5}");
	cr_assert_not(f.has_id, "keys are case-sensitive");
	kframe_free(&f);
}

Test(kframe_parse, sizes)
{
	struct kframe f = parse_ok("{\"ev\":\"artifact_end\",\"size\":-1}");
	cr_assert(f.has_size && f.size == -1);
	kframe_free(&f);
	f = parse_ok("{\"ev\":\"artifact\",\"size\":-2}");
	cr_assert_not(f.has_size);
	kframe_free(&f);
	f = parse_ok("{\"ev\":\"artifact\",\"size\":1e30}");
	cr_assert_not(f.has_size);
	kframe_free(&f);
	f = parse_ok("{\"ev\":\"artifact\",\"size\":9007199254740992,\"name\":\"a\"}");
	cr_assert(f.has_size && f.size == 9007199254740992LL);
	cr_assert_str_eq(f.name, "a");
	kframe_free(&f);
}

Test(kframe_parse, not_frames)
{
	const char *bad[] = { "", "not json", "[]", "1", "\"ev\"", "{}", "{\"ev\":1}",
	    "{\"ev\":null}", "{\"EV\":\"ready\"}" };
	struct kframe f;
	const char *why;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		cr_assert_eq(kframe_parse(bad[i], strlen(bad[i]), &f, &why), -1, "%s", bad[i]);
		cr_assert_not_null(why);
		cr_assert_null(f.json);
	}
}

Test(kframe_parse, unknown_events_and_wrong_types)
{
	struct kframe f = parse_ok("{\"ev\":\"launch_missiles\"}");
	cr_assert_eq(f.type, KF_UNKNOWN);
	kframe_free(&f);
	f = parse_ok("{\"ev\":\"artifact\",\"name\":[\"x\"],\"reason\":5,\"data\":{}}");
	cr_assert_eq(f.type, KF_ARTIFACT);
	cr_assert_null(f.name);
	cr_assert_null(f.reason);
	cr_assert_null(f.data);
	kframe_free(&f);
}

/* ------------------------------------------------------------ names */

Test(kframe_names, problems)
{
	char longname[KFRAME_NAME_MAX + 2];

	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	cr_assert_not_null(kframe_name_problem(""));
	cr_assert_not_null(kframe_name_problem(longname));
	cr_assert_not_null(kframe_name_problem("bad\xff.png"));
	cr_assert_not_null(kframe_name_problem("esc\x1b]0;x\x07"));
	cr_assert_not_null(kframe_name_problem("nl\n.png"));
	cr_assert_not_null(kframe_name_problem("del\x7f"));
	cr_assert_not_null(kframe_name_problem("csi\xc2\x9b"));
	cr_assert_null(kframe_name_problem("sub/../chart.png"));
	cr_assert_null(kframe_name_problem("\xd0\xb3\xd1\x80\xd0\xb0\xd1\x84.png"));
	longname[KFRAME_NAME_MAX] = '\0';
	cr_assert_null(kframe_name_problem(longname));
}

static void
host_is(const char *in, const char *want)
{
	char *s = kframe_host_name(in);
	cr_assert_str_eq(s, want, "%s", in);
	free(s);
}

Test(kframe_names, host_names)
{
	host_is("chart.png", "chart.png");
	host_is("../.bash_aliases", "_.bash_aliases");
	host_is(".bashrc", "bashrc");
	host_is("..", "_");
	host_is(".", "_");
	host_is("", "_");
	host_is("-rf", "_rf");
	host_is("a-b_c.tar.gz", "a-b_c.tar.gz");
	host_is("/etc/passwd", "_etc_passwd");
	host_is("sub/dir/x.png", "sub_dir_x.png");
	host_is("\xd0\xb3\xd1\x80.png", "__.png");
	host_is("evil\x1b]0;x\x07\n\xe2\x80\xaegnp.exe", "evil__0_x___gnp.exe");
}

Test(kframe_names, long_host_names_keep_their_extension)
{
	char in[400];
	char *s;

	memset(in, 'x', 300);
	strcpy(in + 300, ".png");
	s = kframe_host_name(in);
	cr_assert_eq(strlen(s), KFRAME_HOST_NAME_MAX);
	cr_assert_str_eq(s + KFRAME_HOST_NAME_MAX - 4, ".png");
	free(s);
	memset(in, 'y', 399);
	in[50] = '.';
	in[399] = '\0';
	s = kframe_host_name(in);
	cr_assert_eq(strlen(s), KFRAME_HOST_NAME_MAX, "a long extension is cut too");
	free(s);
}

Test(kframe_names, candidates)
{
	char *s;

	s = kframe_host_candidate("chart.png", 1);
	cr_assert_str_eq(s, "chart.png");
	free(s);
	s = kframe_host_candidate("chart.png", 2);
	cr_assert_str_eq(s, "chart-2.png");
	free(s);
	s = kframe_host_candidate("Makefile", 1000);
	cr_assert_str_eq(s, "Makefile-1000");
	free(s);
	s = kframe_host_candidate("a.tar.gz", 3);
	cr_assert_str_eq(s, "a.tar-3.gz");
	free(s);
}

Test(kframe_names, display_names_are_escaped_and_cut)
{
	char in[600];
	char *s = kframe_display_name("a\x1b[2Jb\n");

	cr_assert_null(strchr(s, '\x1b'));
	cr_assert_null(strchr(s, '\n'));
	free(s);
	/* 300 two-byte characters: cut at 200 bytes, on a boundary */
	for (int i = 0; i < 300; i++)
		memcpy(in + 2 * i, "\xc3\xa9", 2);
	in[600 - 1] = '\0';
	s = kframe_display_name(in);
	cr_assert_eq(strlen(s), 200);
	free(s);
}

/* ------------------------------------------------------------ caps */

Test(kframe_caps, each_cap)
{
	struct kframe_caps c = { .size_max = 100, .per_cell = 2, .per_session = 3,
	    .session_bytes = 250 };
	struct kframe_usage u = { 0, 0, 0 };

	cr_assert_eq(kframe_admit(&c, &u, 100, 0, 0), KF_ADMIT);
	cr_assert_eq(kframe_admit(&c, &u, 101, 0, 0), KF_TOO_LARGE);
	u.cell = 2;
	cr_assert_eq(kframe_admit(&c, &u, 1, 0, 0), KF_CELL_CAP);
	u.cell = 0;
	u.files = 3;
	u.bytes = 200;
	cr_assert_eq(kframe_admit(&c, &u, 1, 0, 0), KF_SESSION_CAP);
	/* replacing one of terp's own files adds no file */
	cr_assert_eq(kframe_admit(&c, &u, 90, 1, 50), KF_ADMIT);
	cr_assert_eq(kframe_admit(&c, &u, 100, 1, 40), KF_BYTES_CAP);
	u.files = 2;
	cr_assert_eq(kframe_admit(&c, &u, 51, 0, 0), KF_BYTES_CAP);
	cr_assert_eq(kframe_admit(&c, &u, 50, 0, 0), KF_ADMIT);
	/* no wrap-around near the top */
	c.session_bytes = UINT64_MAX;
	c.size_max = UINT64_MAX;
	u.bytes = UINT64_MAX - 1;
	cr_assert_eq(kframe_admit(&c, &u, 2, 0, 0), KF_BYTES_CAP);
}

/* The words of each refusal, the same from every backend. */
Test(kframe_caps, refusal_text)
{
	static const struct {
		enum kframe_refusal	 r;
		const char		*want;
	} t[] = {
		{ KF_TOO_LARGE, "too large (3 KiB; the limit is 2 KiB)" },
		{ KF_CELL_CAP, "cap reached (64 artifacts per cell)" },
		{ KF_SESSION_CAP, "cap reached (1000 artifact files per session)" },
		{ KF_BYTES_CAP, "cap reached (1 MiB of artifacts per session)" },
		{ KF_ADMIT, "refused" },
	};
	struct kframe_caps c = { .size_max = 2048, .per_cell = 64, .per_session = 1000,
	    .session_bytes = 1 << 20 };

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		char *s = kframe_refusal_text(&c, t[i].r, 3072);
		cr_assert_str_eq(s, t[i].want);
		free(s);
	}
}

/* ------------------------------------------------------------ fuzz */

/* Random bytes and random frame-like JSON through the reader and the
 * parser: no crash (ASan), every line bounded, and the lines the same
 * however the stream is cut. The libFuzzer target tests/fuzz/fuzz_frame.c
 * does the same with coverage guidance. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *pieces[] = {
	"{", "}", "[", "]", ",", ":", "\"ev\"", "\"result\"", "\"artifact\"", "\"chunk\"",
	"\"artifact_end\"", "\"id\"", "\"size\"", "\"name\"", "\"data\"", "\"../.x\"",
	"1", "-1", "1.5", "1e999", "null", "true", "\"\\u0000\"", "\"\\ud800\"",
	"\n", " ", "\"\xff\"", "\"\x1b\"", "\"error\"", "\"ename\"",
};

Test(kframe_fuzz, random_streams)
{
	for (int round = 0; round < 3000; round++) {
		struct buf_s { char b[2048]; size_t n; } in = { .n = 0 };
		struct kframe_reader r;
		const char *line;
		size_t len, lines = 0;

		while (in.n < sizeof in.b - 32) {
			if (rnd(4) == 0) {
				in.b[in.n++] = (char)rnd(256);
			} else {
				const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
				memcpy(in.b + in.n, p, strlen(p));
				in.n += strlen(p);
			}
			if (rnd(40) == 0)
				break;
		}
		kframe_reader_init(&r, 256);
		for (size_t i = 0; i < in.n; ) {
			size_t k = 1 + rnd(64);
			if (k > in.n - i)
				k = in.n - i;
			if (kframe_reader_add(&r, in.b + i, k) < 0) {
				kframe_reader_reset(&r);	/* what the kernel does: kill */
				i += k;
				continue;
			}
			i += k;
			while (kframe_reader_next(&r, &line, &len)) {
				struct kframe f;
				const char *why;
				cr_assert(len <= 256);
				lines++;
				if (kframe_parse(line, len, &f, &why) == 0) {
					if (f.name) {
						char *h = kframe_host_name(f.name);
						char *d = kframe_display_name(f.name);
						(void)kframe_name_problem(f.name);
						cr_assert_null(strchr(h, '/'));
						cr_assert_neq(h[0], '.');
						cr_assert(strlen(h) <= KFRAME_HOST_NAME_MAX);
						free(h);
						free(d);
					}
					if (f.has_id)
						cr_assert(f.id >= 1);
					kframe_free(&f);
				}
			}
		}
		kframe_reader_free(&r);
		(void)lines;
	}
}

/* ------------------------------------------------------------ result texts */

Test(kframe_text, caps_on_a_character_boundary)
{
	size_t n = KFRAME_TEXT_MAX + 1;
	char *big = xcalloc(1, n + 1), *c;

	cr_assert_null(kframe_text_cap(NULL));
	c = kframe_text_cap("short");
	cr_assert_str_eq(c, "short");
	free(c);
	/* two-byte characters with the cap landing inside one */
	memset(big, 'a', 1);
	for (size_t i = 1; i + 1 < n; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	c = kframe_text_cap(big);
	cr_assert_lt(strlen(c), KFRAME_TEXT_MAX + 40);
	cr_assert(strstr(c, "... [cut by terp at 256 KiB]") != NULL);
	cr_assert_eq((unsigned char)c[strlen(c) - strlen("... [cut by terp at 256 KiB]") - 1], 0xa9);
	free(c);
	c = kframe_text_capn(big, 10);
	cr_assert_eq(strlen(c), 10);
	free(c);
	free(big);
}
