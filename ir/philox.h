/* ir/philox.h: cfuser's random numbers, written once in the subset of C that CUDA C++ also
 * compiles: the reference evaluator includes it (ir/eval_math.c) and the build embeds it
 * into the kernels' runtime (both dialects), so every backend draws the same numbers.
 *
 * The generator is Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers:
 * as easy as 1, 2, 3", SC 2011), the counter-based generator torch and nvFuser use: a key
 * (the seed) and a 128-bit counter give four 32-bit words, with no state. Key decision:
 * an element's numbers depend only on (seed, offset, its row-major index in the output),
 * never on the schedule, the backend or the launch: element i of a uniform draw takes
 * word i % 4 of counter (i / 4, offset); a normal one takes two words (Box-Muller) of
 * counter (i / 2, offset); a 53-bit uniform takes two words likewise. So a fusion is
 * reproducible per seed and offset, and the evaluator is its reference. */
#ifndef CF_PHILOX_H
#define CF_PHILOX_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CF_PHILOX_FN __device__ __forceinline__
#elif defined(CFH_INLINE)
#define CF_PHILOX_FN CFH_INLINE
#else
#define CF_PHILOX_FN static inline
#endif

typedef struct CfPhilox {
  unsigned int w[4];
} CfPhilox;

/* The four words of counter (lo64 of the counter: the element's group, hi64: offset). */
CF_PHILOX_FN CfPhilox cf_philox(unsigned long long seed, unsigned long long group, unsigned long long offset) {
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  CfPhilox c = {{(unsigned int)group, (unsigned int)(group >> 32), (unsigned int)offset, (unsigned int)(offset >> 32)}};
  for (int round = 0; round < 10; round++) {
    unsigned long long p0 = 0xD2511F53ull * c.w[0], p1 = 0xCD9E8D57ull * c.w[2];
    unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
    unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
    CfPhilox n = {{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
    c = n;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

/* A uniform float-precision value in [0, 1): 24 bits of word i % 4 (exact in float). */
CF_PHILOX_FN double cf_philox_uniform24(long long seed, long long offset, long long i) {
  CfPhilox c = cf_philox((unsigned long long)seed, (unsigned long long)i / 4, (unsigned long long)offset);
  return (double)(c.w[(unsigned long long)i % 4] >> 8) * (1.0 / 16777216.0);
}

/* A uniform double in [0, 1): 53 bits of words 2(i % 2), 2(i % 2) + 1. */
CF_PHILOX_FN double cf_philox_uniform53(long long seed, long long offset, long long i) {
  CfPhilox c = cf_philox((unsigned long long)seed, (unsigned long long)i / 2, (unsigned long long)offset);
  unsigned int j = 2u * (unsigned int)((unsigned long long)i % 2);
  unsigned long long x = ((unsigned long long)c.w[j] << 32 | c.w[j + 1]) >> 11;
  return (double)x * (1.0 / 9007199254740992.0);
}

/* A standard normal value (Box-Muller in double on two 32-bit uniforms, 1 - u1 in (0, 1]
 * under the logarithm). */
CF_PHILOX_FN double cf_philox_normal(long long seed, long long offset, long long i) {
  CfPhilox c = cf_philox((unsigned long long)seed, (unsigned long long)i / 2, (unsigned long long)offset);
  unsigned int j = 2u * (unsigned int)((unsigned long long)i % 2);
  double u1 = c.w[j] * (1.0 / 4294967296.0), u2 = c.w[j + 1] * (1.0 / 4294967296.0);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.28318530717958647693 * u2);
}

#endif
