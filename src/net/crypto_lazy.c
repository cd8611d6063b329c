/* crypto_lazy: the two libcrypto functions terp calls (ws.c's SHA-1 of
 * the WebSocket handshake), loaded on first use like curl_lazy.c loads
 * libcurl: linked, libcrypto costs every start of terp 2.6 million
 * instructions of relocations for one digest that only a Jupyter
 * session computes. Without the library, EVP_Digest fails (returns 0)
 * as it does for any error. No header: libcrypto's own declarations. */
#include <openssl/evp.h>

#include <dlfcn.h>
#include <pthread.h>

static struct {
	void *EVP_sha1, *EVP_Digest;
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
load(void)
{
	void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);

	if (lib == NULL)
		return;
	real.EVP_sha1 = dlsym(lib, "EVP_sha1");
	real.EVP_Digest = dlsym(lib, "EVP_Digest");
}

/* fn = the real function, or NULL (see curl_lazy.c). */
#define GET(name, fn) do { \
	pthread_once(&once, load); \
	*(void **)&(fn) = real.name; \
} while (0)

const EVP_MD *
EVP_sha1(void)
{
	const EVP_MD *(*fn)(void);

	GET(EVP_sha1, fn);
	return fn ? fn() : NULL;
}

int
EVP_Digest(const void *data, size_t count, unsigned char *md, unsigned int *size,
    const EVP_MD *type, ENGINE *impl)
{
	int (*fn)(const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *,
	    ENGINE *);

	GET(EVP_Digest, fn);
	if (fn == NULL || type == NULL)
		return 0;
	return fn(data, count, md, size, type, impl);
}
