// --dump-ir: a listing after each stage, into the artifact's ir/ folder beside module.ir (the module
// compiled). Each stage library writes its own listing of one region (analysis/summary.h,
// plan/candidate_listing.h, advisor/order_listing.h, codegen/compile_listing.h,
// tune/admission_listing.h); here they are gathered per function, in the order of the pipeline:
//
//   captured.ir                   the module as captured, when recognition changed it
//   <function>.regions.txt        after analyze: regions, unique regions and their summaries
//   <function>.candidates.txt     after plan: each region's candidate space
//   <function>.advised.txt        after advise: the measuring order and the advice behind it
//   <function>.generated.txt      after generate: what NVRTC compiled
//   <function>.admitted.txt       after admit: validation and timings (the one listing with measurements)
//   <function>.selected.txt       after select: each bucket's pick made alone
//   <function>.context-tuned.txt  after context-tune: the picks as emitted
#include "analysis/summary.h"
#include "advisor/order_listing.h"
#include "codegen/compile_listing.h"
#include "pipeline/stages.h"
#include "ir/text.h"
#include "plan/candidate_listing.h"
#include "tune/admission_listing.h"

namespace agentcompile::pipeline {

namespace {

// One file per function of `plan`: a header line, then `region_text` of each of its regions.
template <typename RegionText>
void per_function(const Plan& plan, const std::string& suffix, const std::string& what, std::map<std::string, std::string>& files,
                  const RegionText& region_text) {
  for (const auto& f : plan.functions) {
    std::string text = "function " + f.name + ": " + what + "\n";
    for (size_t r = 0; r < plan.regions.size(); ++r)
      if (plan.regions[r].plan.function == f.name) text += region_text(r);
    files[f.name + suffix] = text;
  }
}

}  // namespace

void IrListings::captured(const CapturedModel& model) {
  if (!enabled_ || !model.source.captured || !model.module.raised) return;
  ir::Module captured = *model.source.captured;
  for (auto& function : captured.functions)
    for (auto& node : function.nodes) node.loc.clear();  // as module.ir is printed
  files_["captured.ir"] = ir::print_module(captured);
}

void IrListings::analyzed(const Analysis& analysis) {
  if (!enabled_) return;
  for (const auto& f : analysis.functions)
    files_[f.function->name + ".regions.txt"] = analysis::describe_regions(*f.function, f.partition, f.unique);
}

void IrListings::planned(const Plan& plan) {
  if (!enabled_) return;
  per_function(plan, ".candidates.txt", "candidate spaces after plan (heuristic order)", files_,
               [&](size_t r) { return plan::describe_candidates(plan.regions[r].plan); });
}

void IrListings::advised(const Plan& plan, const Advice& advice) {
  if (!enabled_) return;
  per_function(plan, ".advised.txt", "measuring order after advise", files_, [&](size_t r) {
    const tune::SearchRecord& search = advice.regions[r].search;
    return advisor::describe_order(plan.regions[r].plan, advice.regions[r].advice, search.order, search.order_source, search.budget);
  });
}

void IrListings::generated(const Plan& plan, const Generated& generated) {
  if (!enabled_) return;
  per_function(plan, ".generated.txt", "NVRTC after generate", files_,
               [&](size_t r) { return codegen::describe_compiles(plan.regions[r].plan, generated.compiled[r]); });
}

void IrListings::admitted(const Plan& plan, const Admitted& admitted) {
  if (!enabled_) return;
  per_function(plan, ".admitted.txt", std::string("admission (") + (admitted.session ? "measured on the GPU" : "no GPU") + ")", files_,
               [&](size_t r) { return tune::describe_admission(plan.regions[r].plan, admitted.regions[r]); });
}

void IrListings::selected(const Plan& plan, const Selected& selected) {
  if (!enabled_) return;
  per_function(plan, ".selected.txt", "picks after select (each kernel timed alone)", files_,
               [&](size_t r) { return tune::describe_selections(plan.regions[r].plan, selected.regions[r]); });
}

void IrListings::chain(const Plan& plan, const ChainPicks& picks) {
  if (!enabled_) return;
  const std::string what = picks.not_run.empty() ? "picks after the decode layer's chain timing"
                                                 : "picks after context tuning, which did not run (" + picks.not_run + ")";
  per_function(plan, ".context-tuned.txt", what, files_,
               [&](size_t r) { return tune::describe_selections(plan.regions[r].plan, picks.selected.regions[r]); });
}

}  // namespace agentcompile::pipeline
