/* libFuzzer target for what the session pool and the token command send
 * to kernel_aca: execution answers, file listings, token output, JWT
 * claims and the stderr line shown on failure. Besides "no crash, no
 * leak", it checks properties: listed names are single safe components
 * within the cap, a token is only token characters, a shown line has no
 * control character and stays short. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel_aca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *t, *l, aud[32];
	struct aca_exec e;
	struct aca_file *f;
	const char *why;
	int64_t exp;
	int n, skipped;

	memcpy(s, data, size);
	s[size] = '\0';
	if (aca_exec_parse(s, size, &e, &why) == 0) {
		if (e.out == NULL || e.err == NULL || (e.value && strlen(e.value) > 70000))
			abort();
		aca_exec_free(&e);
	}
	n = aca_files_parse(s, size, 50, &f, &skipped, &why);
	if (n > 50)
		abort();
	for (int i = 0; i < n; i++) {
		size_t k = strlen(f[i].name);
		if (k == 0 || k > 255 || strchr(f[i].name, '/') || strcmp(f[i].name, "..") == 0 ||
		    strcmp(f[i].name, ".") == 0 || strlen(f[i].mtime) > 64)
			abort();
	}
	if (n > 0)
		aca_files_free(f, n);
	if ((t = aca_token_parse(s, size, &exp, &why)) != NULL) {
		size_t k = strlen(t);
		if (k < 8 || k > 16384 || strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789-._~+/=") != k)
			abort();
		free(t);
	}
	(void)aca_jwt_claims(s, &exp, aud, sizeof aud);
	for (const char *p = aud; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			abort();
	l = aca_redact_line(s, size, size > 8 ? s + size - 8 : NULL);
	if (strlen(l) > 200)
		abort();
	for (const char *p = l; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			abort();
	free(l);
	free(s);
	return 0;
}
