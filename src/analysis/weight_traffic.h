// The weight bytes a function reads per call of one token, in the formats the module declares:
// what bounds decode (every weight streamed once per token), so `inspect` and `bench` can say how
// many bytes a step reads and the floor that implies at a copy bandwidth.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace agentcompile::analysis {

struct WeightTraffic {
  double bytes = 0;            // per token: whole matrices, one row of a table read only by embeddings
  double quantized_bytes = 0;  // the part in quantized formats (ir/quant.h), scales and padding included
  int64_t quantized_params = 0;
};

// Over the parameters `function` reads (an alias counts its own rows). A parameter read only as an
// embedding's table costs one row per token; any other read streams it whole.
WeightTraffic weight_traffic(const ir::Module& module, const std::string& function);

// The decode floor of `bytes` per token at the device-to-device copy bandwidth (bytes read + written
// per second, BENCHMARK.md's "Ceilings" and bench/decode_floor.py), in ms.
double floor_ms(double bytes, double copy_gb_per_s);

}  // namespace agentcompile::analysis
