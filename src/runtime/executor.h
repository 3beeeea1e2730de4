// Runs one IR function (prefill or decode) as the artifact says: for every region site, in order,
// the kernel selected for the call's bucket (of T for prefill, of the context for decode), bound to the site's buffers through the one
// calling convention (ac::RegionArgs: inputs, outputs, weights and states by interface slot, plus
// workspace, T and L). Library launches (cuBLAS) go through the tune stage's runner. Every launch is
// asynchronous on the engine's stream, so a decode call can be captured into a CUDA graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "runtime/artifact_reader.h"
#include "runtime/device_weights.h"
#include "runtime/kv_cache.h"
#include "runtime/memory_plan.h"
#include "gpu/cuda_driver.h"
#include "gpu/library_calls.h"

namespace agentcompile::runtime {

// The loaded modules of every selected kernel, shared by the functions that use them.
class KernelSet {
 public:
  struct Loaded {
    const plan::Candidate* candidate = nullptr;
    std::unique_ptr<gpu::CudaModule> module;
    std::vector<CUfunction> functions;  // per launch; null for library launches
  };
  // Loads (once) the kernel selected for `region` at `bucket`. Errors name region and bucket.
  Expected<const Loaded*> get(const LoadedArtifact& artifact, const std::string& region, const std::string& bucket);

 private:
  std::map<std::pair<std::string, size_t>, std::unique_ptr<Loaded>> loaded_;
};

class FunctionExecutor {
 public:
  struct Bindings {
    const DeviceWeights* weights = nullptr;
    const KvCache* cache = nullptr;
    gpu::LibraryRunner* library = nullptr;  // needed only when a selected kernel is a library call
    std::vector<CUdeviceptr> arguments;      // per function argument (tokens, pos)
    bool programmatic_launch = false;        // launch generated kernels with programmatic dependent launch (sm_90+)
  };

  // Workspace the selected kernels of `function` need for calls of 1..max_tokens tokens (shared by
  // their launches, which run one after another).
  static int64_t workspace_bytes_needed(const LoadedArtifact& artifact, const std::string& function, int64_t max_tokens);

  // Loads every kernel the function can use for calls of 1..max_tokens tokens and plans its arena.
  static Expected<std::unique_ptr<FunctionExecutor>> create(const ir::Function& function, const LoadedArtifact& artifact,
                                                            KernelSet& kernels, Bindings bindings, int64_t max_tokens);

  // Runs later calls on `cache` (another cache of as many rows, e.g. a slot of a batched cache:
  // KvCache::rows_view), which must outlive them. A CUDA graph captured earlier keeps the cache it
  // was captured with.
  Status bind_cache(const KvCache& cache);
  const KvCache* cache() const { return bindings_.cache; }

  // Enqueues the whole function for a call of `tokens` tokens whose attention reads `context` keys
  // (the call's last position + 1) on `stream`.
  Status enqueue(int64_t tokens, int64_t context, CUstream stream);
  // Which of the function's buckets serves such a call (the runtime keeps a decode graph per bucket).
  Expected<size_t> bucket_index(int64_t tokens, int64_t context) const;
  const std::vector<BucketRecord>& buckets() const { return record_->buckets; }
  // False for buckets this executor was not prepared for (past max_tokens or the cache's rows).
  bool prepared(size_t bucket) const { return site_kernels_.empty() || site_kernels_.front()[bucket] != nullptr; }
  // Device address of result `index` after a call of `tokens` tokens.
  Expected<CUdeviceptr> result_address(int64_t tokens, size_t index) const;

  size_t arena_bytes() const { return plan_.arena_bytes; }
  size_t workspace_bytes() const { return workspace_.bytes(); }
  size_t sites() const { return record_->sites.size(); }
  // Kernel launches one call makes (library calls count one each).
  Expected<size_t> launches(int64_t tokens, int64_t context) const;

 private:
  FunctionExecutor() = default;
  Expected<CUdeviceptr> address_of(ir::ValueId value, const ir::SymbolBindings& at) const;
  // The kernel of `site` for the bucket at `bucket_index` of the function's buckets (loaded at create).
  const KernelSet::Loaded* kernel_for(size_t site, size_t bucket_index) const { return site_kernels_[site][bucket_index]; }

  const ir::Function* function_ = nullptr;
  const FunctionRecord* record_ = nullptr;
  Bindings bindings_;
  int64_t max_tokens_ = 1;
  MemoryPlan plan_;
  gpu::DeviceBuffer arena_;
  gpu::DeviceBuffer workspace_;
  // Per site: weights and states bound once, and the kernel per bucket (null past max_tokens or the
  // cache's rows).
  std::vector<std::vector<CUdeviceptr>> site_weights_, site_states_;
  std::vector<std::vector<const KernelSet::Loaded*>> site_kernels_;
};

}  // namespace agentcompile::runtime
