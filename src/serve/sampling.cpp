// Host sampling: penalties, temperature, top-k, top-p and a seeded draw (see sampling.h for the order).
#include "serve/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace agentcompile::serve {

namespace {

// Larger logit first; the lower id first among equal ones, so results never depend on sort stability.
struct ByLogit {
  std::span<const float> logits;
  bool operator()(int32_t a, int32_t b) const { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); }
};

}  // namespace

int32_t greedy_token(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);  // strict: ties stay on the lower id
  return best;
}

int32_t HostSampler::take(int32_t token) {
  (void)uniform();  // sample() draws whatever the temperature
  ++counts_[token];
  return token;
}

TokenLogprob log_probabilities(std::span<const float> logits, int32_t token, int top) {
  double max = -std::numeric_limits<double>::infinity();
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_sum = max + std::log(sum);
  TokenLogprob result;
  result.token = token;
  result.logprob = static_cast<float>(logits[token] - log_sum);
  const size_t count = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  if (count > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count), ids.end(), ByLogit{logits});
    for (size_t i = 0; i < count; ++i) result.top.emplace_back(ids[i], static_cast<float>(logits[ids[i]] - log_sum));
  }
  return result;
}

HostSampler::HostSampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

double HostSampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t HostSampler::sample(std::span<float> logits, TokenLogprob* logprob) {
  // The draw happens whatever the temperature, so a sequence's later tokens do not depend on whether
  // an earlier one happened to be greedy.
  const double u = uniform();
  std::vector<float> raw;
  if (params_.logprobs && logprob) raw.assign(logits.begin(), logits.end());

  for (const auto& [token, count] : counts_)
    logits[token] -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;

  int32_t token = 0;
  if (params_.temperature <= 0.f) {
    token = greedy_token(logits);
  } else {
    const size_t vocab = logits.size();
    order_.resize(vocab);
    for (size_t i = 0; i < vocab; ++i) order_[i] = static_cast<int32_t>(i);
    size_t kept = vocab;
    const ByLogit by_logit{logits};
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab) {
      kept = static_cast<size_t>(params_.top_k);
      std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(kept), order_.end(), by_logit);
    } else if (params_.top_p < 1.f) {
      std::sort(order_.begin(), order_.end(), by_logit);  // top-p needs the most probable first
    }
    // Softmax of logit / temperature over the kept ids, in double.
    double max = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < kept; ++i) max = std::max(max, static_cast<double>(logits[order_[i]]));
    weights_.resize(kept);
    double total = 0;
    for (size_t i = 0; i < kept; ++i) {
      weights_[i] = std::exp((static_cast<double>(logits[order_[i]]) - max) / params_.temperature);
      total += weights_[i];
    }
    if (params_.top_p < 1.f) {
      // The smallest prefix (most probable first) whose mass reaches top_p; at least one token.
      double mass = 0;
      size_t cut = 0;
      while (cut < kept) {
        mass += weights_[cut++];
        if (mass >= params_.top_p * total) break;
      }
      kept = cut;
      total = mass;
    }
    double target = u * total;
    token = order_[kept - 1];  // rounding may leave target past the last weight
    for (size_t i = 0; i < kept; ++i) {
      if (target < weights_[i]) {
        token = order_[i];
        break;
      }
      target -= weights_[i];
    }
  }
  if (params_.logprobs && logprob) *logprob = log_probabilities(raw, token, params_.top_logprobs);
  ++counts_[token];
  return token;
}

}  // namespace agentcompile::serve
