/* The floating-point environment kernels run in: denormal floats flushed to zero.
 *
 * A denormal (a float below 2^-126 in magnitude) costs a microcode assist, about a hundred
 * cycles, in every multiply or add that reads or makes one. Attention masks make them: the
 * softmax of a score 100 below the row's maximum is exp(-100), 3.7e-44, and the matmul by those
 * probabilities ran 40x slower (Swin's shifted windows: 1.8 ms a call instead of 0.044 ms).
 * With FTZ (results below the normal range are 0) and DAZ (such inputs read as 0) the
 * hardware skips them (the mode PyTorch's set_flush_denormal selects). Values that small carry no
 * information a float32 network can use; numpy keeps them, so the reference executor and a
 * compiled run may differ there by less than 1.2e-38.
 *
 * nnvm_run sets the mode on the calling thread for the duration of a run and restores the
 * caller's; each pool worker sets it once. x86 only (MXCSR); elsewhere these do nothing. */
#ifndef NNVM_FPENV_H
#define NNVM_FPENV_H

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define NNVM_MXCSR_FTZ_DAZ 0x8040u /* bit 15: flush to zero, bit 6: denormals are zero */

static inline unsigned nnvm_fpenv_enter(void) {
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | NNVM_MXCSR_FTZ_DAZ);
    return saved;
}

static inline void nnvm_fpenv_leave(unsigned saved) { _mm_setcsr(saved); }
#else
static inline unsigned nnvm_fpenv_enter(void) { return 0; }
static inline void nnvm_fpenv_leave(unsigned saved) { (void)saved; }
#endif

#endif
