// The reference interpreter: runs any verified IR function in fp32 on the CPU. It is the project's
// numerical ground truth. It keeps the module's states (KV caches) between calls, so prefill
// followed by N decode calls generates tokens exactly as the model defines.
//
// Choices ir/ops.h leaves open:
//   - f16/bf16 values are held as f32 and never rounded (an fp32 reference of the model's math); a
//     cast between float dtypes relabels, a cast to i32 truncates toward zero (saturating, NaN -> 0).
//   - linear and attention dot products accumulate in float over eight fixed lanes; norms, softmax
//     and attention's weighted sums accumulate in double. Results do not depend on the thread count.
//   - rope follows transformers in float32: inv_freq = 1 / theta^(2i/D) (llama3-scaled when asked),
//     angle = float(pos + t) * inv_freq, cos/sin rounded from double.
//   - errors never abort: every failure is a Status naming the function, node and reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::ir {

// A host tensor: f32 values for float dtypes (whatever the IR dtype), i32 values for integer ones.
// As an argument, any float dtype is accepted for a float parameter (all are held as f32).
struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int32_t> i32;

  int64_t elements() const;
  static HostTensor from_i32(std::vector<int64_t> shape, std::vector<int32_t> values);
  static HostTensor scalar_i32(int32_t value);
};

// Supplies a parameter's values as f32 (the frontend dequantizes/converts).
using WeightLoader = std::function<Status(const std::string& name, std::vector<float>& out)>;

struct InterpreterOptions {
  int64_t max_context = 4096;  // rows allocated for every state's L dimension
  int threads = 0;             // threads for linear/attention, the caller included; 0: hardware_concurrency()
};

class Interpreter {
 public:
  Interpreter(const Module& module, WeightLoader loader, InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs `function` on `args` (one per function argument, matching its type with T bound to the
  // size found in the arguments). Errors name the function, node and reason (a position past the
  // allocated context, a missing weight, an argument of the wrong type).
  Expected<std::vector<HostTensor>> run(const std::string& function, const std::vector<HostTensor>& args);

  // Convenience for decoder modules: prefill(tokens, pos=0) then greedy decode; returns the logits
  // of every step ([1, V] each; the prefill's last row first) and the generated tokens (new_tokens
  // of them; ties go to the lowest id). Does not reset(): prefill rewrites the cache from row 0 and
  // attention reads only rows below pos + T, so rows left by an earlier sequence are never read.
  struct Generation {
    std::vector<std::vector<float>> logits;
    std::vector<int32_t> tokens;
  };
  Expected<Generation> generate_greedy(const std::vector<int32_t>& prompt, int new_tokens);

  // Forgets every state's contents (a new sequence).
  void reset();

  // A state's contents, [max_context, KV, D] row-major (zeros before anything was appended).
  Expected<std::vector<float>> state(const std::string& name) const;
  // Overwrites a state's contents; `values` must hold exactly max_context * KV * D floats. Lets a
  // caller start a function from chosen cache contents (kernel validation does).
  Status set_state(const std::string& name, const std::vector<float>& values);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace agentcompile::ir
