/* secret_from_cmd: the one runner behind api_key_cmd and the sandbox's
 * token command. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/secret.h"

static enum secret_status
run(const char *cmd, size_t max, int flags, char **out, int *code)
{
	return secret_from_cmd(cmd, max, flags, out, code);
}

Test(secret, trims_trailing_whitespace)
{
	char *s;
	int code;

	cr_assert_eq(run("printf 'sk-1 \\r\\n'", 64, SECRET_ONE_LINE, &s, &code),
	    SECRET_OK);
	cr_assert_str_eq(s, "sk-1");
	free(s);
}

Test(secret, one_line_refuses_two_and_first_line_takes_the_first)
{
	char *s;
	int code;

	cr_assert_eq(run("printf 'a\\nb\\n'", 64, SECRET_ONE_LINE, &s, &code),
	    SECRET_EMPTY);
	cr_assert_null(s);
	cr_assert_eq(run("printf 'a\\nb\\n'", 64, 0, &s, &code), SECRET_OK);
	cr_assert_str_eq(s, "a");
	free(s);
}

Test(secret, exit_status_and_signal)
{
	char *s;
	int code;

	cr_assert_eq(run("echo key; exit 3", 64, 0, &s, &code), SECRET_FAILED);
	cr_assert_eq(code, 3);
	cr_assert_null(s);
	cr_assert_eq(run("kill -9 $$", 64, 0, &s, &code), SECRET_FAILED);
	cr_assert_eq(code, -1);
}

Test(secret, empty_output)
{
	char *s;
	int code;

	cr_assert_eq(run("printf ' \\n'", 64, 0, &s, &code), SECRET_EMPTY);
	cr_assert_eq(run("true", 64, SECRET_ONE_LINE, &s, &code), SECRET_EMPTY);
}

/* A command printing more than max: the first max bytes, and the
 * command is not killed by SIGPIPE (its status is its own). */
Test(secret, long_output_is_cut_and_drained)
{
	char *s;
	int code;

	cr_assert_eq(run("head -c 100000 /dev/zero | tr '\\0' x; echo", 10, 0,
	    &s, &code), SECRET_OK);
	cr_assert_str_eq(s, "xxxxxxxxxx");
	free(s);
}
