// Running one function of a compiled module on inputs the caller gives: a module captured from PyTorch
// (`agentcompile capture module`, one `forward`), checked and timed without Python.
//
//   agentcompile::EngineOptions options;
//   options.model = "captured/relu";                        // a capture directory
//   auto runner = agentcompile::load_function_runner(options, "forward", progress);   // compiles on first use (first_use.h)
//   auto outputs = (*runner)->run(inputs);                  // inputs in the function's argument order
//
// Tensors are plain host bytes in the IR's dtype (f32, f16, bf16, i32, bool) and row-major layout.
// `run_function_reference` computes the same function with the CPU reference interpreter on the
// module as captured (before the compiler touched it): the ground truth a GPU run is checked against.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/engine.h"
#include "agentcompile/status.h"

namespace agentcompile {

struct Tensor {
  std::string name;
  std::string dtype;           // "f32", "f16", "bf16", "i32", "bool"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;   // elements * dtype size bytes, row-major
};

struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

struct FunctionTiming {
  std::vector<double> ms;      // one per repetition (device time between events)
  double median_ms = 0;
  bool cuda_graph = false;     // replayed as one captured graph (else launched kernel by kernel)
  size_t launches = 0;         // kernel launches per call
};

struct FunctionRunnerOptions {
  // Launch on this CUDA stream (a CUstream / cudaStream_t of the current device's primary context, e.g.
  // torch.cuda.current_stream().cuda_stream) instead of a stream of the runner's own.
  void* stream = nullptr;
};

class FunctionRunner {
 public:
  // Runs from options.artifact, or the model's own artifact in the cache, when it fits this model on
  // this GPU; never compiles (load_function_runner in first_use.h compiles first when needed).
  static Expected<std::unique_ptr<FunctionRunner>> load(const EngineOptions& options, const std::string& function,
                                                        const FunctionRunnerOptions& runner = {});
  ~FunctionRunner();

  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  // The artifact used.
  const std::string& artifact() const;

  // Checks every input against inputs() (count, dtype, shape, bytes), runs the function once and
  // returns its outputs.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  // Uploads the inputs once, runs `warmup` calls, then times `repetitions` calls with CUDA events
  // (replaying a CUDA graph of the call when `cuda_graph`).
  Expected<FunctionTiming> time(const std::vector<Tensor>& inputs, int warmup, int repetitions, bool cuda_graph = true);

  // Device-side use, for callers that hold the tensors on the GPU already (the Python binding): copy an
  // input from device memory, enqueue one call (a graph replay once prepare_graph() ran), copy an output
  // to device memory. All asynchronous on the runner's stream; sizes must be the specs' byte sizes.
  Status copy_input_from_device(size_t index, uint64_t device_ptr, size_t bytes);
  Status enqueue();
  Status prepare_graph();
  Status copy_output_to_device(size_t index, uint64_t device_ptr, size_t bytes);
  Status synchronize();

  class Impl;

 private:
  explicit FunctionRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The function's outputs from the CPU reference interpreter (float math in f32, as ir/interpreter.h
// says), on the model's own module: for a capture, the graph as torch.export wrote it.
Expected<std::vector<Tensor>> run_function_reference(const std::filesystem::path& model, const std::string& function,
                                                     const std::vector<Tensor>& inputs, int threads = 0);

// The specs of a function's arguments and results, read from the model without running anything.
Expected<std::pair<std::vector<TensorSpec>, std::vector<TensorSpec>>> function_signature(const std::filesystem::path& model,
                                                                                         const std::string& function);

}  // namespace agentcompile
