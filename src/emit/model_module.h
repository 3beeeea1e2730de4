// The IR module a model compiles to and runs as: the source's module (built from a config, or captured
// from PyTorch) with its primitive op sequences raised to the semantic ops the kernel families implement
// (analysis/recognize). compile and the engine both take their module from here, so the artifact's IR
// and the one the runtime executes are the same text.
#pragma once

#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "frontend/model_source.h"
#include "ir/graph.h"

namespace agentcompile::emit {

struct ModelModule {
  ir::Module module;                    // with each captured node's source location (errors name it)
  std::string ir_text;                  // the module printed without source locations: the artifact's IR and key,
                                        // so a capture and a builder that agree on the graph share one artifact
  std::vector<std::string> recognized;  // "rmsnorm: 57", one line per rule that fired (captured models)
  bool raised = false;                  // recognition rewrote the captured module (some rule fired)
};

// `batch_decode`: the module also holds decode_batch (ir/decode_batch.h), derived from its decode, so a
// compile plans and selects its kernels per batch bucket; the IR text (and so the artifact's key) says so.
// Tensor parallelism: the rank module of `rank` of `ranks` (shard/shard.h); ranks 0 is the whole model.
// A rank's module prints its parameters' checkpoint ranges, so each rank's artifact has a key of its own.
// Both together are refused (not implemented yet).
struct ModuleShard {
  int ranks = 0;
  int rank = 0;
};

Expected<ModelModule> model_module(const frontend::ModelSource& source, bool batch_decode = false, const ModuleShard& shard = {});

}  // namespace agentcompile::emit
