// Opening a model by path: HF directory, config.json, or GGUF file (see model_source.h).
#include "frontend/model_source.h"

#include <algorithm>
#include <set>

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

// The dtype a captured function computes in (what reports and the artifact's identity name): its first
// floating-point argument's, else its first floating-point parameter's, else `otherwise`.
ir::DType captured_module_dtype(const ir::Module& module, ir::DType otherwise) {
  for (const ir::Function& function : module.functions)
    for (ir::ValueId arg : function.args)
      if (ir::is_float(function.type(arg).dtype)) return function.type(arg).dtype;
  for (const ir::ParamDecl& param : module.params)
    if (ir::is_float(param.type.dtype)) return param.type.dtype;
  return otherwise;
}

// A tensor a checkpoint may carry that the graph does not use: transformers before 4.31 saved every
// layer's rotary inv_freq buffer, which it (and the builders) recompute from the config on load.
bool is_rotary_buffer(const TensorInfo& tensor, const ModelConfig& config) {
  return tensor.name.ends_with(".rotary_emb.inv_freq") && tensor.shape == std::vector<int64_t>{config.head_dim / 2};
}

// Every tensor of the checkpoint is a parameter of the graph or a rotary buffer. A tensor left over
// means the config describes another model than the checkpoint holds (a qwen3 checkpoint labelled
// llama loses its q/k norms, a qwen2 one its biases), and the answers would be wrong, so it is an
// error naming the tensors.
Status check_all_tensors_used(const ir::Module& module, const WeightStore& store, const ModelConfig& config) {
  std::vector<std::string> unused;
  for (const TensorInfo& tensor : store.tensors())
    if (!module.find_param(tensor.name) && !is_rotary_buffer(tensor, config)) unused.push_back(tensor.name);
  if (unused.empty()) return Status::ok();
  if (config.tie_word_embeddings && std::find(unused.begin(), unused.end(), "lm_head.weight") != unused.end())
    return error(ErrorCode::kMismatch, store.source() + ": tensor " + store.tensor_label("lm_head.weight") +
                                           " is not used: the config sets tie_word_embeddings, so the output projection is "
                                           "model.embed_tokens.weight (set tie_word_embeddings to false to use lm_head.weight)");
  std::string names;
  for (size_t i = 0; i < unused.size() && i < 3; ++i) names += (i ? ", " : "") + store.tensor_label(unused[i]);
  if (unused.size() > 3) names += " and " + std::to_string(unused.size() - 3) + " more";
  return error(ErrorCode::kMismatch, store.source() + ": " + (unused.size() == 1 ? "tensor " : "tensors ") + names + " " +
                                         (unused.size() == 1 ? "is" : "are") + " not used by the " + config.model_type +
                                         " graph this config describes (is model_type '" + config.model_type +
                                         "' right for this checkpoint?)");
}

// Weights must agree with the graph the config implies, both ways: every parameter present with its
// shape (so wrong kernels never see wrong shapes), and every tensor used.
Status check_against_config(const ModelConfig& config, const WeightStore& weights) {
  AC_ASSIGN_OR_RETURN(ir::Module module, build_module(config));
  AC_TRY(check_weights(module, weights));
  return check_all_tensors_used(module, weights, config);
}

// GGUF tensors stored in quantized types, by HF name; --quantize is refused when there are any.
Status note_stored_formats(ModelSource& source, const WeightStore& store) {
  std::set<std::string> types;
  for (const TensorInfo& tensor : store.tensors())
    if (ir::is_quantized(tensor.dtype)) {
      source.stored_quantized[tensor.name] = tensor.dtype;
      types.insert(std::string(ir::dtype_name(tensor.dtype)));
    }
  const auto& formats = source.formats;
  if ((!formats.quantize && !formats.quantize_head) || formats.dequantize || types.empty()) return Status::ok();
  std::string names;
  for (const std::string& type : types) names += (names.empty() ? "" : ", ") + type;
  const std::string flag = formats.quantize ? "--quantize " + quantize_spec_text(*formats.quantize)
                                            : "--quantize-head " + quantize_spec_text(*formats.quantize_head);
  return error(ErrorCode::kInvalidArgument, source.path.string() + ": " + flag + ": this GGUF file is already quantized (" + names +
                                                "); it runs in its own formats (or dequantized with --dequantize), and quantizing it "
                                                "again adds a second rounding error (--dequantize --quantize asks for that)");
}

// Builds the module once to refuse now what it cannot be (a format a parameter cannot take).
Status module_status(const ModelSource& source) {
  auto module = source_module(source);
  return module ? Status::ok() : module.status();
}

}  // namespace

Expected<ModelSource> open_model(const fs::path& path, bool with_weights, const WeightFormatOptions& formats) {
  ModelSource source;
  source.path = path;
  source.formats = formats;
  std::error_code ec;
  if (!fs::exists(path, ec)) return error(ErrorCode::kNotFound, path.string() + ": no such file or directory");
  const bool gguf = fs::is_regular_file(path) && path.extension() == ".gguf";
  if (formats.dequantize && !gguf)
    return error(ErrorCode::kInvalidArgument, path.string() + ": --dequantize applies to GGUF files, whose blocks otherwise run as they are");

  if (gguf) {
    source.format = ModelFormat::kGguf;
    AC_ASSIGN_OR_RETURN(auto store, open_gguf_checkpoint(path));
    AC_ASSIGN_OR_RETURN(source.config, gguf_model_config(store->gguf(), path.string()));
    AC_TRY(check_against_config(source.config, *store));
    AC_TRY(note_stored_formats(source, *store));
    AC_TRY(module_status(source));  // a format the module cannot take is refused now
    if (with_weights) source.weights = std::move(store);
    return source;
  }
  if (fs::is_regular_file(path)) {
    if (path.extension() != ".json")
      return error(ErrorCode::kUnsupported, path.string() + ": not a model: expected a directory, a config .json or a .gguf file");
    AC_ASSIGN_OR_RETURN(source.config, read_hf_config(path));
    if (with_weights)
      return error(ErrorCode::kNotFound, path.string() + ": a config file alone has no weights; pass the checkpoint directory");
    AC_TRY(module_status(source));  // a group size that does not divide K is refused now
    return source;
  }
  if (!fs::is_directory(path, ec))  // a device, a FIFO, a socket
    return error(ErrorCode::kUnsupported, path.string() + ": not a model: expected a directory, a config .json or a .gguf file");
  if (is_capture_dir(path)) {
    source.format = ModelFormat::kCaptured;
    if (formats.quantize || formats.quantize_head)
      return error(ErrorCode::kUnsupported, path.string() + ": --quantize and --quantize-head apply to Hugging Face checkpoints and GGUF files, "
                                                            "whose graphs the builders write; this is a module captured from PyTorch");
    AC_ASSIGN_OR_RETURN(source.capture, read_capture_manifest(path));
    AC_ASSIGN_OR_RETURN(source.captured, read_captured_module(path, *source.capture));
    if (source.capture->is_causal_lm()) {
      AC_ASSIGN_OR_RETURN(source.config, captured_model_config(path, *source.capture, *source.captured));
    } else {
      source.config.model_type = "module";
      source.config.raw = source.capture->raw;
      source.config.dtype = captured_module_dtype(*source.captured, source.config.dtype);
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
  if (with_weights && !has_weights)
    return error(ErrorCode::kNotFound, path.string() + ": no model.safetensors or model.safetensors.index.json");
  if (has_weights) {
    // Mapping the shards reads their headers only; the parser checks every tensor's bytes lie in its
    // file, so a truncated shard is noticed here too by the tools that never read a weight.
    AC_ASSIGN_OR_RETURN(auto store, open_safetensors_checkpoint(path));
    AC_TRY(check_against_config(source.config, *store));
    if (with_weights) source.weights = std::move(store);
  }
  AC_TRY(module_status(source));  // a group size that does not divide K is refused now
  return source;
}

Expected<ir::Module> source_module(const ModelSource& source, const BuildOptions& build) {
  if (source.format == ModelFormat::kCaptured) return *source.captured;
  AC_ASSIGN_OR_RETURN(ir::Module module, build_module(source.config, build));
  AC_TRY(apply_weight_formats(module, source.stored_quantized, source.formats, source.path.string()));
  return module;
}

}  // namespace agentcompile::frontend
