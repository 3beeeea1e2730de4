// generation_config.json + config.json -> GenerationConfig.
#include "tokenizer/generation_config.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace agentcompile::tokenizer {

namespace {

using nlohmann::json;

Expected<std::optional<json>> read_optional_json(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::optional<json>();
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(ErrorCode::kIo, path.string() + ": cannot open");
  try {
    json value = json::parse(in);
    if (!value.is_object()) return error(ErrorCode::kParse, path.string() + ": expected a JSON object");
    return std::optional<json>(std::move(value));
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, path.string() + ": not valid JSON: " + e.what());
  }
}

Status wrong_type(const std::filesystem::path& path, const char* key, const char* expected, const json& value) {
  return error(ErrorCode::kInvalidArgument,
               path.string() + ": key '" + key + "' must be " + expected + ", got " + value.dump());
}

// "eos_token_id": 2 or [1, 2]; appended to `ids` unless already there.
Status read_id_list(const json& root, const std::filesystem::path& path, const char* key, std::vector<int32_t>& ids) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return Status::ok();
  std::vector<json> values = it->is_array() ? std::vector<json>(it->begin(), it->end()) : std::vector<json>{*it};
  for (const json& value : values) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX)
      return wrong_type(path, key, "a token id or a list of token ids", *it);
    const int32_t id = value.get<int32_t>();
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return Status::ok();
}

template <typename T>
Status read_number(const json& root, const std::filesystem::path& path, const char* key, T& target) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return Status::ok();
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return wrong_type(path, key, "true or false", *it);
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) return wrong_type(path, key, "an integer", *it);
  } else {
    if (!it->is_number()) return wrong_type(path, key, "a number", *it);
  }
  target = it->get<T>();
  return Status::ok();
}

Status read_optional_int(const json& root, const std::filesystem::path& path, const char* key,
                         std::optional<int64_t>& target) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return Status::ok();
  if (!it->is_number_integer()) return wrong_type(path, key, "an integer", *it);
  target = it->get<int64_t>();
  return Status::ok();
}

}  // namespace

Expected<GenerationConfig> read_generation_config(const std::filesystem::path& model_dir) {
  GenerationConfig config;
  std::error_code ec;
  if (!std::filesystem::is_directory(model_dir, ec)) return config;
  const auto generation_path = model_dir / "generation_config.json";
  const auto model_path = model_dir / "config.json";
  AC_ASSIGN_OR_RETURN(std::optional<json> generation, read_optional_json(generation_path));
  AC_ASSIGN_OR_RETURN(std::optional<json> model, read_optional_json(model_path));
  if (generation) {
    const json& root = *generation;
    AC_TRY(read_id_list(root, generation_path, "eos_token_id", config.eos_token_ids));
    std::vector<int32_t> bos;
    AC_TRY(read_id_list(root, generation_path, "bos_token_id", bos));
    if (!bos.empty()) config.bos_token_id = bos.front();
    AC_TRY(read_number(root, generation_path, "do_sample", config.do_sample));
    AC_TRY(read_number(root, generation_path, "temperature", config.temperature));
    AC_TRY(read_number(root, generation_path, "top_k", config.top_k));
    AC_TRY(read_number(root, generation_path, "top_p", config.top_p));
    AC_TRY(read_number(root, generation_path, "repetition_penalty", config.repetition_penalty));
    AC_TRY(read_optional_int(root, generation_path, "max_new_tokens", config.max_new_tokens));
    AC_TRY(read_optional_int(root, generation_path, "max_length", config.max_length));
  }
  if (model) {
    AC_TRY(read_id_list(*model, model_path, "eos_token_id", config.eos_token_ids));
    if (!config.bos_token_id) {
      std::vector<int32_t> bos;
      AC_TRY(read_id_list(*model, model_path, "bos_token_id", bos));
      if (!bos.empty()) config.bos_token_id = bos.front();
    }
  }
  return config;
}

std::vector<int32_t> stop_token_ids(const GenerationConfig& config, const Tokenizer& tokenizer) {
  std::vector<int32_t> ids = config.eos_token_ids;
  for (int32_t id : tokenizer.eos_ids())
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

}  // namespace agentcompile::tokenizer
