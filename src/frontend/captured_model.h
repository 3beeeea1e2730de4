// A model captured from PyTorch (docs/capture.md): a directory with capture.json, the IR in text form
// (module.ir) and the weights beside it. Reading one needs no torch: the manifest says what was
// captured, the module is parsed and verified, and the weights are the directory's own safetensors plus
// those of the checkpoints it links to (`weights_from`).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "frontend/model_config.h"
#include "frontend/weights.h"
#include "ir/graph.h"

namespace agentcompile::frontend {

constexpr const char* kCaptureManifest = "capture.json";
constexpr const char* kCaptureModule = "module.ir";
constexpr const char* kCaptureWeights = "weights.safetensors";

// One input or output of a captured function as the manifest records it.
struct CapturedTensor {
  std::string name;
  std::string dtype;        // the IR dtype ("f32", "i32", "bool", ...)
  std::string torch_dtype;  // what torch had when the IR narrowed it ("int64"), else empty
};

struct CapturedFunction {
  std::string name;
  std::vector<CapturedTensor> inputs, outputs;
  // A module function whose batch dim is the symbol T (`symbols: {"T": n}`): the size it was captured
  // at, which it runs at; the compiler validates at a smaller T. 0 when T does not occur.
  int64_t run_tokens = 0;
};

struct CaptureManifest {
  std::string kind;    // "causal_lm" or "module"
  std::string source;  // what was captured
  std::vector<std::filesystem::path> weights_from;  // absolute, resolved against the capture directory
  std::vector<CapturedFunction> functions;
  std::vector<std::string> notes;
  nlohmann::json raw;  // the manifest as read

  bool is_causal_lm() const { return kind == "causal_lm"; }
  const CapturedFunction* function(const std::string& name) const;
};

// True when `dir` is a capture directory (it holds capture.json).
bool is_capture_dir(const std::filesystem::path& dir);

// Reads and checks capture.json: the format tag, the kind, the functions; errors name the file and key.
Expected<CaptureManifest> read_capture_manifest(const std::filesystem::path& dir);

// Parses and verifies module.ir and checks it against the manifest: every function the manifest
// lists exists with its inputs, a module function uses no symbol but T and only with a size for it
// (`symbols`), and a causal LM has prefill(tokens: i32[T], pos: i32[]) and
// decode(tokens: i32[1], pos: i32[]) returning logits [1, V], and [L, KV, D] KV states.
Expected<ir::Module> read_captured_module(const std::filesystem::path& dir, const CaptureManifest& manifest);

// What the runtime and the reports need of a captured causal LM, in the shape of a ModelConfig: the
// vocabulary, layers and KV heads read off the module; context length, EOS/BOS ids and the model type
// from the manifest (and config.json / generation_config.json when the capture copied them). The
// fields a builder would need (hidden size, rope ...) are filled where the module shows them.
Expected<ModelConfig> captured_model_config(const std::filesystem::path& dir, const CaptureManifest& manifest,
                                            const ir::Module& module);

// The weights of a capture: weights.safetensors (when present) and the safetensors of every
// `weights_from` checkpoint, as one store.
Expected<std::unique_ptr<WeightStore>> open_captured_weights(const std::filesystem::path& dir, const CaptureManifest& manifest);

}  // namespace agentcompile::frontend
