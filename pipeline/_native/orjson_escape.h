/* How orjson escapes one byte of a string (the one rule both decode.c, for extra_json text, and
   encode.c, for the Chat JSON it writes, must follow byte for byte): quote, backslash and the C0
   controls are escaped (short forms where JSON has them, else \u00xx in lowercase hex); every other
   byte, DEL and U+2028 included, is written as it is.  Returns the escape's length in esc (2 or 6),
   or 0 when the byte is written as it is. */
#ifndef CHATLAKE_ORJSON_ESCAPE_H
#define CHATLAKE_ORJSON_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static size_t orjson_escape(unsigned char ch, char esc[6]) {
    static const char hexdigits[] = "0123456789abcdef";
    if (ch >= 0x20 && ch != '"' && ch != '\\') return 0;
    esc[0] = '\\';
    switch (ch) {
        case '"': esc[1] = '"'; return 2;
        case '\\': esc[1] = '\\'; return 2;
        case '\b': esc[1] = 'b'; return 2;
        case '\t': esc[1] = 't'; return 2;
        case '\n': esc[1] = 'n'; return 2;
        case '\f': esc[1] = 'f'; return 2;
        case '\r': esc[1] = 'r'; return 2;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hexdigits[ch >> 4];
            esc[5] = hexdigits[ch & 15];
            return 6;
    }
}

/* The length of the longest prefix of s[0..n) that orjson writes as it is (orjson_escape gives 0
   for each of its bytes): tested 8 bytes at a time, so the writers copy plain runs of text whole
   instead of testing every byte. Per word, with ones = 0x01 in every byte, the high bit of
   (v - ones) & ~v is set in some byte exactly when v has a zero byte, and of (x - 0x20 * ones) & ~x
   exactly when x has a byte below 0x20 (exact as a yes/no; bytes >= 0x80 never count); v is x
   with the quotes or the backslashes turned into zeros. A word that has one is scanned byte by
   byte. */
static inline size_t orjson_plain_prefix(const char *s, size_t n) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    size_t k = 0;
    while (k + 8 <= n) {
        uint64_t x, q, b;
        memcpy(&x, s + k, 8);
        q = x ^ (ones * (uint64_t)'"');
        b = x ^ (ones * (uint64_t)'\\');
        if ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) break;
        k += 8;
    }
    for (; k < n; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch < 0x20 || ch == '"' || ch == '\\') return k;
    }
    return n;
}

#endif
