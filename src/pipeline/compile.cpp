// The compile pipeline (DESIGN.md, "compile"), top to bottom:
//
//   capture -> analyze -> plan -> advise -> generate -> admit -> select -> context-tune -> emit
//
// Each stage is a function of its own (stages.h) that takes what the stages before it produced and
// says a progress line; the policies they apply live in the stage libraries. The advisor only orders
// and annotates the candidates each region measures. Without a GPU (none found, or --no-gpu, or a
// named device profile) admission is skipped: candidates are recorded as unvalidated and unmeasured,
// and the heuristic order stands in for selection. The artifact is keyed by the IR, the target, the
// NVRTC version and the options (advisor settings included, keys never); an up-to-date artifact in
// the output directory or the cache is reused (a warm compile) once every file of it is checked.
// The output directory is checked before any work (emit/output_dir.h) and written once, atomically.
// With --dump-ir each stage's result is also listed into the artifact's ir/ folder.
#include <chrono>
#include <cmath>

#include "agentcompile/compiler.h"
#include "pipeline/stages.h"
#include "emit/output_dir.h"

namespace agentcompile {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The search and early-stop options (the CLI checks ranges too; the library is also called directly).
Status check_search_options(const CompileOptions& options) {
  for (int budget : options.search.ablate_budgets)
    if (budget < 1) return error(ErrorCode::kInvalidArgument, "--ablate-budgets: budgets must be positive, not " + std::to_string(budget));
  if (options.search.budget < 0) return error(ErrorCode::kInvalidArgument, "--search-budget must be 0 (all) or positive");
  if (!(options.early_stop_margin >= 0) || !std::isfinite(options.early_stop_margin))
    return error(ErrorCode::kInvalidArgument, "--early-stop-margin must be 0 (off) or a positive fraction, not " + std::to_string(options.early_stop_margin));
  return Status::ok();
}

}  // namespace

Expected<CompileSummary> compile_model(const CompileOptions& options, const ProgressFn& progress,
                                       const AdmissionProgressFn& admission_progress) {
  using namespace pipeline;
  const auto start = std::chrono::steady_clock::now();
  const ProgressFn say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  if (options.output.empty()) return error(ErrorCode::kInvalidArgument, "no output directory given (-o)");
  const fs::path cache_dir = cache_root(options.cache_dir);
  // Before any work: an output that is not ours to replace is refused now, not after the compile.
  AC_TRY(emit::check_output_location(options.output, options.model, cache_dir));
  AC_TRY(emit::check_output_replaceable(options.output));

  AC_ASSIGN_OR_RETURN(CapturedModel model, capture_model(options, say));
  AC_ASSIGN_OR_RETURN(Target target, choose_target(options, say));
  AC_TRY(check_search_options(options));
  const advisor::LogFn log = [&](const std::string& line) {
    if (options.verbose) say(line);
  };
  AC_ASSIGN_OR_RETURN(auto advisor, advisor::Advisor::create(options.advisor, cache_dir / "advice", advisor::device_json(target.profile), log, say));
  const ArtifactIdentity identity = identify_artifact(model, target, options);
  AC_ASSIGN_OR_RETURN(std::optional<CompileSummary> warm, reuse_warm_artifact(identity, options, cache_dir, say));
  if (warm) {
    warm->seconds = seconds_since(start);
    return *warm;
  }

  CompileRecords records;
  AC_ASSIGN_OR_RETURN(records.weights, weights_record(model, options, say));
  IrListings listings(options.dump_ir);
  listings.captured(model);
  const Analysis analysis = analyze_regions(model, options, say);
  listings.analyzed(analysis);
  const Plan plan = plan_candidates(model, analysis, target, options, say);
  listings.planned(plan);
  Advice advice = advise_order(plan, *advisor, options, say);
  listings.advised(plan, advice);
  AC_ASSIGN_OR_RETURN(const Generated generated, generate_kernels(plan, identity.runtime_kernels, target, cache_dir, say));
  diagnose_failures(plan, generated, *advisor, advice);
  listings.generated(plan, generated);
  AC_ASSIGN_OR_RETURN(Admitted admitted,
                      admit_regions(model, plan, advice, generated, target, identity, options, cache_dir, say, admission_progress));
  listings.admitted(plan, admitted);
  Selected selected = select_kernels(plan, generated, admitted, target);
  listings.selected(plan, selected);
  const ChainPicks picks = tune_layer_chain(model, plan, admitted, std::move(selected), options, say);
  listings.chain(plan, picks);

  records.tuning = finish_admission(admitted, options, say);
  if (options.search.ablate_advisor) records.ablation = ablate_orderings(plan, admitted, identity, options, target);
  records.advisor = advisor->enabled() ? advice_totals(advice, *advisor) : nlohmann::json{{"backend", "none"}};
  if (advisor->enabled()) records.advice_record = advisor->record();
  records.listings = listings.take();
  records.seconds = seconds_since(start);
  const emit::Artifact artifact =
      assemble_artifact({model, target, identity, analysis, plan, advice, generated, admitted, picks, records});
  AC_ASSIGN_OR_RETURN(CompileSummary summary, emit_artifact(artifact, analysis, options, cache_dir, say));
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace agentcompile
