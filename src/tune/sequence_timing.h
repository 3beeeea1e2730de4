// Timing kernels in the context they run in. Admission times each candidate alone, back to back
// with itself; in the decode step a kernel follows and precedes other regions' kernels, and with
// programmatic dependent launch what it costs depends on them: how much of the SM its grid leaves to
// the next kernel's early blocks, how its tail meets the next one's weight loads. So the regions of
// one repeating unit (a transformer layer's sites) are timed as a chain: each region's chosen kernel
// launched in site order, `repeats` copies of the unit over their own weights and states (so weights
// stream from DRAM, as 28 layers' do) and one set of activations, each step reading what the steps
// before it wrote (links), captured in a CUDA graph and replayed; the time is per unit.
//
// The search is a descent over each region's alternatives (validated candidates close to the
// region's best alone), starting from the picks admission made alone. It moves two neighbouring
// regions at a time (each with the one after it, the last with the first, as the next layer's first
// kernel follows it), every combination of their alternatives with the others fixed: what a kernel
// costs depends most on its neighbours, and a pair of picks can pay only together (a one-region
// descent stopped a Qwen3 compile 0.26 us per layer short of another's, decode-round10). A change is
// kept only when the unit gets faster by more than `min_gain` (a fraction), which keeps timing noise
// from moving a pick. Each assignment is timed once; two passes at most; the start and the result
// are timed again back to back at the end.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "codegen/nvrtc_compiler.h"
#include "ir/graph.h"
#include "plan/candidate.h"
#include "gpu/cuda_driver.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {

// An input of a step that reads what another step of the unit writes, as in the function: bound to
// that step's output buffer (plus a view's byte offset). Every copy of the unit uses the same
// activation buffers (the runtime's arena gives every layer the same ones), so a kernel reads its
// input where the kernel before it just wrote it, as in the decode step. `previous_copy` records
// that the writer is the layer before (the residual stream).
struct SequenceLink {
  int input = 0;             // the reading step's input slot
  int from_step = 0;         // the writing step
  int output = 0;            // its output slot
  int64_t byte_offset = 0;
  bool previous_copy = false;
};

struct SequenceStep {
  std::string region;                            // "decode.r3", for messages
  const ir::Module* region_module = nullptr;     // the extracted region (function "region")
  RegionBindings bindings;                       // size the unit is timed at
  std::vector<plan::Candidate> alternatives;     // validated candidates with generated launches only
  std::vector<codegen::CompileResult> compiled;  // per alternative
  std::vector<SequenceLink> links;               // inputs bound to other steps' outputs
};

struct SequenceOptions {
  int repeats = 8;           // copies of the unit per graph, each over its own buffers (at most a quarter of
                             // device memory in all, at least 2); the compiler passes the model's layer count
  int replays = 15;          // timed graph replays per measurement (median)
  double min_gain = 0.003;   // a change must make the unit this much faster to be kept
  int passes = 2;
  double timeout_s = 600;    // the whole search, in the worker
};

struct SequenceTrial {
  std::vector<int> choice;  // alternative index per step
  double unit_us = 0;
};

struct SequenceResult {
  std::vector<int> start, best;          // alternative index per step
  double start_us = 0, best_us = 0;      // per unit; best_us re-measured at the end beside start_us
  std::vector<SequenceTrial> trials;     // every measurement, in order
  int repeats = 0;                       // copies of the unit per graph, as run (fewer for a large unit)
};

// Times one assignment; the search calls it once per trial.
using UnitTimer = std::function<Expected<double>(const std::vector<int>& choice)>;

// The descent on its own (no GPU): `alternatives[s]` choices for step s, from `start`.
Expected<SequenceResult> descend(const std::vector<int>& alternatives, const std::vector<int>& start, const UnitTimer& time_unit,
                                 const SequenceOptions& options);

// Loads every alternative, builds the buffers and runs `descend` on `ctx`: in the admission worker
// (admission_worker.h), which a chain that faults takes down with it. The steps' weights come from
// `cache` when given.
Expected<SequenceResult> time_sequence(gpu::CudaContext& ctx, const std::vector<SequenceStep>& steps, const std::vector<int>& start,
                                       const SequenceOptions& options, WeightCache* cache = nullptr);

// The JSON of a result (worker to caller, and the tuning database), and back.
nlohmann::json sequence_result_json(const SequenceResult& result);
Expected<SequenceResult> sequence_result_from_json(const nlohmann::json& j);

}  // namespace agentcompile::tune
