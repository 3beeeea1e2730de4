// Compile on first use (see artifact_resolver.h).
#include "first_use/artifact_resolver.h"

#include "emit/artifact_fit.h"
#include "gpu/cuda_driver.h"
#include "gpu/device_probe.h"

namespace agentcompile::first_use {

Expected<PreparedArtifact> resolve_artifact(const EngineOptions& options, const frontend::ModelConfig& config, const std::string& ir_text,
                                            const ProgressFn& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const Expected<gpu::DeviceInfo> probed = gpu::device_here();
  if (!probed)
    return error(ErrorCode::kUnsupported, "the engine runs on an NVIDIA GPU and found none usable (" + probed.status().message() +
                                              "); `agentcompile reference` runs a model on the CPU");
  const gpu::DeviceInfo& device = *probed;
  const std::string arch = gpu::nvrtc_arch(device);
  PreparedArtifact resolved;
  if (!options.artifact.empty()) {
    const std::string why = emit::artifact_incompatibility(options.artifact, config, ir_text, arch);
    if (why.empty()) {
      resolved.dir = options.artifact;
      resolved.note = "using " + options.artifact.string();
      return resolved;
    }
    resolved.note = "the artifact " + options.artifact.string() + " does not fit this model: " + why + "; recompiling for this model";
    say(resolved.note);
  }
  CompileOptions compile = options.compile;
  compile.model = options.model;
  compile.output = emit::default_artifact_dir(options.cache_dir, options.model, config, compile);
  compile.cache_dir = options.cache_dir;
  compile.device_profile.clear();
  compile.no_gpu = false;
  if (emit::artifact_incompatibility(compile.output, config, ir_text, arch).empty() && !compile.force) {
    resolved.dir = compile.output;
    if (resolved.note.empty()) resolved.note = "cached artifact " + compile.output.string();
    return resolved;
  }
  if (gpu::cuda_initialized_in_process())
    return error(ErrorCode::kUnsupported, "the model must be compiled, but this process already runs CUDA and cannot fork compile workers; "
                                          "compile first (`agentcompile compile " + options.model.string() + "`) or load this engine first");
  say("compiling " + options.model.string() + " for " + device.name + " into " + compile.output.string() + " (first use)");
  AC_ASSIGN_OR_RETURN(CompileSummary summary, compile_model(compile, progress));
  const std::string why = emit::artifact_incompatibility(summary.artifact, config, ir_text, arch);
  if (!why.empty()) return error(ErrorCode::kInternal, "the artifact just compiled into " + summary.artifact.string() + " does not fit: " + why);
  resolved.dir = summary.artifact;
  resolved.compiled_now = !summary.warm;
  if (resolved.note.empty()) resolved.note = summary.warm ? "warm artifact " + summary.artifact.string() : "compiled " + summary.artifact.string();
  return resolved;
}

}  // namespace agentcompile::first_use
