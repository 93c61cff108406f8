/*
 * JSON Lines out of Arrow columns, in C with the GIL released: the bytes chatlake writes to disk for
 * a single-file command's losses file (``json_lines``) and for its output (``join_lines``).
 *
 * json_lines(batch) writes one JSON object per row of a flat record batch whose columns are strings
 * or 64-bit integers: every column in schema order, its name as the key, null as ``null``, strings
 * escaped the way orjson (and Polars' ``write_ndjson``, the reference and the CHATLAKE_NATIVE=0 path:
 * pipeline/engine/writers.py) escape them, each object followed by a newline.
 *
 * join_lines(strings, keep) writes the kept strings of a (large) string array, each followed by a newline:
 * the encoded records of a batch as the output file holds them, in one copy (no filter, cast or
 * element-wise join of Arrow arrays in between).
 *
 * Both return (address, size, owner) for pa.foreign_buffer, like the encoders' buffers.
 */
#include "encode_common.h"

#define MAX_COLS 64

typedef struct {
    Col col;
    int is_int;
    Buf key; /* "\"name\":" with a leading '{' or ',' */
} Column;

extern const char chatlake_json_lines_doc[];
const char chatlake_json_lines_doc[] =
    "json_lines(batch) -> (address, size, owner)\n\n"
    "One JSON object per row of a flat RecordBatch of string and int64 columns (keys in schema order, "
    "null as null, orjson's escaping), each followed by a newline. Raises ValueError for another column "
    "type (the caller uses Polars' write_ndjson, the reference).";

PyObject *chatlake_json_lines(PyObject *self, PyObject *args);

PyObject *chatlake_json_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "O", &batch)) return NULL;
    struct ArrowArray arr;
    struct ArrowSchema sch;
    if (export_c(batch, &arr, &sch)) return NULL;
    PyObject *result = NULL;
    Column cols[MAX_COLS];
    int64_t ncols = sch.n_children;
    memset(cols, 0, sizeof cols);
    St st = {0};
    Buf out = {0};
    if (strcmp(sch.format, "+s") != 0 || ncols > MAX_COLS || (arr.null_count != 0 && arr.buffers[0])) {
        PyErr_SetString(PyExc_ValueError, "json_lines: not a flat record batch (no null rows) of at most 64 columns");
        goto out;
    }
    size_t text = 0, per_row = 3;
    for (int64_t k = 0; k < ncols; k++) {
        struct ArrowSchema *cs = sch.children[k];
        struct ArrowArray *ca = arr.children[k];
        int is_str = strcmp(cs->format, "u") == 0, is_int = strcmp(cs->format, "l") == 0;
        if (!is_str && !is_int) {
            PyErr_Format(PyExc_ValueError, "json_lines: column %s has type %s (strings and int64 only)", cs->name,
                         cs->format);
            goto out;
        }
        cols[k].is_int = is_int;
        cols[k].col.base = arr.offset + ca->offset;
        cols[k].col.valid = ca->null_count == 0 ? NULL : (const uint8_t *)ca->buffers[0];
        /* strings: int32 offsets and data; int64: the values, read through data */
        cols[k].col.off = is_str ? (const int32_t *)ca->buffers[1] : NULL;
        cols[k].col.data = (const char *)ca->buffers[is_str ? 2 : 1];
        put(&st, &cols[k].key, k ? "," : "{", 1);
        put_json_str(&st, &cols[k].key, cs->name, strlen(cs->name));
        put(&st, &cols[k].key, ":", 1);
        per_row += cols[k].key.len + (is_int ? 20 : 2);
        text += is_int ? 0 : col_bytes(&cols[k].col, 0, arr.length);
    }
    int64_t n = arr.length;
    Py_BEGIN_ALLOW_THREADS
    /* about the final size at once (escapes are rare; put() grows the rest): one allocation */
    reserve(&st, &out, (size_t)n * per_row + text + 16);
    for (int64_t i = 0; i < n && !st.oom; i++) {
        for (int64_t k = 0; k < ncols; k++) {
            const Column *c = &cols[k];
            put(&st, &out, c->key.p, c->key.len);
            if (!col_valid(&c->col, i)) {
                put(&st, &out, "null", 4);
            } else if (c->is_int) {
                put_i64(&st, &out, ((const int64_t *)c->col.data)[c->col.base + i]);
            } else {
                size_t len;
                const char *s = col_str(&c->col, i, &len);
                put_json_str(&st, &out, s, len);
            }
        }
        put(&st, &out, ncols ? "}\n" : "{}\n", ncols ? 2 : 3);
    }
    Py_END_ALLOW_THREADS
    if (st.oom) {
        PyErr_NoMemory();
        goto out;
    }
    result = export_buf(&out);
out:
    for (int64_t k = 0; k < MAX_COLS; k++) free(cols[k].key.p);
    free(out.p);
    release_c(&arr, &sch);
    return result;
}

extern const char chatlake_join_lines_doc[];
const char chatlake_join_lines_doc[] =
    "join_lines(strings, keep) -> (address, size, owner)\n\n"
    "The strings of a string or large_string array whose keep flag (a bool array of the same length, or None: all) is "
    "true, each followed by a newline; a null string writes nothing (no line). Raises ValueError for another "
    "array type or a keep array of another length.";

PyObject *chatlake_join_lines(PyObject *self, PyObject *args);

PyObject *chatlake_join_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *strings, *keep;
    if (!PyArg_ParseTuple(args, "OO", &strings, &keep)) return NULL;
    struct ArrowArray arr, karr;
    struct ArrowSchema sch, ksch;
    memset(&karr, 0, sizeof karr);
    memset(&ksch, 0, sizeof ksch);
    if (export_c(strings, &arr, &sch)) return NULL;
    PyObject *result = NULL;
    St st = {0};
    Buf out = {0};
    const uint8_t *kbits = NULL, *kvalid = NULL;
    int64_t kbase = 0;
    int large = strcmp(sch.format, "U") == 0; /* large_string: int64 offsets */
    if (!large && strcmp(sch.format, "u") != 0) {
        PyErr_SetString(PyExc_ValueError, "join_lines: not a string or large_string array");
        goto out;
    }
    if (keep != Py_None) {
        if (export_c(keep, &karr, &ksch)) goto out;
        if (strcmp(ksch.format, "b") != 0 || karr.length != arr.length) {
            PyErr_SetString(PyExc_ValueError, "join_lines: keep is not a bool array of the strings' length");
            goto out;
        }
        kvalid = karr.null_count == 0 ? NULL : (const uint8_t *)karr.buffers[0];
        kbits = (const uint8_t *)karr.buffers[1];
        kbase = karr.offset;
    }
    const uint8_t *valid = arr.null_count == 0 ? NULL : (const uint8_t *)arr.buffers[0];
    const int32_t *off32 = (const int32_t *)arr.buffers[1];
    const int64_t *off64 = (const int64_t *)arr.buffers[1];
    const char *data = (const char *)arr.buffers[2];
    int64_t n = arr.length, base = arr.offset;
    Py_BEGIN_ALLOW_THREADS
    size_t total = n == 0 ? 0 : large ? (size_t)(off64[base + n] - off64[base]) : (size_t)(off32[base + n] - off32[base]);
    reserve(&st, &out, total + (size_t)n + 1);
    for (int64_t i = 0; i < n && !st.oom; i++) {
        if (kbits) {
            int64_t k = kbase + i;
            int flag = !kvalid || ((kvalid[k >> 3] >> (k & 7)) & 1);
            if (!flag || !((kbits[k >> 3] >> (k & 7)) & 1)) continue; /* a null flag is not kept */
        }
        int64_t k = base + i;
        /* a null string writes nothing, not even its newline (as the Arrow join it replaces) */
        if (valid && !((valid[k >> 3] >> (k & 7)) & 1)) continue;
        int64_t a = large ? off64[k] : off32[k], z = large ? off64[k + 1] : off32[k + 1];
        put(&st, &out, data + a, (size_t)(z - a));
        put(&st, &out, "\n", 1);
    }
    Py_END_ALLOW_THREADS
    if (st.oom) {
        PyErr_NoMemory();
        goto out;
    }
    result = export_buf(&out);
out:
    free(out.p);
    release_c(&arr, &sch);
    release_c(&karr, &ksch);
    return result;
}
