/* datafile: data-file fingerprints, recorded by the journal when a file
 * is staged and checked again by resume. */
#include "terp/datafile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/digest.h"
#include "terp/dirsum.h"
#include "terp/util.h"

/* Data files up to this size are hashed whole. */
#define FP_WHOLE_MAX	(64ull << 20)
#define FP_PIECE	(1u << 20)
#define FP_PIECES	16

void
datafile_copy(struct datafile *to, const struct datafile *f)
{
	to->path = f->path ? xstrdup(f->path) : NULL;
	to->size = f->size;
	to->mtime = f->mtime;
	to->fingerprint = f->fingerprint ? xstrdup(f->fingerprint) : NULL;
	to->sandbox = f->sandbox ? xstrdup(f->sandbox) : NULL;
	to->recorded = f->recorded ? xstrdup(f->recorded) : NULL;
}

void
datafile_free(struct datafile *f)
{
	free(f->path);
	free(f->fingerprint);
	free(f->sandbox);
	free(f->recorded);
	memset(f, 0, sizeof *f);
}

static int
read_at(int fd, void *p, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = pread(fd, (char *)p + got, n - got, off + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

static void
tree_add(void *arg, const char *rel, const struct stat *st)
{
	char line[96];
	int n = snprintf(line, sizeof line, "\t%llu\t%lld.%09ld\t%o\n",
	    (unsigned long long)st->st_size, (long long)st->st_mtim.tv_sec,
	    st->st_mtim.tv_nsec, (unsigned)st->st_mode);

	sha256_add(arg, rel, strlen(rel));
	sha256_add(arg, line, (size_t)n);
}

/* A folder: what its bounded walk (dirsum.h) sees of every entry, its
 * path, size, mtime and mode; nothing is read. fd is closed. */
static int
tree_fingerprint(const char *path, const char *real, int fd, struct datafile *f,
    char **err)
{
	struct dirsum sum;
	struct sha256 h;
	unsigned char d[32];
	char hex[65];

	sha256_init(&h);
	if (dirsum_walk(fd, &sum, tree_add, &h) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	sha256_done(&h, d);
	sha256_hex(d, hex);
	f->path = xstrdup(real);
	f->size = sum.bytes;
	f->mtime = sum.mtime;
	f->fingerprint = xasprintf("tree-sha256:%s", hex);
	return 0;
}

int
datafile_fingerprint(const char *path, struct datafile *f, char **err)
{
	char real[PATH_MAX];
	struct stat st;
	struct sha256 h;
	unsigned char d[32];
	char hex[65], *piece;
	int fd, rc = 0;

	memset(f, 0, sizeof *f);
	if (realpath(path, real) == NULL) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		return -1;
	}
	if ((fd = open(real, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (S_ISDIR(st.st_mode))
		return tree_fingerprint(path, real, fd, f, err);
	if (!S_ISREG(st.st_mode)) {
		*err = xasprintf("%s: not a regular file", path);
		close(fd);
		return -1;
	}
	sha256_init(&h);
	piece = xmalloc(FP_PIECE);
	if ((uint64_t)st.st_size <= FP_WHOLE_MAX) {
		for (off_t off = 0; off < st.st_size; off += FP_PIECE) {
			size_t n = (size_t)(st.st_size - off < FP_PIECE ?
			    st.st_size - off : FP_PIECE);
			if ((rc = read_at(fd, piece, n, off)) < 0)
				break;
			sha256_add(&h, piece, n);
		}
	} else {
		/* big files: the size and 16 evenly spread 1 MiB pieces,
		 * first and last included; cheap, and catches any append,
		 * truncation or rewrite that is not surgical */
		uint64_t size = (uint64_t)st.st_size;
		unsigned char le[8];
		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(size >> (8 * i));
		sha256_add(&h, le, 8);
		for (int i = 0; i < FP_PIECES && rc == 0; i++) {
			off_t off = (off_t)((size - FP_PIECE) / (FP_PIECES - 1) *
			    (uint64_t)i);
			if ((rc = read_at(fd, piece, FP_PIECE, off)) == 0)
				sha256_add(&h, piece, FP_PIECE);
		}
	}
	free(piece);
	close(fd);
	if (rc < 0) {
		*err = xasprintf("%s: read failed", path);
		return -1;
	}
	sha256_done(&h, d);
	sha256_hex(d, hex);
	f->path = xstrdup(real);
	f->size = (uint64_t)st.st_size;
	f->mtime = (int64_t)st.st_mtim.tv_sec;
	f->fingerprint = xasprintf("%s:%s", (uint64_t)st.st_size <= FP_WHOLE_MAX ?
	    "sha256" : "sampled-sha256", hex);
	return 0;
}

int
datafile_check(const struct datafile *f, char **why)
{
	struct datafile now;
	char *err = NULL;
	int rc = 0;

	if (datafile_fingerprint(f->path, &now, &err) < 0) {
		if (why != NULL)
			*why = xasprintf("%s is gone (%s)", f->path, err);
		free(err);
		return 2;
	}
	if (now.size != f->size) {
		if (why != NULL)
			*why = xasprintf("%s changed: it was %llu bytes, now %llu",
			    f->path, (unsigned long long)f->size,
			    (unsigned long long)now.size);
		rc = 1;
	} else if (f->fingerprint == NULL ||
	    strcmp(now.fingerprint, f->fingerprint) != 0) {
		if (why != NULL)
			*why = xasprintf("%s changed since the session started "
			    "(same size, different contents)", f->path);
		rc = 1;
	}
	datafile_free(&now);
	return rc;
}
