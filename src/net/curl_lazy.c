/* curl_lazy: libcurl, loaded on first use. Linked normally, libcurl and
 * what it pulls in (TLS, Kerberos, LDAP, SSH, IDN: about thirty
 * libraries) cost every start of terp some 12 million instructions of
 * symbol lookups and constructors, most of `terp exec`'s own start,
 * which never makes a request. This file defines the libcurl functions
 * terp calls; the first call dlopens libcurl.so.4 and each forwards to
 * the real one. Without the library every call fails the way libcurl
 * reports failure (NULL, CURLE_FAILED_INIT, ...), and curl_easy_strerror
 * says why. No header: these are libcurl's own declarations. */
#define CURL_DISABLE_TYPECHECK 1	/* the setopt macros would hide ours */
#include <curl/curl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

/* The functions terp uses (nm -u of its objects lists the same set):
 * X(name) for each, resolved together, once. */
#define CURL_FUNCS \
	X(curl_global_init) X(curl_free) X(curl_easy_init) X(curl_easy_setopt) \
	X(curl_easy_perform) X(curl_easy_cleanup) X(curl_easy_getinfo) \
	X(curl_easy_strerror) X(curl_easy_escape) X(curl_easy_recv) \
	X(curl_easy_send) X(curl_multi_init) X(curl_multi_setopt) \
	X(curl_multi_add_handle) X(curl_multi_remove_handle) \
	X(curl_multi_info_read) X(curl_multi_socket_action) \
	X(curl_multi_cleanup) X(curl_slist_append) X(curl_slist_free_all) \
	X(curl_url) X(curl_url_cleanup) X(curl_url_get) X(curl_url_set) \
	X(curl_mime_init) X(curl_mime_free) X(curl_mime_addpart) \
	X(curl_mime_name) X(curl_mime_filename) X(curl_mime_type) \
	X(curl_mime_data_cb)

static struct {
#define X(name) void *name;
	CURL_FUNCS
#undef X
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
load(void)
{
	void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (lib == NULL)
		return;
#define X(name) real.name = dlsym(lib, #name);
	CURL_FUNCS
#undef X
}

/* fn = the real function, or NULL. (POSIX lets a dlsym result be read
 * as a function pointer; the copy keeps ISO C's cast warning out.) */
#define GET(name, fn) do { \
	pthread_once(&once, load); \
	*(void **)&(fn) = real.name; \
} while (0)

/* One argument of the setopt families, read by the option's type (libcurl's
 * option numbers carry it: 0 long, 10000 pointer, 20000 function, 30000
 * curl_off_t, 40000 blob) and passed on as that type. */
#define OPT_FORWARD(call, h, opt, ap) do { \
	if ((long)(opt) < CURLOPTTYPE_OBJECTPOINT) \
		return call(h, opt, va_arg(ap, long)); \
	if ((long)(opt) < CURLOPTTYPE_FUNCTIONPOINT || (long)(opt) >= CURLOPTTYPE_BLOB) \
		return call(h, opt, va_arg(ap, void *)); \
	if ((long)(opt) < CURLOPTTYPE_OFF_T) \
		return call(h, opt, va_arg(ap, void (*)(void))); \
	return call(h, opt, va_arg(ap, curl_off_t)); \
} while (0)

CURLcode
curl_global_init(long flags)
{
	CURLcode (*fn)(long);
	GET(curl_global_init, fn);
	return fn ? fn(flags) : CURLE_FAILED_INIT;
}

void
curl_free(void *p)
{
	void (*fn)(void *);
	GET(curl_free, fn);
	if (fn)
		fn(p);
}

CURL *
curl_easy_init(void)
{
	CURL *(*fn)(void);
	GET(curl_easy_init, fn);
	return fn ? fn() : NULL;
}

CURLcode
curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	CURLcode (*fn)(CURL *, CURLoption, ...);
	CURLcode rc;
	va_list ap;

	GET(curl_easy_setopt, fn);
	if (fn == NULL)
		return CURLE_FAILED_INIT;
	va_start(ap, opt);
#define CALL(h_, o_, v_) (rc = fn(h_, o_, v_), va_end(ap), rc)
	OPT_FORWARD(CALL, h, opt, ap);
#undef CALL
}

CURLcode
curl_easy_perform(CURL *h)
{
	CURLcode (*fn)(CURL *);
	GET(curl_easy_perform, fn);
	return fn ? fn(h) : CURLE_FAILED_INIT;
}

void
curl_easy_cleanup(CURL *h)
{
	void (*fn)(CURL *);
	GET(curl_easy_cleanup, fn);
	if (fn)
		fn(h);
}

CURLcode
curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	CURLcode (*fn)(CURL *, CURLINFO, ...);
	CURLcode rc;
	va_list ap;

	GET(curl_easy_getinfo, fn);
	if (fn == NULL)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = fn(h, info, va_arg(ap, void *));	/* always a pointer to the answer */
	va_end(ap);
	return rc;
}

const char *
curl_easy_strerror(CURLcode code)
{
	const char *(*fn)(CURLcode);
	GET(curl_easy_strerror, fn);
	return fn ? fn(code) : "libcurl (libcurl.so.4) could not be loaded";
}

char *
curl_easy_escape(CURL *h, const char *s, int len)
{
	char *(*fn)(CURL *, const char *, int);
	GET(curl_easy_escape, fn);
	return fn ? fn(h, s, len) : NULL;
}

CURLcode
curl_easy_recv(CURL *h, void *buf, size_t len, size_t *n)
{
	CURLcode (*fn)(CURL *, void *, size_t, size_t *);
	GET(curl_easy_recv, fn);
	return fn ? fn(h, buf, len, n) : CURLE_FAILED_INIT;
}

CURLcode
curl_easy_send(CURL *h, const void *buf, size_t len, size_t *n)
{
	CURLcode (*fn)(CURL *, const void *, size_t, size_t *);
	GET(curl_easy_send, fn);
	return fn ? fn(h, buf, len, n) : CURLE_FAILED_INIT;
}

CURLM *
curl_multi_init(void)
{
	CURLM *(*fn)(void);
	GET(curl_multi_init, fn);
	return fn ? fn() : NULL;
}

CURLMcode
curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
	CURLMcode (*fn)(CURLM *, CURLMoption, ...);
	CURLMcode rc;
	va_list ap;

	GET(curl_multi_setopt, fn);
	if (fn == NULL)
		return CURLM_INTERNAL_ERROR;
	va_start(ap, opt);
#define CALL(h_, o_, v_) (rc = fn(h_, o_, v_), va_end(ap), rc)
	OPT_FORWARD(CALL, m, opt, ap);
#undef CALL
}

CURLMcode
curl_multi_add_handle(CURLM *m, CURL *h)
{
	CURLMcode (*fn)(CURLM *, CURL *);
	GET(curl_multi_add_handle, fn);
	return fn ? fn(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode
curl_multi_remove_handle(CURLM *m, CURL *h)
{
	CURLMcode (*fn)(CURLM *, CURL *);
	GET(curl_multi_remove_handle, fn);
	return fn ? fn(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMsg *
curl_multi_info_read(CURLM *m, int *left)
{
	CURLMsg *(*fn)(CURLM *, int *);
	GET(curl_multi_info_read, fn);
	if (fn == NULL) {
		*left = 0;
		return NULL;
	}
	return fn(m, left);
}

CURLMcode
curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running)
{
	CURLMcode (*fn)(CURLM *, curl_socket_t, int, int *);
	GET(curl_multi_socket_action, fn);
	return fn ? fn(m, s, ev, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode
curl_multi_cleanup(CURLM *m)
{
	CURLMcode (*fn)(CURLM *);
	GET(curl_multi_cleanup, fn);
	return fn ? fn(m) : CURLM_INTERNAL_ERROR;
}

struct curl_slist *
curl_slist_append(struct curl_slist *l, const char *s)
{
	struct curl_slist *(*fn)(struct curl_slist *, const char *);
	GET(curl_slist_append, fn);
	return fn ? fn(l, s) : NULL;
}

void
curl_slist_free_all(struct curl_slist *l)
{
	void (*fn)(struct curl_slist *);
	GET(curl_slist_free_all, fn);
	if (fn)
		fn(l);
}

CURLU *
curl_url(void)
{
	CURLU *(*fn)(void);
	GET(curl_url, fn);
	return fn ? fn() : NULL;
}

void
curl_url_cleanup(CURLU *u)
{
	void (*fn)(CURLU *);
	GET(curl_url_cleanup, fn);
	if (fn)
		fn(u);
}

CURLUcode
curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags)
{
	CURLUcode (*fn)(CURLU *, CURLUPart, char **, unsigned int);
	GET(curl_url_get, fn);
	return fn ? fn(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode
curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{
	CURLUcode (*fn)(CURLU *, CURLUPart, const char *, unsigned int);
	GET(curl_url_set, fn);
	return fn ? fn(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

curl_mime *
curl_mime_init(CURL *h)
{
	curl_mime *(*fn)(CURL *);
	GET(curl_mime_init, fn);
	return fn ? fn(h) : NULL;
}

void
curl_mime_free(curl_mime *m)
{
	void (*fn)(curl_mime *);
	GET(curl_mime_free, fn);
	if (fn)
		fn(m);
}

curl_mimepart *
curl_mime_addpart(curl_mime *m)
{
	curl_mimepart *(*fn)(curl_mime *);
	GET(curl_mime_addpart, fn);
	return fn ? fn(m) : NULL;
}

CURLcode
curl_mime_name(curl_mimepart *p, const char *name)
{
	CURLcode (*fn)(curl_mimepart *, const char *);
	GET(curl_mime_name, fn);
	return fn ? fn(p, name) : CURLE_FAILED_INIT;
}

CURLcode
curl_mime_filename(curl_mimepart *p, const char *name)
{
	CURLcode (*fn)(curl_mimepart *, const char *);
	GET(curl_mime_filename, fn);
	return fn ? fn(p, name) : CURLE_FAILED_INIT;
}

CURLcode
curl_mime_type(curl_mimepart *p, const char *type)
{
	CURLcode (*fn)(curl_mimepart *, const char *);
	GET(curl_mime_type, fn);
	return fn ? fn(p, type) : CURLE_FAILED_INIT;
}

CURLcode
curl_mime_data_cb(curl_mimepart *p, curl_off_t size, curl_read_callback rd,
    curl_seek_callback sk, curl_free_callback fr, void *arg)
{
	CURLcode (*fn)(curl_mimepart *, curl_off_t, curl_read_callback, curl_seek_callback,
	    curl_free_callback, void *);
	GET(curl_mime_data_cb, fn);
	return fn ? fn(p, size, rd, sk, fr, arg) : CURLE_FAILED_INIT;
}
