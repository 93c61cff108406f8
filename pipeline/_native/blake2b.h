/*
 * BLAKE2b (RFC 7693) with digest sizes up to 32 bytes, unkeyed: what Python's hashlib.blake2b gives.
 * The decoder hashes conversation ids with it (decode.c), the Responses encoder the ids it generates
 * (Ctx.generated_id: blake2b(f"{conversation_id}/{item}", digest_size=12), encode_responses.c).
 * Header-only (static inline): moved from decode.c so both use the one implementation.
 */
#ifndef CHATLAKE_BLAKE2B_H
#define CHATLAKE_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint64_t h[8], t;
    uint8_t buf[128];
    size_t buflen;
} Blake2b;

static const uint64_t B2_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};
static const uint8_t B2_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t rotr64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static inline void b2_compress(Blake2b *s, const uint8_t *block, int last) {
    uint64_t m[16], v[16];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(m, block, 128); /* BLAKE2b words are little-endian */
#else
    for (int i = 0; i < 16; i++) {
        uint64_t w = 0;
        for (int j = 7; j >= 0; j--) w = (w << 8) | block[i * 8 + j];
        m[i] = w;
    }
#endif
    for (int i = 0; i < 8; i++) {
        v[i] = s->h[i];
        v[i + 8] = B2_IV[i];
    }
    v[12] ^= s->t; /* messages here are far below 2^64 bytes: the high counter word stays 0 */
    if (last) v[14] = ~v[14];
#define B2G(a, b, cc, d, x, y)             \
    do {                                   \
        v[a] = v[a] + v[b] + (x);          \
        v[d] = rotr64(v[d] ^ v[a], 32);    \
        v[cc] = v[cc] + v[d];              \
        v[b] = rotr64(v[b] ^ v[cc], 24);   \
        v[a] = v[a] + v[b] + (y);          \
        v[d] = rotr64(v[d] ^ v[a], 16);    \
        v[cc] = v[cc] + v[d];              \
        v[b] = rotr64(v[b] ^ v[cc], 63);   \
    } while (0)
    /* rounds unrolled with constant message indices: the compiler keeps v and m in registers */
#define B2ROUND(r)                                                 \
    do {                                                           \
        B2G(0, 4, 8, 12, m[B2_SIGMA[r][0]], m[B2_SIGMA[r][1]]);    \
        B2G(1, 5, 9, 13, m[B2_SIGMA[r][2]], m[B2_SIGMA[r][3]]);    \
        B2G(2, 6, 10, 14, m[B2_SIGMA[r][4]], m[B2_SIGMA[r][5]]);   \
        B2G(3, 7, 11, 15, m[B2_SIGMA[r][6]], m[B2_SIGMA[r][7]]);   \
        B2G(0, 5, 10, 15, m[B2_SIGMA[r][8]], m[B2_SIGMA[r][9]]);   \
        B2G(1, 6, 11, 12, m[B2_SIGMA[r][10]], m[B2_SIGMA[r][11]]); \
        B2G(2, 7, 8, 13, m[B2_SIGMA[r][12]], m[B2_SIGMA[r][13]]);  \
        B2G(3, 4, 9, 14, m[B2_SIGMA[r][14]], m[B2_SIGMA[r][15]]);  \
    } while (0)
    B2ROUND(0);
    B2ROUND(1);
    B2ROUND(2);
    B2ROUND(3);
    B2ROUND(4);
    B2ROUND(5);
    B2ROUND(6);
    B2ROUND(7);
    B2ROUND(8);
    B2ROUND(9);
    B2ROUND(10);
    B2ROUND(11);
#undef B2ROUND
#undef B2G
    for (int i = 0; i < 8; i++) s->h[i] ^= v[i] ^ v[i + 8];
}

static inline void b2_init(Blake2b *s, size_t outlen) {
    for (int i = 0; i < 8; i++) s->h[i] = B2_IV[i];
    s->h[0] ^= 0x01010000ULL ^ (uint64_t)outlen;
    s->t = 0;
    s->buflen = 0;
}

static inline void b2_update(Blake2b *s, const uint8_t *in, size_t n) {
    while (n > 0) {
        if (s->buflen == 128) { /* compress a full block only once more input follows it */
            s->t += 128;
            b2_compress(s, s->buf, 0);
            s->buflen = 0;
        }
        size_t take = 128 - s->buflen;
        if (take > n) take = n;
        memcpy(s->buf + s->buflen, in, take);
        s->buflen += take;
        in += take;
        n -= take;
    }
}

/* The digest of `outlen` bytes (the length b2_init was given) as 2 * outlen lowercase hex digits. */
static inline void b2_final_hex_n(Blake2b *s, char *hex, size_t outlen) {
    static const char digits[] = "0123456789abcdef";
    s->t += s->buflen;
    memset(s->buf + s->buflen, 0, 128 - s->buflen);
    b2_compress(s, s->buf, 1);
    for (size_t i = 0; i < outlen; i++) {
        uint8_t byte = (uint8_t)(s->h[i / 8] >> (8 * (i % 8)));
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
}

static inline void b2_final_hex(Blake2b *s, char *hex32) { b2_final_hex_n(s, hex32, 16); }

#endif
