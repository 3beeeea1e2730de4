// Host-side test data for admission: random tensors in the IR dtypes (values rounded to the dtype,
// so the GPU and the fp32 reference see exactly the same numbers), NaN poison, and the comparison
// that decides whether a candidate computed the region.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace agentcompile::tune {

enum class Distribution { kNormal, kUniform, kHeavyTailed };
const char* distribution_name(Distribution distribution);

// A tensor held twice: as f32 values (for the interpreter) and as the dtype's bytes (for the GPU).
// Bool is one byte, 0 or 1.
struct TestTensor {
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> values;
  std::vector<uint8_t> bytes;
  // Timing data of a huge tensor only (random_case with a period): `bytes` holds one period of the
  // encoding, which the upload repeats on the device to the whole shape; `values` is empty.
  bool periodic = false;
  int64_t elements() const;
  // Bytes the tensor takes on the device: its whole shape's, also when only a period is held here.
  size_t device_bytes() const;
};

// Deterministic random tensor: `scale` multiplies the distribution (N(0,1), U(-1,1), or a Student-t
// like heavy tail clipped at 30). Integer tensors get values in [0, int_limit); bool tensors 0 or 1.
// The values depend on (dtype, element count, distribution, seed, scale, int_limit) alone.
TestTensor random_tensor(ir::DType dtype, std::vector<int64_t> shape, Distribution distribution, uint64_t seed,
                         float scale = 1.0f, int32_t int_limit = 1);
// Wraps f32 values (rounding them to dtype).
TestTensor tensor_from_values(ir::DType dtype, std::vector<int64_t> shape, std::vector<float> values);
// Decodes dtype bytes back to f32 values.
std::vector<float> decode_values(ir::DType dtype, const std::vector<uint8_t>& bytes);

// Large tensors are drawn, encoded, decoded and compared in chunks on several threads; the values
// and results do not depend on how many. Tests and benchmarks pin the count with this (0: one
// per core, the default); it applies while the object lives, to every thread.
class ScopedHostThreads {
 public:
  explicit ScopedHostThreads(unsigned threads);
  ~ScopedHostThreads();
  ScopedHostThreads(const ScopedHostThreads&) = delete;
  ScopedHostThreads& operator=(const ScopedHostThreads&) = delete;

 private:
  unsigned previous_;
};

struct Comparison {
  bool ok = false;
  double max_abs_error = 0;
  double max_rel_error = 0;   // max |out - ref| / max |ref|
  int64_t nan_count = 0;
  int64_t mismatches = 0;     // elements over tolerance
  std::string reason;         // why it failed: "NaN in output", "max error 0.3 > tolerance 0.01", ...
};

// Tolerance on max |out - ref| / max |ref| for an output dtype (accumulation is fp32 everywhere).
double tolerance_for(ir::DType dtype);
// Compares at the tolerance of `dtype`, or of `precision` where that is coarser (the region
// computed the output through values of that dtype; RegionLayout::precision).
Comparison compare(const std::vector<float>& out, const std::vector<float>& ref, ir::DType dtype,
                   ir::DType precision = ir::DType::kF32);
// The same comparison of `dtype` bytes read back from the GPU, decoded as they are compared.
Comparison compare_encoded(const std::vector<uint8_t>& out, const std::vector<float>& ref, ir::DType dtype,
                           ir::DType precision = ir::DType::kF32);

}  // namespace agentcompile::tune
