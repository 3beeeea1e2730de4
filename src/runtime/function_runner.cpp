// Running one function of a compiled module on the GPU (include/agentcompile/function.h): the module
// the compiler compiled (emit/model_module.h), its artifact (one that fits; never compiled here), the
// weights uploaded once, one device buffer per argument, the function's sites launched by the executor.
#include <algorithm>

#include "agentcompile/function.h"
#include "emit/model_module.h"
#include "gpu/device_probe.h"
#include "gpu/driver_api.h"
#include "runtime/artifact_reader.h"
#include "runtime/decode_loop.h"
#include "runtime/derived_weights.h"
#include "runtime/device_weights.h"
#include "runtime/executor.h"
#include "runtime/function_tensors.h"
#include "runtime/kv_cache.h"

namespace agentcompile {

class FunctionRunner::Impl {
 public:
  Status load(const EngineOptions& options, const std::string& function, const FunctionRunnerOptions& runner);
  CUstream stream() const { return external_stream ? external_stream : context->stream(); }
  Status upload_inputs(const std::vector<Tensor>& inputs);
  Expected<std::vector<Tensor>> download_outputs();

  std::vector<TensorSpec> input_specs, output_specs;
  std::string artifact_dir;
  frontend::ModelSource source;
  ir::Module module;
  const ir::Function* function = nullptr;
  runtime::LoadedArtifact artifact;
  // Declared in dependency order: destroyed in reverse, the context last.
  std::unique_ptr<gpu::CudaContext> context;
  std::unique_ptr<gpu::LibraryRunner> library;
  runtime::DeviceWeights weights;
  runtime::KvCache cache;
  runtime::KernelSet kernels;
  std::vector<gpu::DeviceBuffer> arguments;
  std::unique_ptr<runtime::FunctionExecutor> executor;
  CUstream external_stream = nullptr;
  int64_t tokens = 1;  // T of every call: the size the capture binds it to (1 for static shapes)
  std::unique_ptr<runtime::DecodeGraph> graph;  // the call captured once, for device-side replays
};

namespace {

const gpu::DriverApi& api() { return *gpu::driver_api(); }

bool uses_library(const runtime::LoadedArtifact& artifact) {
  for (const auto& [id, region] : artifact.regions)
    for (const auto& k : region.kernels)
      for (const auto& l : k.candidate.launches)
        if (l.library) return true;
  return false;
}

// Owns two CUDA events for one timed call.
struct EventPair {
  CUevent start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start) api().EventDestroy(start);
    if (stop) api().EventDestroy(stop);
  }
};

}  // namespace

Status FunctionRunner::Impl::load(const EngineOptions& options, const std::string& name, const FunctionRunnerOptions& runner) {
  external_stream = static_cast<CUstream>(runner.stream);
  AC_ASSIGN_OR_RETURN(source, frontend::open_model(options.model, /*with_weights=*/true));
  if (!source.weights) return error(ErrorCode::kInvalidArgument, options.model.string() + " has no weights");
  AC_ASSIGN_OR_RETURN(emit::ModelModule prepared, emit::model_module(source));
  module = std::move(prepared.module);
  const std::string ir_text = std::move(prepared.ir_text);
  function = module.find_function(name);
  if (!function) {
    std::string names;
    for (const auto& f : module.functions) names += (names.empty() ? "@" : ", @") + f.name;
    return error(ErrorCode::kNotFound, options.model.string() + " has no function @" + name + " (it has " + names + ")");
  }
  tokens = source.run_tokens(name);
  AC_ASSIGN_OR_RETURN(input_specs, runtime::argument_specs(*function, source));
  AC_ASSIGN_OR_RETURN(output_specs, runtime::result_specs(*function, source));

  // The artifact: one that fits this model on this GPU. CUDA may already be up in this process (the
  // Python binding): the context is asked in-process, nothing forks.
  AC_ASSIGN_OR_RETURN(context, gpu::CudaContext::create());
  AC_ASSIGN_OR_RETURN(artifact, runtime::load_fitting_artifact(options, source.config, ir_text, gpu::nvrtc_arch(context->info())));
  artifact_dir = artifact.dir.string();
  if (!artifact.functions.count(name)) return error(ErrorCode::kMismatch, artifact_dir + ": the artifact has no function @" + name);

  if (uses_library(artifact)) {
    AC_ASSIGN_OR_RETURN(library, gpu::LibraryRunner::create(stream()));
  }
  AC_ASSIGN_OR_RETURN(auto derived, runtime::compute_derived_weights(module, *source.weights));
  AC_ASSIGN_OR_RETURN(weights, runtime::DeviceWeights::upload(module, *source.weights, derived.get()));
  // A module has no cache: its rows only have to cover the call's tokens, which the executor checks.
  AC_ASSIGN_OR_RETURN(cache, runtime::KvCache::allocate(module, tokens));
  runtime::FunctionExecutor::Bindings bind{&weights, &cache, library.get(), {}};
  for (const TensorSpec& spec : input_specs) {
    AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer buffer, gpu::DeviceBuffer::allocate(std::max<size_t>(runtime::tensor_bytes(spec), 16)));
    bind.arguments.push_back(buffer.ptr());
    arguments.push_back(std::move(buffer));
  }
  bind.programmatic_launch = options.programmatic_launch && context->info().sm_major >= 9;
  AC_ASSIGN_OR_RETURN(executor, runtime::FunctionExecutor::create(*function, artifact, kernels, bind, tokens));
  return gpu::cuda_status(api().StreamSynchronize(stream()), "cuStreamSynchronize");
}

Status FunctionRunner::Impl::upload_inputs(const std::vector<Tensor>& inputs) {
  AC_TRY(runtime::check_inputs(inputs, input_specs));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].data.empty()) AC_TRY(arguments[i].upload(inputs[i].data.data(), inputs[i].data.size()));
  return Status::ok();
}

Expected<std::vector<Tensor>> FunctionRunner::Impl::download_outputs() {
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < output_specs.size(); ++i) {
    AC_ASSIGN_OR_RETURN(CUdeviceptr address, executor->result_address(tokens, i));
    Tensor out;
    out.name = output_specs[i].name;
    out.dtype = output_specs[i].dtype;
    out.shape = output_specs[i].shape;
    out.data.resize(runtime::tensor_bytes(output_specs[i]));
    if (!out.data.empty()) AC_TRY(gpu::cuda_status(api().MemcpyDtoH(out.data.data(), address, out.data.size()), "cuMemcpyDtoH"));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

FunctionRunner::FunctionRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FunctionRunner::~FunctionRunner() = default;

Expected<std::unique_ptr<FunctionRunner>> FunctionRunner::load(const EngineOptions& options, const std::string& function,
                                                              const FunctionRunnerOptions& runner) {
  auto impl = std::make_unique<Impl>();
  AC_TRY(impl->load(options, function, runner));
  return std::unique_ptr<FunctionRunner>(new FunctionRunner(std::move(impl)));
}

const std::vector<TensorSpec>& FunctionRunner::inputs() const { return impl_->input_specs; }
const std::vector<TensorSpec>& FunctionRunner::outputs() const { return impl_->output_specs; }
const std::string& FunctionRunner::artifact() const { return impl_->artifact_dir; }

Expected<std::vector<Tensor>> FunctionRunner::run(const std::vector<Tensor>& inputs) {
  AC_TRY(impl_->upload_inputs(inputs));
  AC_TRY(impl_->executor->enqueue(impl_->tokens, impl_->tokens, impl_->stream()));
  AC_TRY(synchronize());
  return impl_->download_outputs();
}

Status FunctionRunner::synchronize() {
  return gpu::cuda_status(api().StreamSynchronize(impl_->stream()), "cuStreamSynchronize");
}

Status FunctionRunner::copy_input_from_device(size_t index, uint64_t device_ptr, size_t bytes) {
  if (index >= impl_->input_specs.size()) return error(ErrorCode::kInvalidArgument, "no input " + std::to_string(index));
  const size_t expected = runtime::tensor_bytes(impl_->input_specs[index]);
  if (bytes != expected)
    return error(ErrorCode::kInvalidArgument, "input " + impl_->input_specs[index].name + " takes " + std::to_string(expected) + " bytes, not " +
                                                  std::to_string(bytes));
  if (bytes == 0) return Status::ok();
  return gpu::cuda_status(api().MemcpyDtoDAsync(impl_->arguments[index].ptr(), static_cast<CUdeviceptr>(device_ptr), bytes, impl_->stream()),
                           "cuMemcpyDtoDAsync(input " + impl_->input_specs[index].name + ")");
}

Status FunctionRunner::copy_output_to_device(size_t index, uint64_t device_ptr, size_t bytes) {
  if (index >= impl_->output_specs.size()) return error(ErrorCode::kInvalidArgument, "no output " + std::to_string(index));
  const size_t expected = runtime::tensor_bytes(impl_->output_specs[index]);
  if (bytes != expected)
    return error(ErrorCode::kInvalidArgument, "output " + impl_->output_specs[index].name + " is " + std::to_string(expected) + " bytes, not " +
                                                  std::to_string(bytes));
  if (bytes == 0) return Status::ok();
  AC_ASSIGN_OR_RETURN(CUdeviceptr address, impl_->executor->result_address(impl_->tokens, index));
  return gpu::cuda_status(api().MemcpyDtoDAsync(static_cast<CUdeviceptr>(device_ptr), address, bytes, impl_->stream()),
                           "cuMemcpyDtoDAsync(output " + impl_->output_specs[index].name + ")");
}

Status FunctionRunner::prepare_graph() {
  Impl& m = *impl_;
  AC_ASSIGN_OR_RETURN(m.graph, runtime::DecodeGraph::capture(m.stream(), [&m] { return m.executor->enqueue(m.tokens, m.tokens, m.stream()); }));
  return Status::ok();
}

Status FunctionRunner::enqueue() {
  Impl& m = *impl_;
  return m.graph ? m.graph->launch(m.stream()) : m.executor->enqueue(m.tokens, m.tokens, m.stream());
}

Expected<FunctionTiming> FunctionRunner::time(const std::vector<Tensor>& inputs, int warmup, int repetitions, bool cuda_graph) {
  if (repetitions < 1 || warmup < 0) return error(ErrorCode::kInvalidArgument, "timing needs warmup >= 0 and repetitions >= 1");
  AC_TRY(impl_->upload_inputs(inputs));
  Impl& m = *impl_;
  const CUstream stream = m.stream();
  auto call = [&m, stream] { return m.executor->enqueue(m.tokens, m.tokens, stream); };
  FunctionTiming timing;
  AC_ASSIGN_OR_RETURN(timing.launches, m.executor->launches(m.tokens, m.tokens));
  std::unique_ptr<runtime::DecodeGraph> graph;
  if (cuda_graph) {
    AC_ASSIGN_OR_RETURN(graph, runtime::DecodeGraph::capture(stream, call));
    timing.cuda_graph = true;
  }
  auto once = [&]() -> Status { return graph ? graph->launch(stream) : call(); };
  for (int i = 0; i < warmup; ++i) AC_TRY(once());
  AC_TRY(synchronize());
  EventPair events;
  AC_TRY(gpu::cuda_status(api().EventCreate(&events.start, CU_EVENT_DEFAULT), "cuEventCreate"));
  AC_TRY(gpu::cuda_status(api().EventCreate(&events.stop, CU_EVENT_DEFAULT), "cuEventCreate"));
  for (int i = 0; i < repetitions; ++i) {
    AC_TRY(gpu::cuda_status(api().EventRecord(events.start, stream), "cuEventRecord"));
    AC_TRY(once());
    AC_TRY(gpu::cuda_status(api().EventRecord(events.stop, stream), "cuEventRecord"));
    AC_TRY(gpu::cuda_status(api().EventSynchronize(events.stop), "cuEventSynchronize"));
    float ms = 0;
    AC_TRY(gpu::cuda_status(api().EventElapsedTime(&ms, events.start, events.stop), "cuEventElapsedTime"));
    timing.ms.push_back(ms);
  }
  std::vector<double> sorted = timing.ms;
  std::sort(sorted.begin(), sorted.end());
  timing.median_ms = sorted[sorted.size() / 2];
  return timing;
}

}  // namespace agentcompile
