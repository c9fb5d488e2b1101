/* vmath.c -- instantiates the pointwise kernels of vmath_impl.inc for the
 * x86-64 baseline and for AVX2+FMA, and picks one at run time; see vmath.h.
 */
#include "nets/vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Baseline: 4 lanes (SSE2 on x86-64, generic lowering elsewhere). */
#define VW 4
#define VM(x) x##_generic
#define VM_NAME "generic"
#include "nets/vmath_impl.inc"
#undef VW
#undef VM
#undef VM_NAME

#if defined(__x86_64__) && defined(__GNUC__)
#define VMATH_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define VW 8
#define VM(x) x##_avx2
#define VM_NAME "avx2"
#include "nets/vmath_impl.inc"
#undef VW
#undef VM
#undef VM_NAME
#pragma GCC pop_options
#endif

const vm_kernels *vm_generic(void)
{
    return &kernels_generic;
}

const vm_kernels *vm_avx2(void)
{
#ifdef VMATH_HAVE_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &kernels_avx2;
#endif
    return NULL;
}

static const vm_kernels *best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void pick_best(void)
{
    const char *force = getenv("STRATA_VMATH");
    const vm_kernels *a = vm_avx2();
    best = (a && !(force && strcmp(force, "generic") == 0)) ? a : &kernels_generic;
}

const vm_kernels *vm_best(void)
{
    pthread_once(&best_once, pick_best);
    return best;
}
