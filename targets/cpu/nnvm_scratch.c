/* The heap scratch of CPU kernels: the buffers a kernel allocates for itself and frees before
 * it returns (a padded copy of its input, packed panels, a recurrence's gates), as opposed to
 * the tensors between kernels, which the graph's memory plan places in one arena.
 *
 * Kernels call nnvm_scratch_alloc / nnvm_scratch_free where they would call aligned_alloc and
 * free (the CPU target's convert-to-llvm). A buffer of SCRATCH_KEEP_BYTES or more that a
 * kernel frees is kept, up to SCRATCH_SLOTS of them and SCRATCH_CACHE_BYTES in all, and the
 * next request it can serve (at least its size, at most twice it) takes it back. glibc serves
 * such sizes with a fresh mmap and returns them to the system on free, so without the cache
 * every call of the kernel faulted its scratch in again, page by page, each page zeroed by the
 * kernel: S3D's 7 x 1 conv over 16 x 12544 padded a 70 MB copy per call, 17,000 page faults
 * and 27 of its 85 ms in the system.
 *
 * Each buffer carries its size in a header just below the pointer the kernel gets. Compiled
 * into every model library and, for the JIT, into the kernel runtime's shared library. */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef NNVM_THREADS_EXPORT
#define NNVM_SCRATCH_API __attribute__((visibility("default")))
#else
#define NNVM_SCRATCH_API __attribute__((visibility("hidden")))
#endif

#define SCRATCH_KEEP_BYTES (256u * 1024u) /* below this, malloc's own free lists serve well */
#define SCRATCH_SLOTS 8
#define SCRATCH_CACHE_BYTES ((size_t)512 << 20)
#define HEADER_BYTES 64 /* the header's room: keeps the kernel's pointer 64-byte aligned */

struct header {
    size_t size;   /* bytes the kernel may use */
    size_t offset; /* from the start of the block to the kernel's pointer */
};

struct block {
    char *base; /* what aligned_alloc returned; NULL: an empty slot */
    size_t size;
    size_t align;
};

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block kept[SCRATCH_SLOTS];
static size_t kept_bytes;

static void *publish(char *base, size_t size, size_t offset) {
    char *p = base + offset;
    struct header *h = (struct header *)p - 1;
    h->size = size;
    h->offset = offset;
    return p;
}

/* A kept block of `align` that holds `size` bytes and wastes at most as much again. */
static char *take_kept(size_t size, size_t align, size_t *got) {
    int best = -1;
    pthread_mutex_lock(&scratch_lock);
    for (int k = 0; k < SCRATCH_SLOTS; k++) {
        struct block *b = &kept[k];
        if (b->base && b->align == align && b->size >= size && b->size / 2 <= size &&
            (best < 0 || b->size < kept[best].size))
            best = k;
    }
    char *base = NULL;
    if (best >= 0) {
        base = kept[best].base;
        *got = kept[best].size;
        kept_bytes -= kept[best].size;
        kept[best].base = NULL;
    }
    pthread_mutex_unlock(&scratch_lock);
    return base;
}

NNVM_SCRATCH_API void *nnvm_scratch_alloc(int64_t align, int64_t size) {
    if (size < 0 || align <= 0 || (align & (align - 1)))
        return NULL;
    size_t a = (size_t)align < HEADER_BYTES ? HEADER_BYTES : (size_t)align;
    size_t n = (size_t)size;
    if (n >= SCRATCH_KEEP_BYTES) {
        size_t got;
        char *base = take_kept(n, a, &got);
        if (base)
            return publish(base, got, a);
    }
    if (n > SIZE_MAX - a)
        return NULL;
    size_t total = (n + a + a - 1) / a * a; /* the header's room, rounded for aligned_alloc */
    char *base = aligned_alloc(a, total);
    return base ? publish(base, n, a) : NULL;
}

NNVM_SCRATCH_API void nnvm_scratch_free(void *ptr) {
    if (!ptr)
        return;
    struct header *h = (struct header *)ptr - 1;
    char *base = (char *)ptr - h->offset;
    size_t size = h->size, align = h->offset;
    if (size >= SCRATCH_KEEP_BYTES) {
        pthread_mutex_lock(&scratch_lock);
        for (int k = 0; k < SCRATCH_SLOTS; k++) {
            if (!kept[k].base && kept_bytes + size <= SCRATCH_CACHE_BYTES) {
                kept[k] = (struct block){base, size, align};
                kept_bytes += size;
                base = NULL;
                break;
            }
        }
        pthread_mutex_unlock(&scratch_lock);
    }
    free(base); /* not kept (free(NULL) does nothing) */
}

static void after_fork_in_child(void) { pthread_mutex_init(&scratch_lock, NULL); }

__attribute__((constructor)) static void init_scratch(void) {
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

/* Give every kept block back to the system (a long-lived process done with a model). */
NNVM_SCRATCH_API void nnvm_scratch_release(void) {
    pthread_mutex_lock(&scratch_lock);
    for (int k = 0; k < SCRATCH_SLOTS; k++) {
        free(kept[k].base);
        kept[k].base = NULL;
    }
    kept_bytes = 0;
    pthread_mutex_unlock(&scratch_lock);
}
