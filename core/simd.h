/* Vector loops that give the same bits on every instruction set.

   A hot loop is written over CSM_LANES explicit lanes: lane l of a reduction adds items l,
   l + CSM_LANES, l + 2 CSM_LANES, ... in order, and the lanes are combined in one fixed tree
   (csm_lanes_sum). The compiler maps the lanes onto one 512-bit register, two 256-bit ones or four
   128-bit ones; each lane does the same operations in the same order on each, and floating-point
   contraction is off (-ffp-contract=off, CMakeLists.txt), so no FMA changes a rounding. The
   result is the same to the bit on every path, and with the same loop order on any thread count.

   CSM_CLONES compiles a function three times, for x86-64-v4 (AVX-512), x86-64-v3 (AVX2) and the
   baseline, and picks one when the program loads (GCC function multiversioning): the binary stays
   portable and runs the widest vectors the CPU has. Elsewhere it is empty. */
#ifndef CSM_SIMD_H
#define CSM_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CSM_LANES 8

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(CSM_NO_CLONES)
#define CSM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CSM_CLONES
#endif

/* The lanes' partial sums in a fixed tree. */
static inline double csm_lanes_sum(const double s[CSM_LANES])
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* CSM_LANES doubles as one value (GCC and Clang vector extensions), and CSM_LANES integers for
   their comparisons: a loop written on them keeps its lanes and its partial sums in registers,
   which the compiler does not always do for an array of lanes. Arithmetic on them is lane by lane
   and rounds as the scalar code does; a clone maps a vector onto the registers it has. */
typedef double csm_v8d __attribute__((vector_size(CSM_LANES * sizeof(double))));
typedef int64_t csm_v8l __attribute__((vector_size(CSM_LANES * sizeof(int64_t))));

/* Vectors are passed only to functions that are always inlined (-Wno-psabi, CMakeLists.txt). */
static inline __attribute__((always_inline)) csm_v8d csm_v8d_load(const double *a)
{
    csm_v8d v;
    memcpy(&v, a, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) csm_v8d csm_v8d_set1(double a)
{
    return (csm_v8d){a, a, a, a, a, a, a, a};
}

/* q[l] = a + 3 i[l]: the rows of 8 points (csm_v8d_at) */
static inline __attribute__((always_inline)) void csm_v8d_rows(const double *a, const int32_t i[CSM_LANES],
                                                              const double *q[CSM_LANES])
{
    for (int l = 0; l < CSM_LANES; l++) q[l] = a + 3 * (ptrdiff_t)i[l];
}

/* q[l][k] in lane l: coordinate k of 8 points */
static inline __attribute__((always_inline)) csm_v8d csm_v8d_at(const double *const q[CSM_LANES], int k)
{
    return (csm_v8d){q[0][k], q[1][k], q[2][k], q[3][k], q[4][k], q[5][k], q[6][k], q[7][k]};
}

/* The three coordinates of 8 consecutive points a[0..23] in three vectors. */
static inline __attribute__((always_inline)) void csm_v8d_load3(const double *a, csm_v8d v[3])
{
    csm_v8d q0 = csm_v8d_load(a), q1 = csm_v8d_load(a + CSM_LANES), q2 = csm_v8d_load(a + 2 * CSM_LANES);
    csm_v8d t0 = __builtin_shufflevector(q0, q1, 0, 3, 6, 9, 12, 15, 0, 0);
    csm_v8d t1 = __builtin_shufflevector(q0, q1, 1, 4, 7, 10, 13, 0, 0, 0);
    csm_v8d t2 = __builtin_shufflevector(q0, q1, 2, 5, 8, 11, 14, 0, 0, 0);
    v[0] = __builtin_shufflevector(t0, q2, 0, 1, 2, 3, 4, 5, 10, 13);
    v[1] = __builtin_shufflevector(t1, q2, 0, 1, 2, 3, 4, 8, 11, 14);
    v[2] = __builtin_shufflevector(t2, q2, 0, 1, 2, 3, 4, 9, 12, 15);
}

/* v[0..2] interleaved into a[0..23]: the inverse of csm_v8d_load3 */
static inline __attribute__((always_inline)) void csm_v8d_store3(double *a, const csm_v8d v[3])
{
    csm_v8d t0 = __builtin_shufflevector(v[0], v[1], 0, 8, 0, 1, 9, 0, 2, 10);
    csm_v8d t1 = __builtin_shufflevector(v[0], v[1], 0, 3, 11, 0, 4, 12, 0, 5);
    csm_v8d t2 = __builtin_shufflevector(v[0], v[1], 13, 0, 6, 14, 0, 7, 15, 0);
    csm_v8d o[3] = {__builtin_shufflevector(t0, v[2], 0, 1, 8, 3, 4, 9, 6, 7),
                    __builtin_shufflevector(t1, v[2], 10, 1, 2, 11, 4, 5, 12, 7),
                    __builtin_shufflevector(t2, v[2], 0, 13, 2, 3, 14, 5, 6, 15)};
    memcpy(a, o, sizeof o);
}

/* yes ? a : b lane by lane, yes a comparison of vectors (all bits set where true) */
static inline __attribute__((always_inline)) csm_v8d csm_v8d_select(csm_v8l yes, csm_v8d a, csm_v8d b)
{
    return (csm_v8d)((yes & (csm_v8l)a) | (~yes & (csm_v8l)b));
}

/* whether every lane of a comparison is true: halves, quarters, then pairs folded together
   (three shuffles, where a loop over the lanes moves each lane out of the register alone) */
static inline __attribute__((always_inline)) int csm_v8l_all(csm_v8l yes)
{
    csm_v8l a = yes & __builtin_shufflevector(yes, yes, 4, 5, 6, 7, 0, 1, 2, 3);
    a &= __builtin_shufflevector(a, a, 2, 3, 0, 1, 2, 3, 0, 1);
    a &= __builtin_shufflevector(a, a, 1, 0, 1, 0, 1, 0, 1, 0);
    return a[0] != 0;
}

/* the square root lane by lane (correctly rounded, as sqrt) */
static inline __attribute__((always_inline)) csm_v8d csm_v8d_sqrt(csm_v8d a)
{
    csm_v8d r;
    for (int l = 0; l < CSM_LANES; l++) r[l] = __builtin_sqrt(a[l]);
    return r;
}

/* The three levels of csm_lanes_sum's tree, on two vectors at once: adjacent lanes, then pairs,
   then halves (addition is exactly commutative, so a + b and b + a are the same bits). */
static inline __attribute__((always_inline)) csm_v8d csm_v8d_pairs(csm_v8d a, csm_v8d b)
{
    return __builtin_shufflevector(a, b, 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(a, b, 1, 9, 3, 11, 5, 13, 7, 15);
}

static inline __attribute__((always_inline)) csm_v8d csm_v8d_quads(csm_v8d a, csm_v8d b)
{
    return __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15);
}

static inline __attribute__((always_inline)) csm_v8d csm_v8d_halves(csm_v8d a, csm_v8d b)
{
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
}

/* csm_lanes_sum of each of the vectors s[0..7], as the lanes of one */
static inline __attribute__((always_inline)) csm_v8d csm_v8d_sums8(const csm_v8d s[CSM_LANES])
{
    return csm_v8d_halves(csm_v8d_quads(csm_v8d_pairs(s[0], s[1]), csm_v8d_pairs(s[2], s[3])),
                          csm_v8d_quads(csm_v8d_pairs(s[4], s[5]), csm_v8d_pairs(s[6], s[7])));
}

/* out[q] = csm_lanes_sum of the lanes of s[q], q < n, n at most 2 CSM_LANES; s holds whole
   groups of 8 (padded with zeros). */
static inline __attribute__((always_inline)) void csm_v8d_sums(const csm_v8d *s, int n, double *out)
{
    csm_v8d r = csm_v8d_sums8(s);
    if (n < CSM_LANES) {
        memcpy(out, &r, sizeof(double) * (size_t)n);
        return;
    }
    memcpy(out, &r, sizeof r);
    if (n == CSM_LANES) return;
    r = csm_v8d_sums8(s + CSM_LANES);
    memcpy(out + CSM_LANES, &r, sizeof(double) * (size_t)(n - CSM_LANES));
}

/* n rounded up to whole lanes */
static inline int csm_lanes_round(int n) { return (n + CSM_LANES - 1) / CSM_LANES * CSM_LANES; }

#endif
