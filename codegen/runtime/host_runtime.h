/* host_runtime.h: the runtime of cfuser's host backend, prepended to every generated host
 * kernel. codegen/host.c prints a kernel as C11 against this header; executor/host.c
 * compiles header + kernel into a shared object and calls cfh_launch in it.
 *
 * It emulates CUDA's execution model on one CPU thread. The blocks of the grid run one
 * after another (all at once for a kernel with grid syncs, host_grid.h); within a block
 * every CUDA thread is a fiber (its own mmap'd stack, a
 * hand-rolled register switch on x86-64, ucontext elsewhere or with -DCFH_USE_UCONTEXT)
 * scheduled round-robin from a run queue, so that __syncthreads and warp-collective
 * instructions behave as on the GPU. Key decision: a warp collective is a rendezvous. Each
 * thread parks its operands and yields; the last thread of the warp to arrive checks the
 * hardware rules on all lanes at once (same instruction, same address, right
 * sub-partition, allocated columns) and performs the operation for every lane. A violated
 * rule or a deadlock stops the launch with a message naming the block, the warp and the
 * lanes: control returns to the launcher, the fibers are abandoned (they own nothing), all
 * memory is released and cfh_launch returns the error. Nothing aborts or exits.
 *
 * Tensor memory is emulated per CTA: 128 lanes x 512 columns of 32-bit cells with
 * tcgen05's rules (power-of-two allocations of 32..512 columns written to a shared-memory
 * slot, the allocation permit, dealloc of allocated columns only, nothing left allocated
 * when the CTA ends, 32x32b ld/st by whole warps on their own sub-partition). Fresh shared
 * memory and freshly allocated tensor memory are filled with 0xFF bytes so that a kernel
 * reading what it never wrote sees NaNs or -1s instead of lucky zeros. Shared-memory races
 * (two threads on one address between two barriers) are found by host_race.h.
 *
 * Everything is static except cfh_launch, which the executor finds with dlsym. There is no
 * global mutable state: the launch in progress is reached through one thread-local
 * pointer, so different OS threads may launch kernels concurrently. Each fiber's stack
 * holds the kernel's local arrays (their size comes from the code generator) plus
 * CFUSER_HOST_STACK_KB (default 128) for the rest; a guard page below it turns an overflow
 * into a crash, not corruption. The dtype and math helpers live in host_math.h, which codegen
 * prepends after this header. */
#ifndef CFH_HOST_RUNTIME_H
#define CFH_HOST_RUNTIME_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <complex.h> /* complex.h's part; here, before any macro of the runtime: a header */
#undef I               /* the host compiler's setup may add can no longer undefine one */
#undef complex
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) && !defined(CFH_USE_UCONTEXT)
#define CFH_SWITCH_ASM 1
#else
#include <ucontext.h>
#endif
/* Where Debian's valgrind package is installed, the fiber stacks are registered with
 * valgrind (VALGRIND_STACK_REGISTER), so that memcheck follows the switches between them
 * instead of reporting each as a wild stack pointer. Costs nothing outside valgrind. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CFH_VALGRIND 1
#endif
#endif

/* The runtime's out-of-line functions (CFH_FN) and its state shared with the kernel, by the
 * translation unit compiled (codegen/host_split.c): a kernel's unit (CFH_KERNEL_TU) has
 * their declarations only and links the runtime's unit (CFH_RUNTIME_TU), compiled once per
 * compiler command, which defines them; both hidden, so a kernel's shared object exports
 * only the kernel and cfh_launch. Without either, one self-contained unit (all static). */
#if defined(CFH_KERNEL_TU)
#define CFH_FN extern __attribute__((visibility("hidden"), unused))
#define CFH_SHARED extern __attribute__((visibility("hidden")))
#define CFH_KERNEL_VAR __attribute__((visibility("hidden")))
#elif defined(CFH_RUNTIME_TU)
#define CFH_FN __attribute__((visibility("hidden"), unused))
#define CFH_SHARED __attribute__((visibility("hidden")))
#define CFH_KERNEL_VAR extern __attribute__((visibility("hidden")))
#else
#define CFH_FN static __attribute__((unused))
#define CFH_SHARED static
#define CFH_KERNEL_VAR static
#endif
#define CFH_INLINE static inline __attribute__((unused))

#define CFH_WARP 32u
#define CFH_MAX_BLOCK_THREADS 1024u
#define CFH_MAX_SMEM_BYTES 232448u /* 227 KiB: sm_90 and sm_100 */
#define CFH_TMEM_LANES 128u
#define CFH_TMEM_COLS 512u
#define CFH_TMEM_MAX_ALLOCS 16u /* 512 columns / 32 */
#define CFH_DEFAULT_STACK_KB 128u
#define CFH_MAX_LOCAL_BYTES ((size_t)256 << 20) /* a thread's local arrays, at most */

/* The bytes of the kernel's local arrays per thread: a tentative definition here, the
 * definition with the kernel's figure in the code generator's preamble (0 without one). */
CFH_KERNEL_VAR size_t cfh__kernel_local_bytes;
/* Whether the kernel has grid syncs (a cooperative launch: every block resident at once,
 * host_grid.h): tentative here too, set by the code generator's preamble. */
CFH_KERNEL_VAR int cfh__kernel_cooperative;
#define warpSize 32

/* cfh_launch's results. */
enum { CFH_OK = 0, CFH_ERR_CONFIG = 1, CFH_ERR_RUNTIME = 2, CFH_ERR_NOMEM = 3 };

typedef struct cfh_dim3 {
  unsigned int x, y, z;
} cfh_dim3;
typedef cfh_dim3 dim3;
typedef cfh_dim3 uint3;
/* What a kernel of 32-bit indices reads the builtins as (codegen/host.c redefines
 * cfh__coord3, the type of threadIdx, blockIdx, blockDim and gridDim, as this after the
 * runtime): no index mixes unsigned and signed 32-bit arithmetic, as on CUDA
 * (cuda_helpers.cuh's cf_idim3). */
typedef struct cfh_idim3 {
  int x, y, z;
} cfh_idim3;

enum { CFH_RUNNABLE, CFH_AT_BARRIER, CFH_AT_WARP, CFH_AT_GRID, CFH_EXITED, CFH_AT_MBARRIER /* host_mbarrier.h */ };

/* Warp-collective instructions, by the names messages print. */
#define CFH_OPS(X)                                                                        \
  X(NONE, "none") X(ALLOC, "tcgen05.alloc") X(DEALLOC, "tcgen05.dealloc")                 \
  X(RELINQUISH, "tcgen05.relinquish_alloc_permit") X(LD, "tcgen05.ld") X(ST, "tcgen05.st") \
  X(SHFL_IDX, "__shfl_sync") X(SHFL_UP, "__shfl_up_sync") X(SHFL_DOWN, "__shfl_down_sync")  \
  X(SHFL_XOR, "__shfl_xor_sync") X(SYNCWARP, "__syncwarp") X(MMA, "mma.sync")            \
  X(LDMATRIX, "ldmatrix") X(WGMMA, "wgmma.mma_async") X(WGMMA_COMMIT, "wgmma.commit_group")  \
  X(WGMMA_WAIT, "wgmma.wait_group")
enum {
#define CFH_X(e, s) CFH_OP_##e,
  CFH_OPS(CFH_X)
#undef CFH_X
};
static const char *const cfh__op_names[] = {
#define CFH_X(e, s) s,
    CFH_OPS(CFH_X)
#undef CFH_X
};

/* What one lane brings to a collective. */
typedef struct cfh_lane_args {
  uint32_t taddr; /* tcgen05: tensor-memory address; shuffles: source lane, delta or mask */
  uint32_t n;     /* tcgen05: .xN or column count; shuffles: width */
  void *ptr;      /* tcgen05.ld/st: the lane's registers; alloc: the shared-memory slot */
  uint64_t value; /* shuffles: the value offered */
  uint64_t *out;  /* shuffles: where the lane's result goes */
} cfh_lane_args;

typedef struct cfh_warp {
  int op;                  /* the collective being gathered, CFH_OP_NONE when none */
  uint32_t need, arrived;  /* lane masks */
  cfh_lane_args lane[32];
} cfh_warp;

typedef struct cfh_fiber {
  void *sp; /* saved stack pointer (hand-rolled switch) */
#ifndef CFH_SWITCH_ASM
  ucontext_t uc;
#endif
  cfh_dim3 tid;
  unsigned int linear;
  int state;
  const uint64_t *wait_bar;  /* CFH_AT_MBARRIER: the mbarrier waited on (host_mbarrier.h) */
  unsigned int wait_parity;  /* and the parity of the phase waited for */
  unsigned int valgrind_id; /* its stack's registration, with CFH_VALGRIND */
} cfh_fiber;

/* host_race.h's shadow of one byte of shared memory: the barrier epoch of the accesses
 * recorded, the thread that wrote it and up to two threads that read it in that epoch
 * (1 + linear thread id, 0 for none). */
typedef struct cfh_race_cell {
  uint32_t epoch;
  uint16_t writer, reader, reader2, pad;
} cfh_race_cell;

typedef struct cfh_launch_state {
  cfh_dim3 grid, block, bid;
  unsigned int nthreads, nwarps;
  void (*body)(void *);
  void *arg;
  cfh_fiber *fibers, *cur;
  unsigned int *queue, qhead, qcount;
  unsigned int bar_count, exited;
  unsigned int grid_waiting; /* threads at a grid sync (host_grid.h) */
  bool bar_any_false; /* a thread voted 0 in the barrier in progress (__syncthreads_and) */
  bool bar_vote;      /* the vote of the last barrier completed */
  cfh_warp *warps;
  unsigned char *smem, *stacks;
  size_t smem_bytes, stack_bytes, stack_stride, stacks_len;
  uint32_t *tmem;                           /* lanes x columns, made by the first alloc */
  unsigned char col_owner[CFH_TMEM_COLS];   /* 0 free, else 1 + index of its allocation */
  uint16_t alloc_start[CFH_TMEM_MAX_ALLOCS], alloc_cols[CFH_TMEM_MAX_ALLOCS];
  bool relinquished;
  bool valgrind_registered; /* every fiber stack, with CFH_VALGRIND */
  cfh_race_cell *race; /* host_race.h's shadow, one cell per byte; NULL when off */
  struct cfh_async_q *async; /* host_async.h: each thread's pending cp.async copies (first use) */
  struct cfh_tma_q *tma;     /* host_tma.h: the block's pending TMA loads (first use) */
  struct cfh_wgmma_q *wgmma; /* host_wgmma.h: each warp's wgmmas issued and not yet waited for (first use) */
  struct cfh_tc05_q *tc05;   /* host_tcgen05.h: the block's tcgen05.mmas and commits not yet performed (first use) */
  uint32_t race_epoch; /* advances at every __syncthreads and block start */
  int code;
  char *err;
  size_t errlen;
#ifdef CFH_SWITCH_ASM
  void *sched_sp;
#else
  ucontext_t sched_uc;
#endif
} cfh_launch_state;

CFH_SHARED _Thread_local cfh_launch_state *cfh__L;

/* ---- the CUDA builtins ------------------------------------------------------------- */

/* Their type, cfh_dim3 or cfh_idim3 (above), is looked up where a kernel reads them. */
#define cfh__coord3 cfh_dim3
#define threadIdx (*(const cfh__coord3 *)&cfh__L->cur->tid)
#define blockIdx (*(const cfh__coord3 *)&cfh__L->bid)
#define blockDim (*(const cfh__coord3 *)&cfh__L->block)
#define gridDim (*(const cfh__coord3 *)&cfh__L->grid)

/* The block's dynamic shared memory, 1024-byte aligned. */
CFH_INLINE void *cfh_smem(void) { return cfh__L->smem; }

/* ---- fibers -------------------------------------------------------------------------- */

#ifdef CFH_SWITCH_ASM
/* Saves the callee-saved registers, MXCSR and the x87 control word on the current stack,
 * stores the stack pointer in *save_sp, and resumes the context saved at next_sp. */
__attribute__((visibility("hidden"))) void cfh__switch(void **save_sp, void *next_sp);
#ifndef CFH_KERNEL_TU /* defined once, in the runtime's unit */
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl cfh__switch\n"
        ".hidden cfh__switch\n"
        ".type cfh__switch, @function\n"
        "cfh__switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size cfh__switch, .-cfh__switch\n"
        ".popsection\n");
#endif
#endif

CFH_FN void cfh__to_scheduler(cfh_launch_state *L) {
#ifdef CFH_SWITCH_ASM
  cfh__switch(&L->cur->sp, L->sched_sp);
#else
  swapcontext(&L->cur->uc, &L->sched_uc);
#endif
}

/* Every fiber starts here: the thread's body, then back to the scheduler for good. */
static void cfh__fiber_main(void) {
  cfh_launch_state *L = cfh__L;
  L->body(L->arg);
  L->cur->state = CFH_EXITED;
  L->exited++;
  for (;;) cfh__to_scheduler(L);
}

/* Makes fiber f start at cfh__fiber_main on its stack [lo, lo + bytes). */
CFH_FN void cfh__fiber_init(cfh_fiber *f, unsigned char *lo, size_t bytes) {
  f->state = CFH_RUNNABLE;
#ifdef CFH_SWITCH_ASM
  uint64_t *sp = (uint64_t *)(((uintptr_t)(lo + bytes)) & ~(uintptr_t)15);
  *--sp = 0;                                      /* cfh__fiber_main's return address */
  *--sp = (uint64_t)(uintptr_t)&cfh__fiber_main;  /* where cfh__switch's ret goes */
  for (int i = 0; i < 6; i++) *--sp = 0;          /* rbp rbx r12 r13 r14 r15 */
  *--sp = 0x037F00001F80ull;                      /* default MXCSR and x87 control word */
  f->sp = sp;
#else
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = lo;
  f->uc.uc_stack.ss_size = bytes;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, cfh__fiber_main, 0);
#endif
}

CFH_FN void cfh__to_fiber(cfh_launch_state *L, cfh_fiber *f) {
  L->cur = f;
#ifdef CFH_SWITCH_ASM
  cfh__switch(&L->sched_sp, f->sp);
#else
  swapcontext(&L->sched_uc, &f->uc);
#endif
}

CFH_INLINE void cfh__push(cfh_launch_state *L, unsigned int i) {
  L->queue[(L->qhead + L->qcount++) % L->nthreads] = i;
}

/* ---- errors ---------------------------------------------------------------------------- */

/* Records the launch's first error; later ones are dropped. */
__attribute__((format(printf, 3, 4))) CFH_FN void cfh__error(cfh_launch_state *L, int code,
                                                              const char *fmt, ...) {
  if (L->code != CFH_OK) return;
  L->code = code;
  if (!L->err || !L->errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->err, L->errlen, fmt, ap);
  va_end(ap);
}

/* Stops the launch from inside a fiber: the scheduler never resumes it. */
CFH_FN _Noreturn void cfh__stop(cfh_launch_state *L) {
  for (;;) cfh__to_scheduler(L);
}

CFH_FN const char *cfh__dim(char buf[48], cfh_dim3 d) {
  snprintf(buf, 48, "(%u,%u,%u)", d.x, d.y, d.z);
  return buf;
}

/* Writes the members of a set of ids in [0, count) as ranges: "0..15, 20, 24..31". */
CFH_FN const char *cfh__ranges(char *buf, size_t n, unsigned int count,
                               bool (*has)(const void *, unsigned int), const void *ctx) {
  size_t pos = 0;
  unsigned int shown = 0;
  buf[0] = 0;
  for (unsigned int i = 0; i < count && pos < n; i++) {
    if (!has(ctx, i)) continue;
    unsigned int j = i;
    while (j + 1 < count && has(ctx, j + 1)) j++;
    int k = shown == 8    ? snprintf(buf + pos, n - pos, ", ...")
            : j == i      ? snprintf(buf + pos, n - pos, "%s%u", shown ? ", " : "", i)
                          : snprintf(buf + pos, n - pos, "%s%u..%u", shown ? ", " : "", i, j);
    if (k < 0 || shown++ == 8) break;
    pos += (size_t)k;
    i = j;
  }
  if (!shown) snprintf(buf, n, "none");
  return buf;
}

static bool cfh__has_lane(const void *mask, unsigned int i) {
  return (*(const uint32_t *)mask >> i) & 1u;
}
CFH_FN const char *cfh__lanes(char *buf, size_t n, uint32_t mask) {
  return cfh__ranges(buf, n, 32, cfh__has_lane, &mask);
}

typedef struct cfh_state_query {
  const cfh_launch_state *L;
  int state;
} cfh_state_query;
static bool cfh__has_state(const void *q, unsigned int i) {
  const cfh_state_query *s = (const cfh_state_query *)q;
  return s->L->fibers[i].state == s->state;
}
CFH_FN const char *cfh__threads(char *buf, size_t n, const cfh_launch_state *L, int state) {
  cfh_state_query q = {L, state};
  return cfh__ranges(buf, n, L->nthreads, cfh__has_state, &q);
}

/* For generated run-time checks: stops the launch with a message naming the thread. */
__attribute__((format(printf, 1, 2))) CFH_FN _Noreturn void cfh_fail(const char *fmt, ...) {
  cfh_launch_state *L = cfh__L;
  char msg[1024], b[48], t[48];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cfh__error(L, CFH_ERR_RUNTIME, "block %s thread %s: %s", cfh__dim(b, L->bid),
             cfh__dim(t, L->cur->tid), msg);
  cfh__stop(L);
}
#define cfh_check(cond, ...) ((cond) ? (void)0 : cfh_fail(__VA_ARGS__))

/* ---- __syncthreads ----------------------------------------------------------------------- */

/* A new barrier epoch for the race detector; on wrap-around the shadow is cleared. */
CFH_INLINE void cfh__race_next_epoch(cfh_launch_state *L) {
  if (L->race && ++L->race_epoch == 0) {
    memset(L->race, 0, L->smem_bytes * sizeof *L->race);
    L->race_epoch = 1;
  }
}

/* A barrier across every thread of the block: a thread that exited never arrives, so a
 * barrier it skipped can never complete (the deadlock check reports it). The last thread
 * to arrive releases all, itself included, in thread order: the block resumes in order. */
CFH_FN void cfh_syncthreads(void) {
  cfh_launch_state *L = cfh__L;
  L->cur->state = CFH_AT_BARRIER;
  if (++L->bar_count == L->nthreads) {
    L->bar_count = 0;
    L->bar_vote = !L->bar_any_false;
    L->bar_any_false = false;
    cfh__race_next_epoch(L);
    for (unsigned int i = 0; i < L->nthreads; i++)
      if (L->fibers[i].state == CFH_AT_BARRIER) {
        L->fibers[i].state = CFH_RUNNABLE;
        cfh__push(L, i);
      }
  }
  cfh__to_scheduler(L);
}
#define __syncthreads() cfh_syncthreads()

/* A barrier that also says whether pred was non-zero in every thread. The result is read
 * right after the release: no other barrier can complete before every thread arrives at
 * it again. */
CFH_FN int cfh_syncthreads_and(int pred) {
  cfh_launch_state *L = cfh__L;
  if (!pred) L->bar_any_false = true;
  cfh_syncthreads();
  return L->bar_vote;
}
#define __syncthreads_and(pred) cfh_syncthreads_and(pred)

/* ---- warp collectives ------------------------------------------------------------------- */

CFH_INLINE uint32_t cfh__warp_exists(const cfh_launch_state *L, unsigned int w) {
  unsigned int left = L->nthreads - w * CFH_WARP;
  return left >= 32 ? 0xFFFFFFFFu : ((1u << left) - 1u);
}

CFH_FN void cfh__warp_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W);

/* A lane reaches collective `op` with lane mask `need`; the last lane to arrive runs it,
 * then all lanes, itself included, resume in lane order. */
CFH_FN void cfh__warp_collective(int op, uint32_t need, const cfh_lane_args *a) {
  cfh_launch_state *L = cfh__L;
  cfh_fiber *f = L->cur;
  unsigned int w = f->linear / CFH_WARP, lane = f->linear % CFH_WARP;
  cfh_warp *W = &L->warps[w];
  char b[48], m1[160], m2[160];
  uint32_t exists = cfh__warp_exists(L, w);
  if (need & ~exists) {
    cfh__error(L, CFH_ERR_RUNTIME,
               "%s: block %s warp %u: partial warp: the instruction needs lanes %s, but lanes "
               "%s do not exist (the block has %u threads)",
               cfh__op_names[op], cfh__dim(b, L->bid), w, cfh__lanes(m1, sizeof m1, need),
               cfh__lanes(m2, sizeof m2, need & ~exists), L->nthreads);
    cfh__stop(L);
  }
  if (!((need >> lane) & 1u)) {
    cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: lane %u passed mask 0x%08x, which "
               "does not include itself", cfh__op_names[op], cfh__dim(b, L->bid), w, lane, need);
    cfh__stop(L);
  }
  if (W->op == CFH_OP_NONE) {
    W->op = op;
    W->need = need;
    W->arrived = 0;
  } else if (W->op != op || W->need != need) {
    cfh__error(L, CFH_ERR_RUNTIME,
               "block %s warp %u: threads of one warp reached different warp-collective "
               "instructions: lanes %s wait at %s (mask 0x%08x), lane %u reached %s (mask 0x%08x)",
               cfh__dim(b, L->bid), w, cfh__lanes(m1, sizeof m1, W->arrived),
               cfh__op_names[W->op], W->need, lane, cfh__op_names[op], need);
    cfh__stop(L);
  }
  W->lane[lane] = *a;
  W->arrived |= 1u << lane;
  f->state = CFH_AT_WARP;
  if (W->arrived == W->need) {
    cfh__warp_execute(L, w, W); /* returns only when every rule held */
    W->op = CFH_OP_NONE;
    for (unsigned int l = 0; l < 32; l++)
      if ((W->need >> l) & 1u) {
        L->fibers[w * CFH_WARP + l].state = CFH_RUNNABLE;
        cfh__push(L, w * CFH_WARP + l);
      }
  }
  cfh__to_scheduler(L);
}

/* __shfl*_sync on 64-bit payloads; the typed macros below wrap it. */
CFH_FN uint64_t cfh__shfl(int op, unsigned int mask, uint64_t v, int arg, int width) {
  uint64_t out = v;
  cfh_lane_args a = {(uint32_t)arg, (uint32_t)width, NULL, v, &out};
  cfh__warp_collective(op, mask, &a);
  return out;
}

CFH_FN void cfh__shfl_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  char b[48];
  for (unsigned int l = 0; l < 32; l++) {
    if (!((W->need >> l) & 1u)) continue;
    const cfh_lane_args *a = &W->lane[l];
    unsigned int width = a->n, seg = l / (width ? width : 1) * width, src = l;
    if (width == 0 || width > 32 || (width & (width - 1))) {
      cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u lane %u: width %u is not a power "
                 "of two from 1 to 32", cfh__op_names[W->op], cfh__dim(b, L->bid), w, l, width);
      cfh__stop(L);
    }
    if (W->op == CFH_OP_SHFL_IDX) src = seg + a->taddr % width;
    if (W->op == CFH_OP_SHFL_UP && l >= seg + a->taddr) src = l - a->taddr;
    if (W->op == CFH_OP_SHFL_DOWN && l + a->taddr < seg + width) src = l + a->taddr;
    if (W->op == CFH_OP_SHFL_XOR && (l ^ a->taddr) < seg + width) src = (l ^ a->taddr) & 31u;
    if (!((W->need >> src) & 1u)) {
      cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: lane %u reads lane %u, which is "
                 "not in the mask 0x%08x", cfh__op_names[W->op], cfh__dim(b, L->bid), w, l, src,
                 W->need);
      cfh__stop(L);
    }
    *a->out = W->lane[src].value;
  }
}

#define CFH_SHFL_T(suffix, T)                                                          \
  CFH_INLINE T cfh__shfl_##suffix(int op, unsigned int mask, T v, int arg, int width) { \
    uint64_t bits = 0;                                                                 \
    memcpy(&bits, &v, sizeof v);                                                       \
    bits = cfh__shfl(op, mask, bits, arg, width);                                      \
    memcpy(&v, &bits, sizeof v);                                                       \
    return v;                                                                          \
  }
CFH_SHFL_T(f, float)
CFH_SHFL_T(d, double)
CFH_SHFL_T(i, int)
CFH_SHFL_T(u, unsigned int)
CFH_SHFL_T(l, long)
CFH_SHFL_T(ul, unsigned long)
CFH_SHFL_T(ll, long long)
CFH_SHFL_T(ull, unsigned long long)
#define CFH_SHFL(op, m, v, a, w)                                                            \
  _Generic((v), float: cfh__shfl_f, double: cfh__shfl_d, int: cfh__shfl_i,                   \
           unsigned int: cfh__shfl_u, long: cfh__shfl_l, unsigned long: cfh__shfl_ul,        \
           long long: cfh__shfl_ll, unsigned long long: cfh__shfl_ull,                        \
           CfWelfordF: cfh__shfl_wf, CfWelfordD: cfh__shfl_wd,                              \
           float _Complex: cfh__shfl_cf, double _Complex: cfh__shfl_cd)(op, (m), (v), (a), (w))
#define __shfl_sync(m, v, src) CFH_SHFL(CFH_OP_SHFL_IDX, m, v, src, 32)
#define __shfl_up_sync(m, v, d) CFH_SHFL(CFH_OP_SHFL_UP, m, v, d, 32)
#define __shfl_down_sync(m, v, d) CFH_SHFL(CFH_OP_SHFL_DOWN, m, v, d, 32)
#define __shfl_xor_sync(m, v, lm) CFH_SHFL(CFH_OP_SHFL_XOR, m, v, lm, 32)
#define cfh_shfl_xor_sync_w(m, v, lm, w) CFH_SHFL(CFH_OP_SHFL_XOR, m, v, lm, w)
#define cfh_shfl_down_sync_w(m, v, d, w) CFH_SHFL(CFH_OP_SHFL_DOWN, m, v, d, w)

CFH_INLINE void cfh_syncwarp(unsigned int mask) {
  cfh_lane_args a = {0, 0, NULL, 0, NULL};
  cfh__warp_collective(CFH_OP_SYNCWARP, mask ? mask : 0xFFFFFFFFu, &a);
}
/* __syncwarp() or __syncwarp(mask); an empty argument list means the full warp. */
#define __syncwarp(...) cfh_syncwarp(__VA_ARGS__ + 0u)

/* ---- blocks and the launch -------------------------------------------------------- */

/* Defined in host_tmem.h: per-block reset, the end-of-CTA check, tcgen05 collectives. */
CFH_FN void cfh__tmem_block_start(cfh_launch_state *L);
CFH_FN void cfh__tmem_block_end(cfh_launch_state *L);
/* Defined in host_async.h: a block starts with no copy pending. */
CFH_FN void cfh__async_block_start(cfh_launch_state *L);
CFH_FN void cfh__tma_block_start(cfh_launch_state *L);
CFH_FN void cfh__tmem_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W);
/* Defined in host_mma.h: a warp's tensor-core instruction. */
CFH_FN void cfh__mma_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W);
CFH_FN void cfh__ldmatrix_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W);
/* Defined in host_wgmma.h: a warp's quarter of a warpgroup's wgmma, commit and wait; a
 * block starts with none pending, and ends with none (else an error). */
CFH_FN void cfh__wgmma_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W);
CFH_FN bool cfh__mbarrier_diagnose(cfh_launch_state *L);
CFH_FN void cfh__wgmma_block_start(cfh_launch_state *L);
CFH_FN void cfh__wgmma_block_end(cfh_launch_state *L);
/* Defined in host_tcgen05.h: a block starts with no tcgen05.mma queued, and ends with none
 * left uncompleted (else an error). */
CFH_FN void cfh__tc05_block_start(cfh_launch_state *L);
CFH_FN void cfh__tc05_block_end(cfh_launch_state *L);

CFH_FN void cfh__warp_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  if (W->op >= CFH_OP_SHFL_IDX && W->op <= CFH_OP_SHFL_XOR) cfh__shfl_execute(L, w, W);
  else if (W->op == CFH_OP_MMA) cfh__mma_execute(L, w, W);
  else if (W->op == CFH_OP_LDMATRIX) cfh__ldmatrix_execute(L, w, W);
  else if (W->op >= CFH_OP_WGMMA && W->op <= CFH_OP_WGMMA_WAIT) cfh__wgmma_execute(L, w, W);
  else if (W->op != CFH_OP_SYNCWARP) cfh__tmem_execute(L, w, W);
}

/* No fiber can run but some never exited: name what each waits for. A warp gathering a
 * collective is reported first (its missing lanes exited or wait at __syncthreads). */
CFH_FN void cfh__diagnose_deadlock(cfh_launch_state *L) {
  char b[48], m1[160], m2[160], m3[160], why[400];
  if (cfh__mbarrier_diagnose(L)) return;
  for (unsigned int w = 0; w < L->nwarps; w++) {
    cfh_warp *W = &L->warps[w];
    if (W->op == CFH_OP_NONE) continue;
    uint32_t missing = W->need & ~W->arrived, gone = 0, barrier = 0;
    for (unsigned int l = 0; l < 32; l++)
      if ((missing >> l) & 1u) {
        if (L->fibers[w * CFH_WARP + l].state == CFH_EXITED) gone |= 1u << l;
        else barrier |= 1u << l;
      }
    snprintf(why, sizeof why, "%s%s%s%s%s%s", gone ? "lanes " : "",
             gone ? cfh__lanes(m1, sizeof m1, gone) : "", gone ? " exited" : "",
             gone && barrier ? "; " : "", barrier ? "lanes " : "",
             barrier ? cfh__lanes(m2, sizeof m2, barrier) : "");
    cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: partial warp: the instruction needs "
               "lanes %s, but only lanes %s took part (%s%s)", cfh__op_names[W->op],
               cfh__dim(b, L->bid), w, cfh__lanes(m3, sizeof m3, W->need),
               cfh__lanes(m2, sizeof m2, W->arrived), why, barrier ? " wait at __syncthreads" : "");
    return;
  }
  cfh__error(L, CFH_ERR_RUNTIME, "block %s: deadlock at __syncthreads: threads %s wait at the "
             "barrier, but threads %s exited without reaching it", cfh__dim(b, L->bid),
             cfh__threads(m1, sizeof m1, L, CFH_AT_BARRIER),
             cfh__threads(m2, sizeof m2, L, CFH_EXITED));
}

/* Starts a block: every thread queued at the start of body. */
CFH_FN void cfh__block_start(cfh_launch_state *L) {
  L->bar_count = L->exited = L->grid_waiting = L->qhead = L->qcount = 0;
  L->bar_any_false = false;
  for (unsigned int w = 0; w < L->nwarps; w++) L->warps[w].op = CFH_OP_NONE;
  if (L->smem_bytes) memset(L->smem, 0xFF, L->smem_bytes);
  cfh__tmem_block_start(L);
  cfh__async_block_start(L);
  cfh__tma_block_start(L);
  cfh__wgmma_block_start(L);
  cfh__tc05_block_start(L);
  cfh__race_next_epoch(L);
  for (unsigned int i = 0; i < L->nthreads; i++) {
    cfh__fiber_init(&L->fibers[i], L->stacks + i * L->stack_stride + (L->stack_stride -
                    L->stack_bytes), L->stack_bytes);
    cfh__push(L, i);
  }
}

/* Runs the block's threads round-robin until none can run: all exited, or waiting (at a
 * grid sync, or deadlocked). */
CFH_FN void cfh__block_drain(cfh_launch_state *L) {
  while (L->qcount && L->code == CFH_OK) {
    unsigned int i = L->queue[L->qhead];
    L->qhead = (L->qhead + 1) % L->nthreads;
    L->qcount--;
    cfh__to_fiber(L, &L->fibers[i]);
  }
  L->cur = NULL;
}

/* The block is done: every thread exited (else the deadlock is reported), tensor memory
 * released. */
CFH_FN void cfh__block_finish(cfh_launch_state *L) {
  if (L->code != CFH_OK) return;
  if (L->exited != L->nthreads) cfh__diagnose_deadlock(L);
  else {
    cfh__wgmma_block_end(L);
    if (L->code == CFH_OK) cfh__tc05_block_end(L);
    if (L->code == CFH_OK) cfh__tmem_block_end(L);
  }
}

/* Runs one block to completion: every thread from the start of body, round-robin. */
CFH_FN void cfh__run_block(cfh_launch_state *L) {
  cfh__block_start(L);
  cfh__block_drain(L);
  cfh__block_finish(L);
}

/* Checks the launch configuration against CUDA's limits. */
CFH_FN bool cfh__check_config(cfh_launch_state *L, size_t smem_bytes) {
  char g[48], b[48];
  uint64_t threads = (uint64_t)L->block.x * L->block.y * L->block.z;
  if (!L->grid.x || !L->grid.y || !L->grid.z || L->grid.x > 0x7FFFFFFFu || L->grid.y > 65535u ||
      L->grid.z > 65535u)
    cfh__error(L, CFH_ERR_CONFIG, "invalid launch: gridDim %s: each dimension must be at least "
               "1, and at most 2147483647 (x) or 65535 (y, z)", cfh__dim(g, L->grid));
  else if (!threads || L->block.z > 64u || threads > CFH_MAX_BLOCK_THREADS)
    cfh__error(L, CFH_ERR_CONFIG, "invalid launch: blockDim %s has %llu threads: each dimension "
               "must be at least 1, z at most 64, and the block at most 1024 threads",
               cfh__dim(b, L->block), (unsigned long long)threads);
  else if (smem_bytes > CFH_MAX_SMEM_BYTES)
    cfh__error(L, CFH_ERR_CONFIG, "invalid launch: %zu bytes of dynamic shared memory "
               "requested, but at most %u (227 KiB) are available", smem_bytes, CFH_MAX_SMEM_BYTES);
  else if (!L->body)
    cfh__error(L, CFH_ERR_CONFIG, "invalid launch: no body");
  return L->code == CFH_OK;
}

/* Stack size: the kernel's local arrays plus CFUSER_HOST_STACK_KB (16 KiB .. 64 MiB,
 * default 128 KiB) for everything else a thread keeps there. */
CFH_FN size_t cfh__stack_bytes(void) {
  const char *s = getenv("CFUSER_HOST_STACK_KB");
  unsigned long kb = s && *s ? strtoul(s, NULL, 10) : CFH_DEFAULT_STACK_KB;
  if (kb < 16) kb = 16;
  if (kb > 65536) kb = 65536;
  return cfh__kernel_local_bytes + (size_t)kb * 1024;
}

/* A kernel whose local arrays cannot fit a thread's stack is refused before it runs. */
CFH_FN bool cfh__check_locals(cfh_launch_state *L) {
  if (cfh__kernel_local_bytes <= CFH_MAX_LOCAL_BYTES) return true;
  cfh__error(L, CFH_ERR_CONFIG, "the kernel's local arrays take %zu bytes per thread, more than the "
             "host backend's limit of %zu bytes (%zu MiB) per thread stack: schedule the fusion "
             "(split, parallelize, inline) so each thread holds less", cfh__kernel_local_bytes,
             CFH_MAX_LOCAL_BYTES, CFH_MAX_LOCAL_BYTES >> 20);
  return false;
}

/* The race detector is on unless CFUSER_HOST_RACECHECK=0. */
CFH_FN bool cfh__racecheck(void) {
  const char *s = getenv("CFUSER_HOST_RACECHECK");
  return !(s && strcmp(s, "0") == 0);
}

/* Allocates what every block of the launch reuses: fibers and their stacks (each with a
 * guard page below it unless !guard: a cooperative launch's tens of thousands of fibers
 * would pass the kernel's count of memory maps), the run queue, the warps, the shared
 * memory and its race shadow. */
CFH_FN bool cfh__allocate(cfh_launch_state *L, size_t smem_bytes, bool guard) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  L->nthreads = L->block.x * L->block.y * L->block.z;
  L->nwarps = (L->nthreads + CFH_WARP - 1) / CFH_WARP;
  L->smem_bytes = smem_bytes;
  L->stack_bytes = (cfh__stack_bytes() + page - 1) / page * page;
  L->stack_stride = L->stack_bytes + page;
  L->fibers = (cfh_fiber *)calloc(L->nthreads, sizeof *L->fibers);
  L->queue = (unsigned int *)calloc(L->nthreads, sizeof *L->queue);
  L->warps = (cfh_warp *)calloc(L->nwarps, sizeof *L->warps);
  /* 1024-byte aligned: a wgmma tile's 128-byte swizzle is a function of absolute addresses */
  L->smem = (unsigned char *)aligned_alloc(1024, (smem_bytes + 1023) / 1024 * 1024 + 1024);
  bool race = smem_bytes && cfh__racecheck();
  if (race) L->race = (cfh_race_cell *)calloc(smem_bytes, sizeof *L->race);
  void *st = mmap(NULL, L->nthreads * L->stack_stride, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (st != MAP_FAILED) {
    L->stacks = (unsigned char *)st;
    L->stacks_len = L->nthreads * L->stack_stride;
  }
  bool ok = L->fibers && L->queue && L->warps && L->smem && L->stacks && (L->race || !race);
  for (unsigned int i = 0; ok && i < L->nthreads; i++) {
    ok = !guard || mprotect(L->stacks + i * L->stack_stride, page, PROT_NONE) == 0;
    L->fibers[i].linear = i;
    L->fibers[i].tid = (cfh_dim3){i % L->block.x, i / L->block.x % L->block.y,
                                  i / (L->block.x * L->block.y)};
  }
  if (!ok) cfh__error(L, CFH_ERR_NOMEM, "out of memory: cannot set up %u threads with %zu-byte stacks",
                      L->nthreads, L->stack_bytes);
#ifdef CFH_VALGRIND
  for (unsigned int i = 0; ok && i < L->nthreads; i++) {
    unsigned char *lo = L->stacks + i * L->stack_stride + page;
    L->fibers[i].valgrind_id = VALGRIND_STACK_REGISTER(lo, lo + L->stack_bytes);
  }
  L->valgrind_registered = ok;
#endif
  return ok;
}

CFH_FN void cfh__release(cfh_launch_state *L) {
#ifdef CFH_VALGRIND
  for (unsigned int i = 0; L->valgrind_registered && i < L->nthreads; i++)
    VALGRIND_STACK_DEREGISTER(L->fibers[i].valgrind_id);
#endif
  if (L->stacks) munmap(L->stacks, L->stacks_len);
  free(L->fibers);
  free(L->queue);
  free(L->warps);
  free(L->smem);
  free(L->tmem);
  free(L->race);
  free(L->async);
  free(L->tma);
  cfh__wgmma_block_start(L); /* frees what a failed block left pending */
  free(L->wgmma);
  free(L->tc05);
  free(L);
}

/* Defined in host_grid.h: a launch whose blocks all run at once (grid syncs). */
CFH_FN void cfh__run_cooperative(cfh_launch_state *L, size_t smem_bytes);

/* Runs body(arg) as every thread of every block of the grid. Returns CFH_OK, or an error
 * code with its message in err (CFH_ERR_CONFIG: bad dimensions; CFH_ERR_RUNTIME: a
 * violated rule or a deadlock; CFH_ERR_NOMEM). A kernel's unit takes it from the
 * runtime's object it links. */
#ifndef CFH_KERNEL_TU
__attribute__((visibility("default"))) int cfh_launch(const unsigned int grid[3],
                                                      const unsigned int block[3],
                                                      size_t smem_bytes, void (*body)(void *),
                                                      void *arg, char *err, size_t errlen);
int cfh_launch(const unsigned int grid[3], const unsigned int block[3], size_t smem_bytes,
               void (*body)(void *), void *arg, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  cfh_launch_state *L = (cfh_launch_state *)calloc(1, sizeof *L);
  if (!L) {
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return CFH_ERR_NOMEM;
  }
  L->grid = (cfh_dim3){grid[0], grid[1], grid[2]};
  L->block = (cfh_dim3){block[0], block[1], block[2]};
  L->body = body;
  L->arg = arg;
  L->err = err;
  L->errlen = errlen;
  if (cfh__kernel_cooperative) {
    if (cfh__check_config(L, smem_bytes) && cfh__check_locals(L)) cfh__run_cooperative(L, smem_bytes);
  } else if (cfh__check_config(L, smem_bytes) && cfh__check_locals(L) && cfh__allocate(L, smem_bytes, true)) {
    cfh_launch_state *outer = cfh__L;
    cfh__L = L;
    for (unsigned int z = 0; z < L->grid.z && L->code == CFH_OK; z++)
      for (unsigned int y = 0; y < L->grid.y && L->code == CFH_OK; y++)
        for (unsigned int x = 0; x < L->grid.x && L->code == CFH_OK; x++) {
          L->bid = (cfh_dim3){x, y, z};
          cfh__run_block(L);
        }
    cfh__L = outer;
  }
  int code = L->code;
  cfh__release(L);
  return code;
}
#endif

#endif
