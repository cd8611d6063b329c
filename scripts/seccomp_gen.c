/* scripts/seccomp_gen.c: writes build/gen/seccomp_bpf.h, terp's two
 * seccomp programs as libseccomp builds them on this machine, so that a
 * sandbox start hands bwrap the finished bytes instead of building them
 * again (7 ms of CPU per start). Built from src/sandbox/sandbox_filter.c with
 * TERP_SECCOMP_GEN (no embedded programs); the header also records the
 * libseccomp version and API level they were made with: terp builds
 * them afresh at run time when either differs (sandbox_filter.c). */
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>

#include "terp/sandbox_filter.h"

static int
dump(const char *name, enum sandbox_filter_kind kind)
{
	unsigned char *b;
	size_t n;
	char *err = NULL;

	if (sandbox_filter_bpf(kind, &b, &n, &err) < 0) {
		fprintf(stderr, "seccomp_gen: %s\n", err);
		free(err);
		return -1;
	}
	printf("static const unsigned char %s[] = {", name);
	for (size_t i = 0; i < n; i++)
		printf("%s0x%02x,", i % 12 ? " " : "\n\t", b[i]);
	printf("\n};\n");
	free(b);
	return 0;
}

int
main(void)
{
	const struct scmp_version *v = seccomp_version();
	unsigned int api = seccomp_api_get();

	printf("/* Made by scripts/seccomp_gen.c: do not edit. */\n");
	printf("#define SECCOMP_BUILT_VERSION %u\n",
	    v->major * 10000u + v->minor * 100u + v->micro);
	printf("#define SECCOMP_BUILT_API %u\n", api);
	if (dump("seccomp_built_a", SANDBOX_FILTER_ALLOW) < 0 ||
	    dump("seccomp_built_b", SANDBOX_FILTER_DENY) < 0)
		return 1;
	return 0;
}
