/*
 * Item content fingerprints in C: exactly the strings pipeline/fingerprint.py's FINGERPRINT_SQL gives
 * (DuckDB stays the reference: the Python path and CHATLAKE_NATIVE=0), without DuckDB's import of the
 * items, its string building and its per-call planning. The GIL is released while hashing.
 *
 * For an item with an id, encrypted_content or signature, the fingerprint is the first 16 hex digits
 * of the MD5 of
 *
 *   type US role US name US namespace US call_id US arguments US input US content_form US extra_json
 *   US blocks(content) US blocks(summary)
 *
 * (US = 0x1f; a null field is one NUL byte), where blocks(list) is NUL for a null list, "" for an
 * empty one, else its blocks joined by RS (0x1e), each block "type GS text GS extra_json" (GS = 0x1d,
 * null fields and a null block's fields NUL). A null item, or one without state, has none (null).
 * These are DuckDB's semantics of coalesce / concat_ws / array_to_string / list_transform on those
 * inputs, checked by tests/native/test_fingerprint.py.
 */
#include "encode_common.h"
#include "md5.h"

#define N_FIELDS 9

typedef struct {
    Col valid, list, type, text, extra;
} Blocks;

typedef struct {
    Col valid;                  /* the items themselves */
    Col fields[N_FIELDS];       /* hashed in this order, FINGERPRINT_SQL's _FIELDS */
    Col id, encrypted, signature;
    Blocks content, summary;
} Items;

static const char *const FIELDS[N_FIELDS] = {"type",  "role",  "name",         "namespace",  "call_id",
                                             "arguments", "input", "content_form", "extra_json"};

static int bind_blocks_(struct ArrowArray *a, struct ArrowSchema *s, int64_t base, const char *name, Blocks *b) {
    struct ArrowArray *c;
    struct ArrowSchema *cs;
    if (bind(a, s, name, "+l", base, &b->list, &c, &cs)) return -1;
    if (c->n_children != 1 || strcmp(cs->children[0]->format, "+s") != 0) return -1;
    struct ArrowArray *sa = c->children[0];
    struct ArrowSchema *ss = cs->children[0];
    b->valid.valid = (const uint8_t *)sa->buffers[0];
    b->valid.base = sa->offset;
    b->valid.off = NULL;
    b->valid.data = NULL;
    int64_t sb = sa->offset;
    return bind(sa, ss, "type", "u", sb, &b->type, NULL, NULL) || bind(sa, ss, "text", "u", sb, &b->text, NULL, NULL) ||
           bind(sa, ss, "extra_json", "u", sb, &b->extra, NULL, NULL);
}

static int bind_items(Items *it, struct ArrowArray *a, struct ArrowSchema *s) {
    if (strcmp(s->format, "+s") != 0) return -1;
    int64_t base = a->offset;
    it->valid.valid = (const uint8_t *)a->buffers[0];
    it->valid.base = base;
    it->valid.off = NULL;
    it->valid.data = NULL;
    for (int k = 0; k < N_FIELDS; k++)
        if (bind(a, s, FIELDS[k], "u", base, &it->fields[k], NULL, NULL)) return -1;
    return bind(a, s, "id", "u", base, &it->id, NULL, NULL) ||
           bind(a, s, "encrypted_content", "u", base, &it->encrypted, NULL, NULL) ||
           bind(a, s, "signature", "u", base, &it->signature, NULL, NULL) ||
           bind_blocks_(a, s, base, "content", &it->content) || bind_blocks_(a, s, base, "summary", &it->summary);
}

/* A string value, or one NUL byte when it is null (coalesce(x, chr(0))). */
static void hash_str(chatlake_md5 *m, const Col *c, int64_t i) {
    size_t n;
    const char *v = col_str(c, i, &n);
    if (v)
        chatlake_md5_update(m, v, n);
    else
        chatlake_md5_update(m, "\0", 1);
}

static void hash_blocks(chatlake_md5 *m, const Blocks *b, int64_t i) {
    if (!col_valid(&b->list, i)) {
        chatlake_md5_update(m, "\0", 1);
        return;
    }
    int64_t start, end;
    col_list(&b->list, i, &start, &end);
    for (int64_t j = start; j < end; j++) {
        if (j > start) chatlake_md5_update(m, "\x1e", 1);
        if (!col_valid(&b->valid, j)) { /* a null block: its fields read as null */
            chatlake_md5_update(m, "\0\x1d\0\x1d\0", 5);
            continue;
        }
        hash_str(m, &b->type, j);
        chatlake_md5_update(m, "\x1d", 1);
        hash_str(m, &b->text, j);
        chatlake_md5_update(m, "\x1d", 1);
        hash_str(m, &b->extra, j);
    }
}

extern const char chatlake_fingerprints_doc[];
const char chatlake_fingerprints_doc[] =
    "fingerprints(items) -> (valid, null_count, offsets, data)\n\n"
    "The content fingerprint of every item of a flat item StructArray (pipeline/fingerprint.py): a string "
    "array's validity bitmap, null count, int32 offsets and data, each buffer (address, size, owner) for "
    "pa.foreign_buffer. Raises ValueError when the array lacks a field or has another type.";

PyObject *chatlake_fingerprints(PyObject *self, PyObject *args);

PyObject *chatlake_fingerprints(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *items;
    if (!PyArg_ParseTuple(args, "O", &items)) return NULL;
    struct ArrowArray arr;
    struct ArrowSchema sch;
    if (export_c(items, &arr, &sch)) return NULL;
    PyObject *result = NULL;
    Items it;
    Buf valid = {0}, off = {0}, data = {0};
    St st = {0};
    int64_t nulls = 0;
    if (bind_items(&it, &arr, &sch)) {
        PyErr_SetString(PyExc_ValueError, "fingerprints: not a canonical item struct array");
        goto out;
    }
    int64_t n = arr.length;
    if (n > INT32_MAX / 16) { /* int32 offsets (a batch has far fewer items) */
        PyErr_SetString(PyExc_ValueError, "fingerprints: more items than int32 offsets can address");
        goto out;
    }
    Py_BEGIN_ALLOW_THREADS
    reserve(&st, &valid, (size_t)(n + 7) / 8);
    reserve(&st, &off, (size_t)(n + 1) * 4);
    reserve(&st, &data, (size_t)n * 16);
    if (!st.oom) {
        memset(valid.p, 0, (size_t)(n + 7) / 8);
        valid.len = (size_t)(n + 7) / 8;
        int32_t *o = (int32_t *)off.p;
        o[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            int has_state = col_valid(&it.valid, i) &&
                            (col_valid(&it.id, i) || col_valid(&it.encrypted, i) || col_valid(&it.signature, i));
            if (has_state) {
                chatlake_md5 m;
                chatlake_md5_init(&m);
                for (int k = 0; k < N_FIELDS; k++) {
                    if (k) chatlake_md5_update(&m, "\x1f", 1);
                    hash_str(&m, &it.fields[k], i);
                }
                chatlake_md5_update(&m, "\x1f", 1);
                hash_blocks(&m, &it.content, i);
                chatlake_md5_update(&m, "\x1f", 1);
                hash_blocks(&m, &it.summary, i);
                uint8_t digest[16];
                chatlake_md5_final(&m, digest);
                static const char HEX[] = "0123456789abcdef";
                for (int k = 0; k < 8; k++) {
                    data.p[data.len++] = HEX[digest[k] >> 4];
                    data.p[data.len++] = HEX[digest[k] & 15];
                }
                ((uint8_t *)valid.p)[i >> 3] |= (uint8_t)(1u << (i & 7));
            } else {
                nulls++;
            }
            o[i + 1] = (int32_t)data.len;
        }
        off.len = (size_t)(n + 1) * 4;
    }
    Py_END_ALLOW_THREADS
    if (st.oom) {
        PyErr_NoMemory();
        goto out;
    }
    result = Py_BuildValue("(NLNN)", export_buf(&valid), (long long)nulls, export_buf(&off), export_buf(&data));
out:
    free(valid.p);
    free(off.p);
    free(data.p);
    release_c(&arr, &sch);
    return result;
}

extern const char chatlake_md5_hex_doc[];
const char chatlake_md5_hex_doc[] = "md5_hex(data: bytes) -> str\n\nMD5 of data as 32 hex digits (md5.c; for its tests).";

PyObject *chatlake_md5_hex(PyObject *self, PyObject *args);

PyObject *chatlake_md5_hex(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    chatlake_md5 m;
    uint8_t digest[16];
    Py_BEGIN_ALLOW_THREADS
    chatlake_md5_init(&m);
    chatlake_md5_update(&m, view.buf, (size_t)view.len);
    chatlake_md5_final(&m, digest);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    static const char HEX[] = "0123456789abcdef";
    char hex[32];
    for (int k = 0; k < 16; k++) {
        hex[2 * k] = HEX[digest[k] >> 4];
        hex[2 * k + 1] = HEX[digest[k] & 15];
    }
    return PyUnicode_FromStringAndSize(hex, 32);
}
