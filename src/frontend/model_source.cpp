// Opening a model by path: HF directory, config.json, or GGUF file (see model_source.h).
#include "frontend/model_source.h"

#include "frontend/gguf.h"
#include "frontend/gguf_model.h"
#include "frontend/model_builder.h"
#include "frontend/safetensors.h"

namespace agentcompile::frontend {

namespace fs = std::filesystem;

const char* model_format_name(ModelFormat format) {
  switch (format) {
    case ModelFormat::kHfConfigOnly: return "config.json only";
    case ModelFormat::kHfCheckpoint: return "Hugging Face safetensors";
    case ModelFormat::kGguf: return "GGUF";
    case ModelFormat::kCaptured: return "captured from PyTorch";
  }
  return "?";
}

namespace {

// Weights must agree with the graph the config implies, so wrong kernels never see wrong shapes.
Status check_against_config(const ModelSource& source) {
  AC_ASSIGN_OR_RETURN(ir::Module module, build_module(source.config));
  return check_weights(module, *source.weights);
}

}  // namespace

Expected<ModelSource> open_model(const fs::path& path, bool with_weights) {
  ModelSource source;
  source.path = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return error(ErrorCode::kNotFound, path.string() + ": no such file or directory");

  if (fs::is_regular_file(path) && path.extension() == ".gguf") {
    source.format = ModelFormat::kGguf;
    AC_ASSIGN_OR_RETURN(auto store, open_gguf_checkpoint(path));
    AC_ASSIGN_OR_RETURN(source.config, gguf_model_config(store->gguf(), path.string()));
    if (with_weights) {
      source.weights = std::move(store);
      AC_TRY(check_against_config(source));
    }
    return source;
  }
  if (fs::is_regular_file(path)) {
    if (path.extension() != ".json")
      return error(ErrorCode::kUnsupported, path.string() + ": not a model: expected a directory, a config .json or a .gguf file");
    AC_ASSIGN_OR_RETURN(source.config, read_hf_config(path));
    if (with_weights)
      return error(ErrorCode::kNotFound, path.string() + ": a config file alone has no weights; pass the checkpoint directory");
    return source;
  }
  if (is_capture_dir(path)) {
    source.format = ModelFormat::kCaptured;
    AC_ASSIGN_OR_RETURN(source.capture, read_capture_manifest(path));
    AC_ASSIGN_OR_RETURN(source.captured, read_captured_module(path, *source.capture));
    if (source.capture->is_causal_lm()) {
      AC_ASSIGN_OR_RETURN(source.config, captured_model_config(path, *source.capture, *source.captured));
    } else {
      source.config.model_type = "module";
      source.config.raw = source.capture->raw;
    }
    if (with_weights) {
      AC_ASSIGN_OR_RETURN(source.weights, open_captured_weights(path, *source.capture));
      AC_TRY(check_weights(*source.captured, *source.weights));
    }
    return source;
  }
  const fs::path config_path = path / "config.json";
  if (!fs::exists(config_path)) return error(ErrorCode::kNotFound, path.string() + ": no config.json in this directory");
  AC_ASSIGN_OR_RETURN(source.config, read_hf_config(config_path));
  const bool has_weights = fs::exists(path / "model.safetensors") || fs::exists(path / "model.safetensors.index.json");
  source.format = has_weights ? ModelFormat::kHfCheckpoint : ModelFormat::kHfConfigOnly;
  if (with_weights) {
    if (!has_weights)
      return error(ErrorCode::kNotFound, path.string() + ": no model.safetensors or model.safetensors.index.json");
    AC_ASSIGN_OR_RETURN(source.weights, open_safetensors_checkpoint(path));
    AC_TRY(check_against_config(source));
  }
  return source;
}

Expected<ir::Module> source_module(const ModelSource& source) {
  if (source.format == ModelFormat::kCaptured) return *source.captured;
  return build_module(source.config);
}

}  // namespace agentcompile::frontend
