/* Unit tests for the seccomp programs made at build time
 * (scripts/seccomp_gen.c -> build/gen/seccomp_bpf.h): with the
 * libseccomp terp runs with, they are byte for byte what libseccomp
 * builds now, and sandbox_filter_build hands exactly those bytes to
 * bwrap, in sealed memfds. (What the programs allow and deny:
 * test_sandbox_filter.c, which runs them.) */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/sandbox_filter.h"

static void
read_all(int fd, unsigned char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	unsigned char *b = malloc(cap);
	ssize_t r;

	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 0, "the memfd is not at offset 0");
	while ((r = read(fd, b + n, cap - n)) > 0) {
		n += (size_t)r;
		cr_assert_lt(n, cap);
	}
	*out = b;
	*len = n;
}

Test(filter_builtin, matches_what_libseccomp_builds_now)
{
	enum sandbox_filter_kind kinds[] = { SANDBOX_FILTER_ALLOW, SANDBOX_FILTER_DENY };

	for (size_t i = 0; i < 2; i++) {
		const unsigned char *built;
		unsigned char *now;
		size_t blen, nlen;
		char *err = NULL;

		cr_assert_eq(sandbox_filter_builtin(kinds[i], &built, &blen), 0,
		    "the build's seccomp programs are not usable with this libseccomp "
		    "(another version or API level than at build time): rebuild terp");
		cr_assert_eq(sandbox_filter_bpf(kinds[i], &now, &nlen, &err), 0, "%s", err);
		cr_assert_eq(blen, nlen, "program %zu: %zu bytes built, %zu now", i, blen, nlen);
		cr_assert_eq(memcmp(built, now, nlen), 0, "program %zu differs", i);
		free(now);
	}
}

Test(filter_builtin, build_hands_over_those_bytes_sealed)
{
	int fds[2];
	char *err = NULL;
	enum sandbox_filter_kind kinds[] = { SANDBOX_FILTER_ALLOW, SANDBOX_FILTER_DENY };

	cr_assert_eq(sandbox_filter_build(&fds[0], &fds[1], &err), 0, "%s", err);
	for (size_t i = 0; i < 2; i++) {
		const unsigned char *built;
		unsigned char *got;
		size_t blen, glen;
		int seals = fcntl(fds[i], F_GET_SEALS);

		cr_assert_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL),
		    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
		cr_assert_eq(fcntl(fds[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
		cr_assert_eq(sandbox_filter_builtin(kinds[i], &built, &blen), 0);
		read_all(fds[i], &got, &glen);
		cr_assert_eq(glen, blen);
		cr_assert_eq(memcmp(got, built, glen), 0);
		free(got);
		close(fds[i]);
	}
}
