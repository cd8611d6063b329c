/* kernel_pyinfo: what the local backend knows of the sandbox's Python
 * (private to src/kernel/local). Its packages (pyenv.h's probe), from
 * the probe cache or from the driver's "ready" frame, never probed on
 * the host; and the driver's compiled code (kernel_code.h), from its
 * cache or from that same frame. Every field of "ready" is hostile: the
 * probe is parsed like any frame, the code's shape is checked. */
#ifndef TERP_KERNEL_PYINFO_H
#define TERP_KERNEL_PYINFO_H

#include <stddef.h>

#include "terp/kernel_frame.h"
#include "terp/kernel_types.h"
#include "terp/pyenv.h"

struct kpyinfo {
	/* the interpreter's packages; line: the prompt's sentence (owned) */
	struct pyenv_probe	 probe;
	int			 have_probe;
	char			*line;
	/* the driver's code: the cache file for this interpreter (NULL:
	 * no cache), its blob once loaded (owned), whether it was looked
	 * up (once per kernel) */
	char			*code_file;
	unsigned char		*code;
	size_t			 code_len;
	int			 code_tried;
};

/* The caches, looked up before a launch (each once; none for
 * --no-sandbox's code); the code cache is for the driver of that hash. */
void kpyinfo_cached(struct kpyinfo *pi, const struct kernel_opts *o, const char *driver_sha256);

/* What the driver's "ready" frame says (its "probe" and "code" members,
 * asked for only when the caches had none), checked, then cached. */
void kpyinfo_ready(struct kpyinfo *pi, const struct kernel_opts *o, const struct kframe *f);

/* Whether the launch should ask the driver for its code. */
int kpyinfo_code_wanted(const struct kpyinfo *pi);

/* The prompt's sentence (NULL before a probe), whether charts work (-1
 * unknown), and a label for the interpreter (caller frees; NULL). */
const char *kpyinfo_line(const struct kpyinfo *pi);
int kpyinfo_charts(const struct kpyinfo *pi);
char *kpyinfo_label(const struct kpyinfo *pi, const struct kernel_opts *o);

void kpyinfo_free(struct kpyinfo *pi);

#endif
