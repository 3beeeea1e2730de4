// Token sampling on the device, the last step of prefill and of every decode step: greedy argmax, or
// temperature + top-k + top-p sampling, with the repetition penalty and a seeded counter-based RNG.
// The kernel reads its arguments from device memory, so a captured graph picks up new sampling
// settings without being captured again. The chosen token is written where the next decode step
// reads it, the position counter advances, and the token goes to a history on the device and to a
// ring in mapped host memory, so a captured decode graph replays with no host synchronization.
// A runtime kernel: compiled by the engine through NVRTC, not chosen per region by the compiler.
//
// Order of operations follows Hugging Face `generate`: repetition penalty (divide positive logits,
// multiply negative ones, for every token already in the prompt or the output), temperature, top-k
// (ties with the k-th value are kept), top-p (the smallest set of the most probable tokens whose mass
// reaches p, ties at the edge kept), then a draw. Probabilities are accumulated in 32.32 fixed point,
// so a seed gives the same tokens on every run.
#pragma once

#include "common.cuh"

namespace ac {

struct SamplerArgs {
  const float* logits;             // [V], the row to sample from
  int* next_token;                 // where the next decode step reads its input token
  int* pos;                        // position counter, advanced by `advance`
  int* step;                       // tokens generated so far
  int* history;                    // [history_capacity] generated tokens
  int* host_ring;                  // [ring] mapped pinned host memory: token of step s at s % ring
  unsigned char* seen;             // [V] 1 for tokens in the prompt or output
  unsigned long long* argmax_slot; // packed (key, ~index) maximum of the logits; 0 between steps
  unsigned* blocks_done;           // blocks of the launch that have folded in their maximum; 0 between steps
  int V;
  int ring;
  int history_capacity;
  int advance;                     // positions consumed by the call that produced the logits
  float temperature;               // <= 0: greedy
  int top_k;                       // 0: off
  float top_p;                     // >= 1: off
  float repetition_penalty;        // 1: off
  unsigned long long seed;
};

constexpr int kSampleThreads = 1024;

__device__ __forceinline__ float penalized_logit(const SamplerArgs& a, int i) {
  float x = a.logits[i];
  if (x != x) return -__int_as_float(0x7f800000);  // NaN never wins
  if (a.repetition_penalty != 1.f && a.seen[i]) x = x > 0.f ? x / a.repetition_penalty : x * a.repetition_penalty;
  return x;
}

// Float -> unsigned key with the same order.
__device__ __forceinline__ unsigned order_key(float x) {
  const unsigned u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ unsigned long long max_u64(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Weight of token i relative to the maximum, in 32.32 fixed point (the maximum weighs 2^32).
__device__ __forceinline__ unsigned long long fixed_weight(float scaled, float max_scaled) {
  return static_cast<unsigned long long>(__expf(scaled - max_scaled) * 4294967296.0f);
}

struct SampleShared {
  unsigned long long hist[256];
  unsigned long long scan[kSampleThreads];
  float reduce[kSampleThreads / 32];
  unsigned prefix;
  unsigned long long above;
  int token;
};

// Largest key threshold t with weight(key >= t) >= target, among keys >= floor_key. With counting
// weights this is the key of the target-th largest element (top-k); with probability weights, the
// edge of the top-p set. Four passes of an 8-bit radix histogram from the most significant digit.
template <bool kByMass>
__device__ unsigned radix_threshold(const SamplerArgs& a, SampleShared& s, float inv_temperature, float max_scaled,
                                    unsigned floor_key, unsigned long long target) {
  if (threadIdx.x == 0) {
    s.prefix = 0;
    s.above = 0;
  }
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    for (int d = threadIdx.x; d < 256; d += blockDim.x) s.hist[d] = 0;
    __syncthreads();
    const unsigned prefix = s.prefix;
    // Logits cluster in a few digits, so lanes of a warp that share a digit add their weights
    // together first and one of them updates the histogram: no 32-way same-address atomics.
    const int lane = threadIdx.x % 32;
    for (int base = threadIdx.x - lane; base < a.V; base += blockDim.x) {
      const int i = base + lane;
      int digit = -1;
      unsigned long long weight = 0;
      if (i < a.V) {
        const float scaled = penalized_logit(a, i) * inv_temperature;
        const unsigned key = order_key(scaled);
        if (key >= floor_key && (pass == 0 || (key >> (shift + 8)) == prefix)) {
          weight = kByMass ? fixed_weight(scaled, max_scaled) : 1ull;
          if (weight) digit = static_cast<int>((key >> shift) & 0xFF);
        }
      }
      const unsigned peers = __match_any_sync(0xffffffffu, digit);
      unsigned long long sum = 0;
      for (unsigned rest = peers; rest; rest &= rest - 1) sum += __shfl_sync(peers, weight, __ffs(rest) - 1);
      if (digit >= 0 && lane == __ffs(peers) - 1) atomicAdd(&s.hist[digit], sum);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long running = s.above;
      int digit = 0;
      for (int d = 255; d >= 0; --d) {
        if (running + s.hist[d] >= target) {
          digit = d;
          break;
        }
        running += s.hist[d];
      }
      s.above = running;
      s.prefix = (prefix << 8) | static_cast<unsigned>(digit);
    }
    __syncthreads();
  }
  return s.prefix;
}

__device__ int sample_token(const SamplerArgs& a, SampleShared& s, int step) {
  const float inv_temperature = 1.f / a.temperature;
  // Maximum of the scaled logits.
  float local_max = -__int_as_float(0x7f800000);
  for (int i = threadIdx.x; i < a.V; i += blockDim.x) local_max = fmaxf(local_max, penalized_logit(a, i) * inv_temperature);
  local_max = warp_max(local_max);
  if (threadIdx.x % 32 == 0) s.reduce[threadIdx.x / 32] = local_max;
  __syncthreads();
  float max_scaled = s.reduce[0];
  for (int w = 1; w < kSampleThreads / 32; ++w) max_scaled = fmaxf(max_scaled, s.reduce[w]);
  __syncthreads();

  unsigned threshold = 0;
  if (a.top_k > 0 && a.top_k < a.V)
    threshold = radix_threshold<false>(a, s, inv_temperature, max_scaled, 0u, static_cast<unsigned long long>(a.top_k));
  if (a.top_p < 1.f) {
    unsigned long long local = 0;
    for (int i = threadIdx.x; i < a.V; i += blockDim.x) {
      const float scaled = penalized_logit(a, i) * inv_temperature;
      if (order_key(scaled) >= threshold) local += fixed_weight(scaled, max_scaled);
    }
    s.scan[threadIdx.x] = local;
    __syncthreads();
    for (int stride = kSampleThreads / 2; stride > 0; stride >>= 1) {
      if (threadIdx.x < stride) s.scan[threadIdx.x] += s.scan[threadIdx.x + stride];
      __syncthreads();
    }
    const unsigned long long total = s.scan[0];
    __syncthreads();
    const unsigned long long target = static_cast<unsigned long long>(static_cast<double>(total) * static_cast<double>(a.top_p)) + 1;
    threshold = radix_threshold<true>(a, s, inv_temperature, max_scaled, threshold, target < total ? target : total);
  }

  // Kept weights in index order: each thread owns a contiguous chunk; an exclusive scan finds the
  // chunk that holds the draw, and its thread walks it.
  const int chunk = (a.V + kSampleThreads - 1) / kSampleThreads;
  const int begin = threadIdx.x * chunk, end = min(a.V, begin + chunk);
  unsigned long long local = 0;
  for (int i = begin; i < end; ++i) {
    const float scaled = penalized_logit(a, i) * inv_temperature;
    if (order_key(scaled) >= threshold) local += fixed_weight(scaled, max_scaled);
  }
  s.scan[threadIdx.x] = local;
  if (threadIdx.x == 0) s.token = -1;
  __syncthreads();
  for (int stride = 1; stride < kSampleThreads; stride <<= 1) {  // inclusive Hillis-Steele scan
    const unsigned long long add = threadIdx.x >= stride ? s.scan[threadIdx.x - stride] : 0ull;
    __syncthreads();
    s.scan[threadIdx.x] += add;
    __syncthreads();
  }
  const unsigned long long total = s.scan[kSampleThreads - 1];
  const double uniform = static_cast<double>(splitmix64(a.seed ^ (0xD1B54A32D192ED03ull * static_cast<unsigned long long>(step + 1))) >> 11) *
                         (1.0 / 9007199254740992.0);
  unsigned long long draw = static_cast<unsigned long long>(uniform * static_cast<double>(total));
  if (draw >= total) draw = total ? total - 1 : 0;
  const unsigned long long before = s.scan[threadIdx.x] - local;
  if (local && draw >= before && draw < before + local) {
    unsigned long long running = before;
    for (int i = begin; i < end; ++i) {
      const float scaled = penalized_logit(a, i) * inv_temperature;
      if (order_key(scaled) < threshold) continue;
      running += fixed_weight(scaled, max_scaled);
      if (draw < running) {
        s.token = i;
        break;
      }
    }
  }
  __syncthreads();
  return s.token;
}

}  // namespace ac

// One launch per step. Every block folds its share of the logits into one atomic maximum; the packed
// value orders by logit, then by lower index (Hugging Face's argmax returns the first maximum). The
// last block to finish (a ticket after a fence, so every block's maximum is visible) picks the token
// (greedy: the maximum; else by sampling, with the whole block) and hands it on.
//
// The kernel ends the decode step, so its latency is the step's: the arguments, the step and the
// position are loaded before the producer wait, and their latency hides behind the LM head's tail.
// No kernel of this step writes them: the host writes them before a request (or a prefill chunk),
// and only this kernel advances the step and position, in the previous step's launch. That launch
// has completed before this step's first kernel got past its producer wait, and so before any later
// kernel of the step, this one included, could start.
extern "C" __global__ void __launch_bounds__(ac::kSampleThreads) ac_sample(const ac::SamplerArgs* __restrict__ args) {
  const ac::SamplerArgs a = *args;
  const int step = *a.step, position = *a.pos;
  ac::wait_for_producer_grid();
  ac::launch_dependent_grids();
  __shared__ ac::SampleShared s;
  __shared__ unsigned long long warp_best[ac::kSampleThreads / 32];
  __shared__ unsigned long long maximum;
  __shared__ bool last_block;
  unsigned long long best = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.V; i += gridDim.x * blockDim.x) {
    const unsigned long long packed = (static_cast<unsigned long long>(ac::order_key(ac::penalized_logit(a, i))) << 32) |
                                      static_cast<unsigned long long>(0xFFFFFFFFu - static_cast<unsigned>(i));
    best = ac::max_u64(best, packed);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) best = ac::max_u64(best, __shfl_xor_sync(0xffffffffu, best, offset));
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x < 32) {
    best = warp_best[threadIdx.x];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) best = ac::max_u64(best, __shfl_xor_sync(0xffffffffu, best, offset));
    if (threadIdx.x == 0) {
      atomicMax(a.argmax_slot, best);
      __threadfence();
      const bool last = atomicAdd(a.blocks_done, 1u) == gridDim.x - 1;
      if (last) {
        __threadfence();
        maximum = atomicAdd(a.argmax_slot, 0ull);  // every block's maximum, read through L2
      }
      last_block = last;
    }
  }
  __syncthreads();
  if (!last_block) return;
  const int argmax = static_cast<int>(0xFFFFFFFFu - static_cast<unsigned>(maximum & 0xFFFFFFFFull));
  // Every logit NaN or -inf (activations past their dtype's range): the row holds no number to choose.
  // The host's ring gets -1, which the runtime reports as an error; the device's own copies keep the
  // argmax (id 0 then), so steps already queued behind this one read a valid id.
  const bool no_number = static_cast<unsigned>(maximum >> 32) == ac::order_key(-__int_as_float(0x7f800000));
  int token = argmax;
  if (a.temperature > 0.f) {
    token = ac::sample_token(a, s, step);
    if (token < 0) token = argmax;
  }
  if (threadIdx.x == 0) {
    *a.argmax_slot = 0ull;
    *a.blocks_done = 0u;
    *a.next_token = token;
    if (step < a.history_capacity) a.history[step] = token;
    // The host reads the ring only after an event recorded behind this launch has completed, and a
    // completed kernel's writes to mapped host memory are visible then: no system-scope fence, whose
    // round trip over the bus would end every decode step.
    a.host_ring[step % a.ring] = no_number ? -1 : token;
    a.seen[token] = 1;
    *a.pos = position + a.advance;
    *a.step = step + 1;
  }
}
