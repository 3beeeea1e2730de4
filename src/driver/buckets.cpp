// Buckets, validation sizes and timing sizes (see buckets.h).
#include "driver/buckets.h"

#include <algorithm>

namespace agentcompile::driver {

// Prefill: buckets of T. Decode: buckets of the context (the keys a step's attention reads), so a
// generation runs attention kernels chosen at its own length: up to 512 keys (timed at 256: a chat
// turn's first replies, where the attention is all latency and smaller clusters win), 513-4k (timed
// at 2k), 4k-16k (timed at 8k) and beyond (timed at 32k, or the model's maximum when that is shorter).
std::vector<emit::Bucket> buckets_for(const ir::Function& f, int64_t max_tokens, int64_t run_tokens) {
  const std::string& function = f.name;
  if (function != "decode" && function != "prefill") {
    // A captured module's function runs at one size (static shapes, or T bound to its captured size).
    const int64_t T = std::max<int64_t>(run_tokens, 1);
    return {{function, T, T, T, 0, 0, 0}};
  }
  if (function == "decode") {
    const int64_t max_context = std::max<int64_t>(max_tokens, 1);
    std::vector<emit::Bucket> buckets;
    auto add = [&](const std::string& name, int64_t lo, int64_t hi, int64_t timed_at) {
      if (lo > max_context) return;
      hi = std::min(hi, max_context);
      buckets.push_back({name, 1, 1, 1, lo, hi, std::clamp<int64_t>(timed_at, lo, hi)});
    };
    add("decode", 1, 512, 256);
    add("decode-c513-4096", 513, 4096, 2048);
    add("decode-c4097-16384", 4097, 16384, 8192);
    add("decode-c16385+", 16385, max_context, 32768);
    return buckets;
  }
  std::vector<emit::Bucket> buckets = {{"t1-64", 1, 64, 32}, {"t65-512", 65, 512, 256}, {"t513-4096", 513, 4096, 2048}};
  if (max_tokens > 4096) buckets.push_back({"t4097+", 4097, max_tokens, 8192});
  return buckets;
}

namespace {

// Where a region whose size follows neither T nor the context is checked and timed: odd token counts and
// positions so tile edges and offsets are exercised. A captured module's function has no cache.
tune::RegionBindings fixed_bindings(const std::string& function) {
  if (function == "decode") return tune::RegionBindings{1, 512, 77};
  if (function == "prefill") return tune::RegionBindings{100, 256, 28};
  return tune::RegionBindings{1, 1, 0};
}

}  // namespace

// A captured module's region that follows T (its batch dim, run at `run_tokens`) is checked against the
// CPU reference at a smaller T: the largest of the odd sizes below (each just past one or two tiles of
// 128, 64 or 32 rows, so second tiles and partial tiles both run) whose data and work, scaled down from
// the summary's at `run_tokens`, stay within 256 MiB and 8 GFLOP a case. The same kernel code then runs
// at `run_tokens`, where the candidates are timed.
tune::RegionBindings validation_bindings(const std::string& function, const analysis::RegionSummary& summary, int64_t run_tokens) {
  if (function == "decode" || function == "prefill" || !summary.depends_on_T || run_tokens <= 3) {
    tune::RegionBindings fixed = fixed_bindings(function);
    if (function != "decode" && function != "prefill") fixed.T = std::max<int64_t>(run_tokens, 1);
    return fixed;
  }
  constexpr double kMaxBytes = 256.0 * (1 << 20), kMaxFlops = 8e9;
  const double per_token_bytes = summary.bytes / static_cast<double>(run_tokens);
  const double per_token_flops = summary.flops / static_cast<double>(run_tokens);
  for (int64_t T : {259, 131, 67, 37, 19, 7}) {
    if (T >= run_tokens) continue;
    if (per_token_bytes * static_cast<double>(T) <= kMaxBytes && per_token_flops * static_cast<double>(T) <= kMaxFlops)
      return tune::RegionBindings{T, 1, 0};
  }
  return tune::RegionBindings{3, 1, 0};
}

// Prefill regions whose shapes depend on T, and decode attention, whose time follows the context.
bool timed_per_bucket(const std::string& function, const analysis::RegionSummary& summary) {
  if (function == "decode") return summary.category == analysis::Category::kAttentionDecode;
  return summary.depends_on_T;
}

// At the bucket's T (prefill), or with `timing_context` keys in the cache (decode attention: the
// candidates that adapt their splits to the length rank as they will run at that length), or, for
// regions whose time follows neither, at the validation size.
tune::RegionBindings timing_bindings(const std::string& function, const emit::Bucket& bucket, bool per_bucket) {
  if (!per_bucket) return fixed_bindings(function);
  if (bucket.bounds_context()) {
    const int64_t keys = bucket.timing_context;
    return tune::RegionBindings{1, (keys + 1023) / 1024 * 1024 + 1024, static_cast<int32_t>(keys - 1)};  // keys 0..pos
  }
  return tune::RegionBindings{bucket.timing_tokens, bucket.timing_tokens + 64, 0};
}

std::vector<tune::RegionBindings> timing_sizes(const std::string& function, const analysis::RegionSummary& summary,
                                               const std::vector<emit::Bucket>& buckets) {
  if (!timed_per_bucket(function, summary)) return {timing_bindings(function, buckets.front(), false)};
  std::vector<tune::RegionBindings> sizes;
  for (const auto& bucket : buckets) sizes.push_back(timing_bindings(function, bucket, true));
  return sizes;
}

}  // namespace agentcompile::driver
