/* How orjson escapes one byte of a string (the one rule both decode.c, for extra_json text, and
   encode.c, for the Chat JSON it writes, must follow byte for byte): quote, backslash and the C0
   controls are escaped (short forms where JSON has them, else \u00xx in lowercase hex); every other
   byte, DEL and U+2028 included, is written as it is.  Returns the escape's length in esc (2 or 6),
   or 0 when the byte is written as it is. */
#ifndef CHATLAKE_ORJSON_ESCAPE_H
#define CHATLAKE_ORJSON_ESCAPE_H

#include <stddef.h>

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

#endif
