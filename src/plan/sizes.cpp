// Buckets, summary sizes, validation sizes and timing sizes (see sizes.h): every number a named
// constant, with the reason it is what it is.
#include "plan/sizes.h"

#include <algorithm>
#include <limits>

#include "ir/decode_batch.h"

namespace agentcompile::plan {

namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

struct BucketRange {
  const char* name;
  int64_t lo, hi, timed_at;
};

// Decode: buckets of the context (the keys a step's attention reads), so a generation runs attention
// kernels chosen at its own length: up to 512 keys (timed at 256: a chat turn's first replies, where
// the attention is all latency and smaller clusters win), 513-4k (timed at 2k), 4k-16k (timed at 8k)
// and beyond (timed at 32k, or the model's maximum when that is shorter). Buckets past the model's
// longest sequence are left out; the last one ends there.
constexpr BucketRange kDecodeBuckets[] = {
    {"decode", 1, 512, 256},
    {"decode-c513-4096", 513, 4096, 2048},
    {"decode-c4097-16384", 4097, 16384, 8192},
    {"decode-c16385+", 16385, kUnbounded, 32768},
};

// Prefill: buckets of the prompt's token count T, each timed at a power of two inside it, since the
// GEMMs' best tiles follow the rows they get: short prompts (1-64, timed at 32), a chat turn's
// (65-512, at 256), long ones (513-4096, at 2048); a model with longer sequences gets a last bucket
// up to its maximum, timed at 8192.
constexpr BucketRange kPrefillBuckets[] = {
    {"t1-64", 1, 64, 32},
    {"t65-512", 65, 512, 256},
    {"t513-4096", 513, 4096, 2048},
};
constexpr BucketRange kLongPrefillBucket = {"t4097+", 4097, kUnbounded, 8192};

// decode_batch (ir/decode_batch.h): buckets of the batch, the sequences decoded in one step (T rows),
// each timed at its largest batch: 1, 2, 3-4, 5-8 and 9-16 sequences (the runtime pads a batch to its
// bucket's top, so that is the size that runs). Up to 16 the weights dominate every matmul and a GEMV
// that reuses each weight load for every row stays the right kernel; the split tracks where its
// register tiles change. Each row's sequence owns a slot of kBatchSlotRows cache rows in timing (its
// position uniform inside it: 1k keys on average, where decode's 513-4096 bucket is timed).
constexpr BucketRange kDecodeBatchBuckets[] = {
    {"b1", 1, 1, 1}, {"b2", 2, 2, 2}, {"b3-4", 3, 4, 4}, {"b5-8", 5, 8, 8}, {"b9-16", 9, 16, 16},
};
constexpr int64_t kBatchSlotRows = 2048;

// The cost summaries of a language model's functions: decode at 2048 keys (where the 513-4096 bucket
// is timed), prefill as a 512-token prompt into a 512-row cache (the top of the t65-512 bucket). They
// only describe a region (report, metadata, the advisor's requests) and pick nothing themselves;
// changing them changes every advisor request, so the advice cache would miss once.
constexpr ir::SymbolBindings kDecodeSummary{1, 2048};
constexpr ir::SymbolBindings kPrefillSummary{512, 512};
// decode_batch: its largest bucket, 16 sequences of kBatchSlotRows rows each.
constexpr ir::SymbolBindings kDecodeBatchSummary{16, 16 * kBatchSlotRows};

// Where a region whose size follows neither T nor the context is checked and timed: sizes that are
// no multiple of any tile, so partial tiles and offsets run. Every cache row holds random data before
// the call and is compared after it, so a kernel that reads past the last key or writes outside its
// rows fails.
//   decode: one token at position 77 of a 512-row cache: the step's attention reads 78 keys, no
//     multiple of any key tile or KV split (16, 32, 64, 128), so the last partial tile and the split
//     boundaries run, with cache rows past the last key that must not be read.
//   prefill: 100 tokens at position 28 of a 256-row cache: 100 is no multiple of 32, 64 or 128, so the
//     last tile of rows is partial, in a call that continues a cache (RoPE positions, the causal
//     mask's offset and the KV append start mid-tile, at 28), with rows to spare after it (28 + 100 < 256).
//   a captured module's function has no cache: its T alone (see validation_bindings).
// The validation size is part of the tuning database's key: another size validates every candidate again.
constexpr RegionBindings kDecodeValidation{1, 512, 77};
constexpr RegionBindings kPrefillValidation{100, 256, 28};
//   decode_batch: 5 sequences (no power of two, so a kernel's row tiles end partly filled) in slots of
//     101 rows: positions drawn in 0..100 per row (input_domains.h), keys no multiple of any tile.
constexpr RegionBindings kDecodeBatchValidation{5, 5 * 101, 0};
constexpr RegionBindings kModuleValidation{1, 1, 0};

// A captured module's region that follows T is checked against the CPU reference at the largest of
// these token counts below the captured one (each just past one or two tiles of 128, 64 or 32 rows —
// 259 = 2*128+3, 131 = 128+3, 67 = 64+3, 37 = 32+5, 19 = 16+3, 7 — so second tiles and partial tiles
// both run) whose data and work, scaled down from the summary's at the captured size, stay within a
// case budget; at least 3 rows (two past a tile edge of one). The budget keeps the fp32 interpreter's
// reference (run per case, seeds x distributions) to seconds and its data in memory: KernelBench's
// problems reach 1.6 G elements at their captured size.
constexpr int64_t kValidationRows[] = {259, 131, 67, 37, 19, 7};
constexpr int64_t kFewestValidationRows = 3;
constexpr double kMaxCaseBytes = 256.0 * (1 << 20);
constexpr double kMaxCaseFlops = 8e9;

// Timing caches: decode attention timed at a bucket's `keys` reads them from a cache of whole
// 1024-row blocks with one block more than the keys fill; prefill at a bucket's T writes its rows
// into a cache with 64 rows to spare. Timings are stored in the tuning database by these sizes, so
// other sizes would measure every candidate again.
constexpr int64_t kTimingCacheBlock = 1024;
constexpr int64_t kTimingCacheSlack = 64;

Bucket decode_bucket(const BucketRange& range, int64_t max_context) {
  const int64_t hi = std::min(range.hi, max_context);
  return {range.name, 1, 1, 1, range.lo, hi, std::clamp<int64_t>(range.timed_at, range.lo, hi)};
}

RegionBindings fixed_bindings(const std::string& function) {
  if (function == "decode") return kDecodeValidation;
  if (function == "prefill") return kPrefillValidation;
  if (function == ir::kDecodeBatchFunction) return kDecodeBatchValidation;
  return kModuleValidation;
}

bool language_model_function(const std::string& function) {
  return function == "decode" || function == "prefill" || function == ir::kDecodeBatchFunction;
}

}  // namespace

std::vector<Bucket> buckets_for(const ir::Function& f, int64_t max_tokens, int64_t run_tokens) {
  const std::string& function = f.name;
  if (!language_model_function(function)) {
    // A captured module's function runs at one size (static shapes, or T bound to its captured size).
    const int64_t T = std::max<int64_t>(run_tokens, 1);
    return {{function, T, T, T, 0, 0, 0}};
  }
  std::vector<Bucket> buckets;
  if (function == ir::kDecodeBatchFunction) {
    for (const BucketRange& range : kDecodeBatchBuckets) buckets.push_back({range.name, range.lo, range.hi, range.timed_at});
    return buckets;
  }
  if (function == "decode") {
    const int64_t max_context = std::max<int64_t>(max_tokens, 1);
    for (const BucketRange& range : kDecodeBuckets)
      if (range.lo <= max_context) buckets.push_back(decode_bucket(range, max_context));
    return buckets;
  }
  for (const BucketRange& range : kPrefillBuckets) buckets.push_back({range.name, range.lo, range.hi, range.timed_at});
  if (max_tokens >= kLongPrefillBucket.lo)
    buckets.push_back({kLongPrefillBucket.name, kLongPrefillBucket.lo, max_tokens, kLongPrefillBucket.timed_at});
  return buckets;
}

ir::SymbolBindings summary_bindings(const std::string& function, int64_t run_tokens) {
  if (function == "decode") return kDecodeSummary;
  if (function == "prefill") return kPrefillSummary;
  if (function == ir::kDecodeBatchFunction) return kDecodeBatchSummary;
  return ir::SymbolBindings{run_tokens, 1};  // a captured module's function at the size it runs at (no cache)
}

RegionBindings validation_bindings(const std::string& function, const analysis::RegionSummary& summary, int64_t run_tokens) {
  if (language_model_function(function) || !summary.depends_on_T || run_tokens <= kFewestValidationRows) {
    RegionBindings fixed = fixed_bindings(function);
    if (!language_model_function(function)) fixed.T = std::max<int64_t>(run_tokens, 1);
    return fixed;
  }
  const double per_token_bytes = summary.bytes / static_cast<double>(run_tokens);
  const double per_token_flops = summary.flops / static_cast<double>(run_tokens);
  for (int64_t T : kValidationRows) {
    if (T >= run_tokens) continue;
    if (per_token_bytes * static_cast<double>(T) <= kMaxCaseBytes && per_token_flops * static_cast<double>(T) <= kMaxCaseFlops)
      return RegionBindings{T, 1, 0};
  }
  return RegionBindings{kFewestValidationRows, 1, 0};
}

// Prefill regions whose shapes depend on T, and decode attention, whose time follows the context.
bool timed_per_bucket(const std::string& function, const analysis::RegionSummary& summary) {
  if (function == "decode") return summary.category == analysis::Category::kAttentionDecode;
  return summary.depends_on_T;
}

// At the bucket's T (prefill), or with `timing_context` keys in the cache (decode attention: the
// candidates that adapt their splits to the length rank as they will run at that length), or, for
// regions whose time follows neither, at the validation size.
RegionBindings timing_bindings(const std::string& function, const Bucket& bucket, bool per_bucket) {
  if (!per_bucket) return fixed_bindings(function);
  if (bucket.bounds_context()) {
    const int64_t keys = bucket.timing_context;
    const int64_t rows = (keys + kTimingCacheBlock - 1) / kTimingCacheBlock * kTimingCacheBlock + kTimingCacheBlock;
    return RegionBindings{1, rows, static_cast<int32_t>(keys - 1)};  // keys 0..pos
  }
  if (function == ir::kDecodeBatchFunction) return RegionBindings{bucket.timing_tokens, bucket.timing_tokens * kBatchSlotRows, 0};
  return RegionBindings{bucket.timing_tokens, bucket.timing_tokens + kTimingCacheSlack, 0};
}

std::vector<RegionBindings> timing_sizes(const std::string& function, const analysis::RegionSummary& summary,
                                         const std::vector<Bucket>& buckets) {
  if (!timed_per_bucket(function, summary)) return {timing_bindings(function, buckets.front(), false)};
  std::vector<RegionBindings> sizes;
  for (const auto& bucket : buckets) sizes.push_back(timing_bindings(function, bucket, true));
  return sizes;
}

RegionSizes region_sizes(const std::string& function, const analysis::RegionSummary& summary, const std::vector<Bucket>& buckets) {
  RegionSizes sizes;
  sizes.validation = validation_bindings(function, summary, buckets.front().max_tokens);
  sizes.timing = timing_sizes(function, summary, buckets);
  sizes.per_bucket = timed_per_bucket(function, summary);
  return sizes;
}

}  // namespace agentcompile::plan
