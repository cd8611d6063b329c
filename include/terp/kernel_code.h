/* kernel_code: the driver's compiled code, cached per interpreter, so a
 * sandbox starts without compiling the driver (a third of a trivial
 * cold start's Python time). The driver of the first sandbox on an
 * interpreter sends its own code object, marshalled, in its "ready"
 * frame, before any cell ran (TERP_CODE=1); later sandboxes get that
 * blob bound read-only beside driver.py and a loader that falls back
 * to compiling driver.py when the blob's header does not match the
 * running interpreter. The cache file is terp's (0600, our uid, in
 * the user's 0700 cache folder), never anything the sandbox can write;
 * its name is a digest of everything the code depends on (the driver's
 * source, the interpreter's path and its binary's stat), so a change of
 * either picks another file. */
#ifndef TERP_KERNEL_CODE_H
#define TERP_KERNEL_CODE_H

#include <stddef.h>

struct pyenv;

/* A blob: "TERPCODE", sys.hexversion as 8 bytes little-endian, then
 * marshal.dumps(the driver's module code). */
#define KCODE_MAGIC	"TERPCODE"
#define KCODE_HEAD	16
#define KCODE_MAX	(1 << 20)

/* Where the sandbox finds the blob, and the -c program that runs it
 * (or driver.py, when the blob is not for this interpreter). */
#define KCODE_PATH	"/run/terp/driver.code"
extern const char kcode_loader[];

/* The cache file for this driver (driver_id: its SHA-256, made at build
 * time) on this interpreter (new string), or NULL when there is no
 * cache folder or the binary cannot be stat'ed. */
char *kcode_file(const char *cache_dir, const struct pyenv *pe,
    const char *driver_id);

/* Whether blob has the shape of one (magic, header, a bounded size). */
int kcode_valid(const void *blob, size_t len);

/* Reads the cache file: a regular file of ours, not writable by group
 * or others, reached without following a symlink, valid as above.
 * Returns a new buffer (*len set), or NULL when there is none usable. */
unsigned char *kcode_load(const char *file, size_t *len);

/* Writes blob to file atomically (0600; the folder made 0700). Failures
 * are not errors: the next sandbox compiles the driver again. */
void kcode_store(const char *file, const void *blob, size_t len);

#endif
