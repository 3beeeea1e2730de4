// Artifact compatibility checks and compile-on-first-use.
#include "runtime/artifact_resolver.h"

#include <fstream>
#include <sstream>

#include "emit/artifact_store.h"
#include "support/sha256.h"
#include "tune/admission.h"
#include "tune/cuda_driver.h"

namespace agentcompile::runtime {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string artifact_incompatibility(const fs::path& dir, const frontend::ModelConfig& config, const std::string& ir_text,
                                     const std::string& arch) {
  const auto record = emit::read_verified_artifact(dir);
  if (!record) {
    if (record.status().code() == ErrorCode::kNotFound) return "it has no metadata.json";
    return record.status().message();  // not this format's shape, another format version, or damaged files
  }
  // The IR decides: an artifact whose module is this model's, byte for byte, serves it whatever model it
  // was compiled for (a capture and a builder that agree on the graph share one). Otherwise say how it differs.
  if (read_text(dir / "ir" / "module.ir") != ir_text) {
    const auto& model = record->model;
    if (model.config_sha256 == support::sha256_hex(config.raw.dump())) return "its IR differs from this model's (another compiler version?)";
    std::string detail = "it was compiled for another model configuration";
    if (model.model_type != config.model_type)
      detail += " (" + model.model_type + ", this model is " + config.model_type + ")";
    else if (model.hidden_size != config.hidden_size || model.num_layers != config.num_layers)
      detail += " (hidden " + std::to_string(model.hidden_size) + " x " + std::to_string(model.num_layers) + " layers, this model has " +
                std::to_string(config.hidden_size) + " x " + std::to_string(config.num_layers) + ")";
    else if (model.dtype != std::string(ir::dtype_name(config.dtype)))
      detail += " (dtype " + model.dtype + ", this model is " + std::string(ir::dtype_name(config.dtype)) + ")";
    return detail;
  }
  if (record->device.arch != arch) return "its kernels were built for " + record->device.arch + ", this GPU is " + arch;
  if (!record->gpu_used) return "it was compiled without a GPU, so its kernels were never validated or timed";
  return "";
}

fs::path default_artifact_dir(const fs::path& cache_dir, const fs::path& model, const frontend::ModelConfig& config,
                              const CompileOptions& compile) {
  std::error_code ec;
  const fs::path absolute = fs::weakly_canonical(fs::absolute(model, ec), ec);
  std::string tag = support::sha256_hex(absolute.string() + "\n" + config.raw.dump()).substr(0, 20);
  if (compile.unfused) tag += "-unfused";
  if (compile.library_matmuls) tag += "-cublas-matmuls";
  return cache_root(cache_dir) / "models" / tag;
}

Expected<ResolvedArtifact> resolve_artifact(const EngineOptions& options, const frontend::ModelConfig& config, const std::string& ir_text,
                                            const ProgressFn& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  // A process that already runs CUDA (a second engine) asks its own context; otherwise a forked
  // child probes, keeping this process free to fork compile workers.
  Expected<tune::DeviceInfo> probed = error(ErrorCode::kInternal, "unprobed");
  if (tune::cuda_initialized_in_process()) {
    auto context = tune::CudaContext::create();
    probed = context ? Expected<tune::DeviceInfo>((*context)->info()) : Expected<tune::DeviceInfo>(context.status());
  } else {
    probed = tune::probe_device();
  }
  if (!probed)
    return error(ErrorCode::kUnsupported, "the engine runs on an NVIDIA GPU and found none usable (" + probed.status().message() +
                                              "); `agentcompile reference` runs a model on the CPU");
  const tune::DeviceInfo& device = *probed;
  const std::string arch = tune::nvrtc_arch(device);
  ResolvedArtifact resolved;
  if (!options.artifact.empty()) {
    const std::string why = artifact_incompatibility(options.artifact, config, ir_text, arch);
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
  compile.output = default_artifact_dir(options.cache_dir, options.model, config, compile);
  compile.cache_dir = options.cache_dir;
  compile.device_profile.clear();
  compile.no_gpu = false;
  if (artifact_incompatibility(compile.output, config, ir_text, arch).empty() && !compile.force) {
    resolved.dir = compile.output;
    if (resolved.note.empty()) resolved.note = "cached artifact " + compile.output.string();
    return resolved;
  }
  if (tune::cuda_initialized_in_process())
    return error(ErrorCode::kUnsupported, "the model must be compiled, but this process already runs CUDA and cannot fork compile workers; "
                                          "compile first (`agentcompile compile " + options.model.string() + "`) or load this engine first");
  say("compiling " + options.model.string() + " for " + device.name + " into " + compile.output.string() + " (first use)");
  AC_ASSIGN_OR_RETURN(CompileSummary summary, compile_model(compile, progress));
  const std::string why = artifact_incompatibility(summary.artifact, config, ir_text, arch);
  if (!why.empty()) return error(ErrorCode::kInternal, "the artifact just compiled into " + summary.artifact.string() + " does not fit: " + why);
  resolved.dir = summary.artifact;
  resolved.compiled_now = !summary.warm;
  if (resolved.note.empty()) resolved.note = summary.warm ? "warm artifact " + summary.artifact.string() : "compiled " + summary.artifact.string();
  return resolved;
}

}  // namespace agentcompile::runtime
