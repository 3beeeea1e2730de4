// metadata.json: for every region, which candidates existed, what the advisor said and what became
// of each part of it, what each candidate compiled to, whether it was measured (search budget) and
// validated (with its errors), its measured latencies, which was selected per bucket and why (with
// its rank in the measuring order), and whether the kernel is generated or a library call.
#include "emit/artifact.h"
#include "support/utf8.h"

namespace agentcompile::emit {

using json = nlohmann::json;

namespace {

json type_list(const std::vector<ir::TensorType>& types) {
  json out = json::array();
  for (const auto& type : types) out.push_back(type.to_string());
  return out;
}

json launch_json(const plan::Launch& launch) {
  auto extent = [](const plan::Extent& e) { return json{{"per_token", e.per_token}, {"fixed", e.fixed}, {"divisor", e.divisor}}; };
  return json{{"kernel", launch.kernel}, {"grid", {extent(launch.grid_x), extent(launch.grid_y), extent(launch.grid_z)}},
              {"block", launch.block_x}, {"shared_bytes", launch.shared_bytes}, {"library", launch.library},
              {"library_args", launch.library_args}};
}

json candidate_json(const CompiledRegion& region, size_t i) {
  const plan::Candidate& c = region.plan.candidates[i];
  json j{{"id", c.id}, {"name", c.name()}, {"family", c.family}, {"template", c.template_file}, {"fusion", c.fusion},
         {"params", c.params}, {"variant", c.match.variant}, {"roles", c.match.roles}, {"facts", c.match.facts},
         {"dtype", std::string(ir::dtype_name(c.match.dtype))}, {"out_dtype", std::string(ir::dtype_name(c.match.out_dtype))},
         {"score", c.score}, {"fallback", c.fallback}, {"source_class", c.source_class}, {"notes", c.notes},
         {"workspace_bytes_per_token", c.workspace_bytes_per_token}, {"workspace_bytes_fixed", c.workspace_bytes_fixed}};
  j["launches"] = json::array();
  for (const auto& launch : c.launches) j["launches"].push_back(launch_json(launch));
  if (i < region.compiled.size()) {
    const auto& compiled = region.compiled[i];
    j["compile"] = {{"ok", compiled.ok}, {"cache_hit", compiled.cache_hit}, {"seconds", compiled.seconds},
                    {"key", compiled.key}, {"log", compiled.log}};
  }
  const bool outside_budget = i < region.search.measured.size() && !region.search.measured[i] && !region.results.empty();
  if (outside_budget) {
    j["validation"] = {{"status", "not measured"}, {"reason", "not measured (outside search budget)"}};
    j["timings"] = json::array();
  } else if (i < region.results.size()) {
    const auto& r = region.results[i];
    j["validation"] = {{"status", r.validated ? "validated" : "rejected"}, {"reason", r.rejection}, {"faulted", r.faulted},
                       {"max_abs_error", r.max_abs_error}, {"max_rel_error", r.max_rel_error}, {"cases", r.cases}};
    j["source"] = r.reused ? "tuning database" : "measured";
    j["timings"] = json::array();
    for (const auto& t : r.timings) j["timings"].push_back(tune::timing_json(t));
  } else {
    j["validation"] = {{"status", "unvalidated"}, {"reason", "no GPU: compiled only"}};
    j["timings"] = json::array();
  }
  return j;
}

json summary_json(const analysis::RegionSummary& s) {
  return json{{"category", analysis::category_name(s.category)}, {"signature", s.signature_hash}, {"ops", s.op_sequence},
              {"inputs", type_list(s.inputs)}, {"outputs", type_list(s.outputs)}, {"params", type_list(s.params)},
              {"dtype", std::string(ir::dtype_name(s.dtype))}, {"accumulation", std::string(ir::dtype_name(s.accum_dtype))},
              {"reduction_axes", s.reduction_axes}, {"dominant_op", s.dominant_op}, {"access_pattern", s.access_pattern},
              {"dynamic_T", s.depends_on_T}, {"reads_cache", s.depends_on_L}, {"flops", s.flops}, {"bytes", s.bytes},
              {"intensity", s.intensity}};
}

constexpr size_t kMaxReplyChars = 2000;

// Cut between characters: a reply cut inside one would be invalid UTF-8, which no JSON may hold.
std::string truncated(const std::string& text, size_t limit) {
  return support::utf8::truncated(text, limit, "... [" + std::to_string(text.size()) + " bytes]");
}

json exchange_json(const advisor::Exchange& e) {
  return json{{"request_hash", e.request_hash}, {"ok", e.ok}, {"source", e.source}, {"attempts", e.attempts},
              {"seconds", e.seconds}, {"error", e.error}, {"reply", truncated(e.reply, kMaxReplyChars)}};
}

void verdict_parts(const advisor::Verdict& v, json* out) {
  json rejected = json::array(), ignored = json::array(), risks = json::array();
  for (const auto& r : v.rejected) rejected.push_back({{"part", r.part}, {"value", r.value}, {"kind", r.kind}, {"reason", r.reason}});
  for (const auto& g : v.ignored) ignored.push_back({{"part", g.part}, {"reason", g.reason}});
  for (const auto& r : v.risks) risks.push_back({{"candidate", r.candidate}, {"kind", r.kind}, {"note", r.note}});
  (*out)["accepted"] = {{"label", v.label.empty() ? json(nullptr) : json(v.label)}, {"priority", v.priority}, {"hints", v.hints}, {"risks", risks}};
  (*out)["rejected"] = rejected;
  (*out)["ignored"] = ignored;
  (*out)["counts"] = {{"accepted", v.accepted_count()}, {"rejected", v.rejected.size()}, {"ignored", v.ignored.size()}};
}

// What the advisor said about the region and the fate of every part of it.
json advice_json(const CompiledRegion& region) {
  const advisor::RegionAdvice& a = region.advice;
  json j{{"backend", a.backend}, {"asked", a.asked}, {"why", a.why}};
  if (a.exchange) {
    j["request_hash"] = a.exchange->request_hash;
    j["exchange"] = exchange_json(*a.exchange);
  }
  verdict_parts(a.verdict, &j);
  if (!a.verdict.label.empty()) j["label_agrees"] = a.verdict.label == analysis::category_name(region.plan.summary.category);
  j["diagnoses"] = json::array();
  for (const auto& d : a.diagnoses) {
    json dj{{"candidate", d.exchange.candidate}, {"exchange", exchange_json(d.exchange)}, {"diagnosis", d.text},
            {"used", "never: diagnostic hints are recorded, not compiled or applied"}};
    verdict_parts(d.verdict, &dj);
    j["diagnoses"].push_back(dj);
  }
  return j;
}

// The measuring order, the budget, what was measured, and where each selection ranked.
json search_json(const CompiledRegion& region) {
  const tune::SearchRecord& s = region.search;
  auto id = [&](int i) { return region.plan.candidates[static_cast<size_t>(i)].id; };
  json order = json::array(), measured = json::array();
  for (int i : s.order) {
    order.push_back(id(i));
    if (static_cast<size_t>(i) < s.measured.size() && s.measured[static_cast<size_t>(i)]) measured.push_back(id(i));
  }
  json buckets = json::array();
  for (const auto& b : s.buckets) {
    json bj{{"bucket", b.bucket}, {"rank", b.rank > 0 ? json(b.rank) : json(nullptr)}};
    if (b.regret) bj["regret"] = *b.regret;
    else bj["regret"] = "not measured";
    buckets.push_back(bj);
  }
  return json{{"order", order}, {"order_source", s.order_source}, {"budget", s.budget > 0 ? json(s.budget) : json("all")},
              {"measured", measured}, {"spent", s.spent}, {"exhaustive", s.exhaustive}, {"note", s.note}, {"buckets", buckets}};
}

}  // namespace

json artifact_metadata(const Artifact& a) {
  json meta;
  meta["format"] = kArtifactFormat;
  meta["key"] = a.key;
  meta["model"] = a.model;
  meta["device"] = a.device;
  meta["toolkit"] = {{"nvrtc", a.nvrtc_version}};
  meta["options"] = a.options;
  meta["gpu_used"] = a.gpu_used;
  meta["advisor"] = a.advisor;
  if (!a.context_tuning.is_null()) meta["context_tuning"] = a.context_tuning;
  meta["compile_seconds"] = {{"analyze", a.times.analyze_s}, {"plan", a.times.plan_s}, {"generate", a.times.generate_s},
                             {"admit", a.times.admit_s}, {"emit", a.times.emit_s}, {"total", a.times.total_s}};
  if (a.gpu_used) meta["compile_seconds"]["admission"] = tune::to_json(a.admission_times);
  if (!a.tuning.is_null()) meta["tuning"] = a.tuning;
  if (!a.weights.is_null()) meta["weights"] = a.weights;
  meta["functions"] = json::object();
  for (const auto& f : a.functions) {
    json fj;
    fj["buckets"] = json::array();
    for (const auto& b : f.buckets) {
      json bj{{"name", b.name}, {"min_tokens", b.min_tokens}, {"max_tokens", b.max_tokens}, {"timed_at", b.timing_tokens}};
      if (b.bounds_context()) {
        bj["min_context"] = b.min_context;
        bj["max_context"] = b.max_context;
        bj["context_timed_at"] = b.timing_context;
      }
      fj["buckets"].push_back(bj);
    }
    fj["sites"] = json::array();
    for (size_t r = 0; r < f.partition.regions.size(); ++r) {
      const auto& region = f.partition.regions[r];
      fj["sites"].push_back({{"site", r}, {"region", a.regions[static_cast<size_t>(f.unique_of_region[r])].id},
                             {"nodes", region.nodes}, {"inputs", region.inputs}, {"outputs", region.outputs},
                             {"params", region.params}, {"states", region.states}});
    }
    meta["functions"][f.name] = fj;
  }
  if (!a.runtime_kernels.empty()) {
    meta["runtime_kernels"] = json::object();
    for (const RuntimeKernel& k : a.runtime_kernels)
      meta["runtime_kernels"][k.spec.role] = {{"kernel", k.spec.kernel}, {"cubin", k.cubin_path()}, {"source", k.spec.source},
                                              {"compile", {{"cache_hit", k.compiled.cache_hit}, {"seconds", k.compiled.seconds}, {"key", k.compiled.key}}}};
  }
  meta["regions"] = json::array();
  for (const auto& region : a.regions) {
    json rj{{"id", region.id}, {"function", region.plan.function}, {"sites", region.plan.sites.size()},
            {"label", analysis::category_name(region.plan.summary.category)}, {"summary", summary_json(region.plan.summary)},
            {"families_matched", region.plan.families_matched}, {"enumerated", region.plan.enumerated},
            {"unplanned_reason", region.plan.unplanned_reason}, {"advice", advice_json(region)}, {"search", search_json(region)}};
    if (a.gpu_used) rj["admission_seconds"] = tune::to_json(region.admission_times);
    rj["candidates"] = json::array();
    for (size_t i = 0; i < region.plan.candidates.size(); ++i) rj["candidates"].push_back(candidate_json(region, i));
    rj["selection"] = json::array();
    for (const auto& s : region.selections) {
      json sj{{"bucket", s.bucket}, {"reason", s.reason}, {"measured", s.measured}};
      if (s.candidate >= 0) {
        const auto& c = region.plan.candidates[static_cast<size_t>(s.candidate)];
        sj["candidate"] = c.id;
        sj["kernel"] = c.name();
        sj["source_class"] = c.source_class;
      } else {
        sj["candidate"] = nullptr;
      }
      rj["selection"].push_back(sj);
    }
    meta["regions"].push_back(rj);
  }
  return meta;
}

}  // namespace agentcompile::emit
