// Artifact compatibility and the model's own artifact directory (see artifact_fit.h).
#include "emit/artifact_fit.h"

#include <fstream>
#include <sstream>

#include "emit/artifact_store.h"
#include "support/sha256.h"

namespace agentcompile::emit {

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
  if (const Status kernels = check_runtime_kernels(*record); !kernels) return kernels.message();
  return "";
}

fs::path default_artifact_dir(const fs::path& cache_dir, const fs::path& model, const frontend::ModelConfig& config,
                              const CompileOptions& compile) {
  std::error_code ec;
  const fs::path absolute = fs::weakly_canonical(fs::absolute(model, ec), ec);
  std::string tag = support::sha256_hex(absolute.string() + "\n" + config.raw.dump()).substr(0, 20);
  if (compile.unfused) tag += "-unfused";
  if (compile.library_matmuls) tag += "-cublas-matmuls";
  if (compile.no_tf32) tag += "-no-tf32";
  if (compile.batch_decode) tag += "-batch-decode";
  if (compile.tensor_parallel > 0) tag += "-tp" + std::to_string(compile.tensor_parallel) + "-rank" + std::to_string(compile.rank);
  return cache_root(cache_dir) / "models" / tag;
}

}  // namespace agentcompile::emit
