/* The linear pre-scan of a JSON text (json_scan.h). It is a tokenizer, not a parser: it only
 * has to be right about well-formed text (which jansson then accepts) and never read out of
 * bounds on any other; where the two disagree about malformed text, jansson's verdict is the
 * one reported, and the memory bound still holds because the part not scanned counts at the
 * worst case.
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "model/json_scan.h"

/* Peak bytes jansson 2.14 allocates per value, key and string byte, measured on x86-64 glibc
 * (the measurements, with the slot in the parent container: integer 48, real 48, empty
 * string 104, empty array 152, empty object 248, key 97 + its length, a long string 2.7 times
 * its length for the lexer's growing buffer and the copy) and rounded up with a margin. The
 * test over the same shapes (tests/model/test_model_header_memory.c) checks that the bound
 * holds against the jansson the library is linked with. */
enum {
    COST_OBJECT = 320,
    COST_ARRAY = 192,
    COST_STRING = 128, /* a string value or a key, plus 2 bytes per byte of its text */
    COST_NUMBER = 64,
    COST_LITERAL = 16,
    COST_UNSCANNED_BYTE = 128, /* "{}," is 3 bytes and costs 250 */
    COST_BASE = 1 << 20
};

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool is_number_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static bool record_top_key(json_scan *s, size_t at)
{
    if (s->top_keys == s->top_key_capacity) {
        const size_t capacity = s->top_key_capacity ? 2 * s->top_key_capacity : 64;
        uint64_t *bigger = realloc(s->top_key_at, capacity * sizeof *bigger);
        if (!bigger)
            return false;
        s->top_key_at = bigger;
        s->top_key_capacity = capacity;
    }
    s->top_key_at[s->top_keys] = at;
    return true;
}

static void note_token(json_scan *s, size_t bytes)
{
    if (bytes > s->longest_token)
        s->longest_token = bytes;
}

/* The string that starts at text[*at] (an object's key where `key`, at `depth`): counts it
 * and, at the top level, checks and records the key. Moves *at past it, or, where the string
 * is cut off or is a key too many, to its start (where the scan stops). */
static json_scan_result scan_string(const char *text, size_t length, size_t *at, bool key,
                                    size_t depth, uint64_t max_keys, bool record, json_scan *s)
{
    const size_t begin = *at;
    size_t k = begin + 1;
    while (k < length && text[k] != '"')
        k += text[k] == '\\' ? 2 : 1;
    if (k >= length)
        return JSON_SCAN_MALFORMED;
    k++; /* the closing quote */
    s->string_bytes += k - begin - 2;
    note_token(s, k - begin);
    if (!key) {
        s->strings++;
        *at = k;
        return JSON_SCAN_OK;
    }
    s->keys++;
    if (depth == 1) {
        if (max_keys && s->top_keys == max_keys)
            return JSON_SCAN_TOO_MANY_KEYS;
        *at = k;
        if (record && !record_top_key(s, begin))
            return JSON_SCAN_NOMEM;
        s->top_keys++;
    }
    *at = k;
    return JSON_SCAN_OK;
}

json_scan_result json_scan_run(const char *text, size_t length, const json_scan_limits *limits,
                               json_scan *s)
{
    *s = (json_scan){0};
    s->length = length;
    size_t max_depth = limits && limits->max_depth ? limits->max_depth : JSON_SCAN_MAX_DEPTH;
    if (max_depth > JSON_SCAN_MAX_DEPTH)
        max_depth = JSON_SCAN_MAX_DEPTH;
    const uint64_t max_array = limits ? limits->max_array_length : 0;
    const uint64_t max_keys = limits ? limits->max_top_keys : 0;
    const bool record = limits && limits->record_top_keys;
    /* The open containers: is_object[d] for depth d + 1, and elements seen in each. */
    bool is_object[JSON_SCAN_MAX_DEPTH];
    uint64_t elements[JSON_SCAN_MAX_DEPTH];
    size_t depth = 0;
    bool expect_key = false; /* the next string is an object's key */
    size_t k = 0;
    json_scan_result result = JSON_SCAN_OK;
    while (k < length && result == JSON_SCAN_OK) {
        const char c = text[k];
        if (is_space(c)) {
            k++;
            continue;
        }
        if (c == ':' || c == ',') {
            expect_key = c == ',' && depth > 0 && is_object[depth - 1];
            k++;
            continue;
        }
        if (c == '}' || c == ']') {
            if (depth == 0 || is_object[depth - 1] != (c == '}')) {
                result = JSON_SCAN_MALFORMED;
                break;
            }
            depth--;
            expect_key = false;
            k++;
            continue;
        }
        const bool key = expect_key && c == '"';
        if (!key && depth > 0) {
            /* a value inside a container: count the array's elements */
            if (!is_object[depth - 1] && max_array && ++elements[depth - 1] > max_array) {
                result = JSON_SCAN_ARRAY_TOO_LONG;
                break;
            }
        }
        if (c == '{' || c == '[') {
            if (depth == max_depth) {
                result = JSON_SCAN_TOO_DEEP;
                break;
            }
            is_object[depth] = c == '{';
            elements[depth] = 0;
            depth++;
            expect_key = c == '{';
            if (c == '{')
                s->objects++;
            else
                s->arrays++;
            k++;
        } else if (c == '"') {
            result = scan_string(text, length, &k, key, depth, max_keys, record, s);
            expect_key = false;
        } else if (is_number_char(c)) {
            const size_t begin = k;
            while (k < length && is_number_char(text[k]))
                k++;
            s->numbers++;
            note_token(s, k - begin);
        } else if (c >= 'a' && c <= 'z') {
            const size_t begin = k;
            while (k < length && text[k] >= 'a' && text[k] <= 'z')
                k++;
            s->literals++;
            note_token(s, k - begin);
        } else {
            result = JSON_SCAN_MALFORMED;
        }
    }
    s->stop = result == JSON_SCAN_OK ? length : k;
    return result;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

uint64_t json_scan_parse_memory(const json_scan *s)
{
    uint64_t total = COST_BASE;
    total = add_sat(total, mul_sat(s->objects, COST_OBJECT));
    total = add_sat(total, mul_sat(s->arrays, COST_ARRAY));
    total = add_sat(total, mul_sat(add_sat(s->strings, s->keys), COST_STRING));
    total = add_sat(total, mul_sat(s->numbers, COST_NUMBER));
    total = add_sat(total, mul_sat(s->literals, COST_LITERAL));
    total = add_sat(total, mul_sat(s->string_bytes, 2));
    total = add_sat(total, mul_sat(s->longest_token, 3)); /* the lexer buffer's last growth */
    total = add_sat(total, mul_sat(s->length - s->stop, COST_UNSCANNED_BYTE));
    return total;
}

void json_scan_free(json_scan *s)
{
    free(s->top_key_at);
    s->top_key_at = NULL;
    s->top_key_capacity = 0;
}

bool json_memory_available(uint64_t bytes)
{
    if (bytes > SIZE_MAX)
        return false;
    /* Through a volatile pointer: compilers may drop a malloc whose result is only tested. */
    void *(*volatile allocate)(size_t) = malloc;
    void *probe = allocate((size_t)bytes);
    const bool ok = probe != NULL;
    free(probe);
    return ok;
}
