// Embedding agentcompile: load a model (compiling it on first use) and stream a greedy continuation
// of token ids through the public API.
//
//   agentcompile_generate_example MODEL_DIR 1,2,3 [N]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "agentcompile/engine.h"
#include "agentcompile/first_use.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL PROMPT_IDS [NEW_TOKENS]\n", argv[0]);
    return 2;
  }
  std::vector<int32_t> prompt;
  std::stringstream ids(argv[2]);
  for (std::string item; std::getline(ids, item, ',');) prompt.push_back(static_cast<int32_t>(std::stol(item)));

  agentcompile::EngineOptions options;
  options.model = argv[1];
  auto engine = agentcompile::load_engine(options, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!engine) {
    std::fprintf(stderr, "%s\n", engine.status().to_string().c_str());
    return 1;
  }
  agentcompile::GenerateOptions generate;
  generate.max_new_tokens = argc > 3 ? std::atoi(argv[3]) : 32;
  auto result = (*engine)->generate(prompt, generate, [](int32_t token) {
    std::printf("%d ", token);
    std::fflush(stdout);
    return true;  // false would stop here
  });
  if (!result) {
    std::fprintf(stderr, "\n%s\n", result.status().to_string().c_str());
    return 1;
  }
  std::printf("\n%zu tokens (%s), prefill %.2f ms, decode %.3f ms/token\n", result->tokens.size(), result->stop_reason.c_str(), result->prefill_ms,
              result->decode_steps ? result->decode_ms / static_cast<double>(result->decode_steps) : 0.0);
  return 0;
}
