// Prompt ids, limits, seed and backend capabilities of one request (see make_job.h).
#include "serve/make_job.h"

#include <algorithm>
#include <random>

namespace agentcompile::serve {

namespace {

std::optional<ApiError> capabilities(const ParsedRequest& request, const BackendInfo& backend) {
  const SamplingParams& s = request.sampling;
  const std::string why = " (the " + backend.name + " backend's sampler does not have it)";
  if (!backend.penalties && s.presence_penalty != 0.f)
    return invalid_request("'presence_penalty' is not supported by this server's backend" + why + ".", "presence_penalty", "unsupported_value");
  if (!backend.penalties && s.frequency_penalty != 0.f)
    return invalid_request("'frequency_penalty' is not supported by this server's backend" + why + ".", "frequency_penalty", "unsupported_value");
  if (!backend.logprobs && s.logprobs)
    return invalid_request("'logprobs' is not supported by this server's backend" + why + ".", "logprobs", "unsupported_value");
  if (!backend.top_k && s.top_k > 0)
    return invalid_request("'top_k' is not supported by this server's backend" + why + ".", "top_k", "unsupported_value");
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> make_job(const ParsedRequest& request, const tokenizer::Tokenizer& tokenizer, const BackendInfo& backend,
                                 int64_t limit, GenerationJob& job) {
  if (auto e = capabilities(request, backend)) return e;
  job = GenerationJob{};
  if (request.route == Route::kChat) {
    tokenizer::ChatOptions options;
    options.enable_thinking = request.enable_thinking;
    auto rendered = tokenizer.chat_template().render(request.messages, options);
    if (!rendered)
      return invalid_request("The model's chat template cannot render these messages: " + rendered.status().message() +
                                 " (use /v1/completions to send text as is).",
                             "messages", "chat_template");
    job.prompt = tokenizer.encode(*rendered, /*add_special_tokens=*/false);  // the template writes the special tokens
  } else if (request.prompt_ids) {
    job.prompt = *request.prompt_ids;
    for (size_t i = 0; i < job.prompt.size(); ++i)
      if (job.prompt[i] >= backend.vocab_size)
        return invalid_request("Invalid 'prompt[" + std::to_string(i) + "]': token id " + std::to_string(job.prompt[i]) +
                                   " is outside the vocabulary (ids 0.." + std::to_string(backend.vocab_size - 1) + ").",
                               "prompt", "invalid_value");
  } else {
    job.prompt = tokenizer.encode(request.prompt, /*add_special_tokens=*/true);
  }
  if (job.prompt.empty()) return invalid_request("The prompt is empty: it has no tokens.", request.route == Route::kChat ? "messages" : "prompt");

  const int64_t prompt = static_cast<int64_t>(job.prompt.size());
  const int64_t context = backend.max_context;
  const std::string param = request.route == Route::kChat ? "messages" : "prompt";
  if (prompt >= context)
    return invalid_request("This model's maximum context length is " + std::to_string(context) + " tokens. However, your prompt has " +
                               std::to_string(prompt) + " tokens, which leaves no room for a completion. Please shorten the prompt.",
                           param, "context_length_exceeded");
  if (request.max_tokens && *request.max_tokens > context - prompt)
    return invalid_request("This model's maximum context length is " + std::to_string(context) + " tokens. However, you requested " +
                               std::to_string(prompt) + " prompt tokens + " + std::to_string(*request.max_tokens) +
                               " max_tokens. Please lower max_tokens to at most " + std::to_string(context - prompt) + ".",
                           "max_tokens", "context_length_exceeded");
  if (limit > 0 && request.max_tokens && *request.max_tokens > limit)
    return invalid_request("Invalid 'max_tokens': this server generates at most " + std::to_string(limit) + " tokens per request (--max-tokens), you asked for " +
                               std::to_string(*request.max_tokens) + ".",
                           "max_tokens", "invalid_value");
  job.max_tokens = request.max_tokens.value_or(limit > 0 ? std::min(limit, context - prompt) : context - prompt);
  job.sampling = request.sampling;
  if (!request.seeded) {
    std::random_device device;
    job.sampling.seed = (static_cast<uint64_t>(device()) << 32) | device();
  }
  job.stop = request.stop;
  job.ignore_eos = request.ignore_eos;
  return std::nullopt;
}

}  // namespace agentcompile::serve
