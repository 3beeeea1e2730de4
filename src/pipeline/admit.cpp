// Admit (DESIGN.md, "admit"): each region's candidates validated against the reference interpreter
// and timed on the GPU, through one worker and the tuning database (admission_session.h), with the
// time of every stage and a progress count.
//
// Regions go in plan order. The search budget (tune/search.h) decides which candidates to admit, in
// the advised order; of those, the tuning database supplies each candidate whose validation and
// timings at every size it holds (not with --retune), and the worker admits the rest, whose results
// are stored back. A stored timing that stopped early stands only while it is still clearly behind
// the best of this compile (tune::stored_timing_stands); otherwise that candidate is measured again.
// Each region's line names the pick its first bucket will get (tune/selection.h); select.cpp makes
// the picks. With the advisor ablation every candidate is timed in full (no early stop): the
// ablation replays other orderings on those measurements. Without a GPU nothing is admitted and
// every region records so.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "pipeline/admission_session.h"
#include "pipeline/stages.h"

namespace agentcompile::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string fixed(double value, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
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

// Without a GPU: every region keeps its order and budget, and nothing is measured.
Admitted skip_admission(const Plan& plan, const Advice& advice, const ProgressFn& say) {
  Admitted out;
  for (size_t r = 0; r < plan.regions.size(); ++r) {
    tune::AdmittedRegion region;
    region.search = advice.regions[r].search;
    region.search.measured.assign(plan.regions[r].plan.candidates.size(), false);
    region.search.note = "no GPU: nothing measured; the order and budget are recorded";
    out.regions.push_back(std::move(region));
  }
  say("[4/5] admit: skipped (no GPU): every candidate is unvalidated and unmeasured");
  return out;
}

}  // namespace

Expected<Admitted> admit_regions(const CapturedModel& model, const Plan& plan, const Advice& advice, const Generated& generated,
                                 const Target& target, const ArtifactIdentity& identity, const CompileOptions& options,
                                 const std::filesystem::path& cache_dir, const ProgressFn& say, const AdmissionProgressFn& admission_progress) {
  const auto stage = Clock::now();
  if (!target.gpu) {
    Admitted out = skip_admission(plan, advice, say);
    out.seconds = seconds_since(stage);
    return out;
  }
  AdmissionContext context;
  context.device = {{"name", target.device.value("name", "")}, {"arch", target.profile.arch},
                    {"multiprocessors", target.profile.multiprocessors}, {"l2_bytes", target.profile.l2_bytes}};
  context.toolkit = identity.nvrtc_version;
  context.compiler = identity.compiler;
  context.tuning_db = cache_dir / "tuning";
  AC_ASSIGN_OR_RETURN(std::unique_ptr<AdmissionSession> opened,
                      AdmissionSession::open(model.module.module, plan, generated, options, std::move(context)));
  Admitted out;
  out.session = std::move(opened);
  AdmissionSession& session = *out.session;

  const size_t n = plan.regions.size();
  const double margin = options.search.ablate_advisor ? 0.0 : options.early_stop_margin;
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    const size_t candidates = admits(plan.regions[r]) ? plan.regions[r].plan.candidates.size() : 0;
    const int budget = advice.regions[r].search.budget;
    if (candidates > 0) total += budget <= 0 ? candidates : std::min(candidates, static_cast<size_t>(budget));
  }
  Meter meter(total, admission_progress);
  out.regions.resize(n);
  size_t done = 0, validated = 0;
  for (size_t r = 0; r < n; ++r) {
    const PlannedRegion& region = plan.regions[r];
    tune::AdmittedRegion& admitted = out.regions[r];
    admitted.search = advice.regions[r].search;
    ++done;
    if (!admits(region)) continue;
    meter.region(region.id);
    const tune::RegionWork& work = session.work(r);
    const std::vector<std::string>& fingerprints = session.fingerprints(r);
    tune::AdmissionTimes& times = admitted.times;
    const tune::RegionTuningKey key{region_tuning_context(session.context(), region.plan.summary), work.bindings, work.seeds, work.distributions,
                                    work.options.warmup, work.options.repetitions, work.options.screen_samples};
    std::optional<tune::TuningFile> file = session.load(key.context, times);
    size_t region_reused = 0;
    auto admit = [&](const std::vector<int>& indices) -> Expected<std::vector<tune::CandidateResult>> {
      std::vector<tune::CandidateResult> results(indices.size());
      std::vector<bool> known(indices.size(), false);
      if (file) {
        auto stored = tune::stored_results(*file, key, region.plan.candidates, fingerprints, indices, work.options.timing,
                                           admitted.results, margin, options.retune);
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
                          session.worker().admit(r, misses, [&](size_t, const tune::CandidateResult&) { meter.done(false); }));
      times += outcome.times;
      for (int i : misses)  // candidates that did not compile are rejected without the GPU
        session.measured += tune::runnable(region.plan.candidates[static_cast<size_t>(i)], generated.compiled[r][static_cast<size_t>(i)]);
      for (size_t j = 0; j < misses.size(); ++j) {
        if (file) tune::put_result(*file, key, fingerprints[static_cast<size_t>(misses[j])], outcome.results[j]);
        results[position[j]] = std::move(outcome.results[j]);
      }
      return results;
    };
    AC_TRY(tune::admit_with_budget(region.id, region.plan.candidates, generated.compiled[r], admitted, admit));
    if (file) session.store(*file, times);
    session.reused += region_reused;
    session.regions_reused += region_reused > 0 && region_reused == static_cast<size_t>(admitted.search.spent);
    out.times += times;

    const auto f = std::find_if(plan.functions.begin(), plan.functions.end(),
                                [&](const emit::CompiledFunction& fn) { return fn.name == region.plan.function; });
    if (options.search.ablate_advisor) {
      out.measurements.push_back(tune::measurement_of(region.id, static_cast<int>(region.plan.sites.size()), region.plan.candidates,
                                                      admitted.results, f->buckets, region.sizes.per_bucket));
      out.measurements.back().orders =
          tune::orderings_of(region.id, region.plan.candidates.size(), admitted.search.order, options.search.ablate_seed);
    }
    size_t region_valid = 0, stopped = 0;
    for (const auto& result : admitted.results) {
      region_valid += result.validated;
      stopped += std::any_of(result.timings.begin(), result.timings.end(), [](const tune::Timing& t) { return t.stopped_early; });
    }
    validated += region_valid;
    const tune::Selection first_pick = tune::select_measured(region.plan.candidates, admitted.results, 0, f->buckets.front().name);
    say("[4/5] admit " + std::to_string(done) + "/" + std::to_string(n) + " " + region.id + " (" +
        analysis::category_name(region.plan.summary.category) + "): " + std::to_string(region_valid) + "/" +
        std::to_string(admitted.search.spent) + " measured validated (" + admitted.search.order_source + " order" +
        (admitted.search.exhaustive ? "" : ", budget " + std::to_string(admitted.search.budget)) + ")" +
        (region_reused ? ", " + std::to_string(region_reused) + " from the tuning database" : "") +
        (stopped ? ", " + std::to_string(stopped) + " stopped early" : "") + ", " + fixed(times.stages_s()) + " s; " +
        first_pick.reason);
  }
  say("[4/5] admit: " + std::to_string(validated) + " candidates validated in " + fixed(seconds_since(stage)) + " s (" +
      std::to_string(session.measured) + " measured, " + std::to_string(session.reused) + " from the tuning database)");
  out.seconds = seconds_since(stage);
  return out;
}

nlohmann::json finish_admission(Admitted& admitted, const CompileOptions& options, const ProgressFn& say) {
  if (!admitted.session) return nullptr;
  AdmissionSession& session = *admitted.session;
  for (const auto& warning : session.warnings) say("note: " + warning);
  const double margin = options.search.ablate_advisor ? 0.0 : options.early_stop_margin;
  const std::filesystem::path db = session.has_database() ? session.context().tuning_db : std::filesystem::path();
  nlohmann::json tuning = {{"database", db.empty() ? nlohmann::json(nullptr) : nlohmann::json(db.string())},
                           {"retune", options.retune},
                           {"candidates_reused", session.reused},
                           {"candidates_measured", session.measured},
                           {"regions_reused", session.regions_reused},
                           {"early_stop_margin", margin},
                           {"warnings", session.warnings}};
  admitted.session.reset();  // the worker stops
  return tuning;
}

tune::AblationRecord ablate_orderings(const Plan& plan, const Admitted& admitted, const ArtifactIdentity& identity,
                                      const CompileOptions& options, const Target& target) {
  std::vector<tune::RegionOrders> orders;
  for (size_t r = 0; r < plan.regions.size(); ++r) {
    const PlannedRegion& region = plan.regions[r];
    tune::RegionOrders o;
    o.region = region.id;
    for (const auto& c : region.plan.candidates) o.ids.push_back(c.id);
    o.orders = tune::orderings_of(region.id, region.plan.candidates.size(), admitted.regions[r].search.order, options.search.ablate_seed);
    orders.push_back(std::move(o));
  }
  return tune::record_ablation(orders, admitted.measurements, options.search, identity.options["advisor"], target.gpu);
}

}  // namespace agentcompile::pipeline
