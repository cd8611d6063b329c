/* kernel_frame: the driver's protocol as the host reads it. Pure: it
 * splits the event channel into lines with a hard bound, parses one
 * line into a typed frame, checks names and chooses the host file name
 * of an artifact, and decides whether an artifact fits the caps. The
 * driver shares its process with the cell, so every frame may be forged:
 * nothing here trusts a field's type, size or content. The checks of
 * order live with the state they need: ids and "ready" in kernel.c,
 * "chunk" only inside an artifact in kernel_artifact.c. */
#ifndef TERP_KERNEL_FRAME_H
#define TERP_KERNEL_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define KFRAME_MAX	(8u << 20)	/* a longer protocol line kills the session */
#define KFRAME_NAME_MAX	1024		/* bytes of an artifact's sandbox name */
#define KFRAME_HOST_NAME_MAX 100	/* bytes of the host file name terp picks */

/* ------------------------------------------------------------ lines */

/* A line splitter over a byte stream with a bound on what it holds. */
struct kframe_reader {
	char	*data;
	size_t	 len;	/* bytes held, from data[0] */
	size_t	 off;	/* start of the first line not returned yet */
	size_t	 scan;	/* data[off..scan) has no newline: not searched again */
	size_t	 cap;
	size_t	 max;	/* bound on the bytes of lines not returned yet */
};

void kframe_reader_init(struct kframe_reader *r, size_t max);
void kframe_reader_free(struct kframe_reader *r);
void kframe_reader_reset(struct kframe_reader *r);
/* Appends n bytes. Returns 0, or -1 when the bytes not returned yet
 * would pass max (a line longer than max, or a flood of lines nobody
 * takes); nothing is appended then. Invalidates lines returned before. */
int kframe_reader_add(struct kframe_reader *r, const char *p, size_t n);
/* The next complete line, without its '\n', in *line / *len; valid
 * until the next call on r. Returns 1, or 0 when no line is complete. */
int kframe_reader_next(struct kframe_reader *r, const char **line, size_t *len);

/* ------------------------------------------------------------ frames */

enum kframe_type {
	KF_UNKNOWN,		/* an "ev" terp does not know: ignored */
	KF_READY,
	KF_LOADED,
	KF_RESULT,
	KF_ARTIFACT,		/* starts an artifact: id, name, size */
	KF_CHUNK,		/* base64 data of the open artifact */
	KF_ARTIFACT_END,	/* size (-1: a read error), reason */
	KF_ARTIFACT_SKIP,	/* id, name, reason: the driver refused it */
	KF_RESET,
	KF_PONG,
	KF_INSTALLED,		/* id, "packages": [[name, version]...] (in json) */
	KF_INPUT,		/* id, prompt, password: the cell asks for a line */
};


/* One parsed frame. Each field is set only when it is present with the
 * right type and in range; the strings point into the parsed JSON and
 * live until kframe_free. */
struct kframe {
	enum kframe_type type;
	int		 has_id;
	int		 id;		/* 1..INT_MAX */
	int		 has_size;
	int64_t		 size;		/* an integer in -1..2^53 */
	const char	*name;
	const char	*data;		/* chunk: base64 */
	size_t		 data_len;
	const char	*reason;
	int		 ok;		/* result: status is "ok" and no error */
	const char	*value, *ename, *evalue, *traceback;
	const char	*value_wide;	/* result: value at the user's width */
	const char	*prompt;	/* input: a string (any length: the
					 * kernel cuts it), else NULL */
	int		 password;	/* input: "password" is true */
	void		*json;		/* the parsed object (owned) */
};

/* Parses one line. Returns 0 with *f filled (kframe_free it), or -1 when
 * the line is no frame at all (not JSON, not an object, no "ev" string)
 * with a static reason in *why. */
int kframe_parse(const char *line, size_t len, struct kframe *f, const char **why);
void kframe_free(struct kframe *f);

/* ------------------------------------------------------------ names */

/* NULL when name may stand for an artifact, else a static reason: empty,
 * longer than KFRAME_NAME_MAX, invalid UTF-8, or control characters
 * (C0, DEL, C1). '/' and ".." are fine here: the host name never has
 * them (kframe_host_name). */
const char *kframe_name_problem(const char *name);

/* The file name terp uses on the host for a sandbox name: ASCII letters,
 * digits, '.', '-' and '_' only ('/' and anything else become '_'), no
 * leading dot, at most KFRAME_HOST_NAME_MAX bytes with the extension
 * kept, never empty, "." or "..". "../.bash_aliases" is
 * "_.bash_aliases". Returns a new string. */
char *kframe_host_name(const char *name);

/* The candidate host name for attempt i (1: the name itself; 2 and on:
 * "stem-i.ext"), never longer than KFRAME_HOST_NAME_MAX + 8. New string. */
char *kframe_host_candidate(const char *host_name, int i);

/* A sandbox name for a message: control characters and bidi overrides
 * escaped, cut to 200 bytes on a character boundary. New string. */
char *kframe_display_name(const char *name);

/* ------------------------------------------------------------ caps */

struct kframe_caps {
	uint64_t	 size_max;	/* one artifact */
	int		 per_cell;	/* artifacts started in one cell */
	int		 per_session;	/* distinct files terp wrote */
	uint64_t	 session_bytes;	/* bytes of those files */
};

struct kframe_usage {
	int		 cell;		/* artifacts started in the running cell */
	int		 files;		/* distinct files written this session */
	uint64_t	 bytes;		/* their bytes now */
};

enum kframe_refusal {
	KF_ADMIT,
	KF_TOO_LARGE,
	KF_CELL_CAP,
	KF_SESSION_CAP,
	KF_BYTES_CAP,
};

/* Whether an artifact of size bytes may be copied. replaces: it replaces
 * a file terp wrote this session, of old_size bytes (no new file then). */
enum kframe_refusal kframe_admit(const struct kframe_caps *caps,
    const struct kframe_usage *use, uint64_t size, int replaces, uint64_t old_size);

/* Why an artifact of size bytes was refused (r, as kframe_admit said
 * under caps), in the words every backend puts in the cell's note:
 * "too large (5.0 MiB; the limit is 1.0 MiB)". A new string. */
char *kframe_refusal_text(const struct kframe_caps *caps, enum kframe_refusal r,
    uint64_t size);

/* ------------------------------------------------------------ result texts */

/* Every backend's cap on each text of a result (value, ename, evalue,
 * traceback, reason): the local driver cuts at 64 KiB, a forged frame or
 * a malicious ssh or Jupyter server need not. */
#define KFRAME_TEXT_MAX	(256u << 10)

/* s cut to KFRAME_TEXT_MAX bytes (on a UTF-8 boundary, with a note saying
 * so), as a new string; NULL for NULL. Applied where the text arrives,
 * so no backend keeps or journals more. */
char *kframe_text_cap(const char *s);
/* The same for n bytes of s (not NUL-terminated). */
char *kframe_text_capn(const char *s, size_t n);

#endif
