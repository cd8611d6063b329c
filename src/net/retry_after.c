/* retry_after: Retry-After and retry-after-ms (see retry_after.h). */
#include "terp/retry_after.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t
retry_after_ms(const char *retry_after_ms, const char *retry_after, int64_t now)
{
	char *end;
	double v;

	if (retry_after_ms != NULL) {
		v = strtod(retry_after_ms, &end);
		if (end != retry_after_ms && *end == '\0' && v >= 0 && v < 1e12)
			return (int64_t)v;
	}
	if (retry_after != NULL) {
		struct tm tm;
		v = strtod(retry_after, &end);
		if (end != retry_after && *end == '\0' && v >= 0 && v < 1e9)
			return (int64_t)(v * 1000);
		memset(&tm, 0, sizeof tm);
		end = strptime(retry_after, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (end != NULL && *end == '\0') {
			int64_t t = (int64_t)timegm(&tm);
			return t > now ? (t - now) * 1000 : 0;
		}
	}
	return -1;
}
