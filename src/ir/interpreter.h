// The reference interpreter: runs any verified IR function in fp32 on the CPU. It is the project's
// numerical ground truth. It keeps the module's states (KV caches) between calls, so prefill
// followed by N decode calls generates tokens exactly as the model defines.
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
  int threads = 0;             // 0: std::thread::hardware_concurrency()
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
  // of every step ([1, V] each; the prefill's last row first) and the generated tokens.
  struct Generation {
    std::vector<std::vector<float>> logits;
    std::vector<int32_t> tokens;
  };
  Expected<Generation> generate_greedy(const std::vector<int32_t>& prompt, int new_tokens);

  // Forgets every state's contents (a new sequence).
  void reset();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace agentcompile::ir
