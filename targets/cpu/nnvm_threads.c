/* The parallel-loop runtime of CPU kernels: a pool of worker threads in which the caller never
 * waits for a worker that has not started.
 *
 * A parallel loop is outlined into fn(ctx) (convert-parallel-to-threads); nnvm_parallel()
 * publishes it to the pool and runs it on the calling thread too. Inside fn, every thread claims
 * chunks of the iteration space from one shared pair of counters (nnvm_loop_start /
 * nnvm_loop_next): the caller from the front, the workers from the back, so the caller alone
 * can finish the whole loop, and with two threads each takes one contiguous half (the rows a
 * kernel writes on a core are then mostly the rows the next kernel reads there). When the
 * caller has finished it, it closes the job and waits only for the workers still inside fn,
 * which are running; a worker that wakes late (its core was busy with another process) finds
 * the job closed and goes back to sleep. libgomp's GOMP_parallel instead joins every thread of
 * the team at a barrier, so one descheduled worker stalls the caller for a scheduler time
 * slice, on every parallel loop.
 *
 * A worker descheduled while it holds a chunk still makes the caller wait for it (its chunk
 * must be done before the next kernel reads the rows), for as long as the other process keeps
 * its core: milliseconds. So a wait that long on a worker (STALL_CHUNKS times the caller's
 * mean chunk, and at least STALL_NS) caps the team one thread smaller for a while, after which
 * the full team is tried again. The while starts at CAP_MIN_NS and doubles, up to CAP_MAX_NS,
 * each time a stall follows soon (RECUR_NS) after the last cap ended: a quiet machine's
 * occasional preemption (ResNet-50 at two threads: a wait of 0.6-2.7 ms every 200 ms) costs
 * a few milliseconds on one thread, and beside a CPU-bound neighbour on two cores the caller
 * soon runs the loops alone at one core's speed instead of stalling on most of them.
 *
 * The same signatures as libgomp's (GOMP_parallel, GOMP_loop_dynamic_start/next/end_nowait,
 * omp_get_num_threads), under our names. Compiled into every model library and, for the JIT,
 * into a small shared library of its own (targets/llvm/compile.py). */

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nnvm_fpenv.h"

#ifdef NNVM_THREADS_EXPORT
#define NNVM_THREADS_API __attribute__((visibility("default")))
#else
#define NNVM_THREADS_API __attribute__((visibility("hidden")))
#endif

#define MAX_WORKERS 255
#define SPIN_BEFORE_SLEEP 20000 /* polls (~50-100 us) before a worker sleeps on the condvar */
#define CLOSED (1u << 30)
#define STALL_NS 200000      /* a wait on a worker at least this long (and STALL_CHUNKS */
#define STALL_CHUNKS 4       /* chunks) means its core is taken by another process */
#define CAP_MIN_NS 2000000   /* then teams are one thread smaller for 2 ms, */
#define CAP_MAX_NS 200000000 /* doubling up to 200 ms while the stalls recur */
#define RECUR_NS 50000000    /* within 50 ms of the last cap's end */

typedef void (*nnvm_task)(void *);

struct job {
    /* iterations claimed from the front (low 32 bits) and from the back (high 32 bits) of the
     * loop: the caller claims from the front and the workers from the back, so with both
     * running each takes one contiguous half (a kernel's producer and consumer then split
     * the rows alike), and either takes it all when the other is late */
    _Atomic uint64_t taken;
    int32_t threads;      /* the team size fn sees */
    nnvm_task fn;
    void *ctx;
};

/* What one thread knows about the loop it is sharing. */
struct loop {
    struct job *job;
    int64_t end, chunk;
};

static _Thread_local struct loop tl_loop;
static _Thread_local bool tl_in_team;
static _Thread_local int32_t tl_index; /* 0: the caller; k: worker k */
static _Thread_local int32_t tl_chunks; /* chunks this thread claimed in the current loop */

/* Profiling (the debug runtime's profile(trace=...)): while on, every thread that takes part in
 * a top-level parallel loop records one span (its time inside fn, the chunks it claimed) into a
 * fixed buffer; off, the cost is one relaxed load per loop and thread. Always exported (model
 * libraries compile this file with hidden symbols otherwise), read with ctypes. */
#define NNVM_TRACE_API __attribute__((visibility("default")))
#define TRACE_CAPACITY 16384

struct nnvm_trace_span {
    int64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
    int32_t thread;           /* 0: the calling thread; k: pool worker k */
    int32_t chunks;
};

static _Atomic int trace_on;
static _Atomic int64_t trace_count;
static struct nnvm_trace_span trace_buf[TRACE_CAPACITY];

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline bool tracing(void) { return atomic_load_explicit(&trace_on, memory_order_relaxed); }

/* The team cap after a stall: loops until cap_until_ns (CLOCK_MONOTONIC) run with at most
 * cap_threads threads; 0: no cap. Read by every caller, written under pool_lock. */
static _Atomic int64_t cap_until_ns;
static _Atomic int32_t cap_threads;
static int64_t last_cap_end_ns, last_cap_ns; /* the latest cap (0: none yet); under pool_lock */
static _Atomic int64_t stalls; /* how many waits capped the team (nnvm_pool_stalls) */

/* A wait on a worker ended at `end` was a stall: cap the team below `team` threads. */
static void cap_after_stall(int team, int64_t end) {
    int64_t length = CAP_MIN_NS;
    if (last_cap_end_ns != 0 && end - last_cap_end_ns < RECUR_NS)
        length = last_cap_ns * 2 < CAP_MAX_NS ? last_cap_ns * 2 : CAP_MAX_NS;
    last_cap_ns = length;
    last_cap_end_ns = end + length;
    atomic_store_explicit(&cap_threads, team > 1 ? team - 1 : 1, memory_order_relaxed);
    atomic_store_explicit(&cap_until_ns, end + length, memory_order_relaxed);
    atomic_fetch_add_explicit(&stalls, 1, memory_order_relaxed);
}

static int capped(int want) {
    int64_t until = atomic_load_explicit(&cap_until_ns, memory_order_relaxed);
    if (until == 0)
        return want;
    if (now_ns() >= until) {
        atomic_store_explicit(&cap_until_ns, 0, memory_order_relaxed);
        return want;
    }
    int cap = atomic_load_explicit(&cap_threads, memory_order_relaxed);
    return want < cap ? want : cap;
}

static void trace_record(int64_t start, int32_t thread) {
    int64_t end = now_ns();
    int64_t k = atomic_fetch_add_explicit(&trace_count, 1, memory_order_relaxed);
    if (k < TRACE_CAPACITY)
        trace_buf[k] = (struct nnvm_trace_span){start, end, thread, tl_chunks};
}

/* on != 0: clear the buffer and record; 0: stop recording. */
NNVM_TRACE_API void nnvm_trace_enable(int32_t on) {
    if (on)
        atomic_store(&trace_count, 0);
    atomic_store(&trace_on, on != 0);
}

/* Copy up to `max` spans recorded since the last take (or enable) into `out` and clear them;
 * returns how many were recorded, which exceeds what was copied when the buffer overflowed.
 * Call it between parallel loops (no thread is recording then). */
NNVM_TRACE_API int64_t nnvm_trace_take(struct nnvm_trace_span *out, int64_t max) {
    int64_t n = atomic_exchange(&trace_count, 0);
    int64_t kept = n < TRACE_CAPACITY ? n : TRACE_CAPACITY;
    if (kept > max)
        kept = max;
    if (kept > 0)
        memcpy(out, trace_buf, (size_t)kept * sizeof *out);
    return n;
}

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static _Atomic uint32_t generation; /* bumped for every job */
static _Atomic uint32_t state;      /* CLOSED | the number of workers inside fn */
static _Atomic int sleepers;
static struct job shared_job;
static int started; /* workers started so far (under pool_lock) */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static bool join_job(void) {
    uint32_t s = atomic_load_explicit(&state, memory_order_acquire);
    while (!(s & CLOSED)) {
        if (atomic_compare_exchange_weak_explicit(&state, &s, s + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    }
    return false;
}

static void *worker_main(void *arg) {
    int index = (int)(intptr_t)arg; /* 1 .. started; the caller is 0 */
    tl_index = index;
    (void)nnvm_fpenv_enter(); /* for the thread's life: it runs nothing but kernels */
    uint32_t seen = atomic_load_explicit(&generation, memory_order_acquire);
    for (;;) {
        uint32_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen) {
            if (++spins < SPIN_BEFORE_SLEEP) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&sleep_lock);
            atomic_fetch_add(&sleepers, 1);
            while (atomic_load_explicit(&generation, memory_order_acquire) == seen)
                pthread_cond_wait(&wake, &sleep_lock);
            atomic_fetch_sub(&sleepers, 1);
            pthread_mutex_unlock(&sleep_lock);
            spins = 0;
        }
        seen = g;
        if (!join_job())
            continue; /* too late: the caller finished this job without us */
        if (index < shared_job.threads) {
            bool traced = tracing();
            int64_t t0 = traced ? now_ns() : 0;
            tl_chunks = 0;
            tl_in_team = true;
            tl_loop.job = &shared_job;
            shared_job.fn(shared_job.ctx);
            tl_loop.job = NULL;
            tl_in_team = false;
            if (traced && tl_chunks > 0)
                trace_record(t0, index); /* before leaving: the caller waits for this */
        }
        atomic_fetch_sub_explicit(&state, 1, memory_order_release);
    }
    return NULL;
}

static int default_threads(void) { /* the CPUs this process may run on */
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                        : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : (int)n;
}

/* Start workers up to `want` (under pool_lock); returns how many run. */
static int ensure_workers(int want) {
    while (started < want) {
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 8u << 20); /* kernels keep up to 256 KiB on the stack */
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, worker_main, (void *)(intptr_t)(started + 1));
        pthread_attr_destroy(&attr);
        if (failed)
            break;
        started++;
    }
    return started;
}

static void after_fork_in_child(void) {
    /* the child has none of the parent's threads: start afresh */
    pthread_mutex_init(&pool_lock, NULL);
    pthread_mutex_init(&sleep_lock, NULL);
    pthread_cond_init(&wake, NULL);
    atomic_store(&state, CLOSED);
    atomic_store(&sleepers, 0);
    started = 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_pool(void) {
    atomic_store(&state, CLOSED);
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

static void run_alone(nnvm_task fn, void *ctx) {
    struct job solo = {.threads = 1, .fn = fn, .ctx = ctx};
    struct loop saved = tl_loop;
    bool was = tl_in_team;
    int32_t chunks = tl_chunks;
    atomic_init(&solo.taken, 0);
    tl_loop.job = &solo;
    tl_in_team = true;
    fn(ctx);
    tl_loop = saved;
    tl_in_team = was;
    if (was)
        tl_chunks = chunks; /* a nested loop's chunks are not the outer loop's */
}

NNVM_THREADS_API void nnvm_parallel(nnvm_task fn, void *ctx, int32_t nthreads, int32_t flags) {
    (void)flags;
    pthread_once(&once, init_pool);
    int want = nthreads > 0 ? nthreads : default_threads();
    if (want > MAX_WORKERS + 1)
        want = MAX_WORKERS + 1;
    if (!tl_in_team)
        want = capped(want);
    bool traced = !tl_in_team && tracing();
    int64_t t0 = traced ? now_ns() : 0;
    if (!tl_in_team)
        tl_chunks = 0;
    /* nested, single-threaded, or the pool busy with another caller's loop: run it here */
    if (want <= 1 || tl_in_team || pthread_mutex_trylock(&pool_lock) != 0) {
        run_alone(fn, ctx);
        if (traced)
            trace_record(t0, 0);
        return;
    }
    int team = ensure_workers(want - 1) + 1;
    if (team > want)
        team = want;
    atomic_store_explicit(&shared_job.taken, 0, memory_order_relaxed);
    shared_job.threads = team;
    shared_job.fn = fn;
    shared_job.ctx = ctx;
    atomic_store_explicit(&state, 0, memory_order_release); /* open, nobody inside */
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
    }
    tl_in_team = true;
    tl_loop.job = &shared_job;
    int64_t start = now_ns();
    fn(ctx); /* claims chunks until none are left */
    tl_loop.job = NULL;
    tl_in_team = false;
    if (traced)
        trace_record(t0, 0);
    atomic_fetch_or_explicit(&state, CLOSED, memory_order_acq_rel);
    /* wait for the workers still inside fn: they claimed a chunk or are about to find none
     * left, and are running unless another process took their core */
    if ((atomic_load_explicit(&state, memory_order_acquire) & ~CLOSED) != 0) {
        int64_t waited_from = now_ns();
        int spins = 0;
        while ((atomic_load_explicit(&state, memory_order_acquire) & ~CLOSED) != 0) {
            if (++spins < 1000)
                cpu_relax();
            else
                sched_yield();
        }
        int64_t end = now_ns();
        int64_t chunk_ns = (waited_from - start) / (tl_chunks > 0 ? tl_chunks : 1);
        int64_t waited = end - waited_from;
        if (waited >= STALL_NS && waited >= STALL_CHUNKS * chunk_ns)
            cap_after_stall(team, end);
    }
    pthread_mutex_unlock(&pool_lock);
}

static bool claim(int64_t *lo, int64_t *hi) {
    struct loop *l = &tl_loop;
    if (l->job == NULL)
        return false;
    bool back = tl_index != 0;
    if (l->end >= ((int64_t)1 << 31)) { /* too long to pack: every thread from the front */
        int64_t start = (int64_t)atomic_fetch_add_explicit(&l->job->taken, (uint64_t)l->chunk,
                                                           memory_order_relaxed);
        if (start >= l->end)
            return false;
        *lo = start;
        *hi = start + l->chunk < l->end ? start + l->chunk : l->end;
        tl_chunks++;
        return true;
    }
    uint64_t seen = atomic_load_explicit(&l->job->taken, memory_order_relaxed);
    for (;;) {
        int64_t front = (int64_t)(seen & 0xffffffffu), behind = (int64_t)(seen >> 32);
        int64_t left = l->end - front - behind;
        if (left <= 0)
            return false;
        int64_t n = l->chunk < left ? l->chunk : left;
        uint64_t want = back ? seen + ((uint64_t)n << 32) : seen + (uint64_t)n;
        if (atomic_compare_exchange_weak_explicit(&l->job->taken, &seen, want,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            *lo = back ? l->end - behind - n : front;
            *hi = *lo + n;
            tl_chunks++;
            return true;
        }
    }
}

/* Iterations [start, end) with step incr (1 in what the pass emits), in chunks. */
NNVM_THREADS_API bool nnvm_loop_start(int64_t start, int64_t end, int64_t incr, int64_t chunk,
                                      int64_t *lo, int64_t *hi) {
    (void)incr;
    if (tl_loop.job == NULL) { /* called outside nnvm_parallel: this thread does it all */
        *lo = start;
        *hi = end;
        return start < end;
    }
    (void)start; /* the counter starts at 0, the start the pass always passes */
    tl_loop.end = end;
    tl_loop.chunk = chunk > 0 ? chunk : 1;
    return claim(lo, hi);
}

NNVM_THREADS_API bool nnvm_loop_next(int64_t *lo, int64_t *hi) { return claim(lo, hi); }

NNVM_THREADS_API void nnvm_loop_end(void) {}

/* This thread's index in the team running the current loop (0: the caller). */
NNVM_THREADS_API int32_t nnvm_thread_index(void) { return tl_loop.job != NULL ? tl_index : 0; }

/* How many waits on a descheduled worker have capped the team since the process started. */
NNVM_TRACE_API int64_t nnvm_pool_stalls(void) {
    return atomic_load_explicit(&stalls, memory_order_relaxed);
}

NNVM_THREADS_API int32_t nnvm_team_size(void) {
    return tl_loop.job != NULL ? tl_loop.job->threads : 1;
}
