/* kernel_code: the driver's compiled code, cached per interpreter. */
#include "terp/kernel_code.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/digest.h"
#include "terp/pyenv.h"
#include "terp/util.h"

#define FORMAT	"terp driver code 1"

/* Runs in __main__ as `python -I -u -c kcode_loader`: the driver's
 * module code when the blob was made by this very interpreter version,
 * else the source, compiled as `python driver.py` would. __file__ and
 * argv[0] read as they do for the script. */
const char kcode_loader[] =
    "import marshal, sys\n"
    "sys.argv[0] = __file__ = '/run/terp/driver.py'\n"
    "with open('" KCODE_PATH "', 'rb') as _f:\n"
    "    _b = _f.read()\n"
    "if _b[:16] == b'" KCODE_MAGIC "' + sys.hexversion.to_bytes(8, 'little'):\n"
    "    _c = marshal.loads(memoryview(_b)[16:])\n"
    "else:\n"
    "    with open(__file__, 'rb') as _f:\n"
    "        _c = compile(_f.read(), __file__, 'exec')\n"
    "del _f, _b\n"
    "exec(_c)\n";

char *
kcode_file(const char *cache_dir, const struct pyenv *pe, const char *driver_id)
{
	struct sha256 s;
	struct stat st;
	unsigned char d[32];
	char hex[65], stamp[160];

	if (cache_dir == NULL || driver_id == NULL || pe == NULL || pe->exec == NULL ||
	    pe->real == NULL || stat(pe->real, &st) < 0)
		return NULL;
	snprintf(stamp, sizeof stamp, "%lld.%09ld %lld %llu:%llu",
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)st.st_size,
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	sha256_init(&s);
	sha256_add(&s, FORMAT, sizeof FORMAT);
	sha256_add(&s, pe->exec, strlen(pe->exec) + 1);
	sha256_add(&s, pe->real, strlen(pe->real) + 1);
	sha256_add(&s, stamp, strlen(stamp) + 1);
	sha256_add(&s, kcode_loader, sizeof kcode_loader);
	sha256_add(&s, driver_id, strlen(driver_id) + 1);
	sha256_done(&s, d);
	sha256_hex(d, hex);
	hex[32] = '\0';
	return xasprintf("%s/driver-%s.code", cache_dir, hex);
}

int
kcode_valid(const void *blob, size_t len)
{
	return blob != NULL && len > KCODE_HEAD && len <= KCODE_MAX &&
	    memcmp(blob, KCODE_MAGIC, 8) == 0;
}

unsigned char *
kcode_load(const char *file, size_t *len)
{
	struct stat st;
	unsigned char *b = NULL;
	size_t n = 0;
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0 || st.st_size <= KCODE_HEAD || st.st_size > KCODE_MAX)
		goto out;
	b = xmalloc((size_t)st.st_size);
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, b + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (n != (size_t)st.st_size || !kcode_valid(b, n)) {
		free(b);
		b = NULL;
		goto out;
	}
	*len = n;
out:
	close(fd);
	return b;
}

void
kcode_store(const char *file, const void *blob, size_t len)
{
	const char *slash = strrchr(file, '/');
	char *dir;

	if (!kcode_valid(blob, len) || slash == NULL)
		return;
	dir = xstrndup(file, (size_t)(slash - file));
	if (mkdir_p(dir, 0700) < 0) {
		free(dir);
		return;
	}
	free(dir);
	(void)write_file_atomic(file, blob, len, 0600, 0);	/* a cache */
}
