/* egress_addr: address classes (egress_addr_class, declared in
 * egress.h for the tests) and the byte helper the host parser shares.
 * Private to src/egress. */
#ifndef TERP_EGRESS_ADDR_H
#define TERP_EGRESS_ADDR_H

#include <stddef.h>

/* 1 when b[0..n) is all zero bytes. */
int egress_addr_zero(const unsigned char *b, size_t n);

#endif
