/* util: allocation, fatal errors, clocks and small parsing helpers. */
#include "terp/util.h"

#include <ctype.h>
#include <pwd.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void (*fatal_hook)(void);

void
fatal_set_hook(void (*hook)(void))
{
	fatal_hook = hook;
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	if (fatal_hook != NULL) {
		void (*h)(void) = fatal_hook;
		fatal_hook = NULL;	/* never recurse through a failing hook */
		h();
	}
	fputs("terp: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(70);
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		fatal("out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		fatal("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		fatal("out of memory (%zu bytes)", n);
	return q;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

char *
xvasprintf(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		fatal("out of memory (asprintf)");
	return s;
}

int64_t
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
now_ms(void)
{
	return now_us() / 1000;
}

int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mult = 1;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'k': mult = 1ULL << 10; end++; break;
	case 'm': mult = 1ULL << 20; end++; break;
	case 'g': mult = 1ULL << 30; end++; break;
	case 't': mult = 1ULL << 40; end++; break;
	case 'b': break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end != '\0' || v * (double)mult > 9.0e18)
		return -1;
	*out = (uint64_t)(v * (double)mult);
	return 0;
}

int
parse_duration_ms(const char *s, int64_t *out)
{
	char *end;
	double v;

	if (s == NULL || !(isdigit((unsigned char)*s) || *s == '.'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || v < 0)
		return -1;
	if (*end == '\0' || strcmp(end, "s") == 0)
		v *= 1000;
	else if (strcmp(end, "ms") == 0)
		;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		v *= 60000;
	else if (strcmp(end, "h") == 0)
		v *= 3600000;
	else
		return -1;
	if (v > 9.0e15)
		return -1;
	*out = (int64_t)v;
	return 0;
}

void
fmt_bytes(char *buf, size_t len, uint64_t n)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
}

int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
write_file_atomic(const char *path, const void *data, size_t len,
    unsigned mode, int flags)
{
	/* pid and a counter: unique among this process's writers and
	 * others' (O_EXCL settles the rest) */
	static unsigned seq;
	char *tmp = xasprintf("%s.%ld.%u.tmp", path, (long)getpid(), seq++);
	int fd, e;

	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    (mode_t)mode);
	if (fd < 0) {
		free(tmp);
		return -1;
	}
	/* the mode asked, whatever the umask */
	if (write_all(fd, data, len) < 0 || fchmod(fd, (mode_t)mode) < 0 ||
	    ((flags & WRITE_SYNC) && fsync(fd) < 0)) {
		e = errno;
		close(fd);
		goto fail;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		e = errno;
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	unlink(tmp);
	free(tmp);
	errno = e;
	return -1;
}

int
fd_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

int
fd_set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -1;
	return 0;
}

/* read_file's reading, of an open fd (closed). */
static char *
read_fd(int fd, size_t max, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *p;

	p = xmalloc(cap);
	for (;;) {
		ssize_t n;
		if (len + 1 >= cap) {
			if (cap > max) {
				free(p);
				close(fd);
				errno = EFBIG;
				return NULL;
			}
			cap *= 2;
			p = xrealloc(p, cap);
		}
		n = read(fd, p + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(p);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(p);
			close(fd);
			errno = EFBIG;
			return NULL;
		}
	}
	close(fd);
	p[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return p;
}

char *
read_file(const char *path, size_t max, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	return read_fd(fd, max, lenp);
}

/* Whether st may hold what this user configures: owned by the user or
 * root and writable by no one else (a root-owned sticky folder, such as
 * /tmp, lets no one else replace what is in it). */
static const char *
untrusted(const struct stat *st, int dir)
{
	if (st->st_uid != getuid() && st->st_uid != 0)
		return "is owned by another user";
	if ((st->st_mode & 022) && !(dir && (st->st_mode & S_ISVTX) && st->st_uid == 0))
		return "is writable by other users";
	return NULL;
}

char *
read_trusted_file(const char *path, size_t max, size_t *lenp, char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	char *real, *slash;
	const char *bad = NULL;

	*why = NULL;
	if (fd < 0)
		return NULL;
	/* O_NONBLOCK: a FIFO put in its place must not hang terp */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = xasprintf("%s: not a regular file", path);
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if ((bad = untrusted(&st, 0)) != NULL) {
		*why = xasprintf("%s %s: not used", path, bad);
		close(fd);
		errno = EPERM;
		return NULL;
	}
	/* and every folder above it (where it really is) */
	if ((real = realpath(path, NULL)) != NULL) {
		while ((slash = strrchr(real, '/')) != NULL && bad == NULL) {
			slash[slash == real] = '\0';
			if (stat(real, &st) == 0 && (bad = untrusted(&st, 1)) != NULL)
				*why = xasprintf("%s: the folder %s %s: not used", path, real, bad);
			if (slash == real)
				break;
		}
		free(real);
	}
	if (bad != NULL) {
		close(fd);
		errno = EPERM;
		return NULL;
	}
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return read_fd(fd, max, lenp);
}

char *
user_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;
	char *home;

	/* unset or relative: the password database's, never a guess
	 * like /tmp (which anyone can fill with a .config) */
	if ((h == NULL || h[0] != '/') && (pw = getpwuid(getuid())) != NULL)
		h = pw->pw_dir;
	if (h == NULL || h[0] != '/')
		return NULL;
	home = xstrdup(h);
	for (size_t n = strlen(home); n > 1 && home[n - 1] == '/'; n--)
		home[n - 1] = '\0';
	return home;
}

int
mkdir_p(const char *path, unsigned mode)
{
	char *home = user_home();
	char *p = xstrdup(path);
	char *s;

	for (s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			/* a missing home (HOME=/nonexistent, as for nobody) is
			 * not terp's to create */
			if (home != NULL && strcmp(p, home) == 0 &&
			    access(p, F_OK) < 0) {
				free(p);
				free(home);
				errno = ENOENT;
				return -1;
			}
			if (mkdir(p, mode) < 0 && errno != EEXIST) {
				int e = errno;
				free(p);
				free(home);
				errno = e;
				return -1;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	free(p);
	free(home);
	return 0;
}

static char *
xdg_dir(const char *var, const char *fallback)
{
	const char *v = getenv(var);
	char *home, *p;

	if (v != NULL && v[0] == '/')
		return xstrdup(v);
	/* no home at all: a path that does not exist (and is not made) */
	home = user_home();
	p = xasprintf("%s/%s", home ? home : "/nonexistent", fallback);
	free(home);
	return p;
}

char *
xdg_state_home(void)
{
	return xdg_dir("XDG_STATE_HOME", ".local/state");
}

char *
xdg_config_home(void)
{
	return xdg_dir("XDG_CONFIG_HOME", ".config");
}

const char *
env_lookup(const char *const *envp, const char *key)
{
	extern char **environ;
	size_t n = strlen(key);

	if (envp == NULL)
		envp = (const char *const *)environ;
	for (; *envp != NULL; envp++)
		if (strncmp(*envp, key, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* ---- removing a tree ---------------------------------------------------- */

/* The first entry of folder fd other than . and .., copied into name
 * (NAME_MAX + 1 bytes); 0 when it is empty, -1 on an error. */
static int
first_entry(int fd, char *name)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d;
	struct dirent *e;
	int got = 0;

	if (dup_fd < 0)
		return -1;
	if ((d = fdopendir(dup_fd)) == NULL) {
		close(dup_fd);
		return -1;
	}
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(name, NAME_MAX + 1, "%s", e->d_name);
		got = 1;
		break;
	}
	closedir(d);
	return got;
}

int
rm_tree(const char *path)
{
	char *parent = xstrdup(path), *slash, name[NAME_MAX + 1];
	char **stack = NULL;	/* the names walked down, each under the last */
	size_t depth = 0, cap = 0;
	int top, fd, rc = 0, saved = 0;

	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	top = open(slash ? parent : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(name, sizeof name, "%s", slash ? strrchr(path, '/') + 1 : path);
	free(parent);
	if (top < 0)
		return -1;
	if (unlinkat(top, name, 0) == 0 || errno == ENOENT) {
		close(top);
		return 0;
	}
	fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		close(top);
		errno = saved;
		return -1;
	}
	for (;;) {
		char child[NAME_MAX + 1];
		int r, up;

		(void)fchmod(fd, 0700);	/* code may have made folders read-only */
		r = first_entry(fd, child);
		if (r > 0 && unlinkat(fd, child, 0) == 0)
			continue;
		if (r > 0 && (errno == EISDIR || errno == EPERM)) {
			int down = openat(fd, child, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
			if (down >= 0) {
				if (depth == cap) {
					cap = cap ? 2 * cap : 64;
					stack = xrealloc(stack, cap * sizeof *stack);
				}
				stack[depth++] = xstrdup(child);
				close(fd);
				fd = down;
				continue;
			}
		}
		if (r != 0) {		/* an entry that cannot go: give up */
			saved = errno ? errno : EIO;
			rc = -1;
			close(fd);
			break;
		}
		/* empty: go up and remove it */
		if (depth == 0) {
			close(fd);
			if (unlinkat(top, name, AT_REMOVEDIR) < 0) {
				saved = errno;
				rc = -1;
			}
			break;
		}
		up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		if (up < 0) {
			saved = errno;
			rc = -1;
			break;
		}
		fd = up;
		depth--;
		if (unlinkat(fd, stack[depth], AT_REMOVEDIR) < 0) {
			saved = errno;
			rc = -1;
			free(stack[depth]);
			close(fd);
			break;
		}
		free(stack[depth]);
	}
	for (size_t i = 0; i < depth; i++)
		free(stack[i]);
	free(stack);
	close(top);
	if (rc < 0)
		errno = saved;
	return rc;
}

/* Edit distance of a[0..na) and b (insertions, deletions, changes and
 * swaps of neighbours count 1), capped at 9. */
int
edit_distance(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);
	int d[40][40];

	if (na >= 40 || nb >= 40)
		return 9;
	for (size_t i = 0; i <= na; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= nb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= na; i++)
		for (size_t j = 1; j <= nb; j++) {
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[na][nb] < 9 ? d[na][nb] : 9;
}
