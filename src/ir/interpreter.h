// The reference interpreter: runs any verified IR function in fp32 on the CPU. It is the project's
// numerical ground truth. It keeps the module's states (KV caches) between calls, so prefill
// followed by N decode calls generates tokens exactly as the model defines.
//
// Choices ir/ops.h leaves open:
//   - f16/bf16 values are held as f32 and never rounded (an fp32 reference of the model's math); a
//     cast between float dtypes relabels, a cast to i32 truncates toward zero (saturating, NaN -> 0),
//     a cast to bool is x != 0 (NaN -> true, as in torch).
//   - bool values are i32 0/1 (arguments, results, parameters and constants must hold only 0 or 1).
//     An i32 constant, an i32 arange's start and step and an integer parameter must be whole numbers
//     within i32's range; anything else is an error, never an undefined conversion.
//   - linear, matmul, attention and sdpa dot products accumulate in float over eight fixed lanes;
//     norms, softmax, attention's weighted sums, float sums, means, products and scans accumulate in
//     double. Results do not depend on the thread count.
//   - float math beyond one IEEE operation (log, log1p, expm1, sqrt, rsqrt, tanh, sigmoid, erf, sin,
//     cos, pow, gelu) is evaluated in double and rounded once; silu and exp stay float formulas. A
//     float arange is start + i * step in double, rounded (torch's CPU arange); default start 0, step 1.
//   - sign(NaN) is 0 and sign(-0) is 0, as torch's kernel computes (0 < x) - (x < 0); relu(NaN) is
//     NaN; clamp rounds its bounds to float and with lo > hi gives hi (min(max(x, lo), hi)).
//   - i32 arithmetic wraps (add, sub, mul, neg, abs, sums, products, scans); INT32_MIN / -1 is
//     INT32_MIN; division by zero is an error. max, min, mean, argmax and argmin over an empty axis
//     are errors; an empty sum is 0, an empty product 1.
//   - layer_norm with two operands takes the second as the weight (no bias-only form).
//   - sdpa: causal is torch's top-left alignment (query i sees keys 0..i, also when S != S2); causal
//     and a mask together both apply (torch refuses the pair); a float mask is added to the float
//     score; a row whose keys are all dropped, or all -inf, is NaN.
//   - embedding, index_select, gather and index_copy indices must lie in [0, size): negative ones are
//     errors, as in torch's index_select and gather. index_copy checks every index before writing
//     (a failed call leaves the state as it was) and writes repeated indices in order (the last wins).
//   - rope follows transformers in float32: inv_freq = 1 / theta^(2i/D) (llama3-scaled when asked),
//     or attr inv_freq rounded to f32; angle = float(pos + t) * inv_freq, cos/sin rounded from
//     double, then multiplied in float by attr scale.
//   - the per-row forms of rope, kv_append and attention (decode_batch) run each row exactly as a
//     one-token call at its position (and, for attention, over its own rows) would: a batched step's
//     rows equal single decode steps bit for bit.
//   - an alias parameter's rows are copied out of its source, which the loader is asked for once.
//   - a sharded parameter (ParamDecl::shard_ranges) is asked of the loader whole, as the checkpoint
//     stores it, and its ranges are cut out here.
//   - a quantized parameter (ir/quant.h) is read as its stored bytes, from the packed loader, and
//     dequantized here, exactly as its format defines (ir::dequantize_rows): the values every kernel
//     reading the format is validated against.
//   - all_reduce sums in rank order in float (ir/collective.h), so every rank holds the same values.
//   - errors never abort: every failure is a Status naming the function, node (and its source
//     location when it has one) and reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::ir {

// A host tensor: f32 values for float dtypes (whatever the IR dtype), i32 values for i32 and bool
// (0 or 1). As an argument, any float dtype is accepted for a float parameter (all are held as f32);
// i32 and bool arguments must carry exactly that dtype.
struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int32_t> i32;

  int64_t elements() const;
  static HostTensor from_i32(std::vector<int64_t> shape, std::vector<int32_t> values);
  static HostTensor scalar_i32(int32_t value);
  static HostTensor from_bool(std::vector<int64_t> shape, std::vector<int32_t> values);  // values 0 or 1
};

// Supplies a parameter's values as f32 (the frontend converts). It is asked only for parameters that
// are not aliases and not quantized; an alias's rows are taken from its source.
using WeightLoader = std::function<Status(const std::string& name, std::vector<float>& out)>;
// Supplies a quantized parameter's bytes in `format`, its declared type (ir/quant.h's layout, rows of
// the last dim), which the interpreter dequantizes.
using PackedWeightLoader = std::function<Status(const std::string& name, DType format, std::vector<uint8_t>& out)>;

class Collective;

struct InterpreterOptions {
  int64_t max_context = 4096;  // rows allocated for every state's L dimension
  int threads = 0;             // threads for linear/attention, the caller included; 0: hardware_concurrency()
  // This rank's handle on its group (ir/collective.h), for a module sharded over ranks > 1 (its
  // all_reduce / all_gather nodes); not owned. Without one, a collective of ranks = 1 is the identity
  // and any other is an error.
  Collective* collective = nullptr;
};

class Interpreter {
 public:
  Interpreter(const Module& module, WeightLoader loader, InterpreterOptions options = {});
  // For modules with quantized parameters: `packed` supplies their stored bytes.
  Interpreter(const Module& module, WeightLoader loader, PackedWeightLoader packed, InterpreterOptions options = {});
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
  // Exchanges a state's contents with `values` (exactly max_context * KV * D floats) without copying
  // them: one interpreter then runs several sequences in turn, each with a cache of its own swapped
  // in for its calls (agentcompile serve --cpu), for the price of a pointer swap per state.
  Status swap_state(const std::string& name, std::vector<float>& values);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace agentcompile::ir
