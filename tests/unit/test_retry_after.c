/* retry_after: the one Retry-After reading (model providers and the ACA
 * pool): seconds, fractional seconds, milliseconds, an HTTP date, and
 * whatever else a server may send, which must fall back to the caller's
 * backoff (-1), never to a wait of its choosing. */
#include <criterion/criterion.h>
#include <string.h>

#include "terp/retry_after.h"

Test(retry_after, seconds_and_milliseconds)
{
	cr_assert_eq(retry_after_ms(NULL, "0", 0), 0);
	cr_assert_eq(retry_after_ms(NULL, "1", 0), 1000);
	cr_assert_eq(retry_after_ms(NULL, "0.25", 0), 250);
	cr_assert_eq(retry_after_ms(NULL, "120", 0), 120000);
	cr_assert_eq(retry_after_ms("0", NULL, 0), 0);
	cr_assert_eq(retry_after_ms("1500", NULL, 0), 1500);
	/* the millisecond header wins; a bad one falls back to the other */
	cr_assert_eq(retry_after_ms("40", "7", 0), 40);
	cr_assert_eq(retry_after_ms("-5", "7", 0), 7000);
	cr_assert_eq(retry_after_ms("", "7", 0), 7000);
}

Test(retry_after, http_dates)
{
	/* 1445412480 = Wed, 21 Oct 2015 07:28:00 GMT */
	const char *d = "Wed, 21 Oct 2015 07:28:00 GMT";

	cr_assert_eq(retry_after_ms(NULL, d, 1445412480 - 5), 5000);
	cr_assert_eq(retry_after_ms(NULL, d, 1445412480), 0);
	cr_assert_eq(retry_after_ms(NULL, d, 1445412480 + 3600), 0);	/* past: now */
	cr_assert_eq(retry_after_ms(NULL, "Wed, 21 Oct 2015 07:28:00 GMT junk", 0), -1);
	cr_assert_eq(retry_after_ms(NULL, "Wed, 21 Oct 2015 07:28:00", 0), -1);
	cr_assert_eq(retry_after_ms(NULL, "2015-10-21T07:28:00Z", 0), -1);
}

Test(retry_after, garbage_is_unusable)
{
	const char *bad[] = { "", " ", "soon", "12abc", "abc12", "-1", "-0.5", "1e99",
	    "inf", "nan", "1e9", "0x10 s", "3 s" };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(retry_after_ms(NULL, bad[i], 0), -1, "retry-after '%s'", bad[i]);
		if (strcmp(bad[i], "1e9") != 0)	/* 1e9 ms is a number of milliseconds */
			cr_assert_eq(retry_after_ms(bad[i], NULL, 0), -1, "retry-after-ms '%s'",
			    bad[i]);
	}
	cr_assert_eq(retry_after_ms("1e13", NULL, 0), -1);
	cr_assert_eq(retry_after_ms("nan", NULL, 0), -1);
	cr_assert_eq(retry_after_ms(NULL, NULL, 0), -1);
}
