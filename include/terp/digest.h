/* digest: SHA-256, SHA-1 and base64, the byte codecs terp needs
 * (data-file fingerprints, binary chunks in the journal, PNGs inside
 * .ipynb, the WebSocket handshake). Pure: no I/O. */
#ifndef TERP_DIGEST_H
#define TERP_DIGEST_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t	h[8];
	uint64_t	len;		/* bytes hashed so far */
	unsigned char	blk[64];
	size_t		nblk;
};

void sha256_init(struct sha256 *s);
void sha256_add(struct sha256 *s, const void *p, size_t n);
/* Finishes and writes the 32-byte digest. */
void sha256_done(struct sha256 *s, unsigned char out[32]);
/* Writes the 64 lowercase hex digits and a NUL into hex[65]. */
void sha256_hex(const unsigned char d[32], char hex[65]);

/* The 20-byte SHA-1 of n bytes (for RFC 6455's accept value only: SHA-1
 * is no fingerprint). */
void sha1(const void *p, size_t n, unsigned char out[20]);

/* Encodes n bytes as standard base64 with padding. Returns a new
 * NUL-terminated string the caller frees; *outlen (may be NULL) gets
 * its length. */
char *base64_encode(const void *p, size_t n, size_t *outlen);
/* Decodes standard base64 (padding optional, no whitespace). Returns a
 * new buffer the caller frees (NUL-terminated for convenience) and its
 * length in *outlen, or NULL when s is not base64. */
char *base64_decode(const char *s, size_t n, size_t *outlen);

#endif
