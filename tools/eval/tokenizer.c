/* llama2.c's tokenizer file (tok*.bin): int32 max_token_length, then per token a float32
 * score, an int32 length and the piece's bytes. Decoding only, as llama2.c prints text: the
 * space after BOS dropped, "<0xXX>" pieces as raw bytes, unprintable single bytes skipped.
 * SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define BOS 1
#define MAX_PIECE 4096

int eval_tokenizer_load(const char *path, int vocab, eval_tokenizer *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "sgfp4-eval: cannot open %s\n", path);
        return -1;
    }
    int32_t max_len;
    t->pieces = calloc((size_t)vocab, sizeof *t->pieces);
    int ok = t->pieces && fread(&max_len, 4, 1, f) == 1;
    for (int i = 0; ok && i < vocab; i++) {
        float score;
        int32_t len;
        ok = fread(&score, 4, 1, f) == 1 && fread(&len, 4, 1, f) == 1 && len >= 0 &&
             len <= MAX_PIECE && (t->pieces[i] = malloc((size_t)len + 1)) != NULL &&
             fread(t->pieces[i], 1, (size_t)len, f) == (size_t)len;
        if (ok)
            t->pieces[i][len] = 0;
        t->vocab = i + 1;
    }
    fclose(f);
    if (!ok) {
        fprintf(stderr, "sgfp4-eval: %s: not a tokenizer of %d tokens\n", path, vocab);
        eval_tokenizer_free(t);
        return -1;
    }
    return 0;
}

void eval_tokenizer_free(eval_tokenizer *t)
{
    for (int i = 0; t->pieces && i < t->vocab; i++)
        free(t->pieces[i]);
    free(t->pieces);
    memset(t, 0, sizeof *t);
}

static void append(char *buf, size_t cap, const char *piece, size_t n)
{
    const size_t len = strlen(buf);
    if (len + n < cap) {
        memcpy(buf + len, piece, n);
        buf[len + n] = 0;
    }
}

void eval_tokenizer_text(const eval_tokenizer *t, const int *tokens, int count, char *buf,
                         size_t cap)
{
    for (int i = 1; i < count; i++) {
        if (tokens[i] < 0 || tokens[i] >= t->vocab)
            continue;
        const char *piece = t->pieces[tokens[i]];
        if (tokens[i - 1] == BOS && piece[0] == ' ')
            piece++;
        unsigned byte;
        char raw[2] = {0, 0};
        if (strlen(piece) == 6 && sscanf(piece, "<0x%02X>", &byte) == 1) {
            raw[0] = (char)byte;
            piece = raw;
        }
        const size_t n = strlen(piece);
        if (n == 0 || (n == 1 && !isprint((unsigned char)piece[0]) &&
                       !isspace((unsigned char)piece[0])))
            continue;
        append(buf, cap, piece, n);
    }
}
