// Generate (DESIGN.md, "generate"): every candidate with a generated launch rendered from its
// template into CUDA source and compiled by NVRTC for the target, in parallel and through the cubin
// cache (codegen/nvrtc_compiler.h); library-only candidates have nothing to compile. The runtime's
// own kernels (the sampler) go last, through the same path and cache; one of them failing is an
// error, a candidate failing is a result.
#include <chrono>
#include <cstdio>

#include "codegen/render.h"
#include "pipeline/stages.h"

namespace agentcompile::pipeline {

namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace

Expected<Generated> generate_kernels(const Plan& plan, const std::vector<emit::RuntimeKernelSpec>& runtime_kernels, const Target& target,
                                     const std::filesystem::path& cache_dir, const ProgressFn& say) {
  const auto start = std::chrono::steady_clock::now();
  Generated out;
  std::vector<codegen::CompileJob> jobs;
  std::vector<std::pair<size_t, size_t>> job_owner;  // (region, candidate) of each region job
  out.compiled.resize(plan.regions.size());
  for (size_t r = 0; r < plan.regions.size(); ++r) {
    const auto& candidates = plan.regions[r].plan.candidates;
    out.compiled[r].resize(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!codegen::has_generated_launch(candidates[i])) continue;
      AC_ASSIGN_OR_RETURN(std::string source, codegen::render_source(candidates[i]));
      jobs.push_back({candidates[i].name(), std::move(source)});
      job_owner.emplace_back(r, i);
    }
  }
  codegen::NvrtcOptions nvrtc;
  nvrtc.arch = target.profile.arch;
  nvrtc.cache_dir = cache_dir / "nvrtc" / target.profile.arch;
  nvrtc.isolate = target.gpu;  // this process forks admission workers afterwards
  for (const auto& k : runtime_kernels) jobs.push_back({k.kernel, k.source});
  AC_ASSIGN_OR_RETURN(auto compiled, codegen::compile_all(jobs, nvrtc));
  for (size_t j = job_owner.size(); j < compiled.size(); ++j) {
    const emit::RuntimeKernelSpec& spec = runtime_kernels[j - job_owner.size()];
    if (!compiled[j].ok) return error(ErrorCode::kInternal, std::string("NVRTC could not compile the runtime's ") + spec.role + " kernel: " + compiled[j].log);
    out.runtime_kernels.push_back({spec, std::move(compiled[j])});
  }
  compiled.resize(job_owner.size());
  size_t ok = 0, hits = 0;
  for (size_t j = 0; j < compiled.size(); ++j) {
    ok += compiled[j].ok;
    hits += compiled[j].cache_hit;
    out.compiled[job_owner[j].first][job_owner[j].second] = std::move(compiled[j]);
  }
  out.sources = job_owner.size();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  say("[3/5] generate: " + std::to_string(job_owner.size()) + " sources, NVRTC compiled " + std::to_string(ok) + " (" +
      std::to_string(hits) + " from cache) in " + fixed(out.seconds, 1) + " s");
  return out;
}

}  // namespace agentcompile::pipeline
