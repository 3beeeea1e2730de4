// `agentcompile perplexity MODEL --text FILE [--window N] [--quantize SPEC] [--dequantize] [--threads N]
// [--max-tokens N] [--json]`: the model's perplexity on a text, teacher-forced on the CPU reference
// interpreter (fp32 arithmetic over the weights in the chosen formats, each dequantized exactly as the
// GPU kernels read it), so weight formats compare on quality without a GPU.
//
// Method: the text is tokenized raw (no chat template) and cut into windows of N - 1 tokens, each run
// from position 0 behind the tokenizer's BOS when it has one (llama.cpp's perplexity does the same per
// chunk). Every position of a window predicts the next token; NLL = logsumexp(logits) - logit[next] in
// double, and perplexity = exp(mean NLL) over every scored token of every window.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "frontend/model_source.h"
#include "frontend/weight_formats.h"
#include "ir/interpreter.h"
#include "ir/thread_pool.h"
#include "ir/verifier.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::tools {

namespace {

struct PerplexityOptions {
  std::string model;
  std::string text;
  int64_t window = 0;  // 0: min(512, the model's context)
  int64_t max_tokens = 0;
  std::string quantize, quantize_head;
  bool dequantize = false;
  int threads = 0;
  bool json = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot read the text file");
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) fail(path + ": the text file is empty");
  return text.str();
}

// -log softmax(logits)[target], in double.
double token_nll(const float* logits, int64_t vocab, int32_t target) {
  double max_logit = logits[0];
  for (int64_t v = 1; v < vocab; ++v) max_logit = std::max(max_logit, static_cast<double>(logits[v]));
  double total = 0.0;
  for (int64_t v = 0; v < vocab; ++v) total += std::exp(static_cast<double>(logits[v]) - max_logit);
  return max_logit + std::log(total) - static_cast<double>(logits[target]);
}

void run_perplexity(const PerplexityOptions& flags) {
  PerplexityOptions options = flags;
  auto formats = frontend::weight_format_options(options.quantize, options.dequantize, /*gpu=*/false, options.quantize_head);
  if (!formats) fail(formats.status().to_string());
  auto source = frontend::open_model(options.model, /*with_weights=*/true, *formats);
  if (!source) fail(source.status().to_string());
  if (!source->is_language_model() || source->format == frontend::ModelFormat::kCaptured)
    fail(options.model + ": perplexity needs a Hugging Face checkpoint or a GGUF file (the builder's graph gives every position's logits)");
  const int64_t context = source->config.max_position_embeddings;
  if (options.window > context)
    fail("--window " + std::to_string(options.window) + " exceeds the model's context of " + std::to_string(context));
  if (options.window == 0) options.window = std::min<int64_t>(512, context);

  auto tokenizer = tokenizer::Tokenizer::from_model_path(options.model);
  if (!tokenizer) fail(tokenizer.status().to_string());
  std::vector<int32_t> ids = tokenizer->encode(read_text(options.text), /*add_special_tokens=*/false);
  if (options.max_tokens > 0 && static_cast<int64_t>(ids.size()) > options.max_tokens) ids.resize(static_cast<size_t>(options.max_tokens));
  const std::optional<int32_t> bos = tokenizer->bos_id();
  const int64_t per_window = options.window - (bos ? 1 : 0);  // text tokens per window
  if (static_cast<int64_t>(ids.size()) < 2) fail(options.text + ": fewer than 2 tokens to score");

  frontend::BuildOptions build;
  build.prefill_all_logits = true;
  auto module = frontend::source_module(*source, build);
  if (!module) fail(module.status().to_string());
  if (Status status = ir::verify_module(*module); !status) fail(status.to_string());
  const frontend::InterpreterLoaders loaders = frontend::interpreter_loaders(*source->weights);
  ir::Interpreter interpreter(*module, loaders.values, loaders.packed, ir::InterpreterOptions{options.window, options.threads});

  const auto start = std::chrono::steady_clock::now();
  double nll = 0.0;
  int64_t scored = 0, windows = 0;
  for (size_t at = 0; at < ids.size(); at += static_cast<size_t>(per_window)) {
    std::vector<int32_t> window;
    if (bos) window.push_back(*bos);
    for (size_t i = at; i < ids.size() && static_cast<int64_t>(window.size()) < options.window; ++i) window.push_back(ids[i]);
    if (window.size() < 2) break;
    const int64_t n = static_cast<int64_t>(window.size());
    auto out = interpreter.run("prefill", {ir::HostTensor::from_i32({n}, window), ir::HostTensor::scalar_i32(0)});
    if (!out) fail(out.status().to_string());
    const ir::HostTensor& logits = out->front();
    if (logits.shape.size() != 2 || logits.shape[0] != n)
      fail("the prefill function returned logits of another shape than [" + std::to_string(n) + ", vocab]");
    const int64_t vocab = logits.shape[1];
    for (int64_t i = 0; i + 1 < n; ++i) {
      const int32_t next = window[static_cast<size_t>(i + 1)];
      if (next < 0 || next >= vocab) fail("token id " + std::to_string(next) + " is outside the model's vocabulary of " + std::to_string(vocab));
      nll += token_nll(logits.f32.data() + i * vocab, vocab, next);
      ++scored;
    }
    ++windows;
    if (!options.json) std::fprintf(stderr, "window %lld: %lld tokens, running perplexity %.4f\n", static_cast<long long>(windows),
                                    static_cast<long long>(n), std::exp(nll / static_cast<double>(scored)));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double mean = nll / static_cast<double>(scored);
  const std::string weights = formats->tag().empty() ? "as stored" : formats->tag();
  if (options.json) {
    std::printf("{\"model\": \"%s\", \"weights\": \"%s\", \"text\": \"%s\", \"window\": %lld, \"windows\": %lld, \"scored_tokens\": %lld, "
                "\"mean_nll\": %.6f, \"perplexity\": %.6f, \"seconds\": %.2f}\n",
                options.model.c_str(), weights.c_str(), options.text.c_str(), static_cast<long long>(options.window),
                static_cast<long long>(windows), static_cast<long long>(scored), mean, std::exp(mean), seconds);
  } else {
    std::printf("perplexity %.4f (mean NLL %.4f nats) over %lld tokens in %lld windows of up to %lld; weights %s; %.1f s on the CPU\n",
                std::exp(mean), mean, static_cast<long long>(scored), static_cast<long long>(windows),
                static_cast<long long>(options.window), weights.c_str(), seconds);
  }
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a model on a text file, teacher-forced on the CPU reference interpreter");
  auto options = std::make_shared<PerplexityOptions>();
  cmd->add_option("model", options->model, "HF checkpoint directory or .gguf file")->required();
  cmd->add_option("--text", options->text, "Text file, tokenized raw (no chat template)")->required();
  cmd->add_option("--window", options->window, "Tokens per window, BOS included (default 512, or the model's context if shorter)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd->add_option("--max-tokens", options->max_tokens, "Score at most this many text tokens (0: all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--quantize", options->quantize,
                  "Linear weights quantized as `compile --quantize` does: int8[:bf16] or int4[:gG][:zp][:bf16] (a quantized GGUF "
                  "file needs --dequantize too)");
  cmd->add_option("--quantize-head", options->quantize_head, "The LM head quantized too, as `compile --quantize-head` does (e.g. int8)");
  cmd->add_flag("--dequantize", options->dequantize, "GGUF: the file's blocks dequantized at load");
  cmd->add_option("--threads", options->threads, "CPU threads (default: all cores)")->check(CLI::Range(0, ir::ThreadPool::kMaxThreads));
  cmd->add_flag("--json", options->json, "Print one JSON object");
  cmd->callback([options] { run_perplexity(*options); });
}

}  // namespace agentcompile::tools
