// report.md: the compile at a glance (the paper's table), the advice outcomes and the advisor
// ablation, then one section per unique region (with what the advisor said and how it was searched).
#include <algorithm>
#include <cstdio>
#include <set>

#include "emit/artifact.h"
#include "support/utf8.h"

namespace agentcompile::emit {

using json = nlohmann::json;

namespace {
std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

// Where a timing was taken: the token count, or for one-token calls over a cache, the keys read.
std::string timed_at(const tune::RegionBindings& b) {
  if (b.T == 1 && b.pos > 0) return " @ctx=" + std::to_string(b.pos + 1);
  return " @T=" + std::to_string(b.T);
}

// A timing cell: the median where it was taken; a timing that stopped early says against what.
std::string timing_text(const tune::Timing& t) {
  std::string text = fmt("%.2f", t.median_us) + timed_at(t.bindings);
  if (t.stopped_early) text += " (stopped early: fastest " + fmt("%.2f", t.fastest_us) + " vs best " + fmt("%.2f", t.stop_bar_us) + ")";
  return text;
}

// Where admission's time went: the stages summed over every region and chain, and what is left of
// the stage's wall-clock time (the compiler waiting, selection, bookkeeping).
std::string admission_breakdown(const Artifact& a) {
  const tune::AdmissionTimes& t = a.admission_times;
  const double admit = a.times.admit_s;
  std::string out = "Admission, stage by stage (measured wall-clock seconds, summed over the regions and the decode layer's chains):\n\n"
                    "| stage | seconds | share of admit+measure |\n|---|---|---|\n";
  auto row = [&](const std::string& name, double seconds) {
    out += "| " + name + " | " + fmt("%.2f", seconds) + " | " + (admit > 0 ? fmt("%.1f%%", 100 * seconds / admit) : "—") + " |\n";
  };
  for (const auto& [name, seconds] : tune::admission_stages(t)) row(name, seconds);
  row("other (waiting, selection)", std::max(0.0, admit - t.stages_s()));
  out += "\nWorkers started " + std::to_string(t.workers) + "; candidates admitted by the worker " + std::to_string(t.candidates) +
         ", validated " + std::to_string(t.validated) + ", timings " + std::to_string(t.timings) + ", stopped early " +
         std::to_string(t.stopped_early) + ".\n\n";
  if (a.tuning.is_object()) {
    const auto& db = a.tuning;
    out += "Tuning database: " + (db.value("database", json()).is_string() ? "`" + db["database"].get<std::string>() + "`" : std::string("none")) +
           (db.value("retune", false) ? " (--retune: not read, refreshed)" : "") + "; " +
           std::to_string(db.value("candidates_reused", 0)) + " candidates reused (" + std::to_string(db.value("regions_reused", 0)) +
           " regions entirely), " + std::to_string(db.value("candidates_measured", 0)) + " measured. Early stop margin " +
           fmt("%.2f", db.value("early_stop_margin", 0.0)) + " (0: off).\n\n";
    for (const auto& warning : db.value("warnings", json::array())) out += "- " + warning.get<std::string>() + "\n";
    if (!db.value("warnings", json::array()).empty()) out += "\n";
  }
  return out;
}

std::string ids(const CompiledRegion& r, const std::vector<int>& indices) {
  std::string out;
  for (int i : indices) out += (out.empty() ? "" : ", ") + r.plan.candidates[static_cast<size_t>(i)].id;
  return out;
}

// One paragraph per region: the advice and its fate, then the search.
std::string region_advice(const CompiledRegion& r) {
  const auto& a = r.advice;
  std::string out;
  if (a.backend != "none") {
    out += "Advice: " + std::string(a.asked ? "asked" : "not asked") + " (" + a.why + ")";
    if (a.exchange && !a.exchange->ok) out += "; exchange failed: " + support::utf8::truncated(a.exchange->error, 200);
    if (a.exchange && a.exchange->ok) {
      const auto& v = a.verdict;
      out += "; accepted " + std::to_string(v.accepted_count()) + ", rejected " + std::to_string(v.rejected.size()) + ", ignored " +
             std::to_string(v.ignored.size());
      if (!v.label.empty()) out += "; label `" + v.label + "`";
      if (!v.priority.empty()) {
        out += "; priority";
        for (const auto& id : v.priority) out += " " + id;
      }
      for (const auto& [name, value] : v.hints) out += "; hint " + name + "=" + std::to_string(value);
      for (const auto& risk : v.risks) out += "; risk " + risk.candidate + " (" + risk.kind + "): " + risk.note;
      for (const auto& rejection : v.rejected) out += "; rejected " + rejection.part + " (" + rejection.reason + ")";
    }
    for (const auto& d : a.diagnoses)
      out += "; diagnosis of " + d.exchange.candidate + " (recorded, never used): " + (d.exchange.ok ? support::utf8::truncated(d.text, 200) : d.exchange.error);
    out += ".  \n";
  }
  const auto& s = r.search;
  out += "Search: " + s.order_source + " order " + ids(r, s.order) + "; budget " + (s.budget > 0 ? std::to_string(s.budget) : "all") +
         ", spent " + std::to_string(s.spent) + (s.note.empty() ? "" : " (" + s.note + ")");
  for (const auto& b : s.buckets)
    out += "; " + b.bucket + ": rank " + (b.rank > 0 ? std::to_string(b.rank) : "—") + ", regret " +
           (b.regret ? fmt("%.1f%%", 100 * *b.regret) : "not measured");
  return out + ".\n\n";
}

// The weights' formats, the bytes a decode step reads and, for a checkpoint quantized at compile
// time, the round-to-nearest error of each quantized matrix (worst first, 12 rows; all are in
// metadata.json "weights").
std::string weights_section(const nlohmann::json& w) {
  if (w.is_null()) return "";
  std::string out = "## Weights\n\n";
  const std::string quantize = w.value("quantize", std::string()), head = w.value("quantize_head", std::string());
  out += quantize.empty() ? (w.value("dequantize", false) ? "GGUF blocks dequantized at load (`--dequantize`)" : "As stored")
                          : "Linear weights quantized to nearest, `--quantize " + quantize + "`";
  out += head.empty() ? (quantize.empty() ? "" : " (the logits' projection keeps its dtype)")
                      : std::string(quantize.empty() ? "; " : ", ") + "the logits' projection `--quantize-head " + head + "`";
  out += ": " + fmt("%.2f MB", w.value("decode_bytes_per_token", 0.0) / 1e6) + " of weights read per decode token, " +
         fmt("%.2f MB", w.value("quantized_bytes_per_token", 0.0) / 1e6) + " of them in " +
         std::to_string(w.value("quantized_matrices", 0)) + " quantized matrices.\n\n";
  if (w.contains("errors") && w["errors"].is_string()) out += "Errors: " + w["errors"].get<std::string>() + ".\n\n";
  if (!w.contains("tensors")) return out;
  std::vector<nlohmann::json> rows(w["tensors"].begin(), w["tensors"].end());
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("rel_rms", 0.0) > b.value("rel_rms", 0.0);
  });
  out += "| tensor | type | bytes | rel. RMS error | max abs error |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < rows.size() && i < 12; ++i)
    out += "| " + rows[i].value("name", std::string()) + " | " + rows[i].value("type", std::string()) + " | " +
           std::to_string(rows[i].value("bytes", int64_t{0})) + " | " + fmt("%.4g", rows[i].value("rel_rms", 0.0)) + " | " +
           fmt("%.4g", rows[i].value("max_abs", 0.0)) + " |\n";
  if (rows.size() > 12) out += "\n(" + std::to_string(rows.size() - 12) + " more in metadata.json \"weights\")\n";
  return out + "\n";
}

}  // namespace

std::string artifact_report(const Artifact& a) {
  size_t nodes = 0, regions = 0, candidates = 0, compiled = 0, validated = 0;
  std::set<std::string> kernels;
  for (const auto& f : a.functions) regions += f.partition.regions.size();
  for (const auto& f : a.functions)
    for (const auto& region : f.partition.regions) nodes += region.nodes.size();
  for (const auto& r : a.regions) {
    candidates += r.plan.candidates.size();
    for (const auto& c : r.compiled) compiled += c.ok;
    for (const auto& v : r.results) validated += v.validated;
    for (const auto& s : r.selections)
      if (s.candidate >= 0) kernels.insert(r.plan.candidates[static_cast<size_t>(s.candidate)].name());
  }
  std::string out = "# agentcompile report\n\n";
  out += "Model: " + a.model.value("model_type", std::string("?")) + " (" + a.model.value("source", std::string("")) + "), " +
         a.model.value("dtype", std::string("")) + "  \nDevice: " + a.device.value("name", std::string("?")) + " (" +
         a.device.value("arch", std::string("?")) + (a.gpu_used ? ", measured" : ", no GPU: compiled only, unvalidated and unmeasured") +
         ")  \nNVRTC " + a.nvrtc_version + ", artifact key `" + a.key.substr(0, 16) + "`\n\n";
  out += "| IR compute nodes | regions | unique regions | candidates | compiled | validated | selected kernels | compile time |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  out += "| " + std::to_string(nodes) + " | " + std::to_string(regions) + " | " + std::to_string(a.regions.size()) + " | " +
         std::to_string(candidates) + " | " + std::to_string(compiled) + " | " + (a.gpu_used ? std::to_string(validated) : "—") +
         " | " + std::to_string(kernels.size()) + " | " + fmt("%.1f s", a.times.total_s) + " |\n\n";
  out += "Stages: analyze " + fmt("%.2f s", a.times.analyze_s) + ", plan " + fmt("%.2f s", a.times.plan_s) + ", generate+compile " +
         fmt("%.2f s", a.times.generate_s) + ", admit+measure " + fmt("%.2f s", a.times.admit_s) + ", emit " + fmt("%.2f s", a.times.emit_s) + ".\n\n";
  if (a.gpu_used) out += admission_breakdown(a);
  out += weights_section(a.weights);

  if (a.advisor.value("backend", "none") != "none") {
    out += "## Advice\n\n" + a.advisor.value("line", std::string()) +
           ".\n\nThe advisor only orders and annotates candidates; selection is by measured latency of validated candidates. "
           "Every exchange is in advice.json (keyed by request hash; `--advisor replay:advice.json` reproduces it).\n\n";
  }
  if (!a.ablation_table.empty()) out += "## Advisor ablation\n\n```\n" + a.ablation_table + "```\n\n";
  if (a.context_tuning.is_array() && !a.context_tuning.empty()) {
    const double slack = a.context_tuning.front().value("alternative_slack", 0.15);
    out += "## Decode layer timed as a chain\n\nEach region's candidates within " + fmt("%.0f%%", 100 * slack) +
           " of its best alone, timed in the chain of the "
           "layer's kernels (programmatic launches; one copy of the layer per model layer, each with its own weights and KV cache, "
           "sharing the activations each kernel reads from the one before, in one CUDA graph); a pick changes only "
           "where the whole layer gets faster.\n\n| bucket | layer, picks made alone | layer, after | chains timed | layer copies | changed |\n"
           "|---|---|---|---|---|---|\n";
    for (const auto& b : a.context_tuning) {
      if (b.contains("error")) {
        out += "| " + b.value("bucket", std::string()) + " | " + b.value("error", std::string()) + " | | | | |\n";
        continue;
      }
      std::string changed;
      for (const auto& c : b["changes"])
        changed += (changed.empty() ? "" : "; ") + c.value("region", std::string()) + ": `" + c.value("to", std::string()) + "`";
      out += "| " + b.value("bucket", std::string()) + " | " + fmt("%.2f us", b.value("start_us", 0.0)) + " | " +
             fmt("%.2f us", b.value("best_us", 0.0)) + " | " + std::to_string(b.value("trials", 0)) + " | " +
             std::to_string(b.value("layer_copies", 0)) + " | " +
             (changed.empty() ? "none" : changed) + " |\n";
    }
    out += "\n";
  }

  out += "## Regions\n\n";
  for (const auto& r : a.regions) {
    const auto& s = r.plan.summary;
    out += "### " + r.id + " — " + analysis::category_name(s.category) + " ×" + std::to_string(r.plan.sites.size()) + "\n\n";
    out += "ops:";
    for (const auto& op : s.op_sequence) out += " " + op;
    out += "; " + fmt("%.3g FLOP", s.flops) + ", " + fmt("%.3g bytes", s.bytes) + "\n\n";
    if (r.plan.candidates.empty()) {
      out += "No candidates: " + r.plan.unplanned_reason + "\n\n";
      continue;
    }
    out += "| id | kernel | source | compiled | validation | max rel err | median µs (per timed T or context) |\n|---|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < r.plan.candidates.size(); ++i) {
      const auto& c = r.plan.candidates[i];
      std::string validation = "unvalidated", error = "—", timing = "—";
      if (i < r.results.size()) {
        const auto& v = r.results[i];
        validation = (v.validated ? "ok" : "rejected: " + v.rejection.substr(0, 80)) + (v.reused ? " (tuning database)" : "");
        error = v.validated ? fmt("%.2e", v.max_rel_error) : "—";
        if (!v.timings.empty()) {
          timing.clear();
          for (const auto& t : v.timings) timing += (timing.empty() ? "" : ", ") + timing_text(t);
        }
      }
      if (i < r.search.measured.size() && !r.search.measured[i] && !r.results.empty()) validation = "not measured (outside search budget)";
      const bool compiled_ok = i < r.compiled.size() && r.compiled[i].ok;
      out += "| " + c.id + " | `" + c.name() + "` | " + c.source_class + (c.fallback ? " (fallback)" : "") + " | " +
             (compiled_ok ? "yes" : "no") + " | " + validation + " | " + error + " | " + timing + " |\n";
    }
    out += "\n" + region_advice(r);
    if (a.gpu_used && !r.results.empty()) {
      const tune::AdmissionTimes& t = r.admission_times;
      size_t reused = 0;
      for (const auto& v : r.results) reused += v.reused;
      out += "Admission: " + fmt("%.2f s", t.stages_s()) + " (reference " + fmt("%.2f s", t.reference_s) + ", timing " +
             fmt("%.2f s", t.timing_run_s) + ")" + (reused ? "; " + std::to_string(reused) + " candidates from the tuning database" : "") +
             ".\n\n";
    }
    for (const auto& sel : r.selections) {
      std::string kernel = "none";
      if (sel.candidate >= 0) kernel = '`' + r.plan.candidates[static_cast<size_t>(sel.candidate)].name() + '`';
      out += "Selected for " + sel.bucket + ": " + kernel + " — " + sel.reason + "\n\n";
    }
  }
  return out;
}

}  // namespace agentcompile::emit
