// The engine: loading (model, artifact, device memory, kernels, decode graph) and generation.
#include "agentcompile/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "analysis/weight_traffic.h"
#include "emit/artifact_record.h"
#include "emit/model_module.h"
#include "frontend/model_source.h"
#include "gpu/all_reduce_choice.h"
#include "gpu/device_probe.h"
#include "gpu/driver_api.h"
#include "ir/decode_batch.h"
#include "gpu/nccl.h"
#include "gpu/peer_all_reduce.h"
#include "runtime/artifact_reader.h"
#include "runtime/decode_loop.h"
#include "runtime/derived_weights.h"
#include "runtime/executor.h"
#include "runtime/memory_budget.h"
#include "runtime/sampler.h"

namespace agentcompile {

using runtime::DeviceSampler;

// Every entry point makes the engine's context current first, and so does the destructor before the
// buffers, modules and graphs are freed: a CUDA context is current per thread, and the engine may be
// called and destroyed on a thread other than the one that loaded it (the server's worker).
class Engine::Impl {
 public:
  ~Impl() {
    if (context_) (void)context_->make_current();
  }
  Status load(const EngineOptions& options, const ProgressFn& progress);
  Expected<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token);
  Expected<std::vector<float>> teacher_forced_logits(std::span<const int32_t> ids, int64_t prefill);
  Expected<DecodedRows> decode_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions, std::span<const int32_t> slots,
                                    std::span<const RowNeed> needs);

  EngineInfo info;

 private:
  Status check_ids(std::span<const int32_t> ids, const char* what) const;
  Status run_prefill(std::span<const int32_t> prompt);
  // One decode step whose attention reads `context` keys: launched one by one, or as the replay of
  // the graph captured for the context's bucket.
  Status run_decode_step(int64_t context);
  Status decode_step(int64_t context);
  // Points `f` at `cache` for its next calls (a no-op where it already is).
  static Status use_cache(runtime::FunctionExecutor& f, const runtime::KvCache& cache);
  // decode_rows' path for rows of one sequence at consecutive positions (see slot_caches_).
  Expected<DecodedRows> slot_rows(std::span<const int32_t> tokens, int32_t start, int32_t slot, std::span<const RowNeed> needs);
  // What each row of a step's logits `out` ([rows, vocab] f32 on the device) gives its sampler.
  Expected<DecodedRows> gather_rows(CUdeviceptr out, int64_t rows, std::span<const RowNeed> needs);

  EngineOptions options_;
  frontend::ModelSource source_;
  ir::Module module_;
  runtime::LoadedArtifact artifact_;
  // Declared in dependency order: destroyed in reverse, the context last.
  std::unique_ptr<gpu::CudaContext> context_;
  std::unique_ptr<gpu::NcclCommunicator> communicator_;  // tensor parallelism's collectives; null otherwise
  std::unique_ptr<gpu::LibraryRunner> library_;
  runtime::DeviceWeights weights_;
  runtime::KvCache cache_;
  runtime::KernelSet kernels_;
  gpu::DeviceBuffer prefill_tokens_;
  std::unique_ptr<runtime::FunctionExecutor> prefill_, decode_;
  std::unique_ptr<DeviceSampler> sampler_;
  std::vector<std::unique_ptr<runtime::DecodeGraph>> graphs_;  // per decode bucket; empty with graphs off
  std::vector<std::unique_ptr<runtime::DecodeGraph>> batch_graphs_;  // decode_batch per row count (index rows); empty with graphs off
  std::unique_ptr<runtime::StepEvents> events_;
  std::set<int32_t> eos_;
  // Batched decode (EngineOptions::batch_slots): slot s owns rows [s * context, (s + 1) * context) of
  // batch_cache_; batch_args_ holds the call's ids, positions and row bases, kMaxBatchRows each.
  runtime::KvCache batch_cache_;
  gpu::DeviceBuffer batch_args_;
  std::unique_ptr<runtime::FunctionExecutor> batch_;
  // Each slot's rows viewed as a cache of its own, on which the single-sequence functions run: a
  // step whose rows are one sequence's (a prompt chunk, or the one sequence decoding) goes through
  // prefill or the decode step there, far faster than decode_batch for one sequence (Qwen3-1.7B on an
  // H200: decode_batch 1.7 ms a row alone, the decode step 1.0 ms). The decode step replays a graph
  // per (slot, decode bucket), captured at load.
  std::vector<runtime::KvCache> slot_caches_;
  std::map<std::pair<int32_t, size_t>, std::unique_ptr<runtime::DecodeGraph>> slot_graphs_;
  // The rows' greedy tokens on the device (emit::kRowArgmaxKernel); null where the artifact predates it.
  std::unique_ptr<gpu::CudaModule> row_argmax_module_;
  CUfunction row_argmax_ = nullptr;
  gpu::DeviceBuffer row_argmax_out_;  // [kMaxBatchRows] i32
};

// The host mirror of ac::RowArgmaxArgs (kernels/row_argmax.cuh), passed by value.
struct RowArgmaxArgs {
  CUdeviceptr logits;
  CUdeviceptr argmax;
  int32_t vocab;
  int32_t rows;
};

// The argmax of a logits row as the device kernel and the host sampler take it: the lowest id among
// equal maxima, NaN never; -1 when the row holds no number.
int32_t row_argmax(std::span<const float> row) {
  int32_t best = -1;
  for (size_t i = 0; i < row.size(); ++i)
    if (row[i] == row[i] && (best < 0 || row[i] > row[static_cast<size_t>(best)])) best = static_cast<int32_t>(i);
  return best;
}

namespace {

// Which argument of an IR function is the token ids and which the position scalar.
Expected<std::vector<CUdeviceptr>> function_arguments(const ir::Function& f, CUdeviceptr tokens, CUdeviceptr position) {
  std::vector<CUdeviceptr> args;
  for (ir::ValueId a : f.args) {
    const ir::TensorType& t = f.type(a);
    if (t.dtype != ir::DType::kI32)
      return error(ErrorCode::kUnsupported, f.name + " takes %" + f.value(a).name + " as " + t.to_string() + "; the runtime feeds i32 ids and an i32 position");
    args.push_back(t.shape.empty() ? position : tokens);
  }
  return args;
}

bool uses_library(const runtime::LoadedArtifact& artifact) {
  for (const auto& [id, region] : artifact.regions)
    for (const auto& k : region.kernels)
      for (const auto& l : k.candidate.launches)
        if (l.library) return true;
  return false;
}

// Decode's small all-reduces go over peer memory where every rank can reach the others and the peer
// kernel is the faster of the two on this machine (gpu/all_reduce_choice.h: both timed on a decode row,
// every rank deciding alike); otherwise, and for every larger all-reduce, NCCL. AGENTCOMPILE_PEER_ALL_REDUCE
// set to 0 keeps everything on NCCL, set to 1 takes the peer kernel whatever the timing says. The chosen
// transport's decode row is timed on every path, forced or not (EngineInfo::all_reduce_us). A timing
// that fails is an error, not a quiet NCCL: the other ranks may have timed and chosen the peer kernel,
// and a rank on another transport would leave them waiting. `peer_cubin` is null where the artifact
// predates the peer kernel.
struct AllReduceChoice {
  std::string transport;  // EngineInfo::all_reduce's word
  double us = 0;          // one decode-row all-reduce on it, the ranks' mean
};

Expected<AllReduceChoice> choose_all_reduce(gpu::NcclCommunicator& communicator, const std::vector<char>* peer_cubin,
                                            const frontend::ModelConfig& c, gpu::CudaContext& context, int device, bool programmatic,
                                            const std::function<void(const std::string&)>& say) {
  const char* forced = std::getenv("AGENTCOMPILE_PEER_ALL_REDUCE");
  const std::string force = forced ? forced : "";
  const auto row = static_cast<size_t>(c.hidden_size);
  const std::string row_words = "a decode row of " + std::to_string(row) + " " + std::string(ir::dtype_name(c.dtype));
  auto microseconds = [](double us) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f us", us);
    return std::string(text);
  };
  auto nccl_only = [&](const std::string& why) -> Expected<AllReduceChoice> {
    AC_ASSIGN_OR_RETURN(const gpu::AllReduceTimes times, gpu::time_all_reduces(communicator, nullptr, row, c.dtype, context.stream()));
    say("tensor parallel: every all-reduce over NCCL (" + why + "; " + row_words + ": " + microseconds(times.nccl_us) + ")");
    return AllReduceChoice{"nccl", times.nccl_us};
  };
  if (force == "0") return nccl_only("AGENTCOMPILE_PEER_ALL_REDUCE=0");
  if (!peer_cubin) return nccl_only("the artifact predates the peer all-reduce kernel");
  auto peer = gpu::PeerAllReduce::create(communicator, *peer_cubin, context.stream(), device);
  if (!peer) return nccl_only(peer.status().message());  // every rank alike
  (*peer)->set_programmatic(programmatic);
  const std::string limit = std::to_string(gpu::PeerAllReduce::kMaxBytes >> 10) + " KiB";
  if (!gpu::PeerAllReduce::takes(row, c.dtype))  // the same on every rank: one config
    return nccl_only(row_words + " is larger than the peer kernel's " + limit);
  AC_ASSIGN_OR_RETURN(const gpu::AllReduceTimes times, gpu::time_all_reduces(communicator, peer->get(), row, c.dtype, context.stream()));
  const std::string measured = row_words + ": NCCL " + microseconds(times.nccl_us) + ", peer kernel " + microseconds(times.peer_us);
  if (force != "1" && !times.peer_faster()) {
    say("tensor parallel: every all-reduce over NCCL (" + measured + ")");
    return AllReduceChoice{"nccl", times.nccl_us};
  }
  say("tensor parallel: all-reduces up to " + limit + " over peer memory, larger over NCCL (" +
      (force == "1" ? "AGENTCOMPILE_PEER_ALL_REDUCE=1; " : "") + measured + ")");
  communicator.use_peer_all_reduce(std::move(*peer));
  return AllReduceChoice{"peer", times.peer_us};
}

}  // namespace

Status Engine::Impl::load(const EngineOptions& options, const ProgressFn& progress) {
  options_ = options;
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  // Model and IR (host only).
  AC_ASSIGN_OR_RETURN(const frontend::WeightFormatOptions formats,
                      frontend::weight_format_options(options.compile.quantize, options.compile.dequantize, /*gpu=*/true,
                                                                      options.compile.quantize_head));
  AC_ASSIGN_OR_RETURN(source_, frontend::open_model(options.model, /*with_weights=*/true, formats));
  if (!source_.weights)
    return error(ErrorCode::kInvalidArgument, options.model.string() + " has a configuration but no weights; the engine needs a checkpoint or a GGUF file");
  if (!source_.is_language_model())
    return error(ErrorCode::kInvalidArgument, options.model.string() + " is a captured module, not a language model: it has no generation; run its function with `agentcompile run-function`");
  AC_ASSIGN_OR_RETURN(emit::ModelModule prepared, emit::model_module(source_, options.compile.batch_decode,
                                                                     {options.compile.tensor_parallel, options.compile.rank}));
  module_ = std::move(prepared.module);
  const std::string ir_text = std::move(prepared.ir_text);

  // Artifact: one that fits this model on this GPU (the runtime never compiles; include/agentcompile/first_use.h
  // does). The device is probed without initializing CUDA here, so a load refused for want of an
  // artifact leaves this process free to compile one (which forks workers).
  const Expected<gpu::DeviceInfo> device = gpu::device_here();
  if (!device)
    return error(ErrorCode::kUnsupported, "the engine runs on an NVIDIA GPU and found none usable (" + device.status().message() +
                                              "); `agentcompile reference` runs a model on the CPU");
  AC_ASSIGN_OR_RETURN(artifact_, runtime::load_fitting_artifact(options, source_.config, ir_text, gpu::nvrtc_arch(*device)));
  const ir::Function* prefill_fn = module_.find_function("prefill");
  const ir::Function* decode_fn = module_.find_function("decode");
  if (!prefill_fn || !decode_fn) return error(ErrorCode::kInternal, "the module lacks a prefill or decode function");
  if (!artifact_.functions.count("prefill") || !artifact_.functions.count("decode"))
    return error(ErrorCode::kMismatch, artifact_.dir.string() + ": the artifact lacks the prefill or decode function");
  const ir::Function* batch_fn = nullptr;
  if (options.batch_slots < 0 || options.batch_slots > kMaxBatchRows)
    return error(ErrorCode::kInvalidArgument, "batch_slots " + std::to_string(options.batch_slots) + " is outside 0.." + std::to_string(kMaxBatchRows));
  if (options.batch_slots > 0) {
    batch_fn = module_.find_function(ir::kDecodeBatchFunction);
    if (!batch_fn || !artifact_.functions.count(ir::kDecodeBatchFunction))
      return error(ErrorCode::kMismatch, artifact_.dir.string() + ": batched decode needs decode_batch, which the artifact lacks "
                                                                  "(compile with --batch-decode)");
  }

  AC_ASSIGN_OR_RETURN(context_, gpu::CudaContext::create(options.device));
  const auto& c = source_.config;
  info.model_type = c.model_type;
  info.dtype = std::string(ir::dtype_name(c.dtype));
  info.gpu = context_->info().name;
  info.artifact = artifact_.dir.string();
  info.artifact_key = artifact_.key;
  info.vocab_size = c.vocab_size;
  info.cuda_graph = options.cuda_graph;
  for (int64_t id : c.eos_token_ids) info.eos_ids.push_back(static_cast<int32_t>(id));
  eos_.insert(info.eos_ids.begin(), info.eos_ids.end());

  // Memory: decide the context, or refuse with the estimate.
  AC_ASSIGN_OR_RETURN(runtime::MemoryBudget budget, runtime::plan_budget(module_, *prefill_fn, *decode_fn, artifact_, c, options, batch_fn));
  info.max_context = budget.context;
  info.max_context_reason = budget.context_reason;
  info.prefill_chunk = budget.prefill_chunk;
  say(budget.summary);

  if (uses_library(artifact_)) {
    AC_ASSIGN_OR_RETURN(library_, gpu::LibraryRunner::create(context_->stream()));
  }
  if (options.compile.tensor_parallel >= 1) {
    // Every rank's engine reaches this point together: ncclCommInitRank waits for all of them.
    const int ranks = options.compile.tensor_parallel;
    gpu::NcclUniqueId id{};
    if (ranks == 1) {
      AC_ASSIGN_OR_RETURN(id, gpu::NcclCommunicator::unique_id());
    } else if (options.nccl_id.size() != sizeof id.internal) {
      return error(ErrorCode::kInvalidArgument, "tensor parallelism over " + std::to_string(ranks) + " ranks needs the ranks' NCCL id (" +
                                                    std::to_string(sizeof id.internal) + " bytes, nccl_unique_id())");
    } else {
      std::memcpy(id.internal, options.nccl_id.data(), sizeof id.internal);
    }
    say("tensor parallel: rank " + std::to_string(options.compile.rank) + " of " + std::to_string(ranks) + " on GPU " + std::to_string(options.device));
    AC_ASSIGN_OR_RETURN(communicator_, gpu::NcclCommunicator::create(ranks, options.compile.rank, id));
    info.all_reduce = "nccl";
    if (library_) library_->set_communicator(communicator_.get());
    if (ranks > 1) {
      const auto peer_cubin = artifact_.runtime_cubins.find(emit::kPeerAllReduceKernel.role);
      const bool programmatic = options.programmatic_launch && context_->info().sm_major >= 9;
      AC_ASSIGN_OR_RETURN(const AllReduceChoice choice,
                          choose_all_reduce(*communicator_, peer_cubin == artifact_.runtime_cubins.end() ? nullptr : &peer_cubin->second, c,
                                            *context_, options.device, programmatic, say));
      info.all_reduce = choice.transport;
      info.all_reduce_us = choice.us;
    }
  }
  say("uploading weights (" + std::to_string(runtime::DeviceWeights::bytes_needed(module_) >> 20) + " MiB)");
  AC_ASSIGN_OR_RETURN(auto derived, runtime::compute_derived_weights(module_, *source_.weights));
  AC_ASSIGN_OR_RETURN(weights_, runtime::DeviceWeights::upload(module_, *source_.weights, derived.get()));
  AC_ASSIGN_OR_RETURN(cache_, runtime::KvCache::allocate(module_, budget.context));
  const auto sampler_cubin = artifact_.runtime_cubins.find(emit::kSamplerKernel.role);
  if (sampler_cubin == artifact_.runtime_cubins.end()) return error(ErrorCode::kInternal, artifact_.dir.string() + ": no sampler kernel was read");
  AC_ASSIGN_OR_RETURN(sampler_, DeviceSampler::create(c.vocab_size, budget.context, sampler_cubin->second));
  AC_ASSIGN_OR_RETURN(prefill_tokens_, gpu::DeviceBuffer::allocate(static_cast<size_t>(budget.prefill_chunk) * sizeof(int32_t)));

  runtime::FunctionExecutor::Bindings bind{&weights_, &cache_, library_.get(), {}};
  AC_ASSIGN_OR_RETURN(bind.arguments, function_arguments(*prefill_fn, prefill_tokens_.ptr(), sampler_->position()));
  AC_ASSIGN_OR_RETURN(prefill_, runtime::FunctionExecutor::create(*prefill_fn, artifact_, kernels_, bind, budget.prefill_chunk));
  AC_ASSIGN_OR_RETURN(bind.arguments, function_arguments(*decode_fn, sampler_->next_token(), sampler_->position()));
  info.programmatic_launch = options.programmatic_launch && context_->info().sm_major >= 9;
  bind.programmatic_launch = info.programmatic_launch;
  AC_ASSIGN_OR_RETURN(decode_, runtime::FunctionExecutor::create(*decode_fn, artifact_, kernels_, bind, 1));
  AC_ASSIGN_OR_RETURN(CUdeviceptr decode_logits, decode_->result_address(1, 0));
  AC_TRY(sampler_->configure(DeviceSampler::Use::kDecode, decode_logits, 1));

  info.weight_bytes = static_cast<int64_t>(weights_.bytes());
  info.decode_weight_bytes = static_cast<int64_t>(analysis::weight_traffic(module_, "decode").bytes);
  for (const ir::Node& node : decode_fn->nodes) info.decode_all_reduces += node.op == ir::OpKind::kAllReduce ? 1 : 0;
  {
    std::string words = options.compile.dequantize ? "--dequantize" : "";
    if (!options.compile.quantize.empty()) words += (words.empty() ? "" : " ") + ("--quantize " + options.compile.quantize);
    if (!options.compile.quantize_head.empty()) words += (words.empty() ? "" : " ") + ("--quantize-head " + options.compile.quantize_head);
    info.weight_formats = words.empty() ? "as stored" : words;
  }
  info.kv_cache_bytes = static_cast<int64_t>(cache_.bytes());
  info.activation_bytes = static_cast<int64_t>(prefill_->arena_bytes() + decode_->arena_bytes());
  info.workspace_bytes = static_cast<int64_t>(prefill_->workspace_bytes() + decode_->workspace_bytes());
  AC_ASSIGN_OR_RETURN(size_t decode_launches, decode_->launches(1, 1));
  info.decode_launches = decode_launches + DeviceSampler::kLaunches;

  if (batch_fn) {
    // decode_batch over its own cache of slots; its arguments (ids, positions, row bases) in order.
    AC_ASSIGN_OR_RETURN(batch_cache_, runtime::KvCache::allocate(module_, budget.context * options.batch_slots));
    AC_ASSIGN_OR_RETURN(batch_args_, gpu::DeviceBuffer::allocate(3 * kMaxBatchRows * sizeof(int32_t)));
    runtime::FunctionExecutor::Bindings batch_bind{&weights_, &batch_cache_, library_.get(), {}};
    if (batch_fn->args.size() != 3) return error(ErrorCode::kInternal, "decode_batch must take ids, positions and row bases");
    for (size_t a = 0; a < 3; ++a) batch_bind.arguments.push_back(batch_args_.ptr() + a * kMaxBatchRows * sizeof(int32_t));
    batch_bind.programmatic_launch = info.programmatic_launch;
    AC_ASSIGN_OR_RETURN(batch_, runtime::FunctionExecutor::create(*batch_fn, artifact_, kernels_, batch_bind, kMaxBatchRows));
    info.batch_slots = options.batch_slots;
    for (int64_t slot = 0; slot < options.batch_slots; ++slot) {
      AC_ASSIGN_OR_RETURN(runtime::KvCache view, batch_cache_.rows_view(slot * budget.context, budget.context));
      slot_caches_.push_back(std::move(view));
    }
    info.kv_cache_bytes += static_cast<int64_t>(batch_cache_.bytes());
    info.activation_bytes += static_cast<int64_t>(batch_->arena_bytes());
    info.workspace_bytes += static_cast<int64_t>(batch_->workspace_bytes());
    if (const auto cubin = artifact_.runtime_cubins.find(emit::kRowArgmaxKernel.role); cubin != artifact_.runtime_cubins.end()) {
      AC_ASSIGN_OR_RETURN(row_argmax_module_, gpu::CudaModule::load(cubin->second, "the row argmax kernel"));
      AC_ASSIGN_OR_RETURN(row_argmax_, row_argmax_module_->function(emit::kRowArgmaxKernel.kernel));
      AC_ASSIGN_OR_RETURN(row_argmax_out_, gpu::DeviceBuffer::allocate(kMaxBatchRows * sizeof(int32_t)));
    }
  }

  AC_ASSIGN_OR_RETURN(events_, runtime::StepEvents::create());
  if (options.cuda_graph) {
    // One graph per decode bucket the cache reaches: each replays the kernels selected for its
    // range of contexts, with the position read on the device.
    const auto& buckets = decode_->buckets();
    graphs_.resize(buckets.size());
    for (size_t b = 0; b < buckets.size(); ++b) {
      if (!decode_->prepared(b)) continue;
      const int64_t context = std::max<int64_t>(1, buckets[b].min_context);
      AC_ASSIGN_OR_RETURN(graphs_[b], runtime::DecodeGraph::capture(context_->stream(), [this, context] { return run_decode_step(context); }));
    }
    // decode_batch: one graph per row count (its buckets are of the rows alone; the step reads its ids,
    // positions and row bases from batch_args_, which decode_rows fills before the replay). A row
    // count whose bucket has no kernels gets no graph: decode_rows enqueues it, where that is an error naming it.
    if (batch_) {
      batch_graphs_.resize(static_cast<size_t>(kMaxBatchRows) + 1);
      for (int64_t rows = 1; rows <= kMaxBatchRows; ++rows) {
        AC_ASSIGN_OR_RETURN(const size_t bucket, batch_->bucket_index(rows, batch_cache_.rows()));
        if (!batch_->prepared(bucket)) continue;
        AC_ASSIGN_OR_RETURN(batch_graphs_[static_cast<size_t>(rows)],
                            runtime::DecodeGraph::capture(context_->stream(), [this, rows] {
                              return batch_->enqueue(rows, batch_cache_.rows(), context_->stream());
                            }));
      }
      // The decode step on each slot (a sequence decoding alone), captured now rather than on a
      // sequence's first step.
      for (int32_t slot = 0; slot < static_cast<int32_t>(slot_caches_.size()); ++slot) {
        AC_TRY(use_cache(*decode_, slot_caches_[static_cast<size_t>(slot)]));
        for (size_t b = 0; b < buckets.size(); ++b) {
          if (!decode_->prepared(b)) continue;
          const int64_t context = std::max<int64_t>(1, buckets[b].min_context);
          AC_ASSIGN_OR_RETURN(slot_graphs_[std::make_pair(slot, b)], runtime::DecodeGraph::capture(context_->stream(), [this, context] {
                                return decode_->enqueue(1, context, context_->stream());
                              }));
        }
      }
      AC_TRY(use_cache(*decode_, cache_));
    }
  }
  AC_TRY(context_->synchronize());
  return Status::ok();
}

Status Engine::Impl::run_decode_step(int64_t context) {
  AC_TRY(decode_->enqueue(1, context, context_->stream()));
  return sampler_->enqueue(DeviceSampler::Use::kDecode, context_->stream(), info.programmatic_launch);
}

Status Engine::Impl::decode_step(int64_t context) {
  if (graphs_.empty()) return run_decode_step(context);
  AC_ASSIGN_OR_RETURN(const size_t bucket, decode_->bucket_index(1, context));
  if (!graphs_[bucket]) return error(ErrorCode::kInternal, "no decode graph was captured for a context of " + std::to_string(context));
  return graphs_[bucket]->launch(context_->stream());
}

Status Engine::Impl::check_ids(std::span<const int32_t> ids, const char* what) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= info.vocab_size)
      return error(ErrorCode::kInvalidArgument, std::string(what) + " token " + std::to_string(i) + " is " + std::to_string(ids[i]) +
                                                    ", outside the vocabulary of " + std::to_string(info.vocab_size));
  return Status::ok();
}

// Prefill in chunks of at most prefill_chunk tokens; the sampler then draws the first new token.
Status Engine::Impl::run_prefill(std::span<const int32_t> prompt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t last = (n - 1) % info.prefill_chunk + 1;
  AC_ASSIGN_OR_RETURN(CUdeviceptr logits, prefill_->result_address(last, 0));
  AC_TRY(sampler_->configure(DeviceSampler::Use::kPrefill, logits, static_cast<int>(last)));
  for (int64_t start = 0; start < n; start += info.prefill_chunk) {
    const int64_t tokens = std::min(info.prefill_chunk, n - start);
    AC_TRY(sampler_->set_position(start));
    AC_TRY(prefill_tokens_.upload(prompt.data() + start, static_cast<size_t>(tokens) * sizeof(int32_t)));
    AC_TRY(prefill_->enqueue(tokens, start + tokens, context_->stream()));
  }
  return sampler_->enqueue(DeviceSampler::Use::kPrefill, context_->stream());
}

Expected<GenerateResult> Engine::Impl::generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token) {
  AC_TRY(context_->make_current());
  if (prompt.empty()) return error(ErrorCode::kInvalidArgument, "the prompt is empty");
  AC_TRY(check_ids(prompt, "prompt"));
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n > info.max_context)
    return error(ErrorCode::kInvalidArgument, "the prompt has " + std::to_string(n) + " tokens, longer than the context of " +
                                                  std::to_string(info.max_context) + " (--max-context)");
  if (options.max_new_tokens < 1) return error(ErrorCode::kInvalidArgument, "asked for " + std::to_string(options.max_new_tokens) + " new tokens");
  if (n + options.max_new_tokens - 1 > info.max_context)
    return error(ErrorCode::kInvalidArgument, std::to_string(n) + " prompt tokens + " + std::to_string(options.max_new_tokens) +
                                                  " new tokens need " + std::to_string(n + options.max_new_tokens - 1) +
                                                  " cache rows; the KV cache holds " + std::to_string(info.max_context) +
                                                  " (raise --max-context or lower -n)");
  std::set<int32_t> stops;
  if (options.stop_at_eos) stops = eos_;
  stops.insert(options.extra_stop_ids.begin(), options.extra_stop_ids.end());

  AC_TRY(use_cache(*prefill_, cache_));
  AC_TRY(use_cache(*decode_, cache_));
  AC_TRY(sampler_->reset(prompt, options.sampling));
  const CUstream stream = context_->stream();
  AC_TRY(events_->record_start(stream));
  AC_TRY(run_prefill(prompt));
  AC_TRY(events_->record_step(0, stream));

  // The step that produces token `step` feeds the token at position n + step - 1, so its attention
  // reads n + step keys.
  runtime::DecodeLoop loop{options.max_new_tokens, [&](int64_t step) -> Status { return decode_step(n + step); },
                           [&](int64_t step) { return sampler_->token_of_step(step); }};
  AC_ASSIGN_OR_RETURN(GenerateResult result, loop.run(*events_, stream, stops, on_token));
  AC_TRY(context_->synchronize());  // steps queued past a stop finish before the next call resets state
  return result;
}

Expected<std::vector<float>> Engine::Impl::teacher_forced_logits(std::span<const int32_t> ids, int64_t prefill) {
  AC_TRY(context_->make_current());
  const int64_t n = static_cast<int64_t>(ids.size());
  AC_TRY(check_ids(ids, "input"));
  if (n < 1 || prefill < 1 || prefill > n)
    return error(ErrorCode::kInvalidArgument, "teacher forcing needs 1 <= prefill (" + std::to_string(prefill) + ") <= ids (" + std::to_string(n) + ")");
  if (n > info.max_context) return error(ErrorCode::kInvalidArgument, std::to_string(n) + " ids exceed the context of " + std::to_string(info.max_context));
  if (prefill > info.prefill_chunk)
    return error(ErrorCode::kInvalidArgument, "teacher forcing prefills up to " + std::to_string(info.prefill_chunk) + " tokens in one call");
  const size_t V = static_cast<size_t>(info.vocab_size);
  std::vector<float> logits(static_cast<size_t>(n) * V);
  AC_TRY(use_cache(*prefill_, cache_));
  AC_TRY(use_cache(*decode_, cache_));
  AC_TRY(sampler_->reset({}, SamplingOptions{}));
  const gpu::DriverApi& api = *gpu::driver_api();
  for (int64_t t = 1; t <= prefill; ++t) {
    AC_TRY(sampler_->set_position(0));
    AC_TRY(prefill_tokens_.upload(ids.data(), static_cast<size_t>(t) * sizeof(int32_t)));
    AC_TRY(prefill_->enqueue(t, t, context_->stream()));
    AC_ASSIGN_OR_RETURN(CUdeviceptr out, prefill_->result_address(t, 0));
    AC_TRY(context_->synchronize());
    AC_CU(api.MemcpyDtoH(logits.data() + static_cast<size_t>(t - 1) * V, out, V * sizeof(float)), "cuMemcpyDtoH(prefill logits)");
  }
  AC_TRY(sampler_->set_position(prefill));
  AC_ASSIGN_OR_RETURN(CUdeviceptr out, decode_->result_address(1, 0));
  for (int64_t i = prefill; i < n; ++i) {
    AC_TRY(sampler_->set_next_token(ids[static_cast<size_t>(i)]));
    AC_TRY(decode_step(i + 1));
    AC_TRY(context_->synchronize());
    AC_CU(api.MemcpyDtoH(logits.data() + static_cast<size_t>(i) * V, out, V * sizeof(float)), "cuMemcpyDtoH(decode logits)");
  }
  return logits;
}

Status Engine::Impl::use_cache(runtime::FunctionExecutor& f, const runtime::KvCache& cache) {
  return f.cache() == &cache ? Status::ok() : f.bind_cache(cache);
}

Expected<DecodedRows> Engine::Impl::decode_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                               std::span<const int32_t> slots, std::span<const RowNeed> needs) {
  AC_TRY(context_->make_current());
  if (!batch_) return error(ErrorCode::kInvalidArgument, "the engine was loaded without batch slots (EngineOptions::batch_slots)");
  const auto rows = static_cast<int64_t>(tokens.size());
  if (rows < 1 || positions.size() != tokens.size() || slots.size() != tokens.size() || needs.size() != tokens.size())
    return error(ErrorCode::kInvalidArgument, "a batched step takes rows with one position, slot and need each; got " + std::to_string(tokens.size()) +
                                                  " ids, " + std::to_string(positions.size()) + " positions, " + std::to_string(slots.size()) +
                                                  " slots, " + std::to_string(needs.size()) + " needs");
  AC_TRY(check_ids(tokens, "row"));
  std::vector<int32_t> bases(tokens.size());
  bool one_sequence = true;  // every row the same slot's, at consecutive positions
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (slots[i] < 0 || slots[i] >= info.batch_slots || positions[i] < 0 || positions[i] >= info.max_context)
      return error(ErrorCode::kInvalidArgument, "row " + std::to_string(i) + ": slot " + std::to_string(slots[i]) + " and position " +
                                                    std::to_string(positions[i]) + " must lie in 0.." + std::to_string(info.batch_slots - 1) +
                                                    " and 0.." + std::to_string(info.max_context - 1));
    bases[i] = static_cast<int32_t>(slots[i] * info.max_context);
    if (i > 0) one_sequence &= slots[i] == slots[0] && positions[i] == positions[i - 1] + 1;
  }
  // One sequence's rows run on its slot through prefill or the decode step, where prefill's one
  // logits row (the chunk's last) is all the rows need.
  const bool only_last = std::all_of(needs.begin(), needs.end() - 1, [](RowNeed n) { return n == RowNeed::kNothing; });
  if (one_sequence && only_last && rows <= info.prefill_chunk) return slot_rows(tokens, positions[0], slots[0], needs);
  if (rows > kMaxBatchRows)
    return error(ErrorCode::kInvalidArgument, "a batched step takes 1.." + std::to_string(kMaxBatchRows) + " rows (up to " +
                                                  std::to_string(info.prefill_chunk) + " of one sequence whose rows before the last need nothing); got " +
                                                  std::to_string(rows));
  const size_t stride = kMaxBatchRows * sizeof(int32_t), bytes = tokens.size() * sizeof(int32_t);
  AC_TRY(batch_args_.upload(tokens.data(), bytes, 0));
  AC_TRY(batch_args_.upload(positions.data(), bytes, stride));
  AC_TRY(batch_args_.upload(bases.data(), bytes, 2 * stride));
  // decode_batch's buckets are of the batch alone; the context argument only bounds the cache.
  if (batch_graphs_.empty() || !batch_graphs_[static_cast<size_t>(rows)]) {
    AC_TRY(batch_->enqueue(rows, batch_cache_.rows(), context_->stream()));
  } else {
    AC_TRY(batch_graphs_[static_cast<size_t>(rows)]->launch(context_->stream()));
  }
  AC_ASSIGN_OR_RETURN(CUdeviceptr out, batch_->result_address(rows, 0));
  return gather_rows(out, rows, needs);
}

Expected<DecodedRows> Engine::Impl::slot_rows(std::span<const int32_t> tokens, int32_t start, int32_t slot, std::span<const RowNeed> needs) {
  const runtime::KvCache& cache = slot_caches_[static_cast<size_t>(slot)];
  const auto rows = static_cast<int64_t>(tokens.size());
  const CUstream stream = context_->stream();
  CUdeviceptr out = 0;
  if (rows == 1) {
    AC_TRY(use_cache(*decode_, cache));
    AC_TRY(sampler_->set_next_token_at(tokens[0], start));
    const int64_t context = start + 1;
    if (graphs_.empty()) {
      AC_TRY(decode_->enqueue(1, context, stream));
    } else {
      AC_ASSIGN_OR_RETURN(const size_t bucket, decode_->bucket_index(1, context));
      const auto graph = slot_graphs_.find({slot, bucket});  // captured at load for every prepared bucket
      if (graph == slot_graphs_.end())
        return error(ErrorCode::kInternal, "no decode graph was captured for slot " + std::to_string(slot) + " at a context of " + std::to_string(context));
      AC_TRY(graph->second->launch(stream));
    }
    AC_ASSIGN_OR_RETURN(out, decode_->result_address(1, 0));
  } else {
    AC_TRY(use_cache(*prefill_, cache));
    AC_TRY(sampler_->set_position(start));
    AC_TRY(prefill_tokens_.upload(tokens.data(), tokens.size() * sizeof(int32_t)));
    AC_TRY(prefill_->enqueue(rows, start + rows, stream));
    AC_ASSIGN_OR_RETURN(out, prefill_->result_address(rows, 0));
  }
  // The one logits row stands for the last row; the rows before it need nothing.
  AC_ASSIGN_OR_RETURN(DecodedRows last, gather_rows(out, 1, needs.subspan(needs.size() - 1)));
  DecodedRows result;
  result.argmax.assign(static_cast<size_t>(rows), -1);
  result.argmax.back() = last.argmax.front();
  result.logits = std::move(last.logits);
  return result;
}

Expected<DecodedRows> Engine::Impl::gather_rows(CUdeviceptr out, int64_t rows, std::span<const RowNeed> needs) {
  const bool argmax_wanted = std::find(needs.begin(), needs.end(), RowNeed::kArgmax) != needs.end();
  if (argmax_wanted && row_argmax_) {
    const RowArgmaxArgs args{out, row_argmax_out_.ptr(), static_cast<int32_t>(info.vocab_size), static_cast<int32_t>(rows)};
    AC_TRY(gpu::launch_kernel(row_argmax_, emit::kRowArgmaxKernel.kernel, static_cast<unsigned>(rows), 1, 1, 1024, 0, context_->stream(), &args));
  }
  AC_TRY(context_->synchronize());
  const size_t V = static_cast<size_t>(info.vocab_size);
  DecodedRows result;
  result.argmax.assign(static_cast<size_t>(rows), -1);
  std::vector<int32_t> device_argmax(static_cast<size_t>(rows));
  if (argmax_wanted && row_argmax_) AC_TRY(row_argmax_out_.download(device_argmax.data(), device_argmax.size() * sizeof(int32_t)));
  std::vector<float> row;  // an argmax row taken on the host (an artifact without the kernel)
  for (int64_t r = 0; r < rows; ++r) {
    const RowNeed need = needs[static_cast<size_t>(r)];
    if (need == RowNeed::kNothing) continue;
    const CUdeviceptr at = out + static_cast<CUdeviceptr>(static_cast<size_t>(r) * V * sizeof(float));
    if (need == RowNeed::kArgmax && row_argmax_) {
      result.argmax[static_cast<size_t>(r)] = device_argmax[static_cast<size_t>(r)];
    } else if (need == RowNeed::kArgmax) {  // an artifact without the kernel: the row comes back, the host takes its argmax
      row.resize(V);
      AC_CU(gpu::driver_api()->MemcpyDtoH(row.data(), at, V * sizeof(float)), "cuMemcpyDtoH(logits row)");
      result.argmax[static_cast<size_t>(r)] = row_argmax(row);
    } else {
      const size_t offset = result.logits.size();
      result.logits.resize(offset + V);
      AC_CU(gpu::driver_api()->MemcpyDtoH(result.logits.data() + offset, at, V * sizeof(float)), "cuMemcpyDtoH(logits row)");
    }
    if (need == RowNeed::kArgmax && result.argmax[static_cast<size_t>(r)] < 0)
      return error(ErrorCode::kInternal, "row " + std::to_string(r) + " of a batched step: its logits hold no number (all NaN)");
  }
  return result;
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Expected<std::string> nccl_unique_id() {
  AC_ASSIGN_OR_RETURN(const gpu::NcclUniqueId id, gpu::NcclCommunicator::unique_id());
  return std::string(id.internal, sizeof id.internal);
}

Expected<std::unique_ptr<Engine>> Engine::load(const EngineOptions& options, const ProgressFn& progress) {
  auto impl = std::make_unique<Impl>();
  AC_TRY(impl->load(options, progress));
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Expected<GenerateResult> Engine::generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token) {
  return impl_->generate(prompt, options, on_token);
}

Expected<std::vector<float>> Engine::teacher_forced_logits(std::span<const int32_t> ids, int64_t prefill) {
  return impl_->teacher_forced_logits(ids, prefill);
}

Expected<std::vector<float>> Engine::decode_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                                 std::span<const int32_t> slots) {
  const std::vector<RowNeed> every(tokens.size(), RowNeed::kLogits);
  AC_ASSIGN_OR_RETURN(DecodedRows rows, impl_->decode_rows(tokens, positions, slots, every));
  return std::move(rows.logits);
}

Expected<DecodedRows> Engine::decode_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions, std::span<const int32_t> slots,
                                          std::span<const RowNeed> needs) {
  return impl_->decode_rows(tokens, positions, slots, needs);
}

const EngineInfo& Engine::info() const { return impl_->info; }

}  // namespace agentcompile
