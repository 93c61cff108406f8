/* Is a JSON number's text exactly what orjson.dumps(orjson.loads(text)) writes back?
 *
 * The one rule the compiled decoder (decode.c: a line holding another number goes to the Python
 * decoder) and the compiled encoders (encode_common.h: a stored JSON text holding another number is
 * handed back) share: where it says yes, copying the text is byte-identical to the Python codec,
 * which re-serializes every value with orjson. Where it says no, the Python path runs: a "no" is never
 * wrong, only slower, so the rule accepts a subset of orjson's texts that it can prove.
 *
 * orjson (3.x) reads an integer into a 64-bit int and writes it back as read; it reads a number with
 * a fraction or an exponent into a double and writes the double's shortest round-trip digits
 * (correctly rounded), in plain notation for 1e-5 <= |x| < 1e16 ("0.00001", "100.0", "-0.0") and
 * otherwise as one digit, an optional fraction, "e", a sign and the exponent ("1e-6", "2.5e-7",
 * "1e+16", "1.7976931348623157e+308", "5e-324"). Accepted here:
 *   - integers of at most 18 digits, no leading zero, not "-0" (it reads as the integer 0);
 *   - plain decimals with a fraction, no trailing zero (but a lone ".0"), at most four zeros after "0."
 *     and 1 to 15 significant digits, or 16 to 17 when they are the double's shortest text;
 *   - exponent notation exactly as orjson writes it, with the exponent outside the plain range
 *     (e-6 and below, e+16 and above) and shortest digits as above.
 * Not accepted (Python runs): "1e-05", "1E-6", "1.0e-7", "1e16", "1.5e3", 19+ digit integers, ...
 *
 * Why 15 digits need no check: two different decimals of at most 15 significant digits never read as
 * the same normal double, so a text with no trailing zero is the shortest for its double. Subnormal
 * doubles (below 2.2250738585072014e-308) have fewer digits of precision: there every text is checked.
 * The check (16-17 digits, subnormals) refuses an exact power of two: there the doubles' spacing
 * changes, so a shorter text on the wider side could read back while the correctly rounded one does
 * not; printf cannot tell, so the rule does not guess. */
#ifndef CHATLAKE_ORJSON_NUMBER_H
#define CHATLAKE_ORJSON_NUMBER_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vendor/yyjson/yyjson.h"

/* The significant digits of a decimal or printf("%e") text, at most `max` of them (-1: more). */
static inline int orjson_sig_digits(const char *s, size_t n, char *out, int max) {
    int k = 0, started = 0;
    for (size_t j = 0; j < n && s[j] != 'e' && s[j] != 'E'; j++) {
        char ch = s[j];
        if (ch < '0' || ch > '9') continue;
        if (!started && ch == '0') continue;
        started = 1;
        if (k == max) return -1;
        out[k++] = ch;
    }
    return k;
}

/* Is this text of `sig` significant digits the shortest round-trip text of the double it reads as?
 * Yes when no text of sig - 1 digits reads back as the same double and the text is the double
 * correctly rounded to sig digits (printf's %e is correctly rounded in glibc and every libc CPython
 * supports). A double exactly halfway between two such texts (27628950807049.3125) is rounded to even
 * by printf, by CPython's repr and by orjson alike (tests/native/test_differential.py checks
 * thousands of such ties). */
static inline int orjson_shortest(const char *s, size_t n, int sig) {
    char tmp[64], buf[64], a[32], b[32];
    if (n >= sizeof(tmp) || sig < 1 || sig > 17) return 0;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    yyjson_val v;
    yyjson_read_err err;
    /* yyjson reads the double exactly and, unlike strtod, whatever the process locale */
    if (!yyjson_read_number(tmp, &v, 0, NULL, &err) || !yyjson_is_real(&v)) return 0;
    double d = yyjson_get_real(&v);
    int e2;
    if (!isfinite(d) || d == 0 || fabs(frexp(d, &e2)) == 0.5) return 0; /* inf, 0 or a power of two */
    if (sig > 1) {
        snprintf(buf, sizeof(buf), "%.*e", sig - 2, d);
        if (strtod(buf, NULL) == d) return 0; /* a shorter text exists */
    }
    snprintf(buf, sizeof(buf), "%.*e", sig - 1, d);
    int na = orjson_sig_digits(s, n, a, 32), nb = orjson_sig_digits(buf, strlen(buf), b, 32);
    return na == sig && nb == sig && memcmp(a, b, (size_t)sig) == 0;
}

static inline int orjson_number(const char *s, size_t n) {
    size_t k = 0;
    int neg = 0;
    if (k < n && s[k] == '-') {
        neg = 1;
        k++;
    }
    size_t ip = k;
    while (k < n && s[k] >= '0' && s[k] <= '9') k++;
    size_t intlen = k - ip;
    if (intlen == 0 || (intlen > 1 && s[ip] == '0')) return 0;
    if (k == n) {
        if (intlen > 18) return 0;
        if (neg && intlen == 1 && s[ip] == '0') return 0; /* -0 reads as the integer 0 */
        return 1;
    }
    size_t fp = k, flen = 0;
    if (s[k] == '.') {
        fp = ++k;
        while (k < n && s[k] >= '0' && s[k] <= '9') k++;
        flen = k - fp;
        if (flen == 0) return 0;
    }
    if (k < n) { /* an exponent: one digit 1-9 before it, no trailing zero in the fraction */
        if (s[k] != 'e' || intlen != 1 || s[ip] == '0' || (flen && s[fp + flen - 1] == '0')) return 0;
        k++;
        if (k >= n || (s[k] != '+' && s[k] != '-')) return 0;
        int minus = s[k++] == '-';
        if (k >= n || s[k] == '0' || n - k > 3) return 0;
        int e = 0;
        for (; k < n; k++) {
            if (s[k] < '0' || s[k] > '9') return 0;
            e = e * 10 + (s[k] - '0');
        }
        if (minus ? e < 6 : e < 16) return 0; /* orjson writes these in plain notation */
        int sig = 1 + (int)flen;
        /* 16-17 digits, subnormals (e-308 and below) and e+308 (it may overflow): check the digits */
        if (sig > 15 || e >= 308) return orjson_shortest(s, n, sig);
        return 1;
    }
    int frac_zero = (flen == 1 && s[fp] == '0');
    if (s[n - 1] == '0' && !frac_zero) return 0;
    size_t sig;
    if (intlen == 1 && s[ip] == '0') {
        if (frac_zero) return 1; /* 0.0 and -0.0 */
        size_t z = 0;
        while (z < flen && s[fp + z] == '0') z++;
        if (z > 4) return 0; /* below 1e-5: orjson writes an exponent */
        sig = flen - z;
    } else {
        sig = frac_zero ? intlen : intlen + flen;
    }
    if (intlen > 16) return 0; /* from 1e16 on orjson writes an exponent */
    if (sig <= 15) return 1;
    return sig <= 17 && orjson_shortest(s, n, (int)sig);
}

/* Does this number text read as a Python int of at least 1 (``type(v) is int and v >= 1``: a usable
 * max_tokens)? Digits only, no leading zero, at most 18 of them (a float such as "1e+16" or "5.0" is
 * not an int in Python, whatever its value). */
static inline int orjson_positive_int(const char *s, size_t n, int64_t *value) {
    if (n == 0 || n > 18 || s[0] < '1' || s[0] > '9') return 0;
    int64_t t = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] < '0' || s[k] > '9') return 0;
        t = t * 10 + (s[k] - '0');
    }
    if (value) *value = t;
    return 1;
}

#endif
