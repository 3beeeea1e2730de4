// Reading a capture directory (see captured_model.h and docs/capture.md).
#include "frontend/captured_model.h"

#include <fstream>
#include <sstream>

#include "frontend/safetensors.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::frontend {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kFormat = "agentcompile-capture/1";
// A module text beyond this is not something the capture tool writes (a 70B model's IR is ~10 MB).
constexpr uintmax_t kMaxModuleBytes = uintmax_t{1} << 30;

Status manifest_error(const fs::path& dir, const std::string& what) {
  return error(ErrorCode::kParse, (dir / kCaptureManifest).string() + ": " + what);
}

Expected<std::string> read_text(const fs::path& path, uintmax_t limit) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return error(ErrorCode::kNotFound, path.string() + ": " + ec.message());
  if (size > limit) return error(ErrorCode::kInvalidArgument, path.string() + ": " + std::to_string(size) + " bytes is too large");
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(ErrorCode::kIo, path.string() + ": cannot be opened");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Expected<std::vector<CapturedTensor>> read_tensors(const fs::path& dir, const json& list, const std::string& where) {
  if (!list.is_array()) return manifest_error(dir, where + " must be a list");
  std::vector<CapturedTensor> out;
  for (const json& entry : list) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("dtype") ||
        !entry["dtype"].is_string())
      return manifest_error(dir, where + ": each entry needs a string name and dtype");
    CapturedTensor t{entry["name"].get<std::string>(), entry["dtype"].get<std::string>(), ""};
    if (auto it = entry.find("torch_dtype"); it != entry.end() && it->is_string()) t.torch_dtype = it->get<std::string>();
    out.push_back(std::move(t));
  }
  return out;
}

// An integer member of the manifest's causal_lm section or of config.json, whichever has it.
std::optional<int64_t> int_member(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

json read_json_or_null(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  json parsed = json::parse(in, nullptr, false);
  return parsed.is_discarded() ? json(nullptr) : parsed;
}

std::vector<int64_t> eos_ids(const json& value) {
  std::vector<int64_t> ids;
  if (value.is_number_integer()) ids.push_back(value.get<int64_t>());
  if (value.is_array())
    for (const json& id : value)
      if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
  return ids;
}

Status check_lm_signature(const ir::Function& f, bool decode) {
  const std::string where = "captured @" + f.name;
  if (f.args.size() != 2 || f.results.size() != 1)
    return error(ErrorCode::kMismatch, where + " must take (tokens, pos) and return logits, like the builders' functions");
  const ir::TensorType& tokens = f.type(f.args[0]);
  const ir::TensorType& pos = f.type(f.args[1]);
  const ir::Dim expected_tokens = decode ? ir::Dim::of(1) : ir::Dim::T();
  if (tokens.dtype != ir::DType::kI32 || tokens.shape != ir::Shape{expected_tokens})
    return error(ErrorCode::kMismatch, where + ": tokens are " + tokens.to_string() + ", expected i32[" + expected_tokens.to_string() + "]");
  if (pos.dtype != ir::DType::kI32 || !pos.shape.empty())
    return error(ErrorCode::kMismatch, where + ": pos is " + pos.to_string() + ", expected i32[]");
  const ir::TensorType& logits = f.type(f.results[0]);
  if (logits.shape.size() != 2 || logits.shape[0] != ir::Dim::of(1) || !logits.shape[1].is_static() || !ir::is_float(logits.dtype))
    return error(ErrorCode::kMismatch, where + " returns " + logits.to_string() + ", expected float logits [1, V]");
  return Status::ok();
}

// A module function runs at one size: its interface may use T only where capture.json binds it, and
// never L (a module has no cache).
Status check_module_symbols(const ir::Function& function, const CapturedFunction& f) {
  std::vector<ir::ValueId> interface = function.args;
  interface.insert(interface.end(), function.results.begin(), function.results.end());
  for (ir::ValueId v : interface)
    for (const ir::Dim& dim : function.type(v).shape) {
      if (dim.symbol == ir::Symbol::kL)
        return error(ErrorCode::kMismatch, "@" + f.name + " " + function.value(v).name + " is " + function.type(v).to_string() +
                                               ": a captured module has no cache, so no dim can be L");
      if (dim.symbol == ir::Symbol::kT && f.run_tokens == 0)
        return error(ErrorCode::kMismatch, "@" + f.name + " " + function.value(v).name + " is " + function.type(v).to_string() +
                                               " but capture.json gives no size for T (functions." + f.name + ".symbols)");
    }
  return Status::ok();
}

}  // namespace

const CapturedFunction* CaptureManifest::function(const std::string& name) const {
  for (const auto& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

bool is_capture_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::is_regular_file(dir / kCaptureManifest, ec);
}

Expected<CaptureManifest> read_capture_manifest(const fs::path& dir) {
  AC_ASSIGN_OR_RETURN(std::string text, read_text(dir / kCaptureManifest, 64 << 20));
  CaptureManifest m;
  m.raw = json::parse(text, nullptr, false);
  if (m.raw.is_discarded() || !m.raw.is_object()) return manifest_error(dir, "is not a JSON object");
  const json& raw = m.raw;
  if (raw.value("format", json()) != kFormat)
    return manifest_error(dir, "format is not \"" + std::string(kFormat) + "\" (written by another version of the capture tool?)");
  if (!raw.contains("kind") || !raw["kind"].is_string()) return manifest_error(dir, "needs a string \"kind\"");
  m.kind = raw["kind"].get<std::string>();
  if (m.kind != "causal_lm" && m.kind != "module")
    return manifest_error(dir, "kind \"" + m.kind + "\" is neither \"causal_lm\" nor \"module\"");
  if (auto it = raw.find("source"); it != raw.end() && it->is_string()) m.source = it->get<std::string>();
  if (auto it = raw.find("weights_from"); it != raw.end()) {
    if (!it->is_array()) return manifest_error(dir, "weights_from must be a list of directories");
    for (const json& entry : *it) {
      if (!entry.is_string()) return manifest_error(dir, "weights_from must be a list of directories");
      const fs::path path = entry.get<std::string>();
      m.weights_from.push_back(path.is_absolute() ? path : (dir / path).lexically_normal());
    }
  }
  if (!raw.contains("functions") || !raw["functions"].is_object() || raw["functions"].empty())
    return manifest_error(dir, "needs a non-empty \"functions\" object");
  for (const auto& [name, entry] : raw["functions"].items()) {
    if (!entry.is_object()) return manifest_error(dir, "functions." + name + " is not an object");
    CapturedFunction f;
    f.name = name;
    AC_ASSIGN_OR_RETURN(f.inputs, read_tensors(dir, entry.value("inputs", json::array()), "functions." + name + ".inputs"));
    AC_ASSIGN_OR_RETURN(f.outputs, read_tensors(dir, entry.value("outputs", json::array()), "functions." + name + ".outputs"));
    if (auto symbols = entry.find("symbols"); symbols != entry.end()) {
      const std::string where = "functions." + name + ".symbols";
      if (!symbols->is_object()) return manifest_error(dir, where + " must be an object like {\"T\": 4096}");
      for (const auto& [symbol, size] : symbols->items()) {
        if (symbol != "T") return manifest_error(dir, where + " names \"" + symbol + "\": only T can be bound");
        if (!size.is_number_integer() || size.get<int64_t>() < 1 || size.get<int64_t>() > (int64_t{1} << 31))
          return manifest_error(dir, where + ".T must be an integer from 1 to 2^31, not " + size.dump());
        f.run_tokens = size.get<int64_t>();
      }
    }
    m.functions.push_back(std::move(f));
  }
  if (auto it = raw.find("notes"); it != raw.end() && it->is_array())
    for (const json& note : *it)
      if (note.is_string()) m.notes.push_back(note.get<std::string>());
  return m;
}

Expected<ir::Module> read_captured_module(const fs::path& dir, const CaptureManifest& manifest) {
  const fs::path path = dir / kCaptureModule;
  AC_ASSIGN_OR_RETURN(std::string text, read_text(path, kMaxModuleBytes));
  AC_ASSIGN_OR_RETURN(ir::Module module, ir::parse_module(text, path.string()));
  AC_TRY(ir::verify_module(module).with_context(path.string()));
  for (const CapturedFunction& f : manifest.functions) {
    const ir::Function* function = module.find_function(f.name);
    if (!function) return error(ErrorCode::kMismatch, path.string() + ": has no function @" + f.name + ", which capture.json lists");
    if (function->args.size() != f.inputs.size())
      return error(ErrorCode::kMismatch, path.string() + ": @" + f.name + " takes " + std::to_string(function->args.size()) +
                                             " arguments, capture.json lists " + std::to_string(f.inputs.size()));
    for (size_t i = 0; i < f.inputs.size(); ++i)
      if (std::string(ir::dtype_name(function->type(function->args[i]).dtype)) != f.inputs[i].dtype)
        return error(ErrorCode::kMismatch, path.string() + ": @" + f.name + " argument " + std::to_string(i) + " is " +
                                               function->type(function->args[i]).to_string() + ", capture.json says " + f.inputs[i].dtype);
    if (!manifest.is_causal_lm()) AC_TRY(check_module_symbols(*function, f).with_context(path.string()));
  }
  if (manifest.is_causal_lm()) {
    const ir::Function* prefill = module.find_function("prefill");
    const ir::Function* decode = module.find_function("decode");
    if (!prefill || !decode) return error(ErrorCode::kMismatch, path.string() + ": a causal LM capture needs @prefill and @decode");
    AC_TRY(check_lm_signature(*prefill, false).with_context(path.string()));
    AC_TRY(check_lm_signature(*decode, true).with_context(path.string()));
    if (module.states.empty() || module.states.size() % 2 != 0)
      return error(ErrorCode::kMismatch, path.string() + ": a causal LM capture needs a k and a v cache state per layer, found " +
                                             std::to_string(module.states.size()) + " states");
  }
  return module;
}

Expected<ModelConfig> captured_model_config(const fs::path& dir, const CaptureManifest& manifest, const ir::Module& module) {
  if (!manifest.is_causal_lm())
    return error(ErrorCode::kInvalidArgument, dir.string() + ": a captured module (kind \"" + manifest.kind + "\") is not a language model");
  const json lm = manifest.raw.value("causal_lm", json::object());
  const json hf = read_json_or_null(dir / "config.json");
  const json generation = read_json_or_null(dir / "generation_config.json");
  ModelConfig c;
  c.raw = manifest.raw;
  c.model_type = lm.value("model_type", hf.is_object() ? hf.value("model_type", std::string("captured")) : std::string("captured"));
  const ir::Function& decode = *module.find_function("decode");
  const ir::TensorType& logits = decode.type(decode.results[0]);
  c.vocab_size = logits.shape[1].value;
  c.num_layers = static_cast<int64_t>(module.states.size() / 2);
  const ir::TensorType& cache = module.states.front().type;
  c.dtype = cache.dtype;
  c.num_kv_heads = cache.shape[1].value;
  c.head_dim = cache.shape[2].value;
  for (const char* key : {"hidden_size", "intermediate_size", "num_attention_heads"}) {
    std::optional<int64_t> value = int_member(hf, key);
    if (!value) continue;
    if (std::string(key) == "hidden_size") c.hidden_size = *value;
    if (std::string(key) == "intermediate_size") c.intermediate_size = *value;
    if (std::string(key) == "num_attention_heads") c.num_heads = *value;
  }
  std::optional<int64_t> context = int_member(lm, "max_position_embeddings");
  if (!context) context = int_member(hf, "max_position_embeddings");
  if (!context || *context < 1)
    return manifest_error(dir, "causal_lm.max_position_embeddings is missing (and config.json has none): the context length is unknown");
  c.max_position_embeddings = *context;
  if (auto bos = int_member(lm, "bos_token_id")) c.bos_token_id = *bos;
  else if (auto hf_bos = int_member(hf, "bos_token_id")) c.bos_token_id = *hf_bos;
  for (const json* source : {&lm, &generation, &hf}) {
    if (!source->is_object() || !source->contains(source == &lm ? "eos_token_ids" : "eos_token_id")) continue;
    c.eos_token_ids = eos_ids((*source)[source == &lm ? "eos_token_ids" : "eos_token_id"]);
    if (!c.eos_token_ids.empty()) break;
  }
  return c;
}

Expected<std::unique_ptr<WeightStore>> open_captured_weights(const fs::path& dir, const CaptureManifest& manifest) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::exists(dir / kCaptureWeights, ec)) files.push_back(dir / kCaptureWeights);
  for (const fs::path& checkpoint : manifest.weights_from) {
    auto shards = checkpoint_safetensors_files(checkpoint);
    if (!shards)
      return shards.status().with_context((dir / kCaptureManifest).string() + ": weights_from " + checkpoint.string());
    files.insert(files.end(), shards->begin(), shards->end());
  }
  AC_ASSIGN_OR_RETURN(auto store, open_safetensors_files(dir.string(), files));
  return std::unique_ptr<WeightStore>(std::move(store));
}

}  // namespace agentcompile::frontend
