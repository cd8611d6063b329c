/* workspace_copy: copies made when staging cannot bind (see the header). */
#include "workspace_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/dirsum.h"

/* Copies in to out, both regular files, keeping holes: only the data
 * segments (SEEK_DATA/SEEK_HOLE) are copied, so a sparse file costs
 * what it holds. copy_file_range first: in-kernel, and reflinks where
 * the file system can. */
int
wscopy_file(int in, int out)
{
	char b[1 << 16];
	struct stat st;
	off_t pos = 0, end;

	if (fstat(in, &st) < 0)
		return -1;
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;
		if (data < 0) {
			if (errno == ENXIO)
				break;		/* only a hole is left */
			data = pos;		/* no SEEK_DATA here: copy all */
			hole = st.st_size;
		} else if ((hole = lseek(in, data, SEEK_HOLE)) < 0) {
			hole = st.st_size;
		}
		end = hole;
		pos = data;
		while (pos < end) {
			off_t o_in = pos, o_out = pos;
			ssize_t r = copy_file_range(in, &o_in, out, &o_out,
			    (size_t)(end - pos < (1 << 30) ? end - pos : (1 << 30)), 0);
			if (r > 0) {
				pos += r;
				continue;
			}
			if (r == 0)
				break;
			if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
			    errno != EOPNOTSUPP)
				return -1;
			/* By hand. */
			r = pread(in, b, (size_t)(end - pos < (off_t)sizeof b ? end - pos : (off_t)sizeof b), pos);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r < 0 ? -1 : 0;
			if (pwrite(out, b, (size_t)r, pos) != r)
				return -1;
			pos += r;
		}
		pos = end;
	}
	return ftruncate(out, st.st_size);
}

/* Copies the folder in into the folder out, both open, at most
 * DIRSUM_DEPTH deep (folder_check bounded what it holds): regular files
 * (holes kept), folders of the same file system, and symlinks as they
 * are (they resolve inside the sandbox, as in a bind); nothing is
 * followed. As root all is the sandbox uid's group's to read. */
int
wscopy_tree(uid_t uid, int in, int out, dev_t dev, int depth)
{
	mode_t fmode = uid != 0 ? 0440 : 0400;
	int fd = dup(in), rc = 0;
	struct dirent *e;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rewinddir(d);
	while (rc == 0 && (e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		struct stat st;
		char target[4096];
		ssize_t tn;
		int a, b;

		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
		    fstatat(in, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			if ((tn = readlinkat(in, n, target, sizeof target - 1)) > 0) {
				target[tn] = '\0';
				(void)symlinkat(target, out, n);
			}
			continue;
		}
		if (S_ISDIR(st.st_mode) && st.st_dev == dev && depth < DIRSUM_DEPTH) {
			if (mkdirat(out, n, fmode | 0110) < 0 ||
			    (b = openat(out, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
				rc = -1;
			else if ((a = openat(in, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_NONBLOCK | O_CLOEXEC)) < 0) {
				close(b);
			} else {
				if (uid != 0 && fchown(b, 0, (gid_t)uid) < 0)
					rc = -1;
				if (rc == 0)
					rc = wscopy_tree(uid, a, b, dev, depth + 1);
				close(a);
				close(b);
			}
			continue;
		}
		if (!S_ISREG(st.st_mode) || (a = openat(in, n, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC)) < 0)
			continue;
		if ((b = openat(out, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, fmode)) < 0 || (uid != 0 && fchown(b, 0, (gid_t)uid) < 0) ||
		    wscopy_file(a, b) < 0)
			rc = -1;
		if (b >= 0)
			close(b);
		close(a);
	}
	closedir(d);
	return rc;
}

/* Removes what copy_tree made under the open folder dfd (a failed copy:
 * terp's own files; nothing is followed). */
void
wscopy_remove_tree(int dfd)
{
	int fd = dup(dfd);
	struct dirent *e;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		int c;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, e->d_name, 0) < 0 && errno == EISDIR &&
		    (c = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) >= 0) {
			wscopy_remove_tree(c);
			close(c);
			(void)unlinkat(dfd, e->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}
