// config.json keys that change what a model computes are honoured or refused, never ignored (issue
// 23): sliding-window attention (unless the window covers the whole context), quantized weights
// (quantization_config), llama3 RoPE scaling without its factors, RoPE scaling of any other kind or
// of no stated kind, and keys of the wrong JSON type (model_type 5, hidden_act 5). Every refusal
// names the key.
#include <gtest/gtest.h>

#include "frontend/model_config.h"

namespace agentcompile::frontend {
namespace {

using json = nlohmann::json;

json tiny_qwen2() {
  return json{{"model_type", "qwen2"}, {"hidden_size", 64}, {"intermediate_size", 160}, {"num_hidden_layers", 2},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 512}, {"max_position_embeddings", 256},
              {"rms_norm_eps", 1e-6}, {"rope_theta", 1e6}, {"hidden_act", "silu"}, {"use_sliding_window", false},
              {"sliding_window", 128}, {"max_window_layers", 0}, {"torch_dtype", "float16"}};
}

json with(json config, const json& changes) {
  for (const auto& [key, value] : changes.items()) config[key] = value;
  return config;
}

// Parses and expects a refusal that names every fragment.
void expect_refused(const json& config, const std::vector<std::string>& fragments) {
  auto parsed = parse_hf_config(config, "config.json");
  ASSERT_FALSE(parsed) << config.dump();
  for (const auto& fragment : fragments)
    EXPECT_NE(parsed.status().message().find(fragment), std::string::npos) << "no '" << fragment << "' in " << parsed.status().to_string();
}

void expect_accepted(const json& config) {
  auto parsed = parse_hf_config(config, "config.json");
  EXPECT_TRUE(parsed) << config.dump() << ": " << parsed.status().to_string();
}

TEST(ConfigKeys, SlidingWindowAttentionIsRefusedUnlessItCoversTheContext) {
  expect_refused(with(tiny_qwen2(), {{"use_sliding_window", true}}), {"'use_sliding_window'", "128", "256"});
  // transformers 5 lists each layer's attention instead.
  expect_refused(with(tiny_qwen2(), {{"layer_types", {"full_attention", "sliding_attention"}}}), {"'layer_types'", "sliding_attention"});
  // A window as long as the context slides over nothing; so does one no layer uses.
  expect_accepted(with(tiny_qwen2(), {{"use_sliding_window", true}, {"sliding_window", 256}}));
  expect_accepted(with(tiny_qwen2(), {{"use_sliding_window", true}, {"sliding_window", nullptr}}));
  expect_accepted(with(tiny_qwen2(), {{"use_sliding_window", true}, {"max_window_layers", 2}}));
  expect_accepted(with(tiny_qwen2(), {{"layer_types", {"full_attention", "full_attention"}}}));
  // Without a window, transformers' default of 4096: shorter than a context of 8192, not than 256.
  json no_window = with(tiny_qwen2(), {{"use_sliding_window", true}});
  no_window.erase("sliding_window");
  expect_accepted(no_window);
  expect_refused(with(no_window, {{"max_position_embeddings", 8192}}), {"'use_sliding_window'", "4096 (transformers' default)", "8192"});
  // Without max_window_layers, transformers' versions disagree on which layers slide.
  json no_layers = with(tiny_qwen2(), {{"use_sliding_window", true}});
  no_layers.erase("max_window_layers");
  expect_refused(no_layers, {"'use_sliding_window'", "128"});
  expect_refused(with(tiny_qwen2(), {{"use_sliding_window", "yes"}}), {"'use_sliding_window'", "true or false"});
}

TEST(ConfigKeys, QuantizedCheckpointsAreRefused) {
  expect_refused(with(tiny_qwen2(), {{"quantization_config", {{"quant_method", "gptq"}, {"bits", 4}}}}), {"'quantization_config'", "gptq"});
  expect_refused(with(tiny_qwen2(), {{"quantization_config", {{"quant_method", "awq"}}}}), {"'quantization_config'", "awq"});
  expect_accepted(with(tiny_qwen2(), {{"quantization_config", nullptr}}));
}

TEST(ConfigKeys, Llama3RopeScalingNeedsEveryFactor) {
  const json full = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                     {"original_max_position_embeddings", 8192}};
  expect_accepted(with(tiny_qwen2(), {{"rope_scaling", full}}));
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
    json partial = full;
    partial.erase(key);
    expect_refused(with(tiny_qwen2(), {{"rope_scaling", partial}}), {"rope_scaling", std::string("'") + key + "'"});
  }
  // transformers 5 spells it rope_parameters.
  json parameters = full;
  parameters["rope_theta"] = 500000.0;
  parameters.erase("low_freq_factor");
  expect_refused(with(tiny_qwen2(), {{"rope_parameters", parameters}}), {"'low_freq_factor'"});
}

TEST(ConfigKeys, RopeScalingOfAnotherOrNoKindIsRefused) {
  for (const json& scaling : {json{{"rope_type", "yarn"}, {"factor", 4.0}}, json{{"type", "linear"}, {"factor", 2.0}},
                              json{{"type", "dynamic"}, {"factor", 2.0}}, json{{"factor", 2.0}}, json{{"rope_type", 5}}})
    expect_refused(with(tiny_qwen2(), {{"rope_scaling", scaling}}), {"rope_scaling"});
  expect_accepted(with(tiny_qwen2(), {{"rope_scaling", {{"rope_type", "default"}}}}));
  expect_accepted(with(tiny_qwen2(), {{"rope_scaling", nullptr}}));
  expect_refused(with(tiny_qwen2(), {{"rope_parameters", "llama3"}}), {"'rope_parameters'"});
}

TEST(ConfigKeys, KeysOfTheWrongTypeSaySo) {
  expect_refused(with(tiny_qwen2(), {{"model_type", 5}}), {"'model_type'", "must be a string"});
  expect_refused(with(tiny_qwen2(), {{"hidden_act", 5}}), {"'hidden_act'", "must be a string"});
  expect_refused(with(tiny_qwen2(), {{"torch_dtype", 16}}), {"'torch_dtype'", "must be a string"});
  expect_refused(with(tiny_qwen2(), {{"eos_token_id", "</s>"}}), {"'eos_token_id'"});
  expect_refused(with(tiny_qwen2(), {{"eos_token_id", {2, "</s>"}}}), {"'eos_token_id'"});
  expect_refused(with(tiny_qwen2(), {{"bos_token_id", 1.5}}), {"'bos_token_id'"});
  json missing = tiny_qwen2();
  missing.erase("model_type");
  expect_refused(missing, {"missing required key 'model_type'"});
}

TEST(ConfigKeys, PartialRotaryEmbeddingsAreRefused) {
  expect_refused(with(tiny_qwen2(), {{"partial_rotary_factor", 0.5}}), {"'partial_rotary_factor'"});
  expect_accepted(with(tiny_qwen2(), {{"partial_rotary_factor", 1.0}}));
}

}  // namespace
}  // namespace agentcompile::frontend
