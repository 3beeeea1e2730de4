// `agentcompile reference MODEL (--tokens IDS | -p TEXT | -p - | --prompt-file FILE) -n N`: greedy
// generation on the CPU reference interpreter. This is the numerical ground truth the compiled kernels
// are held to, and the no-GPU path of the demo. A text prompt goes through the model's tokenizer and
// chat template (unless --raw), as `run` does; the reply is printed as text, cut at the first
// end-of-sequence token.
#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>

#include "commands.h"
#include "prompt.h"
#include "token_list.h"
#include "frontend/model_source.h"
#include "frontend/weight_formats.h"
#include "ir/interpreter.h"
#include "ir/thread_pool.h"
#include "ir/verifier.h"
#include "tokenizer/generation_config.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::tools {

namespace {

struct ReferenceOptions {
  std::string model;
  std::string tokens;
  CLI::Option* tokens_option = nullptr;
  PromptFlags prompt;
  bool raw = false;
  int new_tokens = 16;
  int64_t max_context = 0;
  int threads = 0;
};

void run_reference(const ReferenceOptions& options) {
  const bool tokens = options.tokens_option->count() > 0;
  if (tokens == options.prompt.given()) fail("give exactly one of --tokens IDS, -p TEXT or --prompt-file FILE");
  std::optional<tokenizer::Tokenizer> text;
  std::vector<int32_t> prompt;
  if (!tokens) {
    const std::string prompt_text = read_prompt(options.prompt);
    auto loaded = tokenizer::Tokenizer::from_model_path(options.model);
    if (!loaded) fail(loaded.status().to_string());
    text.emplace(std::move(*loaded));
    prompt = encode_prompt(*text, {{"user", prompt_text}}, options.raw);
  }
  auto source = frontend::open_model(options.model, /*with_weights=*/true);
  if (!source) fail(source.status().to_string());
  if (!source->is_language_model()) fail(options.model + " is a captured module, not a language model: use `agentcompile run-function --cpu`");
  // The source's own module (for a capture: the graph as torch.export wrote it, before recognition),
  // so the reference trusts nothing of the compiler's.
  auto module = frontend::source_module(*source);
  if (!module) fail(module.status().to_string());
  if (Status status = ir::verify_module(*module); !status) fail(status.to_string());
  // Ids are checked against the model's vocabulary here, where it is known, rather than by the
  // embedding gather deep in the first step.
  if (tokens) prompt = parse_token_list(options.tokens, "--tokens", static_cast<size_t>(source->config.vocab_size));

  const int64_t needed = static_cast<int64_t>(prompt.size()) + options.new_tokens;
  const int64_t context = options.max_context > 0 ? options.max_context : needed;
  // Rows past the model's context could never be used.
  if (options.max_context > source->config.max_position_embeddings)
    fail("--max-context " + std::to_string(context) + " exceeds the model's context of " +
         std::to_string(source->config.max_position_embeddings));
  if (needed > context)
    fail("prompt (" + std::to_string(prompt.size()) + " tokens) + -n " + std::to_string(options.new_tokens) +
         " exceeds --max-context " + std::to_string(context));
  if (needed > source->config.max_position_embeddings)
    fail("prompt + -n = " + std::to_string(needed) + " tokens exceeds the model's context of " +
         std::to_string(source->config.max_position_embeddings));

  const frontend::WeightStore* store = source->weights.get();
  const frontend::InterpreterLoaders loaders = frontend::interpreter_loaders(*store);
  ir::Interpreter interpreter(*module, loaders.values, loaders.packed, ir::InterpreterOptions{context, options.threads});
  const auto start = std::chrono::steady_clock::now();
  auto generation = interpreter.generate_greedy(prompt, options.new_tokens);
  if (!generation) fail(generation.status().to_string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (text) {
    auto config = tokenizer::read_generation_config(options.model);
    const std::vector<int32_t> stops = tokenizer::stop_token_ids(config ? *config : tokenizer::GenerationConfig{}, *text);
    std::vector<int32_t> reply;
    for (int32_t token : generation->tokens) {
      if (std::find(stops.begin(), stops.end(), token) != stops.end()) break;
      reply.push_back(token);
    }
    std::printf("%s\n", text->decode(reply, /*skip_special=*/true).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "reference interpreter (CPU, fp32): %zu prompt + %d new tokens in %.2f s\n", prompt.size(), options.new_tokens, seconds);
    return;
  }
  std::printf("tokens:");
  for (int32_t token : generation->tokens) std::printf(" %d", token);
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr, "reference interpreter (CPU, fp32): %zu prompt + %d new tokens in %.2f s\n", prompt.size(),
               options.new_tokens, seconds);
}

}  // namespace

void add_reference_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("reference", "Generate greedily with the CPU reference interpreter (fp32)");
  auto options = std::make_shared<ReferenceOptions>();
  cmd->add_option("model", options->model, "HF checkpoint directory or .gguf file")->required();
  options->tokens_option = cmd->add_option("--tokens", options->tokens, "Prompt token ids, comma-separated (prints ids)");
  add_prompt_flags(*cmd, options->prompt, "Prompt text, sent through the chat template unless --raw (prints text)");
  cmd->add_flag("--raw", options->raw, "With a text prompt: no chat template");
  cmd->add_option("-n,--new-tokens", options->new_tokens, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-context", options->max_context, "KV-cache rows to allocate (default: prompt + n; at most the model's context)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", options->threads, "CPU threads (default: all cores)")->check(CLI::Range(0, ir::ThreadPool::kMaxThreads));
  cmd->callback([options] { run_reference(*options); });
}

}  // namespace agentcompile::tools
