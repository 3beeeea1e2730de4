// A compile's admission on the GPU: the worker, the tuning database, selection (see admit_regions.h).
#include "driver/admit_regions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "analysis/extract.h"
#include "driver/buckets.h"
#include "driver/context_tuning.h"
#include "support/sha256.h"
#include "tune/admission_worker.h"
#include "tune/tuning_db.h"

namespace agentcompile::driver {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string fixed(double value, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

const std::vector<tune::Distribution> kDistributions = {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed};

// Fastest validated candidate at a bucket, or the fallback, or none; with the reason.
emit::Selection select_for_bucket(const emit::CompiledRegion& region, size_t timing_index, const std::string& bucket) {
  emit::Selection selection;
  selection.bucket = bucket;
  int best = -1, fallback = -1;
  double best_us = 0, fallback_us = 0;
  std::vector<std::string> rejections;
  for (size_t i = 0; i < region.results.size(); ++i) {
    const auto& r = region.results[i];
    if (!r.validated || r.timings.size() <= timing_index) {
      if (!r.rejection.empty()) rejections.push_back(region.plan.candidates[i].id + ": " + r.rejection.substr(0, 100));
      continue;
    }
    const double us = r.timings[timing_index].median_us;
    if (best < 0 || us < best_us) {
      best = static_cast<int>(i);
      best_us = us;
    }
    if (region.plan.candidates[i].fallback && (fallback < 0 || us < fallback_us)) {  // the best fallback is the bar
      fallback = static_cast<int>(i);
      fallback_us = us;
    }
  }
  selection.measured = best >= 0;
  selection.candidate = best;
  if (best < 0) {
    selection.reason = "no candidate validated";
    for (const auto& why : rejections) selection.reason += "; " + why;
  } else if (region.plan.candidates[static_cast<size_t>(best)].fallback) {
    selection.reason = "fallback: no validated candidate beat it (" + fixed(best_us, 2) + " us)";
  } else {
    selection.reason = "fastest validated: " + fixed(best_us, 2) + " us" +
                       (fallback >= 0 ? " vs fallback " + region.plan.candidates[static_cast<size_t>(fallback)].family + " " +
                                            fixed(fallback_us, 2) + " us" : "");
  }
  return selection;
}

// Candidates done and left, for the progress callback.
class Meter {
 public:
  Meter(size_t total, const AdmissionProgressFn& report) : total_(total), report_(report) {}
  void region(const std::string& id) { region_ = id; }
  void done(bool reused) {
    ++done_;
    reused_ += reused;
    total_ = std::max(total_, done_);  // a region went on past its budget
    if (!report_) return;
    AdmissionProgress p;
    p.done = done_;
    p.total = total_;
    p.reused = reused_;
    p.elapsed_s = seconds_since(start_);
    p.eta_s = admission_eta_s(done_, reused_, total_, p.elapsed_s);
    p.region = region_;
    report_(p);
  }

 private:
  size_t total_, done_ = 0, reused_ = 0;
  std::string region_;
  const AdmissionProgressFn& report_;
  Clock::time_point start_ = Clock::now();
};

// The chain's key in the database: every step's region, alternatives, size and links, the start and
// the search's options.
json chain_key(const std::vector<std::string>& region_keys,
               const std::vector<std::vector<std::string>>& fingerprints, const std::vector<tune::ChainStep>& steps,
               const std::vector<int>& start, const tune::SequenceOptions& options) {
  json key_steps = json::array();
  for (const auto& step : steps) {
    json alternatives = json::array(), links = json::array();
    for (int a : step.alternatives) alternatives.push_back(fingerprints[step.region][static_cast<size_t>(a)]);
    for (const auto& l : step.links) links.push_back({l.input, l.from_step, l.output, l.byte_offset, l.previous_copy});
    key_steps.push_back({{"region", region_keys[step.region]}, {"alternatives", alternatives},
                         {"at", {step.bindings.T, step.bindings.L, step.bindings.pos}}, {"links", links}});
  }
  return {{"kind", "chain"}, {"steps", key_steps}, {"start", start},
          {"options", {options.repeats, options.replays, options.min_gain, options.passes}}};
}

}  // namespace

json region_tuning_context(const AdmissionContext& context, const analysis::RegionSummary& summary) {
  return {{"format", tune::kTuningDbFormat}, {"admission", tune::kAdmissionVersion}, {"device", context.device}, {"toolkit", context.toolkit},
          {"compiler", context.compiler}, {"region", summary.signature}};
}

double admission_eta_s(size_t done, size_t reused, size_t total, double elapsed_s) {
  const size_t measured = done > reused ? done - reused : 0;
  if (measured == 0) return -1;
  return elapsed_s / static_cast<double>(measured) * static_cast<double>(total > done ? total - done : 0);
}

Expected<std::vector<search::RegionMeasurement>> admit_regions(const ir::Module& module, emit::Artifact& artifact,
                                                               const CompileOptions& options, const AdmissionContext& context,
                                                               const ProgressFn& progress, const AdmissionProgressFn& admission_progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const size_t n = artifact.regions.size();
  const double margin = options.search.ablate_advisor ? 0.0 : options.early_stop_margin;
  auto function_of = [&](const std::string& name) -> const emit::CompiledFunction& {
    return *std::find_if(artifact.functions.begin(), artifact.functions.end(), [&](const emit::CompiledFunction& f) { return f.name == name; });
  };

  // The worker's table, complete before it forks: every region's module, candidates and cubins.
  std::vector<ir::Module> modules(n);
  std::vector<tune::RegionWork> table(n);
  std::vector<bool> per_bucket(n, false);
  std::vector<std::vector<std::string>> fingerprints(n);
  std::vector<std::string> region_keys(n);
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    const emit::CompiledRegion& region = artifact.regions[r];
    tune::RegionWork& work = table[r];
    work.id = region.id;
    work.candidates = &region.plan.candidates;
    work.compiled = &region.compiled;
    if (region.plan.candidates.empty()) continue;
    const emit::CompiledFunction& f = function_of(region.plan.function);
    const ir::Function& function = *module.find_function(region.plan.function);
    const auto& site = f.partition.regions[static_cast<size_t>(region.plan.sites.front())];
    AC_ASSIGN_OR_RETURN(modules[r], analysis::extract_region(module, function, site));
    work.region_module = &modules[r];
    work.bindings = validation_bindings(function.name, region.plan.summary, f.buckets.front().max_tokens);
    work.seeds = options.seeds;
    work.distributions = kDistributions;
    work.options.repetitions = options.repetitions;
    work.options.early_stop_margin = margin;
    work.options.timing = timing_sizes(function.name, region.plan.summary, f.buckets);
    per_bucket[r] = timed_per_bucket(function.name, region.plan.summary);
    for (size_t i = 0; i < region.plan.candidates.size(); ++i)
      fingerprints[r].push_back(tune::candidate_fingerprint(region.plan.candidates[i], region.compiled[i]));
    region_keys[r] = support::sha256_hex(region_tuning_context(context, region.plan.summary).dump());
    const int budget = options.search.ablate_advisor ? 0 : options.search.budget;
    total += budget <= 0 ? region.plan.candidates.size() : std::min(region.plan.candidates.size(), static_cast<size_t>(budget));
  }

  std::optional<tune::TuningDb> db;
  if (!context.tuning_db.empty()) db.emplace(context.tuning_db);
  std::vector<std::string> warnings;
  size_t reused = 0, measured = 0, regions_reused = 0;
  auto store = [&](const tune::TuningFile& file, tune::AdmissionTimes& times) {
    const auto started = Clock::now();
    if (Status stored = db->store(file); !stored) warnings.push_back("tuning database not written: " + stored.message());
    times.database_s += seconds_since(started);
  };

  tune::AdmissionWorker worker(&table);
  Meter meter(total, admission_progress);
  std::vector<search::RegionMeasurement> measurements;
  const auto stage = Clock::now();
  size_t done = 0, validated = 0;
  for (size_t r = 0; r < n; ++r) {
    emit::CompiledRegion& region = artifact.regions[r];
    ++done;
    if (region.plan.candidates.empty()) continue;
    meter.region(region.id);
    const tune::RegionWork& work = table[r];
    const emit::CompiledFunction& f = function_of(region.plan.function);
    tune::AdmissionTimes& times = region.admission_times;
    const tune::RegionTuningKey key{region_tuning_context(context, region.plan.summary), work.bindings, work.seeds, work.distributions,
                                    work.options.warmup, work.options.repetitions, work.options.screen_samples};
    std::optional<tune::TuningFile> file;
    if (db) {
      const auto started = Clock::now();
      file = options.retune ? tune::TuningFile(key.context) : db->load(key.context, warnings);
      times.database_s += seconds_since(started);
    }
    size_t region_reused = 0;
    auto admit = [&](const std::vector<int>& indices) -> Expected<std::vector<tune::CandidateResult>> {
      std::vector<tune::CandidateResult> results(indices.size());
      std::vector<bool> known(indices.size(), false);
      if (file) {
        auto stored = tune::stored_results(*file, key, region.plan.candidates, fingerprints[r], indices, work.options.timing,
                                           region.results, margin, options.retune);
        for (size_t k = 0; k < indices.size(); ++k)
          if (stored[k]) {
            results[k] = std::move(*stored[k]);
            known[k] = true;
          }
      }
      std::vector<int> misses;
      std::vector<size_t> position;
      for (size_t k = 0; k < indices.size(); ++k) {
        if (known[k]) {
          ++region_reused;
          meter.done(true);
          continue;
        }
        misses.push_back(indices[k]);
        position.push_back(k);
      }
      if (misses.empty()) return results;
      AC_ASSIGN_OR_RETURN(tune::AdmissionOutcome outcome,
                          worker.admit(r, misses, [&](size_t, const tune::CandidateResult&) { meter.done(false); }));
      times += outcome.times;
      for (int i : misses)  // candidates that did not compile are rejected without the GPU
        measured += tune::runnable(region.plan.candidates[static_cast<size_t>(i)], region.compiled[static_cast<size_t>(i)]);
      for (size_t j = 0; j < misses.size(); ++j) {
        if (file) tune::put_result(*file, key, fingerprints[r][static_cast<size_t>(misses[j])], outcome.results[j]);
        results[position[j]] = std::move(outcome.results[j]);
      }
      return results;
    };
    AC_TRY(search::admit_with_budget(region, admit));
    if (file) store(*file, times);
    reused += region_reused;
    regions_reused += region_reused > 0 && region_reused == static_cast<size_t>(region.search.spent);
    artifact.admission_times += times;

    for (size_t b = 0; b < f.buckets.size(); ++b)
      region.selections.push_back(select_for_bucket(region, per_bucket[r] ? b : 0, f.buckets[b].name));
    search::record_outcomes(region, per_bucket[r]);
    if (options.search.ablate_advisor) {
      measurements.push_back(search::measurement_of(region, f.buckets, per_bucket[r]));
      measurements.back().orders = search::orderings_of(region, options.search.ablate_seed);
    }
    size_t region_valid = 0, stopped = 0;
    for (const auto& result : region.results) {
      region_valid += result.validated;
      stopped += std::any_of(result.timings.begin(), result.timings.end(), [](const tune::Timing& t) { return t.stopped_early; });
    }
    validated += region_valid;
    say("[4/5] admit " + std::to_string(done) + "/" + std::to_string(n) + " " + region.id + " (" +
        analysis::category_name(region.plan.summary.category) + "): " + std::to_string(region_valid) + "/" +
        std::to_string(region.search.spent) + " measured validated (" + region.search.order_source + " order" +
        (region.search.exhaustive ? "" : ", budget " + std::to_string(region.search.budget)) + ")" +
        (region_reused ? ", " + std::to_string(region_reused) + " from the tuning database" : "") +
        (stopped ? ", " + std::to_string(stopped) + " stopped early" : "") + ", " + fixed(times.stages_s()) + " s; " +
        region.selections.front().reason);
  }
  say("[4/5] admit: " + std::to_string(validated) + " candidates validated in " + fixed(seconds_since(stage)) + " s (" +
      std::to_string(measured) + " measured, " + std::to_string(reused) + " from the tuning database)");

  if (options.context_tuning) {
    const json chain_context = {{"format", tune::kTuningDbFormat}, {"admission", tune::kAdmissionVersion}, {"device", context.device},
                                {"toolkit", context.toolkit}, {"compiler", context.compiler}, {"chains", "decode layer"}};
    tune::AdmissionTimes chain_times;
    std::optional<tune::TuningFile> chains;
    if (db) chains = options.retune ? tune::TuningFile(chain_context) : db->load(chain_context, warnings);
    const TimingAt timing_at = [&](const emit::CompiledRegion& region, const emit::Bucket& bucket, size_t index) {
      const bool each = timed_per_bucket(region.plan.function, region.plan.summary);
      return std::make_pair(timing_bindings(region.plan.function, bucket, each), each ? index : size_t{0});
    };
    const ChainTimer time_chain = [&](const std::vector<tune::ChainStep>& steps, const std::vector<int>& start,
                                      const tune::SequenceOptions& chain_options) -> Expected<ChainTiming> {
      const json key = chain_key(region_keys, fingerprints, steps, start, chain_options);
      if (chains && !options.retune)
        if (const auto stored = chains->get(key)) {
          auto result = tune::sequence_result_from_json(*stored);
          if (result && result->best.size() == steps.size() && result->start == start) return ChainTiming{std::move(*result), true};
          warnings.push_back("tuning database: a stored chain of the decode layer did not fit its key; timed again");
        }
      AC_ASSIGN_OR_RETURN(tune::SequenceResult result, worker.time_chain(steps, start, chain_options, chain_times));
      if (chains) chains->put(key, tune::sequence_result_json(result));
      return ChainTiming{std::move(result), false};
    };
    tune_layers_in_context(module, artifact, timing_at, time_chain, progress);
    if (chains) store(*chains, chain_times);
    artifact.admission_times += chain_times;
  }

  for (const auto& warning : warnings) say("note: " + warning);
  artifact.tuning = {{"database", context.tuning_db.empty() ? json(nullptr) : json(context.tuning_db.string())},
                     {"retune", options.retune},
                     {"candidates_reused", reused},
                     {"candidates_measured", measured},
                     {"regions_reused", regions_reused},
                     {"early_stop_margin", margin},
                     {"warnings", warnings}};
  return measurements;
}

}  // namespace agentcompile::driver
