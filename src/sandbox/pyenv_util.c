/* pyenv_util: paths, small files and version words, as pyenv's files
 * read them (pyenv_util.h). */
#include "pyenv_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

/* p is dir itself or lies below it. */
int
pyenv_path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return p[0] == '/';
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* A new string: a and b joined with one slash. */
char *
pyenv_path_join(const char *a, const char *b)
{
	size_t n = strlen(a);

	while (n > 1 && a[n - 1] == '/')
		n--;
	while (*b == '/')
		b++;
	if (n == 1 && a[0] == '/')
		return xasprintf("/%s", b);
	return xasprintf("%.*s/%s", (int)n, a, b);
}

/* A new string: the directory part of an absolute, normalized path. */
char *
pyenv_dirname(const char *p)
{
	const char *s = strrchr(p, '/');

	if (s == NULL || s == p)
		return xstrdup("/");
	return xstrndup(p, (size_t)(s - p));
}

const char *
pyenv_basename(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Makes p absolute (against cwd) and normalizes it the way Python's
 * os.path.abspath does, lexically: no //, no /./, no .. (sys.executable
 * and site.py's venv search are computed that way). New string, or NULL
 * when the result would pass PATH_MAX. */
char *
pyenv_normalize(const char *p, const char *cwd)
{
	char *in = p[0] == '/' ? xstrdup(p) : pyenv_path_join(cwd, p);
	char *out = xmalloc(strlen(in) + 2);
	size_t n = 0;
	char *s = in;

	for (;;) {
		char *e;
		size_t len;

		while (*s == '/')
			s++;
		if (*s == '\0')
			break;
		e = strchrnul(s, '/');
		len = (size_t)(e - s);
		if (len == 1 && s[0] == '.') {
			/* nothing */
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else {
			out[n++] = '/';
			memcpy(out + n, s, len);
			n += len;
		}
		s = e;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	free(in);
	if (n >= PATH_MAX) {
		free(out);
		return NULL;
	}
	return out;
}

int
pyenv_is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int
pyenv_is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int
pyenv_is_exec(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

/* Reads at most max bytes of a regular file, never through a FIFO or a
 * device. New NUL-terminated buffer or NULL (errno set). */
char *
pyenv_read_small(const char *path, size_t max, size_t *len, int flags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
	    ((flags & PYENV_RS_NOFOLLOW) ? O_NOFOLLOW : 0));
	struct stat st;
	char *b;
	size_t n = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    ((flags & PYENV_RS_OWN) &&
	    (st.st_uid != geteuid() || (st.st_mode & 022) != 0))) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	b = xmalloc(max + 1);
	while (n < max) {
		ssize_t r = read(fd, b + n, max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(b);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	if (len != NULL)
		*len = n;
	return b;
}

/* "3.11.2" -> 3, 11. */
int
pyenv_text_version(const char *v, int *major, int *minor)
{
	char *e;
	long a, b;

	if (v == NULL || !isdigit((unsigned char)*v))
		return 0;
	a = strtol(v, &e, 10);
	if (*e != '.' || !isdigit((unsigned char)e[1]))
		return 0;
	b = strtol(e + 1, &e, 10);
	if (a > 99 || b > 999)
		return 0;
	*major = (int)a;
	*minor = (int)b;
	return 1;
}
