// Chains of region kernels timed together, and the descent over their alternatives (see
// sequence_timing.h).
#include "tune/sequence_timing.h"

#include <algorithm>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "gpu/cuda_driver.h"
#include "tune/device_sets.h"
#include "gpu/driver_api.h"

namespace agentcompile::tune {

namespace {

using json = nlohmann::json;

// One step's data in the worker: `repeats` buffer sets (each with its own weights) and every
// alternative loaded.
struct StepOnDevice {
  std::vector<DeviceSet> sets;
  std::vector<LoadedCandidate> loaded;
};

// A graph of `repeats` units (each step's chosen kernel, in order, on that repeat's buffers), owned
// for one measurement.
class UnitGraph {
 public:
  ~UnitGraph() {
    if (exec_) gpu::driver_api()->GraphExecDestroy(exec_);
    if (graph_) gpu::driver_api()->GraphDestroy(graph_);
  }
  Status capture(CUstream stream, const std::function<Status()>& body) {
    const gpu::DriverApi& api = *gpu::driver_api();
    AC_CU(api.StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture(sequence)");
    const Status enqueued = body();
    const CUresult ended = api.StreamEndCapture(stream, &graph_);
    AC_TRY(enqueued.with_context("capturing the sequence"));
    AC_CU(ended, "cuStreamEndCapture(sequence)");
    AC_CU(api.GraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiate(sequence)");
    return Status::ok();
  }
  Status launch(CUstream stream) { return gpu::cuda_status(gpu::driver_api()->GraphLaunch(exec_, stream), "cuGraphLaunch(sequence)"); }

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

Expected<double> time_unit_on_device(gpu::CudaContext& ctx, const std::vector<SequenceStep>& steps, const std::vector<StepOnDevice>& device,
                                     const std::vector<int>& choice, const SequenceOptions& options) {
  const bool programmatic = ctx.info().sm_major >= 9;
  UnitGraph graph;
  AC_TRY(graph.capture(ctx.stream(), [&]() -> Status {
    for (size_t r = 0; r < static_cast<size_t>(options.repeats); ++r)
      for (size_t s = 0; s < steps.size(); ++s) {
        const size_t a = static_cast<size_t>(choice[s]);
        // Weights and states are this copy's; activations are one set for every copy, as the runtime's
        // arena gives every layer the same buffers, and a linked input is the buffer its writer fills.
        gpu::RegionArgs args = device[s].sets[r].args;
        const gpu::RegionArgs& shared = device[s].sets[0].args;
        std::copy(std::begin(shared.in), std::end(shared.in), std::begin(args.in));
        std::copy(std::begin(shared.out), std::end(shared.out), std::begin(args.out));
        args.workspace = shared.workspace;
        for (const SequenceLink& link : steps[s].links)
          args.in[link.input] = static_cast<const char*>(device[static_cast<size_t>(link.from_step)].sets[0].args.out[link.output]) + link.byte_offset;
        AC_TRY(run_launches(steps[s].alternatives[a], device[s].loaded[a], args, steps[s].bindings, ctx.stream(), programmatic)
                   .with_context(steps[s].region + " " + steps[s].alternatives[a].name()));
      }
    return Status::ok();
  }));
  for (int w = 0; w < 3; ++w) AC_TRY(graph.launch(ctx.stream()));
  AC_ASSIGN_OR_RETURN(gpu::CudaEvent start, gpu::CudaEvent::create());
  AC_ASSIGN_OR_RETURN(gpu::CudaEvent stop, gpu::CudaEvent::create());
  std::vector<double> us;
  for (int i = 0; i < options.replays; ++i) {
    AC_TRY(start.record(ctx.stream()));
    AC_TRY(graph.launch(ctx.stream()));
    AC_TRY(stop.record(ctx.stream()));
    AC_ASSIGN_OR_RETURN(float ms, stop.elapsed_since(start));
    us.push_back(ms * 1000.0 / options.repeats);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

Expected<SequenceResult> time_sequence(gpu::CudaContext& ctx, const std::vector<SequenceStep>& steps, const std::vector<int>& start,
                                       const SequenceOptions& options, WeightCache* cache) {
  for (const auto& step : steps)
    if (!step.region_module || step.alternatives.empty() || step.alternatives.size() != step.compiled.size())
      return error(ErrorCode::kInvalidArgument, "sequence step " + step.region + " has no alternatives or no region module");
  std::vector<RegionLayout> layouts;
  std::vector<RegionCase> data;
  int64_t unit_bytes = 0;
  for (const SequenceStep& step : steps) {
    AC_ASSIGN_OR_RETURN(RegionLayout layout, region_layout(*step.region_module, step.bindings));
    data.push_back(random_case(*step.region_module, layout, step.bindings, random_weights(*step.region_module, layout, cache), 1,
                               Distribution::kNormal));
    layouts.push_back(std::move(layout));
    for (const auto& t : data.back().inputs) unit_bytes += static_cast<int64_t>(t.bytes.size());
    for (const auto& t : data.back().params) unit_bytes += static_cast<int64_t>(t->bytes.size());
    for (const auto& t : data.back().states) unit_bytes += static_cast<int64_t>(t.bytes.size());
  }
  for (size_t s = 0; s < steps.size(); ++s)
    for (const SequenceLink& link : steps[s].links) {
      const bool in_range = link.input >= 0 && static_cast<size_t>(link.input) < layouts[s].inputs.size() && link.from_step >= 0 &&
                            static_cast<size_t>(link.from_step) < steps.size() && link.output >= 0 &&
                            static_cast<size_t>(link.output) < layouts[static_cast<size_t>(link.from_step)].outputs.size() && link.byte_offset >= 0;
      if (!in_range)
        return error(ErrorCode::kInvalidArgument, steps[s].region + ": input " + std::to_string(link.input) + " is linked to output " +
                                                      std::to_string(link.output) + " of step " + std::to_string(link.from_step) + ", which the unit does not have");
    }
  // Each copy of the unit has its own buffers; a large model's layer gets fewer copies (a quarter of
  // the device's memory at most), but never fewer than two, so a replay still streams from DRAM.
  SequenceOptions sized = options;
  sized.repeats = static_cast<int>(std::clamp<int64_t>(ctx.info().total_memory / 4 / std::max<int64_t>(unit_bytes, 1), 2, options.repeats));
  std::vector<StepOnDevice> device(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    const SequenceStep& step = steps[s];
    // Every alternative runs on the same buffers: the workspace is the largest any of them needs.
    const plan::Candidate* widest = &step.alternatives.front();
    auto workspace = [&](const plan::Candidate& c) { return c.workspace_bytes_per_token * step.bindings.T + c.workspace_bytes_fixed; };
    for (const auto& c : step.alternatives)
      if (workspace(c) > workspace(*widest)) widest = &c;
    for (int r = 0; r < sized.repeats; ++r) {
      AC_ASSIGN_OR_RETURN(DeviceSet set, upload_set(layouts[s], data[s], *widest, step.bindings));
      device[s].sets.push_back(std::move(set));
    }
    for (size_t a = 0; a < step.alternatives.size(); ++a) {
      AC_ASSIGN_OR_RETURN(LoadedCandidate loaded, load_candidate(step.alternatives[a], step.compiled[a].cubin, step.compiled[a].ok, nullptr));
      device[s].loaded.push_back(std::move(loaded));
    }
  }
  std::vector<int> counts;
  for (const auto& step : steps) counts.push_back(static_cast<int>(step.alternatives.size()));
  AC_ASSIGN_OR_RETURN(SequenceResult result, descend(counts, start, [&](const std::vector<int>& choice) {
    return time_unit_on_device(ctx, steps, device, choice, sized);
  }, sized));
  result.repeats = sized.repeats;
  return result;
}

json sequence_result_json(const SequenceResult& result) {
  json trials = json::array();
  for (const auto& t : result.trials) trials.push_back({{"choice", t.choice}, {"unit_us", t.unit_us}});
  return json{{"start", result.start}, {"best", result.best}, {"start_us", result.start_us}, {"best_us", result.best_us}, {"trials", trials},
              {"repeats", result.repeats}};
}

Expected<SequenceResult> sequence_result_from_json(const json& j) {
  if (!j.is_object() || !j.contains("start") || !j.contains("best") || !j.contains("trials") || !j["trials"].is_array())
    return error(ErrorCode::kParse, "a chain result needs start, best and trials");
  try {
    SequenceResult result;
    result.start = j.at("start").get<std::vector<int>>();
    result.best = j.at("best").get<std::vector<int>>();
    result.start_us = j.value("start_us", 0.0);
    result.best_us = j.value("best_us", 0.0);
    result.repeats = j.value("repeats", 0);
    for (const auto& t : j["trials"]) result.trials.push_back({t.at("choice").get<std::vector<int>>(), t.at("unit_us").get<double>()});
    if (result.best.size() != result.start.size()) return error(ErrorCode::kParse, "a chain result's start and best differ in length");
    return result;
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, std::string("a chain result of the wrong shape: ") + e.what());
  }
}

Expected<SequenceResult> descend(const std::vector<int>& alternatives, const std::vector<int>& start, const UnitTimer& time_unit,
                                 const SequenceOptions& options) {
  if (alternatives.size() != start.size() || alternatives.empty())
    return error(ErrorCode::kInvalidArgument, "a sequence needs one starting choice per step");
  for (size_t s = 0; s < start.size(); ++s)
    if (start[s] < 0 || start[s] >= alternatives[s])
      return error(ErrorCode::kInvalidArgument, "step " + std::to_string(s) + " starts at alternative " + std::to_string(start[s]) + " of " +
                                                    std::to_string(alternatives[s]));
  SequenceResult result;
  result.start = start;
  // Each assignment is timed once during the search (the pairs below share many); the final
  // comparison is timed afresh.
  std::map<std::vector<int>, double> timed;
  auto measure = [&](const std::vector<int>& choice) -> Expected<double> {
    AC_ASSIGN_OR_RETURN(double us, time_unit(choice));
    result.trials.push_back({choice, us});
    return us;
  };
  auto measure_once = [&](const std::vector<int>& choice) -> Expected<double> {
    if (auto it = timed.find(choice); it != timed.end()) return it->second;
    AC_ASSIGN_OR_RETURN(double us, measure(choice));
    timed.emplace(choice, us);
    return us;
  };
  std::vector<int> current = start;
  AC_ASSIGN_OR_RETURN(double current_us, measure_once(current));
  result.start_us = current_us;
  const size_t n = current.size();
  for (int pass = 0; pass < options.passes; ++pass) {
    bool changed = false;
    // Step s with the step after it (the last with the first: the next layer's), every combination
    // of the two with the others fixed.
    for (size_t s = 0; s < n; ++s) {
      const size_t t = (s + 1) % n;
      if (n == 2 && s == 1) break;  // the same pair as s = 0
      std::vector<std::pair<std::vector<int>, double>> tried;
      double fastest = current_us;
      for (int a = 0; a < alternatives[s]; ++a)
        for (int b = 0; b < (t == s ? 1 : alternatives[t]); ++b) {
          std::vector<int> trial = current;
          trial[s] = a;
          if (t != s) trial[t] = b;
          if (trial == current) continue;
          AC_ASSIGN_OR_RETURN(double us, measure_once(trial));
          tried.emplace_back(trial, us);
          fastest = std::min(fastest, us);
        }
      // Of the assignments within the margin of the fastest, the one that changes one step rather
      // than two (a change that gains less than the margin does not ride along), then the fastest.
      std::vector<int> best = current;
      double best_us = current_us;
      int best_changes = 0;
      for (const auto& [trial, us] : tried) {
        if (us > fastest * (1.0 + options.min_gain)) continue;
        const int changes = (trial[s] != current[s]) + (t != s && trial[t] != current[t]);
        if (best == current || changes < best_changes || (changes == best_changes && us < best_us))
          best = trial, best_us = us, best_changes = changes;
      }
      if (best != current && best_us < current_us * (1.0 - options.min_gain)) {
        current = best;
        current_us = best_us;
        changed = true;
      }
    }
    if (!changed) break;
  }
  result.best = current;
  result.best_us = current_us;
  if (current != start) {
    // The start and the result once more, back to back: the reported gain is one measured under the
    // same conditions, and a result that does not hold up is dropped.
    AC_ASSIGN_OR_RETURN(result.start_us, measure(start));
    AC_ASSIGN_OR_RETURN(result.best_us, measure(current));
    if (result.best_us >= result.start_us * (1.0 - options.min_gain)) {
      result.best = start;
      result.best_us = result.start_us;
    }
  }
  return result;
}

}  // namespace agentcompile::tune
