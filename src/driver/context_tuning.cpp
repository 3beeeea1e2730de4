// The decode layer's picks, made in the chain of the layer's kernels (see context_tuning.h).
#include "driver/context_tuning.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "analysis/views.h"
#include "tune/sequence_timing.h"

namespace agentcompile::driver {

namespace {

std::string us_text(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", us);
  return text;
}

// The artifact's regions that make up one layer of `f`: those with the most sites (more than one),
// in the order of their first site; `layers` is set to that count of sites.
std::vector<size_t> layer_regions(const emit::Artifact& artifact, const emit::CompiledFunction& f, size_t& layers) {
  std::map<size_t, size_t> sites;       // artifact region -> sites
  std::map<size_t, size_t> first_site;  // artifact region -> first site
  for (size_t site = 0; site < f.unique_of_region.size(); ++site) {
    const int r = f.unique_of_region[site];
    if (r < 0) continue;
    ++sites[static_cast<size_t>(r)];
    first_site.emplace(static_cast<size_t>(r), site);
  }
  size_t most = 0;
  for (const auto& [r, n] : sites) most = std::max(most, n);
  layers = most;
  std::vector<size_t> layer;
  if (most < 2) return layer;
  for (const auto& [r, n] : sites)
    if (n == most && !artifact.regions[r].plan.candidates.empty()) layer.push_back(r);
  std::sort(layer.begin(), layer.end(), [&](size_t a, size_t b) { return first_site.at(a) < first_site.at(b); });
  return layer;
}

bool has_library_launch(const plan::Candidate& c) {
  return std::any_of(c.launches.begin(), c.launches.end(), [](const plan::Launch& l) { return l.library; });
}

// Alternatives of a region at a timing index: validated, generated, within the slack of the best,
// fastest first, the current pick always among them (first when it is the fastest).
std::vector<int> alternatives_of(const emit::CompiledRegion& region, size_t timing, int current) {
  std::vector<std::pair<double, int>> timed;
  for (size_t i = 0; i < region.results.size(); ++i) {
    const auto& r = region.results[i];
    if (!r.validated || r.timings.size() <= timing || has_library_launch(region.plan.candidates[i])) continue;
    timed.emplace_back(r.timings[timing].median_us, static_cast<int>(i));
  }
  std::sort(timed.begin(), timed.end());
  std::vector<int> out;
  if (timed.empty()) return out;
  const double bar = timed.front().first * (1.0 + kAlternativeSlack);
  for (const auto& [us, i] : timed)
    if ((us <= bar && out.size() < kMaxAlternatives) || i == current) out.push_back(i);
  return out;
}

}  // namespace

std::vector<std::vector<tune::SequenceLink>> layer_links(const ir::Function& function, const std::vector<const analysis::Region*>& previous_layer,
                                                         const std::vector<const analysis::Region*>& layer, const ir::SymbolBindings& at) {
  auto output_slot = [](const analysis::Region& region, ir::ValueId value) {
    const auto it = std::find(region.outputs.begin(), region.outputs.end(), value);
    return it == region.outputs.end() ? -1 : static_cast<int>(it - region.outputs.begin());
  };
  std::vector<std::vector<tune::SequenceLink>> links(layer.size());
  for (size_t k = 0; k < layer.size(); ++k) {
    const auto& inputs = layer[k]->inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto resolved = analysis::resolve_value(function, inputs[i], at);
      if (!resolved) continue;  // a view the runtime would refuse too: the input keeps its own buffer
      // A kv_append's result is its KV cache, which every copy of the unit holds on its own.
      const int producer = function.value(resolved->root).producer;
      if (producer >= 0 && function.nodes[static_cast<size_t>(producer)].op == ir::OpKind::kKvAppend) continue;
      for (size_t j = 0; j < layer.size(); ++j) {
        const bool same_layer = j < k;
        const int output = output_slot(same_layer ? *layer[j] : *previous_layer[j], resolved->root);
        if (output < 0) continue;
        links[k].push_back({static_cast<int>(i), static_cast<int>(j), output, resolved->byte_offset, !same_layer});
        break;
      }
    }
  }
  return links;
}

void tune_layers_in_context(const ir::Module& module, emit::Artifact& artifact, const TimingAt& timing_at, const ChainTimer& time_chain,
                            const ProgressFn& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const auto f = std::find_if(artifact.functions.begin(), artifact.functions.end(), [](const emit::CompiledFunction& fn) { return fn.name == "decode"; });
  const ir::Function* function = module.find_function("decode");
  if (f == artifact.functions.end() || !function) return;
  size_t layers = 0;
  const std::vector<size_t> layer = layer_regions(artifact, *f, layers);
  if (layer.size() < 2) return;
  // As many copies of the layer per graph as the model has layers, so the chain is timed as the
  // decode step runs it: one graph launch per step, not one per eight layers.
  tune::SequenceOptions options;
  options.repeats = static_cast<int>(layers);

  // The layer's sites in the first two layers: a step's inputs are linked to what the steps before
  // it in the second layer wrote, or to what the first layer's steps wrote (the residual stream).
  std::vector<const analysis::Region*> first_layer, second_layer;
  for (size_t r : layer) {
    const auto& sites = artifact.regions[r].plan.sites;
    first_layer.push_back(&f->partition.regions[static_cast<size_t>(sites[0])]);
    second_layer.push_back(&f->partition.regions[static_cast<size_t>(sites[1])]);
  }
  // One token's activations: their views do not depend on the cache length, so one set of links
  // serves every bucket.
  const std::vector<std::vector<tune::SequenceLink>> links = layer_links(*function, first_layer, second_layer, ir::SymbolBindings{1, 1});

  nlohmann::json record = nlohmann::json::array();
  for (size_t b = 0; b < f->buckets.size(); ++b) {
    const auto started = std::chrono::steady_clock::now();
    const emit::Bucket& bucket = f->buckets[b];
    std::vector<tune::ChainStep> steps;
    std::vector<std::vector<int>> candidate_of;  // per step: alternative -> candidate index
    std::vector<size_t> timing_of;               // per step: the region's timing this bucket reads
    std::vector<int> start;
    std::string skip;
    for (size_t k = 0; k < layer.size(); ++k) {
      const emit::CompiledRegion& region = artifact.regions[layer[k]];
      if (region.selections.size() <= b || region.selections[b].candidate < 0) {
        skip = region.id + " has no pick";
        break;
      }
      const int current = region.selections[b].candidate;
      if (has_library_launch(region.plan.candidates[static_cast<size_t>(current)])) {
        skip = region.id + " runs a library call";
        break;
      }
      const auto [bindings, timing] = timing_at(region, bucket, b);
      const std::vector<int> alternatives = alternatives_of(region, timing, current);
      tune::ChainStep step;
      step.region = layer[k];
      step.alternatives = alternatives;
      step.bindings = bindings;
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
    auto timed = time_chain(steps, start, options);
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
      emit::CompiledRegion& region = artifact.regions[layer[k]];
      const size_t timing = timing_of[k];
      region.selections[b].candidate = after;
      region.selections[b].reason = "fastest in the layer's chain: " + us_text(result->start_us) + " -> " + us_text(result->best_us) +
                                    " per layer (alone " + us_text(region.results[static_cast<size_t>(after)].timings[timing].median_us) +
                                    " vs " + us_text(region.results[static_cast<size_t>(before)].timings[timing].median_us) + " for " +
                                    region.plan.candidates[static_cast<size_t>(before)].name() + ")";
      changes.push_back({{"region", region.id}, {"from", region.plan.candidates[static_cast<size_t>(before)].name()},
                         {"to", region.plan.candidates[static_cast<size_t>(after)].name()}});
    }
    nlohmann::json regions = nlohmann::json::array();
    for (size_t k = 0; k < steps.size(); ++k) {
      const emit::CompiledRegion& region = artifact.regions[steps[k].region];
      nlohmann::json names = nlohmann::json::array();
      for (int i : steps[k].alternatives) names.push_back(region.plan.candidates[static_cast<size_t>(i)].name());
      nlohmann::json reads = nlohmann::json::array();  // the inputs it reads from other steps
      for (const auto& link : steps[k].links)
        reads.push_back({{"input", link.input}, {"from", artifact.regions[steps[static_cast<size_t>(link.from_step)].region].id},
                         {"output", link.output}, {"previous_layer", link.previous_copy}});
      regions.push_back({{"region", region.id}, {"alternatives", names}, {"reads", reads}});
    }
    nlohmann::json trials = nlohmann::json::array();  // every chain timed: each step's alternative, and the layer's time
    for (const auto& trial : result->trials) trials.push_back({{"choice", trial.choice}, {"unit_us", trial.unit_us}});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    record.push_back({{"bucket", bucket.name}, {"regions", regions}, {"start_us", result->start_us}, {"best_us", result->best_us},
                      {"trials", result->trials.size()}, {"chains", trials}, {"layer_copies", result->repeats}, {"alternative_slack", kAlternativeSlack}, {"changes", changes}, {"seconds", seconds},
                      {"source", timed->reused ? "tuning database" : "measured"}});
    say("[4/5] in context (" + bucket.name + "): layer " + us_text(result->start_us) + " with the picks made alone, " +
        us_text(result->best_us) + " after " + std::to_string(result->trials.size()) + " chains" +
        (timed->reused ? " (from the tuning database)" : "") + "; " + std::to_string(changes.size()) + " pick(s) changed");
  }
  artifact.context_tuning = record;
}

}  // namespace agentcompile::driver
