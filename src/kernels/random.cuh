// Counter-based random numbers: the IR's random_uniform (ir/ops.h), which a captured module's random draws
// (dropout in training mode, rand, randn, bernoulli) lower to.
//
// Element i of random_uniform {seed} is a pure function of (seed, i): Philox4x32-10 (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC'11; the generator cuRAND and torch's CUDA dropout
// use) over the counter (i / 4 low word, i / 4 high word, 0, 0) and the key (seed low word, seed high
// word), whose output word i % 4 becomes a float in [0, 1) from its top 24 bits. So every kernel and
// the CPU interpreter draw the same value for the same element, in any order and any tiling, and a
// candidate is validated against the interpreter like any other. This header is compiled by NVRTC
// into kernels and by the host compiler into the interpreter (src/ir/interpreter_exec.cpp), so both
// read this one definition; python/agentcompile/random_ops.py mirrors it in numpy for the eager reference.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define AC_RANDOM_FN __host__ __device__ __forceinline__
#else
#define AC_RANDOM_FN inline
#endif

namespace ac {

struct Philox4x32 {
  unsigned int v[4];
};

AC_RANDOM_FN void philox_mulhilo(unsigned int a, unsigned int b, unsigned int& hi, unsigned int& lo) {
  const unsigned long long product = static_cast<unsigned long long>(a) * b;
  hi = static_cast<unsigned int>(product >> 32);
  lo = static_cast<unsigned int>(product);
}

// Ten rounds; the key is bumped by the Weyl constants before every round after the first.
AC_RANDOM_FN Philox4x32 philox4x32_10(Philox4x32 counter, unsigned int key0, unsigned int key1) {
  constexpr unsigned int kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr unsigned int kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    unsigned int hi0, lo0, hi1, lo1;
    philox_mulhilo(kMul0, counter.v[0], hi0, lo0);
    philox_mulhilo(kMul1, counter.v[2], hi1, lo1);
    counter = Philox4x32{{hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

// Element `index` of random_uniform {seed}: a float in [0, 1), a multiple of 2^-24.
AC_RANDOM_FN float random_uniform(unsigned long long seed, unsigned long long index) {
  const unsigned long long block = index >> 2;
  const Philox4x32 out = philox4x32_10(Philox4x32{{static_cast<unsigned int>(block), static_cast<unsigned int>(block >> 32), 0u, 0u}},
                                       static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
  return static_cast<float>(out.v[index & 3] >> 8) * 5.9604644775390625e-08f;  // 2^-24
}

}  // namespace ac

#undef AC_RANDOM_FN
