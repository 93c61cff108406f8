/* MD5 (RFC 1321): see md5.h. */
#include "md5.h"

#include <string.h>

#define F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))
#define ROTL(v, s) (((v) << (s)) | ((v) >> (32 - (s))))
/* One of the 64 operations: a = b + ((a + f(b, c, d) + x + t) <<< s) (RFC 1321, section 3.4). */
#define STEP(f, a, b, c, d, x, t, s)      \
    do {                                  \
        (a) += f((b), (c), (d)) + (x) + (t); \
        (a) = ROTL((a), (s));             \
        (a) += (b);                       \
    } while (0)

/* Process one 64-byte block (its words are little-endian whatever the machine's byte order). */
static void md5_block(uint32_t state[4], const uint8_t *p) {
    uint32_t m[16];
    for (int k = 0; k < 16; k++)
        m[k] = (uint32_t)p[4 * k] | (uint32_t)p[4 * k + 1] << 8 | (uint32_t)p[4 * k + 2] << 16 |
               (uint32_t)p[4 * k + 3] << 24;
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    STEP(F, a, b, c, d, m[0], 0xd76aa478u, 7);
    STEP(F, d, a, b, c, m[1], 0xe8c7b756u, 12);
    STEP(F, c, d, a, b, m[2], 0x242070dbu, 17);
    STEP(F, b, c, d, a, m[3], 0xc1bdceeeu, 22);
    STEP(F, a, b, c, d, m[4], 0xf57c0fafu, 7);
    STEP(F, d, a, b, c, m[5], 0x4787c62au, 12);
    STEP(F, c, d, a, b, m[6], 0xa8304613u, 17);
    STEP(F, b, c, d, a, m[7], 0xfd469501u, 22);
    STEP(F, a, b, c, d, m[8], 0x698098d8u, 7);
    STEP(F, d, a, b, c, m[9], 0x8b44f7afu, 12);
    STEP(F, c, d, a, b, m[10], 0xffff5bb1u, 17);
    STEP(F, b, c, d, a, m[11], 0x895cd7beu, 22);
    STEP(F, a, b, c, d, m[12], 0x6b901122u, 7);
    STEP(F, d, a, b, c, m[13], 0xfd987193u, 12);
    STEP(F, c, d, a, b, m[14], 0xa679438eu, 17);
    STEP(F, b, c, d, a, m[15], 0x49b40821u, 22);
    STEP(G, a, b, c, d, m[1], 0xf61e2562u, 5);
    STEP(G, d, a, b, c, m[6], 0xc040b340u, 9);
    STEP(G, c, d, a, b, m[11], 0x265e5a51u, 14);
    STEP(G, b, c, d, a, m[0], 0xe9b6c7aau, 20);
    STEP(G, a, b, c, d, m[5], 0xd62f105du, 5);
    STEP(G, d, a, b, c, m[10], 0x02441453u, 9);
    STEP(G, c, d, a, b, m[15], 0xd8a1e681u, 14);
    STEP(G, b, c, d, a, m[4], 0xe7d3fbc8u, 20);
    STEP(G, a, b, c, d, m[9], 0x21e1cde6u, 5);
    STEP(G, d, a, b, c, m[14], 0xc33707d6u, 9);
    STEP(G, c, d, a, b, m[3], 0xf4d50d87u, 14);
    STEP(G, b, c, d, a, m[8], 0x455a14edu, 20);
    STEP(G, a, b, c, d, m[13], 0xa9e3e905u, 5);
    STEP(G, d, a, b, c, m[2], 0xfcefa3f8u, 9);
    STEP(G, c, d, a, b, m[7], 0x676f02d9u, 14);
    STEP(G, b, c, d, a, m[12], 0x8d2a4c8au, 20);
    STEP(H, a, b, c, d, m[5], 0xfffa3942u, 4);
    STEP(H, d, a, b, c, m[8], 0x8771f681u, 11);
    STEP(H, c, d, a, b, m[11], 0x6d9d6122u, 16);
    STEP(H, b, c, d, a, m[14], 0xfde5380cu, 23);
    STEP(H, a, b, c, d, m[1], 0xa4beea44u, 4);
    STEP(H, d, a, b, c, m[4], 0x4bdecfa9u, 11);
    STEP(H, c, d, a, b, m[7], 0xf6bb4b60u, 16);
    STEP(H, b, c, d, a, m[10], 0xbebfbc70u, 23);
    STEP(H, a, b, c, d, m[13], 0x289b7ec6u, 4);
    STEP(H, d, a, b, c, m[0], 0xeaa127fau, 11);
    STEP(H, c, d, a, b, m[3], 0xd4ef3085u, 16);
    STEP(H, b, c, d, a, m[6], 0x04881d05u, 23);
    STEP(H, a, b, c, d, m[9], 0xd9d4d039u, 4);
    STEP(H, d, a, b, c, m[12], 0xe6db99e5u, 11);
    STEP(H, c, d, a, b, m[15], 0x1fa27cf8u, 16);
    STEP(H, b, c, d, a, m[2], 0xc4ac5665u, 23);
    STEP(I, a, b, c, d, m[0], 0xf4292244u, 6);
    STEP(I, d, a, b, c, m[7], 0x432aff97u, 10);
    STEP(I, c, d, a, b, m[14], 0xab9423a7u, 15);
    STEP(I, b, c, d, a, m[5], 0xfc93a039u, 21);
    STEP(I, a, b, c, d, m[12], 0x655b59c3u, 6);
    STEP(I, d, a, b, c, m[3], 0x8f0ccc92u, 10);
    STEP(I, c, d, a, b, m[10], 0xffeff47du, 15);
    STEP(I, b, c, d, a, m[1], 0x85845dd1u, 21);
    STEP(I, a, b, c, d, m[8], 0x6fa87e4fu, 6);
    STEP(I, d, a, b, c, m[15], 0xfe2ce6e0u, 10);
    STEP(I, c, d, a, b, m[6], 0xa3014314u, 15);
    STEP(I, b, c, d, a, m[13], 0x4e0811a1u, 21);
    STEP(I, a, b, c, d, m[4], 0xf7537e82u, 6);
    STEP(I, d, a, b, c, m[11], 0xbd3af235u, 10);
    STEP(I, c, d, a, b, m[2], 0x2ad7d2bbu, 15);
    STEP(I, b, c, d, a, m[9], 0xeb86d391u, 21);
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

void chatlake_md5_init(chatlake_md5 *ctx) {
    ctx->state[0] = 0x67452301u;
    ctx->state[1] = 0xefcdab89u;
    ctx->state[2] = 0x98badcfeu;
    ctx->state[3] = 0x10325476u;
    ctx->bytes = 0;
}

void chatlake_md5_update(chatlake_md5 *ctx, const void *data, size_t n) {
    const uint8_t *p = (const uint8_t *)data;
    size_t have = (size_t)(ctx->bytes & 63);
    ctx->bytes += n;
    if (have) {
        size_t take = 64 - have < n ? 64 - have : n;
        memcpy(ctx->block + have, p, take);
        p += take;
        n -= take;
        if (have + take < 64) return;
        md5_block(ctx->state, ctx->block);
    }
    for (; n >= 64; p += 64, n -= 64) md5_block(ctx->state, p);
    if (n) memcpy(ctx->block, p, n);
}

void chatlake_md5_final(chatlake_md5 *ctx, uint8_t digest[16]) {
    uint64_t bits = ctx->bytes * 8;
    static const uint8_t pad[64] = {0x80};
    size_t have = (size_t)(ctx->bytes & 63);
    /* 0x80, zeros up to 56 mod 64, then the length in bits (little-endian) */
    chatlake_md5_update(ctx, pad, have < 56 ? 56 - have : 120 - have);
    uint8_t len[8];
    for (int k = 0; k < 8; k++) len[k] = (uint8_t)(bits >> (8 * k));
    chatlake_md5_update(ctx, len, 8);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++) digest[4 * k + j] = (uint8_t)(ctx->state[k] >> (8 * j));
}
