// The compile pipeline: capture -> analyze -> plan -> advise -> generate -> admit & measure -> select
// -> emit.
//
// Every stage reports a progress line. The advisor (src/advisor) only orders and annotates the
// candidates each region measures; the search budget and the ablation live in driver/search.cpp.
// Without a GPU (none found, or --no-gpu, or a named device profile) the pipeline stops after NVRTC
// has compiled every candidate and says so: candidates are recorded as unvalidated and unmeasured,
// and the heuristic order stands in for selection. The artifact is keyed by the IR, the target, the
// NVRTC version and the options (advisor settings included, keys never); an up-to-date artifact in
// the output directory or the cache is reused (a warm compile) once every file of it is checked.
// The output directory is checked before any work (emit/output_dir.h) and written once, atomically.
#include <chrono>
#include <cmath>
#include <sstream>

#include "advisor/advisor.h"
#include "advisor/validate.h"
#include "agentcompile/compiler.h"
#include "analysis/extract.h"
#include "analysis/summary.h"
#include "codegen/embedded_kernels.h"
#include "codegen/render.h"
#include "driver/admit_regions.h"
#include "driver/buckets.h"
#include "emit/model_module.h"
#include "driver/search.h"
#include "emit/artifact.h"
#include "emit/artifact_cache.h"
#include "emit/output_dir.h"
#include "frontend/model_builder.h"
#include "frontend/model_source.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "support/sha256.h"
#include "support/utf8.h"
#include "gpu/device_probe.h"
#include "tune/admission.h"

namespace agentcompile {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// 2: decode buckets of context, attention prologue; 3: a decode bucket of up to 512 keys; 4: the layer
// chain searched by pairs of regions (picks change, so artifacts of 3 are compiled again); 5: timing
// stops early for candidates clearly behind, and admission may reuse the tuning database. The tuning
// database keys its entries by this too: a new version measures afresh.
constexpr const char* kCompilerVersion = "agentcompile-compiler/6";

// The kernel templates are part of what a compile depends on (the artifact and the tuning database).
// Those sizes as key text: the IR says T, the manifest what it runs at, and both pick the kernels.
std::string run_sizes(const frontend::ModelSource& source) {
  std::string text;
  if (source.capture)
    for (const auto& f : source.capture->functions)
      if (f.run_tokens > 0) text += f.name + ":T=" + std::to_string(f.run_tokens) + ";";
  return text;
}

std::string kernel_headers_hash() {
  support::Sha256 h;
  for (const auto& header : codegen::embedded_kernel_headers()) h.update(header.text);
  return h.hex();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string fixed(double value, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

std::string summary_table(const emit::Artifact& a) {
  std::ostringstream out;
  out << "function   nodes  regions  unique  candidates  compiled  validated  selected\n";
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
    out << line;
  }
  return out.str();
}

// The summary of an artifact from its record (the one reader's view, warm or just written).
CompileSummary summary_of(const emit::ArtifactRecord& record, const fs::path& dir, bool warm) {
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

// The options that change what a compile produces, for the artifact key (never a key or a URL).
json result_options(const CompileOptions& o, bool gpu) {
  json advisor = advisor::backend_fingerprint(o.advisor);
  if (advisor != "none") {
    advisor = {{"backend", advisor}, {"scope", o.advisor.scope}};
    if (o.advisor.backend == "openai" || o.advisor.backend == "anthropic") advisor["model"] = o.advisor.model;
  }
  return {{"max_candidates", o.max_candidates}, {"seeds", o.seeds}, {"repetitions", o.repetitions}, {"no_gpu", o.no_gpu || !gpu},
          {"advisor", advisor}, {"search_budget", o.search.budget}, {"unfused", o.unfused}, {"library_matmuls", o.library_matmuls}, {"context_tuning", o.context_tuning},
          {"early_stop_margin", o.search.ablate_advisor ? 0.0 : o.early_stop_margin},
          {"dump_ir", o.dump_ir},  // the listings are files of the artifact
          {"ablate_advisor", o.search.ablate_advisor ? json{{"budgets", o.search.ablate_budgets}, {"seed", o.search.ablate_seed}} : json(false)}};
}

// Totals of the advice into artifact.advisor (settings, counts, the summary line); returns the line.
std::string advice_summary(emit::Artifact& artifact, const advisor::Advisor& advisor) {
  std::vector<const advisor::RegionAdvice*> advice;
  for (const auto& region : artifact.regions) advice.push_back(&region.advice);
  const advisor::AdviceCounts counts = advisor::count_advice(advice);
  artifact.advisor = advisor.settings();
  artifact.advisor["counts"] = advisor::counts_json(counts);
  artifact.advisor["line"] = advisor::counts_line(artifact.advisor.value("backend", ""), counts);
  return artifact.advisor["line"];
}

}  // namespace

Expected<CompileSummary> compile_model(const CompileOptions& options, const ProgressFn& progress_fn,
                                       const AdmissionProgressFn& admission_progress) {
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& line) {
    if (progress_fn) progress_fn(line);
  };
  if (options.output.empty()) return error(ErrorCode::kInvalidArgument, "no output directory given (-o)");
  const fs::path cache_dir = cache_root(options.cache_dir);
  // Before any work: an output that is not ours to replace is refused now, not after the compile.
  AC_TRY(emit::check_output_location(options.output, options.model, cache_dir));
  AC_TRY(emit::check_output_replaceable(options.output));

  // Capture.
  AC_ASSIGN_OR_RETURN(frontend::ModelSource source, frontend::open_model(options.model, /*with_weights=*/false));
  AC_ASSIGN_OR_RETURN(emit::ModelModule prepared, emit::model_module(source));
  const ir::Module& module = prepared.module;
  for (const auto& line : prepared.recognized) progress("recognize: " + line);
  const std::string& ir_text = prepared.ir_text;

  // Target: the GPU here, or a named profile (compile only).
  plan::DeviceProfile profile;
  bool gpu = false;
  json device;
  if (!options.device_profile.empty()) {
    AC_ASSIGN_OR_RETURN(profile, plan::named_device_profile(options.device_profile));
    device = {{"name", profile.name}, {"arch", profile.arch}, {"source", "named profile"}};
    progress("target: named profile " + profile.name + " (" + profile.arch + "): compile only, no validation or timing");
  } else {
    auto probed = options.no_gpu ? Expected<gpu::DeviceInfo>(error(ErrorCode::kUnsupported, "--no-gpu")) : gpu::probe_device();
    if (probed) {
      gpu = true;
      AC_ASSIGN_OR_RETURN(profile, plan::named_device_profile(probed->sm_major == 8 ? "a100" : "h200"));
      profile.name = probed->name;
      profile.arch = gpu::nvrtc_arch(*probed);
      profile.multiprocessors = probed->multiprocessors;
      profile.l2_bytes = probed->l2_bytes;
      profile.shared_per_block_optin = probed->shared_per_block_optin;
      profile.from_device = true;
      device = {{"name", probed->name}, {"arch", profile.arch}, {"source", "probed"}, {"multiprocessors", probed->multiprocessors},
                {"l2_bytes", probed->l2_bytes}, {"driver_version", probed->driver_version}};
      progress("target: " + probed->name + " (" + profile.arch + ")");
    } else {
      AC_ASSIGN_OR_RETURN(profile, plan::named_device_profile("h200"));
      device = {{"name", profile.name}, {"arch", profile.arch}, {"source", "default profile (no GPU)"}};
      progress("no GPU (" + probed.status().message() + "): planning for h200 (" + profile.arch +
               "); candidates will be compiled but not validated or measured");
    }
  }

  for (int budget : options.search.ablate_budgets)
    if (budget < 1) return error(ErrorCode::kInvalidArgument, "--ablate-budgets: budgets must be positive, not " + std::to_string(budget));
  if (options.search.budget < 0) return error(ErrorCode::kInvalidArgument, "--search-budget must be 0 (all) or positive");
  if (!(options.early_stop_margin >= 0) || !std::isfinite(options.early_stop_margin))
    return error(ErrorCode::kInvalidArgument, "--early-stop-margin must be 0 (off) or a positive fraction, not " + std::to_string(options.early_stop_margin));
  auto log = [&](const std::string& line) {
    if (options.verbose) progress(line);
  };
  AC_ASSIGN_OR_RETURN(auto advisor, advisor::Advisor::create(options.advisor, cache_dir / "advice", advisor::device_json(profile), log, progress));

  emit::Artifact artifact;
  artifact.nvrtc_version = codegen::nvrtc_version();
  artifact.module_ir = ir_text;
  artifact.device = device;
  artifact.gpu_used = gpu;
  artifact.options = result_options(options, gpu);
  const std::string kernels_hash = kernel_headers_hash();
  const std::vector<emit::RuntimeKernelSpec> runtime_kernels = emit::runtime_kernels_for(module.find_function("decode") != nullptr);
  support::Sha256 key;
  key.update(kCompilerVersion).update(ir_text).update(profile.arch).update(options.device_profile)
      .update(artifact.nvrtc_version).update(artifact.options.dump()).update(gpu ? "gpu" : "nogpu")
      .update(kernels_hash).update(run_sizes(source));
  for (const auto& k : runtime_kernels) key.update(k.kernel);  // artifacts without them are not reused
  artifact.key = key.hex();
  const auto& c = source.config;
  artifact.model = {{"model_type", c.model_type}, {"source", support::utf8::repaired(options.model.string())}, {"dtype", std::string(ir::dtype_name(c.dtype))},
                    {"hidden_size", c.hidden_size}, {"intermediate_size", c.intermediate_size}, {"num_layers", c.num_layers},
                    {"num_heads", c.num_heads}, {"num_kv_heads", c.num_kv_heads}, {"head_dim", c.head_dim},
                    {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_position_embeddings},
                    {"config_sha256", support::sha256_hex(c.raw.dump())}};

  // Warm compile: the output (or the cache) already holds this exact artifact, every file checked.
  if (!options.force && !options.retune) {
    AC_ASSIGN_OR_RETURN(emit::Reuse reuse, emit::reuse_artifact(options.output, cache_dir, artifact.key));
    for (const auto& note : reuse.notes) progress(note);
    if (reuse.record) {
      progress(reuse.from == options.output ? "warm: " + options.output.string() + " is up to date (key " + artifact.key.substr(0, 16) + ")"
                                            : "warm: reused the cached artifact " + reuse.from.string());
      CompileSummary summary = summary_of(*reuse.record, options.output, true);
      summary.seconds = seconds_since(start);
      return summary;
    }
  }

  // Analyze.
  auto stage = std::chrono::steady_clock::now();
  size_t total_nodes = 0, total_regions = 0;
  for (const auto& function : module.functions) {
    if (function.name == "init") continue;  // weights-only: run once at load by the interpreter (runtime/derived_weights.h)
    emit::CompiledFunction f;
    f.name = function.name;
    f.partition = analysis::form_regions(module, function, analysis::RegionOptions{.norm_prologue = !options.unfused,
                                                                                  .residual_norm_prologue = !options.unfused,
                                                                                  .matmul_fusion = !options.unfused,
                                                                                  .attention_prologue = !options.unfused});
    const int64_t run_tokens = source.run_tokens(function.name);
    f.buckets = driver::buckets_for(function, c.max_position_embeddings, run_tokens);
    const ir::SymbolBindings bindings = function.name == "decode"    ? ir::SymbolBindings{1, 2048}
                                        : function.name == "prefill" ? ir::SymbolBindings{512, 512}
                                                                     : ir::SymbolBindings{run_tokens, 1};
    auto unique = analysis::unique_regions(module, function, f.partition, bindings);
    f.unique_of_region.assign(f.partition.regions.size(), -1);
    // Plan right away (needs the partition alive): candidates per unique region.
    auto plans = plan::plan_function(module, function, f.partition, unique, profile, plan::PlannerOptions{options.max_candidates, options.library_matmuls});
    for (auto& plan : plans) {
      emit::CompiledRegion region;
      region.id = function.name + ".r" + std::to_string(plan.unique_id);
      for (int site : plan.sites) f.unique_of_region[static_cast<size_t>(site)] = static_cast<int>(artifact.regions.size());
      region.plan = std::move(plan);
      artifact.regions.push_back(std::move(region));
    }
    total_nodes += function.nodes.size();
    total_regions += f.partition.regions.size();
    if (options.dump_ir) artifact.ir_dumps[function.name + ".regions.txt"] = analysis::describe_regions(function, f.partition, unique);
    artifact.functions.push_back(std::move(f));
  }
  artifact.times.analyze_s = seconds_since(stage);
  progress("[1/5] analyze: " + std::to_string(module.functions.size()) + " functions, " + std::to_string(total_nodes) + " IR nodes, " +
           std::to_string(total_regions) + " regions, " + std::to_string(artifact.regions.size()) + " unique (" + fixed(artifact.times.analyze_s, 2) + " s)");

  size_t candidate_count = 0;
  for (const auto& r : artifact.regions) {
    candidate_count += r.plan.candidates.size();
    if (r.plan.candidates.empty()) progress("  " + r.id + ": no candidates: " + r.plan.unplanned_reason);
  }
  progress("[2/5] plan: " + std::to_string(candidate_count) + " candidates (at most " + std::to_string(options.max_candidates) + " per region)");

  // Advise: the measuring order of each region (the heuristic order without accepted advice).
  for (auto& region : artifact.regions) {
    region.advice = advisor->advise(region.id, region.plan);
    region.search.order = advisor::advised_order(region.plan.candidates, region.advice.verdict);
    region.search.order_source = region.advice.verdict.priority.empty() && region.advice.verdict.hints.empty() ? "heuristic" : "advisor";
    region.search.budget = options.search.ablate_advisor ? 0 : options.search.budget;
  }
  if (advisor->enabled()) progress("[2/5] " + advice_summary(artifact, *advisor));

  // Generate and compile.
  stage = std::chrono::steady_clock::now();
  std::vector<codegen::CompileJob> jobs;
  std::vector<std::pair<size_t, size_t>> job_owner;
  for (size_t r = 0; r < artifact.regions.size(); ++r) {
    auto& region = artifact.regions[r];
    region.compiled.resize(region.plan.candidates.size());
    for (size_t i = 0; i < region.plan.candidates.size(); ++i) {
      const auto& candidate = region.plan.candidates[i];
      if (!codegen::has_generated_launch(candidate)) continue;
      AC_ASSIGN_OR_RETURN(std::string source, codegen::render_source(candidate));
      jobs.push_back({candidate.name(), std::move(source)});
      job_owner.emplace_back(r, i);
    }
  }
  codegen::NvrtcOptions nvrtc;
  nvrtc.arch = profile.arch;
  nvrtc.cache_dir = cache_dir / "nvrtc" / profile.arch;
  nvrtc.isolate = gpu;  // this process forks admission workers afterwards
  // The runtime's own kernels go last, through the same path and cache as the regions' candidates.
  for (const auto& k : runtime_kernels) jobs.push_back({k.kernel, k.source});
  AC_ASSIGN_OR_RETURN(auto compiled, codegen::compile_all(jobs, nvrtc));
  for (size_t j = job_owner.size(); j < compiled.size(); ++j) {
    const emit::RuntimeKernelSpec& spec = runtime_kernels[j - job_owner.size()];
    if (!compiled[j].ok) return error(ErrorCode::kInternal, std::string("NVRTC could not compile the runtime's ") + spec.role + " kernel: " + compiled[j].log);
    artifact.runtime_kernels.push_back({spec, std::move(compiled[j])});
  }
  compiled.resize(job_owner.size());
  size_t ok = 0, hits = 0;
  for (size_t j = 0; j < compiled.size(); ++j) {
    ok += compiled[j].ok;
    hits += compiled[j].cache_hit;
    artifact.regions[job_owner[j].first].compiled[job_owner[j].second] = std::move(compiled[j]);
  }
  artifact.times.generate_s = seconds_since(stage);
  progress("[3/5] generate: " + std::to_string(job_owner.size()) + " sources, NVRTC compiled " + std::to_string(ok) + " (" +
           std::to_string(hits) + " from cache) in " + fixed(artifact.times.generate_s) + " s");
  if (advisor->enabled() && ok < job_owner.size()) {  // diagnostic hints: recorded, never used as code
    for (const auto& [r, i] : job_owner) {
      auto& region = artifact.regions[r];
      if (!region.compiled[i].ok)
        region.advice.diagnoses.push_back(advisor->diagnose(region.id, region.plan, region.plan.candidates[i], region.compiled[i].log));
    }
  }

  // Admit and measure.
  stage = std::chrono::steady_clock::now();
  std::vector<search::RegionMeasurement> measurements;
  if (gpu) {
    driver::AdmissionContext admission;
    admission.device = {{"name", device.value("name", "")}, {"arch", profile.arch}, {"multiprocessors", profile.multiprocessors},
                        {"l2_bytes", profile.l2_bytes}};
    admission.toolkit = artifact.nvrtc_version;
    admission.compiler = std::string(kCompilerVersion) + " " + kernels_hash;
    admission.tuning_db = cache_dir / "tuning";
    AC_ASSIGN_OR_RETURN(measurements, driver::admit_regions(module, artifact, options, admission, progress, admission_progress));
  } else {
    for (auto& region : artifact.regions) {
      const auto& f = *std::find_if(artifact.functions.begin(), artifact.functions.end(),
                                    [&](const emit::CompiledFunction& fn) { return fn.name == region.plan.function; });
      int first = -1;
      for (size_t i = 0; i < region.compiled.size() && first < 0; ++i)
        if (region.compiled[i].ok) first = static_cast<int>(i);
      for (const auto& b : f.buckets)
        region.selections.push_back({b.name, first, first >= 0 ? "unmeasured: no GPU, heuristic order" : "no candidate compiled", false});
      region.search.measured.assign(region.plan.candidates.size(), false);
      region.search.note = "no GPU: nothing measured; the order and budget are recorded";
      search::record_outcomes(region, false);
    }
    progress("[4/5] admit: skipped (no GPU): every candidate is unvalidated and unmeasured");
  }
  artifact.times.admit_s = seconds_since(stage);
  if (options.search.ablate_advisor) search::record_ablation(artifact, measurements, options.search, gpu);

  if (advisor->enabled()) {
    artifact.advice_record = advisor->record();
    advice_summary(artifact, *advisor);  // again: diagnoses are in now
  } else {
    artifact.advisor = {{"backend", "none"}};
  }

  // Emit.
  stage = std::chrono::steady_clock::now();
  artifact.times.total_s = seconds_since(start);
  AC_ASSIGN_OR_RETURN(emit::WrittenArtifact written, emit::write_artifact(artifact, options.output));
  if (const Status stored = emit::store_in_cache(options.output, cache_dir, artifact.key); !stored)
    progress("note: the artifact was not stored in the cache (" + stored.message() + ")");  // a cache, not a result
  progress("[5/5] emit: " + options.output.string() + " (" + fixed(seconds_since(stage), 2) + " s)");

  CompileSummary summary = summary_of(written.record, options.output, false);
  summary.ir_nodes = total_nodes;
  summary.regions = total_regions;
  summary.seconds = seconds_since(start);
  summary.table = summary_table(artifact);
  summary.advice = artifact.advisor.value("line", "");
  summary.ablation = artifact.ablation_table;
  return summary;
}

}  // namespace agentcompile
