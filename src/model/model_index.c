/* Lookups by name in an opened model: the name index of its tensors (built by the readers
 * once the entries are final: st_read.c, model_set.c; queried by sgfp4_model_tensor_find())
 * and its metadata keys (the reader looks up the manifest's).
 * SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

/* A name and its entry, compact, so that the sort reads one small array. */
typedef struct name_ref {
    const char *name;
    size_t index;
} name_ref;

static int compare_names(const void *a, const void *b)
{
    return strcmp(((const name_ref *)a)->name, ((const name_ref *)b)->name);
}

sgfp4_status sgfp4_model_index_names(sgfp4_model *m, sgfp4_diag *diag)
{
    m->by_name = malloc((m->count ? m->count : 1) * sizeof *m->by_name);
    name_ref *refs = malloc((m->count ? m->count : 1) * sizeof *refs);
    if (!m->by_name || !refs) {
        free(refs);
        return sgfp4_fail(diag, SGFP4_ERR_NOMEM, -1, -1, -1, "out of memory");
    }
    for (size_t k = 0; k < m->count; k++)
        refs[k] = (name_ref){sgfp4_model_tensor_k(m, k)->name, k};
    qsort(refs, m->count, sizeof *refs, compare_names); /* names are unique: a total order */
    for (size_t k = 0; k < m->count; k++)
        m->by_name[k] = refs[k].index;
    free(refs);
    return SGFP4_OK;
}

const sgfp4_model_tensor *sgfp4_model_tensor_find(const sgfp4_model *m, const char *name)
{
    if (!m || !name || !m->by_name)
        return NULL;
    size_t lo = 0, hi = m->count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const sgfp4_model_tensor *t = sgfp4_model_tensor_sorted(m, mid);
        const int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *sgfp4_model_metadata_get(const sgfp4_model *m, const char *key)
{
    for (size_t k = 0; m && key && k < m->meta_count; k++)
        if (strcmp(m->meta_keys[k], key) == 0)
            return m->meta_values[k];
    return NULL;
}
