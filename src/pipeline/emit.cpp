// Emit (DESIGN.md, "emit"): the stages' outputs gathered into the artifact's record and written once,
// atomically, into the output directory (emit/artifact.h), with a copy kept in the cache under the
// artifact's key; and, before any analysis, the warm path: an up-to-date artifact of the key in the
// output directory or the cache is reused once every file of it is checked (emit/artifact_cache.h).
// The artifact's format, its writer, its key and its cache are emit's; this file only calls them.
#include <chrono>
#include <cstdio>

#include "pipeline/stages.h"
#include "emit/artifact_cache.h"

namespace agentcompile::pipeline {

namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

// The summary of an artifact from its record (the one reader's view, warm or just written).
CompileSummary summary_of(const emit::ArtifactRecord& record, const std::filesystem::path& dir, bool warm) {
  CompileSummary summary;
  summary.artifact = dir;
  summary.key = record.key;
  summary.warm = warm;
  summary.gpu_used = record.gpu_used;
  summary.unique_regions = record.regions.size();
  for (const auto& region : record.regions) {
    summary.candidates += region.candidates.size();
    for (const auto& c : region.candidates) {
      summary.compiled += c.compiled;
      summary.validated += c.validation == "validated";
    }
    for (const auto& s : region.selections) summary.selected += s.candidate.has_value();
  }
  summary.advice = record.advisor_line;
  summary.ablation = record.ablation_table;
  return summary;
}

// The table the CLI prints: per function its nodes, regions and what became of their candidates.
std::string summary_table(const emit::Artifact& a) {
  std::string out = "function   nodes  regions  unique  candidates  compiled  validated  selected\n";
  for (const auto& f : a.functions) {
    size_t nodes = 0, candidates = 0, compiled = 0, validated = 0, selected = 0;
    for (const auto& region : f.partition.regions) nodes += region.nodes.size();
    size_t unique = 0;
    for (const auto& r : a.regions) {
      if (r.plan.function != f.name) continue;
      ++unique;
      candidates += r.plan.candidates.size();
      for (const auto& c : r.compiled) compiled += c.ok;
      for (const auto& v : r.results) validated += v.validated;
      for (const auto& s : r.selections) selected += s.candidate >= 0;
    }
    char line[160];
    std::snprintf(line, sizeof(line), "%-9s %6zu %8zu %7zu %11zu %9zu %10s %9zu\n", f.name.c_str(), nodes, f.partition.regions.size(),
                  unique, candidates, compiled, a.gpu_used ? std::to_string(validated).c_str() : "-", selected);
    out += line;
  }
  return out;
}

}  // namespace

Expected<std::optional<CompileSummary>> reuse_warm_artifact(const ArtifactIdentity& identity, const CompileOptions& options,
                                                            const std::filesystem::path& cache_dir, const ProgressFn& say) {
  if (options.force || options.retune) return std::optional<CompileSummary>();
  AC_ASSIGN_OR_RETURN(emit::Reuse reuse, emit::reuse_artifact(options.output, cache_dir, identity.key));
  for (const auto& note : reuse.notes) say(note);
  if (!reuse.record) return std::optional<CompileSummary>();
  say(reuse.from == options.output ? "warm: " + options.output.string() + " is up to date (key " + identity.key.substr(0, 16) + ")"
                                   : "warm: reused the cached artifact " + reuse.from.string());
  return std::optional<CompileSummary>(summary_of(*reuse.record, options.output, true));
}

emit::Artifact assemble_artifact(const StageOutputs& o) {
  emit::Artifact a;
  a.key = o.identity.key;
  a.model = o.identity.model;
  a.device = o.target.device;
  a.nvrtc_version = o.identity.nvrtc_version;
  a.module_ir = o.model.module.ir_text;
  a.functions = o.plan.functions;
  for (size_t r = 0; r < o.plan.regions.size(); ++r) {
    emit::CompiledRegion region;
    region.id = o.plan.regions[r].id;
    region.plan = o.plan.regions[r].plan;
    region.compiled = o.generated.compiled[r];
    region.results = o.admitted.regions[r].results;
    region.selections = o.picks.selected.regions[r];
    region.advice = o.advice.regions[r].advice;
    region.search = o.admitted.regions[r].search;
    region.search.buckets = o.picks.selected.outcomes[r];
    region.admission_times = o.admitted.regions[r].times;
    a.regions.push_back(std::move(region));
  }
  a.runtime_kernels = o.generated.runtime_kernels;
  a.gpu_used = o.target.gpu;
  a.times.analyze_s = o.analysis.seconds;
  a.times.plan_s = o.plan.seconds;
  a.times.generate_s = o.generated.seconds;
  a.times.admit_s = o.admitted.seconds + o.picks.seconds;
  a.times.total_s = o.records.seconds;
  a.options = o.identity.options;
  a.advisor = o.records.advisor;
  a.advice_record = o.records.advice_record;
  a.ablation = o.records.ablation.json;
  a.ablation_table = o.records.ablation.table;
  a.context_tuning = o.picks.record;
  a.admission_times = o.admitted.times;
  a.tuning = o.records.tuning;
  a.weights = o.records.weights;
  a.ir_dumps = o.records.listings;
  return a;
}

Expected<CompileSummary> emit_artifact(const emit::Artifact& artifact, const Analysis& analysis, const CompileOptions& options,
                                       const std::filesystem::path& cache_dir, const ProgressFn& say) {
  const auto start = std::chrono::steady_clock::now();
  AC_ASSIGN_OR_RETURN(emit::WrittenArtifact written, emit::write_artifact(artifact, options.output));
  if (const Status stored = emit::store_in_cache(options.output, cache_dir, artifact.key); !stored)
    say("note: the artifact was not stored in the cache (" + stored.message() + ")");  // a cache, not a result
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  say("[5/5] emit: " + options.output.string() + " (" + fixed(seconds, 2) + " s)");

  CompileSummary summary = summary_of(written.record, options.output, false);
  summary.ir_nodes = analysis.nodes;
  summary.regions = analysis.regions;
  summary.table = summary_table(artifact);
  summary.advice = artifact.advisor.value("line", "");
  summary.ablation = artifact.ablation_table;
  return summary;
}

}  // namespace agentcompile::pipeline
