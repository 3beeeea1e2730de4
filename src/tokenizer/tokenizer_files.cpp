// Where a model keeps its tokenizer (see tokenizer_files.h).
#include "tokenizer/tokenizer_files.h"

#include <system_error>
#include <vector>

namespace agentcompile::tokenizer {

Expected<TokenizerFiles> locate_tokenizer(const std::filesystem::path& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(model, ec)) {
    if (model.extension() == ".gguf") return TokenizerFiles{TokenizerFiles::Kind::kGguf, model, {}};
    if (model.extension() == ".json") {
      const fs::path config = model.parent_path() / "tokenizer_config.json";
      return TokenizerFiles{TokenizerFiles::Kind::kTokenizerJson, model, fs::is_regular_file(config, ec) ? config : fs::path()};
    }
    return error(ErrorCode::kInvalidArgument,
                 model.string() + ": not a model directory, a tokenizer.json or a .gguf file");
  }
  if (!fs::is_directory(model, ec)) return error(ErrorCode::kNotFound, model.string() + ": no such file or directory");
  const fs::path json = model / "tokenizer.json";
  if (fs::is_regular_file(json, ec)) {
    const fs::path config = model / "tokenizer_config.json";
    return TokenizerFiles{TokenizerFiles::Kind::kTokenizerJson, json, fs::is_regular_file(config, ec) ? config : fs::path()};
  }
  std::vector<fs::path> ggufs;
  for (const auto& entry : fs::directory_iterator(model, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".gguf") ggufs.push_back(entry.path());
  if (ggufs.size() == 1) return TokenizerFiles{TokenizerFiles::Kind::kGguf, ggufs[0], {}};
  if (ggufs.size() > 1)
    return error(ErrorCode::kInvalidArgument, model.string() + ": has no tokenizer.json and " +
                                                  std::to_string(ggufs.size()) + " .gguf files; name one of them");
  return error(ErrorCode::kNotFound, model.string() + ": has no tokenizer.json and no .gguf file");
}

}  // namespace agentcompile::tokenizer
