/*
 * MD5 (RFC 1321), incremental: the item fingerprints (fingerprint.c) hash their content fields one
 * piece at a time, without building the concatenated string DuckDB's md5() is given.
 * Written for chatlake from the RFC's description; checked against hashlib (tests/native/test_md5.py).
 */
#ifndef CHATLAKE_MD5_H
#define CHATLAKE_MD5_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[4];
    uint64_t bytes;     /* message length so far */
    uint8_t block[64];  /* the pending partial block */
} chatlake_md5;

void chatlake_md5_init(chatlake_md5 *ctx);
void chatlake_md5_update(chatlake_md5 *ctx, const void *data, size_t n);
/* The 16-byte digest; ctx must be initialised again before reuse. */
void chatlake_md5_final(chatlake_md5 *ctx, uint8_t digest[16]);

#endif
