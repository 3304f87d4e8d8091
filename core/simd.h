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

/* n rounded up to whole lanes */
static inline int csm_lanes_round(int n) { return (n + CSM_LANES - 1) / CSM_LANES * CSM_LANES; }

#endif
