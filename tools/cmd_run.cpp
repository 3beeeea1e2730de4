// `agentcompile run MODEL (-p TEXT | -p - | --prompt-file FILE | --tokens IDS | --chat) -n N`: generation
// on the GPU with the compiled artifact (compiled on first use), streaming tokens as they are sampled.
// Text prompts go through the model's tokenizer and, unless --raw, its chat template; --tokens streams
// ids. With --dump-logits the command instead teacher-forces the ids and writes every position's logits.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine_flags.h"
#include "frontend/model_source.h"
#include "prompt.h"
#include "tensor_parallel_run.h"
#include "runtime/logits_file.h"
#include "token_list.h"
#include "tokenizer/generation_config.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::tools {

namespace {

struct RunFlags {
  EngineFlags engine;
  PromptFlags prompt;
  std::string tokens, system, dump_logits;
  CLI::Option* tokens_option = nullptr;
  bool chat = false, raw = false, no_think = false, json = false, ignore_eos = false;
  int64_t new_tokens = 128, prefill = 0;
  std::optional<float> temperature, top_p, repetition_penalty;
  std::optional<int> top_k;
  uint64_t seed = 0;
};

// A flag's number must be finite and pass `in_range`; CLI11's own ranges let NaN through, and a NaN
// temperature samples garbage without any error.
CLI::Validator finite(const std::string& range, std::function<bool(double)> in_range) {
  return CLI::Validator(
      [range, in_range](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value) || !in_range(value)) return "'" + text + "' is not a number " + range;
        return {};
      },
      range);
}

// Sampling: generation_config.json's defaults, overridden by the flags the user gave.
SamplingOptions sampling_from(const RunFlags& flags, const std::optional<tokenizer::GenerationConfig>& defaults) {
  SamplingOptions s;
  if (defaults && defaults->do_sample) {
    s.temperature = static_cast<float>(defaults->temperature);
    s.top_k = static_cast<int>(defaults->top_k);
    s.top_p = static_cast<float>(defaults->top_p);
  }
  if (defaults) s.repetition_penalty = static_cast<float>(defaults->repetition_penalty);
  if (flags.temperature) s.temperature = *flags.temperature;
  if (flags.top_k) s.top_k = *flags.top_k;
  if (flags.top_p) s.top_p = *flags.top_p;
  if (flags.repetition_penalty) s.repetition_penalty = *flags.repetition_penalty;
  s.seed = flags.seed;
  return s;
}

void dump_logits(Engine& engine, const RunFlags& flags, const std::vector<int32_t>& ids) {
  const int64_t prefill = flags.prefill > 0 ? flags.prefill : std::max<int64_t>(1, static_cast<int64_t>(ids.size()) / 2);
  auto logits = engine.teacher_forced_logits(ids, prefill);
  if (!logits) fail(logits.status().to_string());
  const int64_t vocab = engine.info().vocab_size;
  if (Status s = runtime::write_logits(flags.dump_logits, *logits, static_cast<int64_t>(ids.size()), vocab); !s) fail(s.to_string());
  std::fprintf(stderr, "wrote logits [%zu, %lld] to %s: positions 0..%lld from prefill calls, %lld..%zu from decode steps\n", ids.size(),
               static_cast<long long>(vocab), flags.dump_logits.c_str(), static_cast<long long>(prefill - 1), static_cast<long long>(prefill),
               ids.size() - 1);
}

// A prompt the model cannot take is refused before the engine loads (which may compile first, and
// needs a GPU): ids outside the model's vocabulary, more tokens than the model's context, or with
// --max-context more than the KV cache's rows.
void check_prompt_fits(const RunFlags& flags, const std::vector<int32_t>& prompt) {
  auto source = frontend::open_model(flags.engine.model, /*with_weights=*/false);
  if (!source) fail(source.status().to_string());
  if (!source->is_language_model()) return;  // the engine says what a captured module cannot do
  const int64_t vocab = source->config.vocab_size;
  for (int32_t id : prompt)
    if (id >= vocab)
      fail("token id " + std::to_string(id) + " of the prompt is outside the model's vocabulary (ids 0.." + std::to_string(vocab - 1) + ")");
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t model_context = source->config.max_position_embeddings;
  if (n > model_context)
    fail("the prompt has " + std::to_string(n) + " tokens, longer than the model's context of " + std::to_string(model_context));
  const int64_t rows = flags.engine.max_context;  // 0: the engine picks, at most the model's context
  if (rows <= 0) return;
  if (!flags.dump_logits.empty()) {
    if (n > rows) fail("the prompt has " + std::to_string(n) + " tokens, more than --max-context " + std::to_string(rows));
  } else if (n + flags.new_tokens - 1 > rows) {
    fail(std::to_string(n) + " prompt tokens + " + std::to_string(flags.new_tokens) + " new tokens need " +
         std::to_string(n + flags.new_tokens - 1) + " cache rows, more than --max-context " + std::to_string(rows) +
         " (raise --max-context or lower -n)");
  }
}

// One generation, streamed: text through the stream decoder, or ids.
GenerateResult generate_streaming(Engine& engine, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                                  const tokenizer::Tokenizer* text, bool quiet) {
  std::optional<tokenizer::StreamDecoder> decoder;
  if (text) decoder.emplace(*text);
  bool started = false;
  auto result = engine.generate(prompt, options, [&](int32_t token) {
    if (quiet) return true;
    if (!text && !started) std::printf("tokens:");
    started = true;
    if (decoder)
      std::fputs(decoder->push(token).c_str(), stdout);
    else
      std::printf(" %d", token);
    std::fflush(stdout);
    return true;
  });
  if (!result) fail(result.status().to_string());
  if (!quiet) {
    if (!text && !started) std::printf("tokens:");
    if (decoder) std::fputs(decoder->finish().c_str(), stdout);
    std::printf("\n");
    std::fflush(stdout);
  }
  return *result;
}

void report(const GenerateResult& r, size_t prompt_tokens) {
  const double per_token = r.decode_steps > 0 ? r.decode_ms / static_cast<double>(r.decode_steps) : 0;
  std::fprintf(stderr, "%zu prompt tokens, %zu generated (%s): prefill %.2f ms, decode %.3f ms/token\n", prompt_tokens, r.tokens.size(),
               r.stop_reason.c_str(), r.prefill_ms, per_token);
}

void run(const RunFlags& flags) {
  const bool tokens = flags.tokens_option->count() > 0;
  const int modes = flags.prompt.given() + tokens + flags.chat;
  if (modes != 1) fail("give exactly one of -p TEXT, --prompt-file FILE, --tokens IDS or --chat");
  if (!flags.dump_logits.empty() && flags.chat) fail("--dump-logits needs --tokens, -p or --prompt-file");
  // Read before anything is loaded, so a prompt that cannot be had fails at once.
  const std::string prompt_text = flags.prompt.given() ? read_prompt(flags.prompt) : std::string();

  // The tokenizer, for text in and out (not needed for --tokens).
  std::optional<tokenizer::Tokenizer> text;
  if (!tokens) {
    auto loaded = tokenizer::Tokenizer::from_model_path(flags.engine.model);
    if (!loaded) fail(loaded.status().to_string());
    text.emplace(std::move(*loaded));
  }
  std::optional<tokenizer::GenerationConfig> defaults;
  if (auto g = tokenizer::read_generation_config(flags.engine.model); g) defaults = *g;
  tokenizer::ChatOptions chat_options;
  chat_options.enable_thinking = !flags.no_think;

  // The prompt's ids before the engine loads, so a prompt that cannot be encoded fails at once.
  std::vector<int32_t> prompt;
  if (tokens) {
    prompt = parse_token_list(flags.tokens);
  } else if (!flags.chat) {
    std::vector<tokenizer::ChatMessage> messages;
    if (!flags.system.empty()) messages.push_back({"system", flags.system});
    messages.push_back({"user", prompt_text});
    prompt = encode_prompt(*text, messages, flags.raw, chat_options);
  } else if (text->chat_template().family() == tokenizer::ChatFamily::kNone) {
    fail(text->source() + ": the tokenizer has no chat template, which --chat needs");
  }

  if (!flags.chat) check_prompt_fits(flags, prompt);
  const bool ranks = flags.engine.tensor_parallel > 1;
  if (ranks && (flags.chat || !flags.dump_logits.empty())) fail("--tensor-parallel over several GPUs runs -p, --prompt-file or --tokens");

  std::unique_ptr<Engine> engine = ranks ? nullptr : load_engine_or_fail(flags.engine, flags.json);
  GenerateOptions options;
  options.max_new_tokens = flags.new_tokens;
  options.sampling = sampling_from(flags, defaults);
  options.stop_at_eos = !flags.ignore_eos;
  if (defaults && !flags.ignore_eos) options.extra_stop_ids = defaults->eos_token_ids;
  if (text && !flags.ignore_eos)
    for (int32_t id : tokenizer::stop_token_ids(defaults ? *defaults : tokenizer::GenerationConfig{}, *text)) options.extra_stop_ids.push_back(id);

  if (flags.chat) {
    std::vector<tokenizer::ChatMessage> history;
    if (!flags.system.empty()) history.push_back({"system", flags.system});
    std::fprintf(stderr, "chat: type a message and press enter; an empty line or end of input quits\n");
    std::string line;
    while (std::fprintf(stderr, "> "), std::getline(std::cin, line) && !line.empty()) {
      history.push_back({"user", line});
      const std::vector<int32_t> prompt = encode_prompt(*text, history, /*raw=*/false, chat_options);
      const GenerateResult r = generate_streaming(*engine, prompt, options, &*text, false);
      std::vector<int32_t> reply = r.tokens;
      if (!reply.empty() && r.stop_reason == "eos") reply.pop_back();
      history.push_back({"assistant", text->decode(reply, /*skip_special=*/true)});
      report(r, prompt.size());
    }
    return;
  }

  if (!flags.dump_logits.empty()) return dump_logits(*engine, flags, prompt);

  GenerateResult r;
  std::string gpu;
  nlohmann::json collectives = nlohmann::json::object();
  if (ranks) {  // every rank generates; rank 0's tokens are printed once it is done (no streaming)
    auto engines = RankEngines::load_or_fail(flags.engine, flags.json);
    r = engines->generate_or_fail(prompt, options);
    gpu = engines->gpu();
    const EngineInfo& info = engines->info();
    collectives = {{"all_reduce", info.all_reduce}, {"all_reduce_us", info.all_reduce_us}, {"decode_all_reduces", info.decode_all_reduces}};
    if (text && !flags.json) std::printf("%s\n", text->decode(r.tokens, /*skip_special=*/true).c_str());
  } else {
    r = generate_streaming(*engine, prompt, options, text ? &*text : nullptr, flags.json);
    gpu = engine->info().gpu;
  }
  if (flags.json) {
    const double per_token = r.decode_steps > 0 ? r.decode_ms / static_cast<double>(r.decode_steps) : 0;
    nlohmann::json out{{"prompt_tokens", prompt}, {"generated", r.tokens}, {"stop_reason", r.stop_reason}, {"prefill_ms", r.prefill_ms},
                       {"decode_ms_per_token", per_token}, {"gpu", gpu}, {"cuda_graph", !flags.engine.no_cuda_graph},
                       {"tensor_parallel", flags.engine.tensor_parallel}};
    out.update(collectives);  // tensor parallelism: the decode all-reduce's transport, measured time and count per step
    if (text) out["text"] = text->decode(r.tokens, /*skip_special=*/true);
    std::printf("%s\n", out.dump().c_str());
  } else {
    report(r, prompt.size());
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate on the GPU with the compiled kernels (compiles the model on first use)");
  auto flags = std::make_shared<RunFlags>();
  add_engine_flags(*cmd, flags->engine);
  add_prompt_flags(*cmd, flags->prompt, "Prompt text (the chat template is applied unless --raw)");
  flags->tokens_option = cmd->add_option("--tokens", flags->tokens, "Prompt token ids, comma-separated (output is ids)");
  cmd->add_flag("--chat", flags->chat, "Interactive chat on stdin, keeping the conversation");
  cmd->add_option("--system", flags->system, "System message for -p and --chat");
  cmd->add_flag("--raw", flags->raw, "Send -p as is, without the chat template");
  cmd->add_flag("--no-think", flags->no_think, "Qwen3: turn thinking off in the chat template");
  cmd->add_option("-n,--new-tokens", flags->new_tokens, "Most tokens to generate")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--temperature", flags->temperature, "Sampling temperature (0: greedy; default from generation_config.json, else greedy)")
      ->check(finite(">= 0", [](double v) { return v >= 0; }));
  cmd->add_option("--top-k", flags->top_k, "Keep the k most likely tokens (0: off)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--top-p", flags->top_p, "Keep the most likely tokens up to this probability mass (1: off)")
      ->check(finite("in (0, 1]", [](double v) { return v > 0 && v <= 1; }));
  cmd->add_option("--repetition-penalty", flags->repetition_penalty, "Penalty for tokens already seen (1: off)")
      ->check(finite("> 0", [](double v) { return v > 0; }));
  cmd->add_option("--seed", flags->seed, "Sampling seed");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "Generate all -n tokens even past an end-of-sequence token");
  cmd->add_flag("--json", flags->json, "Print one JSON object instead of streaming");
  cmd->add_option("--dump-logits", flags->dump_logits, "Teacher-force the prompt ids and write every position's logits (.npy or .safetensors)");
  cmd->add_option("--prefill", flags->prefill, "With --dump-logits: ids that go through prefill (default half)")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->callback([flags] { run(*flags); });
}

}  // namespace agentcompile::tools
