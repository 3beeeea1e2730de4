// Bounds and consistency of a model configuration (see config_invariants.h for why these bounds).
#include "frontend/config_invariants.h"

#include <cmath>
#include <cstdio>
#include <tuple>

namespace agentcompile::frontend {

namespace {

Status refuse(const std::string& source, const ConfigKeyNames& names, const std::string& key, const std::string& what) {
  return error(ErrorCode::kInvalidArgument, source + ": " + config_key_name(names, key) + " " + what);
}

// Parameters of the decoder stack, in double: with every size bounded the count is exact enough,
// and it cannot wrap as an integer product of unchecked sizes did.
double parameter_count(const ModelConfig& c) {
  const double hidden = static_cast<double>(c.hidden_size), q = static_cast<double>(c.num_heads * c.head_dim),
               kv = static_cast<double>(c.num_kv_heads * c.head_dim), ffn = static_cast<double>(c.intermediate_size);
  const double per_layer = hidden * (q + 2 * kv) + q * hidden + 3 * hidden * ffn + 2 * hidden;
  const double embeddings = static_cast<double>(c.vocab_size) * hidden * (c.tie_word_embeddings ? 1 : 2);
  return static_cast<double>(c.num_layers) * per_layer + embeddings + hidden;
}

}  // namespace

Status check_config_invariants(const ModelConfig& c, const std::string& source, const ConfigKeyNames& names) {
  using L = ConfigLimits;
  for (auto [key, value, limit] : {std::tuple{"hidden_size", c.hidden_size, L::kHiddenSize},
                                   {"intermediate_size", c.intermediate_size, L::kIntermediateSize},
                                   {"num_hidden_layers", c.num_layers, L::kLayers},
                                   {"num_attention_heads", c.num_heads, L::kHeads},
                                   {"num_key_value_heads", c.num_kv_heads, L::kHeads},
                                   {"head_dim", c.head_dim, L::kHeadDim},
                                   {"vocab_size", c.vocab_size, L::kVocabSize},
                                   {"max_position_embeddings", c.max_position_embeddings, L::kContext}}) {
    if (value <= 0) return refuse(source, names, key, "must be positive, got " + std::to_string(value));
    if (value > limit) return refuse(source, names, key, "is " + std::to_string(value) + ", above the largest supported (" + std::to_string(limit) + ")");
  }
  if (c.num_kv_heads > c.num_heads)
    return refuse(source, names, "num_key_value_heads", "(" + std::to_string(c.num_kv_heads) + ") exceeds num_attention_heads (" +
                                                     std::to_string(c.num_heads) + ")");
  if (const double parameters = parameter_count(c); parameters > L::kParameters) {
    char count[64];
    std::snprintf(count, sizeof(count), "%.3g", parameters);
    return refuse(source, names, "num_hidden_layers", "and the other sizes give " + std::string(count) + " parameters, above the largest supported (4e12)");
  }
  // An eps of zero or less turns every norm of a zero row into NaN; NaN or infinity anywhere here
  // poisons every output.
  if (!std::isfinite(c.rms_norm_eps) || c.rms_norm_eps <= 0 || c.rms_norm_eps >= 1)
    return refuse(source, names, "rms_norm_eps", "must lie in (0, 1), got " + std::to_string(c.rms_norm_eps));
  if (!std::isfinite(c.rope_theta) || c.rope_theta <= 0) return refuse(source, names, "rope_theta", "must be positive and finite");
  if (!std::isfinite(c.initializer_range) || c.initializer_range < 0)
    return refuse(source, names, "initializer_range", "must be non-negative and finite, got " + std::to_string(c.initializer_range));
  if (c.bos_token_id && (*c.bos_token_id < 0 || *c.bos_token_id >= c.vocab_size))
    return refuse(source, names, "bos_token_id", std::to_string(*c.bos_token_id) + " is not a token id below vocab_size " + std::to_string(c.vocab_size));
  for (int64_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size)
      return refuse(source, names, "eos_token_id", std::to_string(id) + " is not a token id below vocab_size " + std::to_string(c.vocab_size));
  return Status::ok();
}

}  // namespace agentcompile::frontend
