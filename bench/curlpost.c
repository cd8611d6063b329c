/* bench/curlpost.c: libcurl's own cost of POSTing request bodies, the
 * peer of terp's per-question CPU (bench/journal.py). A question is two
 * requests, each carrying the whole conversation; this posts bodies of
 * the given sizes to a local server, as terp hands them to curl (one
 * easy handle kept alive, CURLOPT_POSTFIELDS, terp's upload buffer), and
 * prints the process CPU a round of them costs (user + system: curl's
 * copy into its upload buffer and the kernel's send over loopback, which
 * runs in the sender's time), the median over the rounds, in us.
 *
 * Usage: build/bench-curlpost URL ROUNDS SIZE...
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* src/net/http.c's HTTP_UPLOAD_BUFFER */
#define UPLOAD_BUFFER	(64 * 1024 - 256)
#define WARMUP		3

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A JSON string of n bytes, so the server has a body of the right kind. */
static char *
body_of(size_t n)
{
	char *b = malloc(n + 1);

	if (b == NULL || n < 2)
		return b;
	memset(b, 'x', n);
	b[0] = '"';
	b[n - 1] = '"';
	b[n] = '\0';
	return b;
}

int
main(int argc, char **argv)
{
	int rounds, nb = argc - 3;
	char **bodies;
	size_t *sizes;
	double *us;
	CURL *e;
	struct curl_slist *h = NULL;

	if (argc < 4 || (rounds = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: %s URL ROUNDS SIZE...\n", argv[0]);
		return 2;
	}
	bodies = calloc((size_t)nb, sizeof *bodies);
	sizes = calloc((size_t)nb, sizeof *sizes);
	us = calloc((size_t)rounds, sizeof *us);
	if (bodies == NULL || sizes == NULL || us == NULL)
		return 1;
	for (int i = 0; i < nb; i++) {
		sizes[i] = strtoul(argv[3 + i], NULL, 10);
		if ((bodies[i] = body_of(sizes[i])) == NULL)
			return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((e = curl_easy_init()) == NULL)
		return 1;
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, argv[1]);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)UPLOAD_BUFFER);
	for (int r = -WARMUP; r < rounds; r++) {
		double t = cpu_us();
		for (int i = 0; i < nb; i++) {
			CURLcode rc;
			long code = 0;

			curl_easy_setopt(e, CURLOPT_POSTFIELDS, bodies[i]);
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			    (curl_off_t)sizes[i]);
			if ((rc = curl_easy_perform(e)) != CURLE_OK) {
				fprintf(stderr, "curlpost: %s\n", curl_easy_strerror(rc));
				return 1;
			}
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
			if (code != 200) {
				fprintf(stderr, "curlpost: HTTP %ld\n", code);
				return 1;
			}
		}
		if (r >= 0)
			us[r] = cpu_us() - t;
	}
	qsort(us, (size_t)rounds, sizeof *us, cmp_double);
	printf("%.1f\n", us[rounds / 2]);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	curl_global_cleanup();
	for (int i = 0; i < nb; i++)
		free(bodies[i]);
	free(bodies);
	free(sizes);
	free(us);
	return 0;
}
