/* One linear pass over a JSON text before jansson parses it: how many values of each kind it
 * holds (so the memory jansson will need is known, and can be checked, before any of it is
 * allocated: jansson does not fail cleanly when an allocation fails), where each key of the
 * top-level object starts, and the structural limits a caller wants enforced early.
 * SPDX-License-Identifier: MIT */
#ifndef SGFP4_MODEL_JSON_SCAN_H
#define SGFP4_MODEL_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest nesting the scan follows; a deeper text stops it with JSON_SCAN_TOO_DEEP. */
#define JSON_SCAN_MAX_DEPTH 256

typedef enum json_scan_result {
    JSON_SCAN_OK = 0,          /* every byte scanned (the text may still be invalid JSON) */
    JSON_SCAN_MALFORMED,       /* stopped at `stop` on a byte no JSON text has there */
    JSON_SCAN_TOO_DEEP,        /* nesting past max_depth, at `stop` */
    JSON_SCAN_ARRAY_TOO_LONG,  /* an array past max_array_length elements, at `stop` */
    JSON_SCAN_TOO_MANY_KEYS,   /* the top-level object past max_top_keys keys, at `stop` */
    JSON_SCAN_NOMEM            /* the key offset table could not grow */
} json_scan_result;

typedef struct json_scan_limits {
    size_t max_depth;          /* 0: JSON_SCAN_MAX_DEPTH */
    uint64_t max_array_length; /* 0: unlimited */
    uint64_t max_top_keys;     /* 0: unlimited */
    bool record_top_keys;      /* fill top_key_at (owned by the scan: json_scan_free) */
} json_scan_limits;

typedef struct json_scan {
    uint64_t objects, arrays, strings, numbers, literals; /* values of each kind */
    uint64_t keys;           /* object keys at every level */
    uint64_t string_bytes;   /* bytes between the quotes of every string and key */
    uint64_t longest_token;  /* the longest single token, in bytes */
    size_t stop;             /* where the scan ended (the text's length when it completed) */
    size_t length;           /* the text's length */
    uint64_t top_keys;       /* keys of the top-level object, in text order */
    uint64_t *top_key_at;    /* offset of each one's opening quote (if recorded) */
    size_t top_key_capacity;
} json_scan;

/* Scans text[0..length) into *scan (zeroed first). Never reads outside the text. */
json_scan_result json_scan_run(const char *text, size_t length, const json_scan_limits *limits,
                               json_scan *scan);

/* An upper bound of the bytes jansson 2.x allocates (at its peak) to parse the scanned text
 * into a tree, measured on 64-bit glibc with a margin; text the scan did not reach counts at
 * the worst case per byte. */
uint64_t json_scan_parse_memory(const json_scan *scan);

/* Releases top_key_at. */
void json_scan_free(json_scan *scan);

/* True when `bytes` could be allocated right now (a malloc that is freed at once: under an
 * address-space limit, the probe fails exactly where the parse would run out). */
bool json_memory_available(uint64_t bytes);

#endif
