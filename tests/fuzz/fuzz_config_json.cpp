// libFuzzer harness for config.json: any bytes must parse to a ModelConfig that keeps the invariants
// (config_invariants.h) or to an error whose message is valid UTF-8 (errors reach metadata.json and
// advice records), never an exception or a crash. A small accepted configuration is also built into
// its IR module, which must succeed: parse_hf_config promises the builders a configuration they take.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "frontend/config_invariants.h"
#include "frontend/model_builder.h"
#include "frontend/model_config.h"
#include "support/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agentcompile::frontend;
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  auto config = parse_hf_config(json, "fuzz/config.json");
  if (!config) {
    if (!agentcompile::support::utf8::is_valid(config.status().message())) __builtin_trap();
    return 0;
  }
  if (!check_config_invariants(*config, "fuzz/config.json").is_ok()) __builtin_trap();
  // Keep each run fast: the builder's work grows with layers and nothing here allocates weights.
  if (config->num_layers <= 4) {
    auto module = build_module(*config);
    if (!module) __builtin_trap();
  }
  return 0;
}
