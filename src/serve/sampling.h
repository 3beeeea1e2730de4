// Sampling on the host, from one sequence's logits: OpenAI's presence and frequency penalties,
// temperature, top-k, top-p, a seeded generator, and the log-probabilities a request may ask for.
// The CPU backend samples with it; the GPU backend samples on the device (runtime/sampler.h) and
// refuses what that sampler lacks.
//
// Order, for one token:
//   1. logprobs (when asked): log-softmax of the model's raw logits, before penalties and temperature
//      (the model's own distribution, what vLLM returns by default);
//   2. penalties on the tokens this sequence has generated (not the prompt's), as OpenAI documents:
//      logit[j] -= count[j] * frequency_penalty + (count[j] > 0) * presence_penalty;
//   3. temperature 0: argmax (ties go to the lowest id). Otherwise softmax of logit / temperature over
//      the top_k largest (all when 0), cut to the smallest set of most probable tokens whose mass
//      reaches top_p, and one draw from it.
// The draw uses a 64-bit Mersenne twister seeded with the request's seed and turns its output into
// [0, 1) itself (std::uniform_real_distribution is implementation-defined), so a seed gives the same
// tokens on every build and at every concurrency.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace agentcompile::serve {

struct SamplingParams {
  float temperature = 1.f;       // 0: greedy
  float top_p = 1.f;             // (0, 1]; 1: off
  int top_k = 0;                 // 0: off
  float presence_penalty = 0.f;  // [-2, 2]
  float frequency_penalty = 0.f; // [-2, 2]
  uint64_t seed = 0;
  bool logprobs = false;         // report the sampled token's log-probability
  int top_logprobs = 0;          // and this many of the most likely tokens at each position

  bool penalized() const { return presence_penalty != 0.f || frequency_penalty != 0.f; }
};

// One generated token's log-probability and the most likely alternatives (most likely first, ties by id).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.f;
  std::vector<std::pair<int32_t, float>> top;
};

// The greedy token of a logits row: the largest logit, the lowest id among equal ones.
int32_t greedy_token(std::span<const float> logits);

class HostSampler {
 public:
  explicit HostSampler(const SamplingParams& params);

  // The next token from `logits` [vocab] (overwritten: penalties and temperature are applied in place);
  // fills `logprob` when the params ask for log-probabilities. Remembers the token for the penalties.
  int32_t sample(std::span<float> logits, TokenLogprob* logprob);
  // Whether the next token is the logits' argmax and nothing more is asked (temperature 0, no
  // penalties, no log-probabilities): a backend may then find it without handing the row over.
  bool greedy_only() const { return params_.temperature <= 0.f && !params_.penalized() && !params_.logprobs; }
  // Takes `token`, the argmax found elsewhere (greedy_token's rule), as sample() would have taken it:
  // the draw consumed, the token counted.
  int32_t take(int32_t token);

  const SamplingParams& params() const { return params_; }

 private:
  double uniform();  // [0, 1) from the top 53 bits of one draw

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int> counts_;  // generated tokens, for the penalties
  std::vector<int32_t> order_;               // scratch: candidate ids
  std::vector<double> weights_;              // scratch: their unnormalized probabilities
};

// The log-probability of `token` under softmax(logits) and the `top` most likely ids (ties by id).
TokenLogprob log_probabilities(std::span<const float> logits, int32_t token, int top);

}  // namespace agentcompile::serve
