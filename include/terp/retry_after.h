/* retry_after: the one reading of a server's wait-before-retrying
 * headers, for every HTTP client in terp (the model providers in
 * llm_http.c, the ACA session pool). Below them all, in net/. */
#ifndef TERP_RETRY_AFTER_H
#define TERP_RETRY_AFTER_H

#include <stdint.h>

/* Milliseconds to wait from retry-after-ms (milliseconds, possibly
 * fractional) or else retry-after (seconds, possibly fractional, or an
 * HTTP-date compared with now, a Unix time: a date past is 0). Either
 * may be NULL. -1 when neither is usable (absent, negative, garbage,
 * absurdly large): the caller's own backoff then. The caller caps. */
int64_t retry_after_ms(const char *retry_after_ms, const char *retry_after, int64_t now);

#endif
