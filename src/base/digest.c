/* digest: a small SHA-256 (FIPS 180-4) and base64 (RFC 4648), so that
 * terp needs no crypto library for fingerprints and embedded images. */
#include "terp/digest.h"

#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n)	(((x) >> (n)) | ((x) << (32 - (n))))

static void
sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) +
		    ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) +
		    ((a & b) ^ (a & c) ^ (b & c));
		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

void
sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memset(s, 0, sizeof *s);
	memcpy(s->h, iv, sizeof iv);
}

void
sha256_add(struct sha256 *s, const void *vp, size_t n)
{
	const unsigned char *p = vp;

	s->len += n;
	if (s->nblk > 0) {
		size_t k = 64 - s->nblk;
		if (k > n)
			k = n;
		memcpy(s->blk + s->nblk, p, k);
		s->nblk += k;
		p += k;
		n -= k;
		if (s->nblk < 64)
			return;
		sha256_block(s, s->blk);
		s->nblk = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		sha256_block(s, p);
	memcpy(s->blk, p, n);
	s->nblk = n;
}

void
sha256_done(struct sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padlen = (s->nblk < 56) ? 56 - s->nblk : 120 - s->nblk;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_add(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
}

/* ---- SHA-1 (FIPS 180-4 section 6.1), one call: the WebSocket
 * handshake's Sec-WebSocket-Accept (RFC 6455) is its only use, so a
 * whole-buffer function is enough, and no crypto library is loaded. */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void
sha1_block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4];
	for (int i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d); k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d; k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d); k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d; k = 0xca62c1d6;
		}
		t = rol32(a, 5) + f + e + k + w[i];
		e = d; d = c; c = rol32(b, 30); b = a; a = t;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

void
sha1(const void *vp, size_t n, unsigned char out[20])
{
	const unsigned char *p = vp;
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	unsigned char last[128];
	size_t full = n & ~(size_t)63, rest = n - full, tail;
	uint64_t bits = (uint64_t)n * 8;

	for (size_t i = 0; i < full; i += 64)
		sha1_block(h, p + i);
	memset(last, 0, sizeof last);
	memcpy(last, p + full, rest);
	last[rest] = 0x80;
	tail = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		last[tail - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (size_t i = 0; i < tail; i += 64)
		sha1_block(h, last + i);
	for (int i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(h[i] >> 8);
		out[4 * i + 3] = (unsigned char)h[i];
	}
}

void
sha256_hex(const unsigned char d[32], char hex[65])
{
	static const char x[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = x[d[i] >> 4];
		hex[2 * i + 1] = x[d[i] & 15];
	}
	hex[64] = '\0';
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
base64_encode(const void *vp, size_t n, size_t *outlen)
{
	const unsigned char *p = vp;
	size_t len = 4 * ((n + 2) / 3), o = 0;
	char *s = xmalloc(len + 1);

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		s[o++] = b64[v >> 18 & 63];
		s[o++] = b64[v >> 12 & 63];
		s[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		s[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	s[o] = '\0';
	if (outlen != NULL)
		*outlen = o;
	return s;
}

static int
b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

char *
base64_decode(const char *s, size_t n, size_t *outlen)
{
	char *out;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return NULL;
	out = xmalloc(n / 4 * 3 + 3);
	for (size_t i = 0; i < n; i++) {
		int v = b64_val(s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}
