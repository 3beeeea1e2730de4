// Binding region sites to their selected kernels and launching them.
#include "runtime/executor.h"

#include "gpu/region_args.h"

namespace agentcompile::runtime {

Expected<const KernelSet::Loaded*> KernelSet::get(const LoadedArtifact& artifact, const std::string& region, const std::string& bucket) {
  auto r = artifact.regions.find(region);
  if (r == artifact.regions.end()) return error(ErrorCode::kNotFound, "the artifact has no region " + region);
  auto s = r->second.selection.find(bucket);
  if (s == r->second.selection.end()) {
    const auto why = r->second.reasons.find(bucket);
    const std::string reason = why != r->second.reasons.end() && !why->second.empty() ? why->second : "no candidate was selected";
    return error(ErrorCode::kNotFound, "region " + region + " has no kernel for bucket " + bucket + " (" + reason +
                                           "); the model cannot run from this artifact");
  }
  const auto key = std::make_pair(region, s->second);
  if (auto it = loaded_.find(key); it != loaded_.end()) return it->second.get();
  const SelectedKernel& selected = r->second.kernels[s->second];
  auto loaded = std::make_unique<Loaded>();
  loaded->candidate = &selected.candidate;
  if (!selected.cubin.empty()) {
    AC_ASSIGN_OR_RETURN(loaded->module, gpu::CudaModule::load(selected.cubin, selected.candidate.name()));
  }
  for (const auto& launch : selected.candidate.launches) {
    if (launch.library) {
      loaded->functions.push_back(nullptr);
      continue;
    }
    if (!loaded->module) return error(ErrorCode::kNotFound, "region " + region + ": kernel " + launch.kernel + " has no cubin");
    AC_ASSIGN_OR_RETURN(CUfunction fn, loaded->module->function(launch.kernel));
    loaded->functions.push_back(fn);  // gpu::launch_kernel raises the shared-memory limit when a launch needs it
  }
  const Loaded* out = loaded.get();
  loaded_.emplace(key, std::move(loaded));
  return out;
}

int64_t FunctionExecutor::workspace_bytes_needed(const LoadedArtifact& artifact, const std::string& function, int64_t max_tokens) {
  int64_t most = 0;
  const FunctionRecord& f = artifact.functions.at(function);
  for (const auto& site : f.sites) {
    const RegionRecord& region = artifact.regions.at(site.region);
    for (const auto& bucket : f.buckets) {
      auto s = region.selection.find(bucket.name);
      if (bucket.min_tokens > max_tokens || s == region.selection.end()) continue;
      const plan::Candidate& c = region.kernels[s->second].candidate;
      most = std::max(most, c.workspace_bytes_per_token * std::min(max_tokens, bucket.max_tokens) + c.workspace_bytes_fixed);
    }
  }
  return most;
}

Expected<std::unique_ptr<FunctionExecutor>> FunctionExecutor::create(const ir::Function& function, const LoadedArtifact& artifact,
                                                                     KernelSet& kernels, Bindings bindings, int64_t max_tokens) {
  auto record = artifact.functions.find(function.name);
  if (record == artifact.functions.end()) return error(ErrorCode::kNotFound, "the artifact has no function " + function.name);
  if (bindings.arguments.size() != function.args.size())
    return error(ErrorCode::kInternal, function.name + " takes " + std::to_string(function.args.size()) + " arguments");
  std::unique_ptr<FunctionExecutor> ex(new FunctionExecutor());
  ex->function_ = &function;
  ex->record_ = &record->second;
  ex->bindings_ = std::move(bindings);
  ex->max_tokens_ = max_tokens;
  const int64_t rows = ex->bindings_.cache->rows();
  AC_ASSIGN_OR_RETURN(ex->plan_, plan_memory(function, record->second.sites, ir::SymbolBindings{max_tokens, rows}));

  for (const auto& site : record->second.sites) {
    if (site.inputs.size() > gpu::kMaxSlots || site.outputs.size() > gpu::kMaxSlots || site.params.size() > gpu::kMaxSlots ||
        site.states.size() > gpu::kMaxStates)
      return error(ErrorCode::kUnsupported, "site " + std::to_string(site.site) + " (" + site.region + ") has more interface slots than RegionArgs holds");
    std::vector<CUdeviceptr> weights, states;
    for (const auto& p : site.params) {
      AC_ASSIGN_OR_RETURN(CUdeviceptr w, ex->bindings_.weights->address(p));
      weights.push_back(w);
    }
    ex->site_weights_.push_back(std::move(weights));
    std::vector<const KernelSet::Loaded*> per_bucket;
    for (const auto& bucket : record->second.buckets) {
      per_bucket.push_back(nullptr);
      if (bucket.min_tokens > max_tokens || bucket.min_context > rows) continue;
      AC_ASSIGN_OR_RETURN(const KernelSet::Loaded* k, kernels.get(artifact, site.region, bucket.name));
      per_bucket.back() = k;
      const bool library = std::any_of(k->candidate->launches.begin(), k->candidate->launches.end(), [](const plan::Launch& l) { return l.library; });
      if (library && !ex->bindings_.library)
        return error(ErrorCode::kInternal, "region " + site.region + " selected a library call but no library runner was given");
    }
    ex->site_kernels_.push_back(std::move(per_bucket));
  }
  AC_TRY(ex->bind_cache(*ex->bindings_.cache));
  const int64_t workspace = std::max<int64_t>(16, workspace_bytes_needed(artifact, function.name, max_tokens));
  auto arena = gpu::DeviceBuffer::allocate(std::max<size_t>(ex->plan_.arena_bytes, 16));
  if (!arena)
    return error(ErrorCode::kResourceExhausted, function.name + " activations for " + std::to_string(max_tokens) + " tokens (" +
                                                    std::to_string(ex->plan_.arena_bytes >> 20) + " MiB): " + arena.status().message());
  ex->arena_ = std::move(*arena);
  auto ws = gpu::DeviceBuffer::allocate(static_cast<size_t>(workspace));
  if (!ws) return error(ErrorCode::kResourceExhausted, function.name + " workspace (" + std::to_string(workspace >> 20) + " MiB): " + ws.status().message());
  ex->workspace_ = std::move(*ws);
  return ex;
}

Expected<CUdeviceptr> FunctionExecutor::address_of(ir::ValueId value, const ir::SymbolBindings& at) const {
  AC_ASSIGN_OR_RETURN(ResolvedValue r, resolve_value(*function_, value, at));
  const ValueHome& home = plan_.homes[static_cast<size_t>(r.root)];
  CUdeviceptr base = 0;
  switch (home.kind) {
    case ValueHome::Kind::kArena: base = arena_.ptr() + home.offset; break;
    case ValueHome::Kind::kArgument: base = bindings_.arguments[static_cast<size_t>(home.argument)]; break;
    case ValueHome::Kind::kState: {
      AC_ASSIGN_OR_RETURN(base, bindings_.cache->address(home.state));
      break;
    }
    case ValueHome::Kind::kNone:
      return error(ErrorCode::kInternal, "%" + function_->value(r.root).name + " has no buffer");
  }
  return base + static_cast<CUdeviceptr>(r.byte_offset);
}

Expected<size_t> FunctionExecutor::bucket_index(int64_t tokens, int64_t context) const {
  AC_ASSIGN_OR_RETURN(const BucketRecord* bucket, record_->bucket_for(tokens, context));
  return static_cast<size_t>(bucket - record_->buckets.data());
}

Status FunctionExecutor::enqueue(int64_t tokens, int64_t context, CUstream stream) {
  if (tokens < 1 || tokens > max_tokens_)
    return error(ErrorCode::kInvalidArgument, function_->name + " was prepared for 1.." + std::to_string(max_tokens_) + " tokens, not " +
                                                  std::to_string(tokens));
  if (context < tokens || context > bindings_.cache->rows())
    return error(ErrorCode::kInvalidArgument, function_->name + " of " + std::to_string(tokens) + " tokens at a context of " +
                                                  std::to_string(context) + ": the KV cache holds " + std::to_string(bindings_.cache->rows()) + " rows");
  AC_ASSIGN_OR_RETURN(const size_t bucket, bucket_index(tokens, context));
  if (!prepared(bucket))
    return error(ErrorCode::kInternal, function_->name + ": bucket " + record_->buckets[bucket].name + " was not prepared for this cache");
  const ir::SymbolBindings at{tokens, bindings_.cache->rows()};
  for (size_t s = 0; s < record_->sites.size(); ++s) {
    const SiteRecord& site = record_->sites[s];
    const KernelSet::Loaded* kernel = kernel_for(s, bucket);
    gpu::RegionArgs args;
    for (size_t i = 0; i < site.inputs.size(); ++i) {
      AC_ASSIGN_OR_RETURN(CUdeviceptr p, address_of(site.inputs[i], at));
      args.in[i] = reinterpret_cast<const void*>(p);
    }
    for (size_t o = 0; o < site.outputs.size(); ++o) {
      AC_ASSIGN_OR_RETURN(CUdeviceptr p, address_of(site.outputs[o], at));
      args.out[o] = reinterpret_cast<void*>(p);
    }
    for (size_t w = 0; w < site_weights_[s].size(); ++w) args.w[w] = reinterpret_cast<const void*>(site_weights_[s][w]);
    for (size_t k = 0; k < site_states_[s].size(); ++k) args.state[k] = reinterpret_cast<void*>(site_states_[s][k]);
    args.workspace = workspace_.get();
    args.T = static_cast<int32_t>(tokens);
    args.L = static_cast<int32_t>(at.L);
    const plan::Candidate& c = *kernel->candidate;
    for (size_t l = 0; l < c.launches.size(); ++l) {
      const plan::Launch& launch = c.launches[l];
      if (launch.library) {
        AC_TRY(bindings_.library->run(launch, c.match, args).with_context("site " + std::to_string(site.site) + " (" + site.region + ")"));
        continue;
      }
      const unsigned gx = static_cast<unsigned>(launch.grid_x.at(tokens)), gy = static_cast<unsigned>(launch.grid_y.at(tokens)),
                     gz = static_cast<unsigned>(launch.grid_z.at(tokens));
      AC_TRY(gpu::launch_kernel(kernel->functions[l], launch.kernel, gx, gy, gz, static_cast<unsigned>(launch.block_x),
                                 static_cast<unsigned>(launch.shared_bytes), stream, &args, bindings_.programmatic_launch));
    }
  }
  return Status::ok();
}

Status FunctionExecutor::bind_cache(const KvCache& cache) {
  if (cache.rows() != bindings_.cache->rows())
    return error(ErrorCode::kInvalidArgument, function_->name + " was planned for a cache of " + std::to_string(bindings_.cache->rows()) +
                                                  " rows, not " + std::to_string(cache.rows()));
  std::vector<std::vector<CUdeviceptr>> states;
  for (const auto& site : record_->sites) {
    states.emplace_back();
    for (const auto& s : site.states) {
      AC_ASSIGN_OR_RETURN(CUdeviceptr st, cache.address(s));
      states.back().push_back(st);
    }
  }
  site_states_ = std::move(states);
  bindings_.cache = &cache;
  return Status::ok();
}

Expected<CUdeviceptr> FunctionExecutor::result_address(int64_t tokens, size_t index) const {
  if (index >= function_->results.size()) return error(ErrorCode::kInternal, function_->name + " has no result " + std::to_string(index));
  return address_of(function_->results[index], ir::SymbolBindings{tokens, bindings_.cache->rows()});
}

Expected<size_t> FunctionExecutor::launches(int64_t tokens, int64_t context) const {
  if (tokens < 1 || tokens > max_tokens_) return error(ErrorCode::kInvalidArgument, function_->name + " was not prepared for " + std::to_string(tokens) + " tokens");
  AC_ASSIGN_OR_RETURN(const size_t bucket, bucket_index(tokens, context));
  if (!prepared(bucket)) return error(ErrorCode::kInvalidArgument, function_->name + " was not prepared for a context of " + std::to_string(context));
  size_t count = 0;
  for (size_t s = 0; s < record_->sites.size(); ++s) count += kernel_for(s, bucket)->candidate->launches.size();
  return count;
}

}  // namespace agentcompile::runtime
