// Opening a model from what a user names: a Hugging Face checkpoint directory, its config.json alone,
// a GGUF file, or a directory captured from PyTorch (docs/capture.md). Every format ends in an IR
// module (built from the config, or the captured one), a ModelConfig and an HF-named WeightStore, so
// every later stage is format-blind. Weights are only opened when asked for: `inspect` and `compile`
// need shapes alone.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agentcompile/status.h"
#include "frontend/captured_model.h"
#include "frontend/model_builder.h"
#include "frontend/model_config.h"
#include "frontend/weight_formats.h"
#include "frontend/weights.h"

namespace agentcompile::frontend {

enum class ModelFormat { kHfConfigOnly, kHfCheckpoint, kGguf, kCaptured };

struct ModelSource {
  std::filesystem::path path;
  ModelFormat format = ModelFormat::kHfConfigOnly;
  ModelConfig config;                    // for a captured module (not an LM): only raw is set
  std::unique_ptr<WeightStore> weights;  // null unless opened with_weights
  std::optional<CaptureManifest> capture;  // kCaptured only
  std::optional<ir::Module> captured;      // kCaptured only: the module as captured (primitive ops)
  WeightFormatOptions formats;             // how the module stores its weights (frontend/weight_formats.h)
  std::map<std::string, ir::DType> stored_quantized;  // GGUF: HF name -> quantized type it is stored in

  bool is_language_model() const { return format != ModelFormat::kCaptured || capture->is_causal_lm(); }
  // The T a captured module's function runs at (capture.json `symbols`); 1 for static shapes and for
  // every function that is not a captured module's.
  int64_t run_tokens(const std::string& function) const {
    const CapturedFunction* f = capture ? capture->function(function) : nullptr;
    return f && f->run_tokens > 0 ? f->run_tokens : 1;
  }
};

const char* model_format_name(ModelFormat format);

// `path` is a directory with config.json (+ safetensors), a config .json file, or a .gguf file.
// `formats` chooses how the module stores weights: refused with a message are --quantize on a GGUF file
// whose tensors are already quantized and on a captured module, and --dequantize on anything but GGUF.
// A checkpoint's weights (safetensors shards or GGUF) are always mapped, not read, and checked against
// the module the config implies, also without `with_weights` (inspect, compile): every parameter
// present with the config's shape (and exact dtype), every stored byte range inside its file, and
// every tensor used by the graph, except the rotary inv_freq buffers old transformers saved (derived
// from the config, which is what transformers itself does with them). An lm_head.weight beside tied
// embeddings is refused rather than silently replaced by the embedding. With `with_weights` the
// store is kept in the source.
Expected<ModelSource> open_model(const std::filesystem::path& path, bool with_weights, const WeightFormatOptions& formats = {});

// The model's IR module as its source defines it: the builder's graph for a config, checkpoint or GGUF
// file with its weights in the formats source.formats chooses (apply_weight_formats), the captured
// graph (still made of primitive ops: analysis/recognize raises it) for a capture.
Expected<ir::Module> source_module(const ModelSource& source, const BuildOptions& build = {});

}  // namespace agentcompile::frontend
