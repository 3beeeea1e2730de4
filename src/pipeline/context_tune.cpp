// Context-tune: after admission, the decode layer's kernels chosen in their chain (tune/layer_chain.h,
// tune/sequence_timing.h), through the admission's worker and tuning database.
//
// The unit is the decode function's layer (tune::layer_unit: every region between two sites of the
// region with the most sites, in site order). For each decode bucket, each of its regions offers its alternatives (validated generated
// candidates close to its best time alone); the descent starts from the picks made alone and
// replaces a pick only where the whole layer gets faster. What was timed and changed is recorded
// (metadata.json "context_tuning", report.md). A failure leaves the picks made alone and is
// reported, not fatal. Without a GPU, or with --no-context-tuning, nothing is timed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "pipeline/admission_session.h"
#include "pipeline/stages.h"
#include "tune/layer_chain.h"

namespace agentcompile::pipeline {

namespace {

std::string us_text(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", us);
  return text;
}

// The layer's chain timed per decode bucket; the picks it changes replace those in `selected`.
nlohmann::json tune_layers(const ir::Module& module, const Plan& plan, const Admitted& admitted, AdmissionSession& session,
                           Selected& selected, tune::AdmissionTimes& chain_times, const ProgressFn& say) {
  const auto f = std::find_if(plan.functions.begin(), plan.functions.end(), [](const emit::CompiledFunction& fn) { return fn.name == "decode"; });
  const ir::Function* function = module.find_function("decode");
  if (f == plan.functions.end() || !function) return nullptr;
  // A collective (tensor parallelism's NCCL call) needs every rank: it is not timed in a one-GPU chain.
  const tune::LayerUnit unit = tune::layer_unit(f->unique_of_region, [&](size_t r) {
    return !plan.regions[r].plan.candidates.empty() && plan.regions[r].plan.summary.category != analysis::Category::kCollective;
  });
  const std::vector<size_t>& layer = unit.regions;
  if (layer.size() < 2) return nullptr;
  // As many copies of the layer per graph as the model has layers, so the chain is timed as the
  // decode step runs it: one graph launch per step, not one per eight layers.
  tune::SequenceOptions options;
  options.repeats = static_cast<int>(unit.layers);

  // A step's inputs are linked to what the steps before it in the layer wrote, or to what the layer
  // before wrote (the residual stream).
  std::vector<const analysis::Region*> first_layer, second_layer;
  for (size_t k = 0; k < layer.size(); ++k) {
    first_layer.push_back(&f->partition.regions[static_cast<size_t>(unit.previous_sites[k])]);
    second_layer.push_back(&f->partition.regions[static_cast<size_t>(unit.sites[k])]);
  }
  // One token's activations: their views do not depend on the cache length, so one set of links
  // serves every bucket.
  const std::vector<std::vector<tune::SequenceLink>> links = tune::layer_links(*function, first_layer, second_layer, ir::SymbolBindings{1, 1});

  nlohmann::json record = nlohmann::json::array();
  for (size_t b = 0; b < f->buckets.size(); ++b) {
    const auto started = std::chrono::steady_clock::now();
    const plan::Bucket& bucket = f->buckets[b];
    std::vector<tune::ChainStep> steps;
    std::vector<std::vector<int>> candidate_of;  // per step: alternative -> candidate index
    std::vector<size_t> timing_of;               // per step: the region's timing this bucket reads
    std::vector<int> start;
    std::string skip;
    for (size_t k = 0; k < layer.size(); ++k) {
      const PlannedRegion& region = plan.regions[layer[k]];
      const std::vector<tune::Selection>& picks = selected.regions[layer[k]];
      if (picks.size() <= b || picks[b].candidate < 0) {
        skip = region.id + " has no pick";
        break;
      }
      const int current = picks[b].candidate;
      if (tune::has_library_launch(region.plan.candidates[static_cast<size_t>(current)])) {
        skip = region.id + " runs a library call";
        break;
      }
      const size_t timing = region.sizes.timing_index(b);
      const std::vector<int> alternatives =
          tune::chain_alternatives(region.plan.candidates, admitted.regions[layer[k]].results, timing, current);
      tune::ChainStep step;
      step.region = layer[k];
      step.alternatives = alternatives;
      step.bindings = region.sizes.timing[timing];
      step.links = links[k];
      start.push_back(static_cast<int>(std::find(alternatives.begin(), alternatives.end(), current) - alternatives.begin()));
      candidate_of.push_back(alternatives);
      timing_of.push_back(timing);
      steps.push_back(std::move(step));
    }
    if (!skip.empty()) {
      say("[4/5] in context (" + bucket.name + "): skipped: " + skip);
      continue;
    }
    auto timed = session.time_chain(steps, start, options, chain_times);
    if (!timed) {
      say("[4/5] in context (" + bucket.name + "): kept the picks made alone: " + timed.status().to_string());
      record.push_back({{"bucket", bucket.name}, {"error", timed.status().to_string()}});
      continue;
    }
    const tune::SequenceResult* result = &timed->result;
    nlohmann::json changes = nlohmann::json::array();
    for (size_t k = 0; k < steps.size(); ++k) {
      const int before = candidate_of[k][static_cast<size_t>(result->start[k])];
      const int after = candidate_of[k][static_cast<size_t>(result->best[k])];
      if (before == after) continue;
      const PlannedRegion& region = plan.regions[layer[k]];
      const std::vector<tune::CandidateResult>& results = admitted.regions[layer[k]].results;
      const size_t timing = timing_of[k];
      tune::Selection& pick = selected.regions[layer[k]][b];
      pick.candidate = after;
      pick.reason = "fastest in the layer's chain: " + us_text(result->start_us) + " -> " + us_text(result->best_us) +
                    " per layer (alone " + us_text(results[static_cast<size_t>(after)].timings[timing].median_us) + " vs " +
                    us_text(results[static_cast<size_t>(before)].timings[timing].median_us) + " for " +
                    region.plan.candidates[static_cast<size_t>(before)].name() + ")";
      changes.push_back({{"region", region.id}, {"from", region.plan.candidates[static_cast<size_t>(before)].name()},
                         {"to", region.plan.candidates[static_cast<size_t>(after)].name()}});
    }
    nlohmann::json regions = nlohmann::json::array();
    for (size_t k = 0; k < steps.size(); ++k) {
      const PlannedRegion& region = plan.regions[steps[k].region];
      nlohmann::json names = nlohmann::json::array();
      for (int i : steps[k].alternatives) names.push_back(region.plan.candidates[static_cast<size_t>(i)].name());
      nlohmann::json reads = nlohmann::json::array();  // the inputs it reads from other steps
      for (const auto& link : steps[k].links)
        reads.push_back({{"input", link.input}, {"from", plan.regions[steps[static_cast<size_t>(link.from_step)].region].id},
                         {"output", link.output}, {"previous_layer", link.previous_copy}});
      regions.push_back({{"region", region.id}, {"alternatives", names}, {"reads", reads}});
    }
    nlohmann::json trials = nlohmann::json::array();  // every chain timed: each step's alternative, and the layer's time
    for (const auto& trial : result->trials) trials.push_back({{"choice", trial.choice}, {"unit_us", trial.unit_us}});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    record.push_back({{"bucket", bucket.name}, {"regions", regions}, {"start_us", result->start_us}, {"best_us", result->best_us},
                      {"trials", result->trials.size()}, {"chains", trials}, {"layer_copies", result->repeats},
                      {"alternative_slack", tune::kAlternativeSlack}, {"changes", changes}, {"seconds", seconds},
                      {"source", timed->reused ? "tuning database" : "measured"}});
    say("[4/5] in context (" + bucket.name + "): layer " + us_text(result->start_us) + " with the picks made alone, " +
        us_text(result->best_us) + " after " + std::to_string(result->trials.size()) + " chains" +
        (timed->reused ? " (from the tuning database)" : "") + "; " + std::to_string(changes.size()) + " pick(s) changed");
  }
  return record;
}

}  // namespace

ChainPicks tune_layer_chain(const CapturedModel& model, const Plan& plan, Admitted& admitted, Selected selected,
                            const CompileOptions& options, const ProgressFn& say) {
  const auto start = std::chrono::steady_clock::now();
  ChainPicks out;
  if (!admitted.session) {
    out.not_run = "no GPU";
  } else if (!options.context_tuning) {
    out.not_run = "--no-context-tuning";
  } else {
    AdmissionSession& session = *admitted.session;
    tune::AdmissionTimes chain_times;
    session.open_chains();
    out.record = tune_layers(model.module.module, plan, admitted, session, selected, chain_times, say);
    session.close_chains(chain_times);
    admitted.times += chain_times;
    if (out.record.is_null()) out.not_run = "no decode layer of two or more regions";
  }
  out.selected = std::move(selected);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace agentcompile::pipeline
