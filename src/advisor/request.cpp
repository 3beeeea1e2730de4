// Builds advice and diagnosis requests, their answer schemas and the prompt text; decides scope.
#include "advisor/request.h"

#include <algorithm>
#include <set>

#include "analysis/summary.h"
#include "support/sha256.h"
#include "support/utf8.h"

namespace agentcompile::advisor {

using json = nlohmann::json;

namespace {

constexpr size_t kMaxLogChars = 4000;

json types(const std::vector<ir::TensorType>& list) {
  json out = json::array();
  for (const auto& t : list) out.push_back(t.to_string());
  return out;
}

json region_json(const std::string& region_id, const plan::RegionPlan& plan) {
  const auto& s = plan.summary;
  return json{{"id", region_id}, {"function", plan.function}, {"sites", plan.sites.size()},
              {"category", analysis::category_name(s.category)}, {"ops", s.op_sequence}, {"inputs", types(s.inputs)},
              {"outputs", types(s.outputs)}, {"weights", types(s.params)}, {"dtype", std::string(ir::dtype_name(s.dtype))},
              {"accumulation", std::string(ir::dtype_name(s.accum_dtype))}, {"reduction_axes", s.reduction_axes},
              {"dominant_op", s.dominant_op}, {"access_pattern", s.access_pattern}, {"dynamic_T", s.depends_on_T},
              {"reads_cache", s.depends_on_L}, {"flops", s.flops}, {"bytes", s.bytes}, {"intensity", s.intensity}};
}

json candidate_json(const plan::Candidate& c) {
  return json{{"id", c.id}, {"family", c.family}, {"variant", c.match.variant}, {"fusion", c.fusion}, {"params", c.params},
              {"fallback", c.fallback}, {"source", c.source_class}, {"launches", c.launches.size()}, {"notes", c.notes}};
}

// Parameter -> every value some candidate has (the only hints that can be accepted).
std::map<std::string, std::set<int64_t>> hint_space(const std::vector<plan::Candidate>& candidates) {
  std::map<std::string, std::set<int64_t>> space;
  for (const auto& c : candidates)
    for (const auto& [name, value] : c.params)
      if (name != "fallback") space[name].insert(value);
  return space;
}

json string_enum(const std::vector<std::string>& values) { return json{{"type", "string"}, {"enum", values}}; }

Request finish(Request request) {
  request.canonical = request.body.dump();
  request.hash = support::sha256_hex(request.canonical);
  return request;
}

}  // namespace

const std::vector<std::string>& risk_kinds() {
  static const std::vector<std::string> kinds = {"numerics", "performance", "resources", "correctness"};
  return kinds;
}

json device_json(const plan::DeviceProfile& d) {
  return json{{"name", d.name}, {"arch", d.arch}, {"multiprocessors", d.multiprocessors}, {"l2_bytes", d.l2_bytes},
              {"shared_per_block", d.shared_per_block_optin}, {"memory_bandwidth_gbs", d.memory_bandwidth_gbs}};
}

Request advice_request(const std::string& region_id, const plan::RegionPlan& plan, const json& device) {
  Request r;
  r.kind = "advice";
  r.region = region_id;
  std::vector<std::string> ids;
  json candidates = json::array();
  for (const auto& c : plan.candidates) {
    ids.push_back(c.id);
    candidates.push_back(candidate_json(c));
  }
  json hints = json::object(), hint_schema = json::object();
  std::vector<std::string> hint_names;
  for (const auto& [name, values] : hint_space(plan.candidates)) {
    hints[name] = values;
    json allowed = json(values);
    allowed.push_back(nullptr);  // null: no hint for this parameter
    hint_schema[name] = {{"type", {"integer", "null"}}, {"enum", allowed}};
    hint_names.push_back(name);
  }
  r.body = {{"format", "agentcompile-advice-request/1"}, {"kind", "advice"}, {"region", region_json(region_id, plan)},
            {"device", device}, {"candidates", candidates},
            {"allowed", {{"labels", analysis::all_category_names()}, {"candidates", ids}, {"hints", hints}, {"risk_kinds", risk_kinds()}}}};
  // Strict-mode friendly (OpenAI structured outputs): every property required, nothing additional;
  // "no hint" is null. Array lengths are checked by the validator, not the schema.
  r.schema = {{"type", "object"}, {"additionalProperties", false},
              {"required", {"region", "label", "priority", "hints", "risks"}},
              {"properties",
               {{"region", string_enum({region_id})},
                {"label", string_enum(analysis::all_category_names())},
                {"priority", {{"type", "array"}, {"items", string_enum(ids)}}},
                {"hints", {{"type", "object"}, {"additionalProperties", false}, {"required", hint_names}, {"properties", hint_schema}}},
                {"risks",
                 {{"type", "array"},
                  {"items",
                   {{"type", "object"}, {"additionalProperties", false}, {"required", {"candidate", "kind", "note"}},
                    {"properties", {{"candidate", string_enum(ids)}, {"kind", string_enum(risk_kinds())}, {"note", {{"type", "string"}}}}}}}}}}}};
  return finish(std::move(r));
}

Request diagnosis_request(const std::string& region_id, const plan::RegionPlan& plan, const plan::Candidate& candidate,
                          const std::string& log, const json& device) {
  Request r;
  r.kind = "diagnosis";
  r.region = region_id;
  r.candidate = candidate.id;
  std::vector<std::string> params;
  for (const auto& [name, value] : candidate.params) params.push_back(name);
  r.body = {{"format", "agentcompile-diagnosis-request/1"}, {"kind", "diagnosis"}, {"region", region_json(region_id, plan)},
            {"device", device}, {"candidate", candidate_json(candidate)},
            {"nvrtc_log", support::utf8::truncated(support::utf8::repaired(log), kMaxLogChars, "\n[truncated]")}};
  r.schema = {{"type", "object"}, {"additionalProperties", false},
              {"required", {"region", "candidate", "diagnosis", "suspect_parameters"}},
              {"properties",
               {{"region", string_enum({region_id})},
                {"candidate", string_enum({candidate.id})},
                {"diagnosis", {{"type", "string"}}},
                {"suspect_parameters", {{"type", "array"}, {"items", string_enum(params)}}}}}};
  return finish(std::move(r));
}

const std::string& instructions(const std::string& kind) {
  static const std::string advice =
      "You advise agentcompile, a compiler that generates CUDA kernels for transformer inference. For one region of "
      "the model you get its summary (ops, shapes, dtypes, FLOPs, bytes, access pattern) and the compiler's own "
      "candidate kernels (template family, parameters, notes). The compiler measures candidates in the order you "
      "give and selects the fastest validated one by measured latency; your advice only orders and annotates.\n"
      "Answer with one JSON object:\n"
      "- region: the region id you were given;\n"
      "- label: the semantic label of the region, one of allowed.labels;\n"
      "- priority: candidate ids from allowed.candidates, the one most likely fastest on this device first;\n"
      "- hints: for each parameter in allowed.hints, the value you expect to be fastest, or null;\n"
      "- risks: candidates with a concern (kind: one of allowed.risk_kinds) and a short note.\n"
      "Use only ids, labels and values listed under allowed; anything else is rejected.";
  static const std::string diagnosis =
      "You help agentcompile diagnose a generated CUDA kernel that NVRTC failed to compile. You get the region "
      "summary, the candidate (template family and parameters) and the compiler log. Answer with one JSON object: "
      "region and candidate (the ids you were given), diagnosis (a short explanation of the likely cause) and "
      "suspect_parameters (parameter names of the candidate that likely cause it). Your answer is recorded for the "
      "compiler's developers; it is never compiled or applied.";
  return kind == "diagnosis" ? diagnosis : advice;
}

std::string prompt_text(const Request& request) {
  return instructions(request.kind) + "\n\nRequest:\n" + request.canonical + "\n\nJSON schema of the answer:\n" +
         request.schema.dump() + "\n";
}

ScopeDecision scope_decision(const plan::RegionPlan& plan, const std::string& scope) {
  using analysis::Category;
  const auto& s = plan.summary;
  if (plan.candidates.empty()) return {false, "no candidates"};
  if (scope == "all") return {true, "scope all"};
  if (plan.candidates.size() < 2) return {false, "scope auto: a single candidate, nothing to order"};
  std::set<std::string> kinds(s.op_sequence.begin(), s.op_sequence.end());
  auto list = [&](const std::set<std::string>& ops) {
    std::string out;
    for (const auto& op : ops) out += (out.empty() ? "" : ", ") + op;
    return out;
  };
  switch (s.category) {
    case Category::kReductionPointwise:
      return {true, "scope auto: reduction-pointwise region (" + list(kinds) + ")"};
    case Category::kGemmEpilogue:
    case Category::kGemvEpilogue: {
      // A residual add alone is a simple epilogue; activations, gating products and chains are not.
      std::set<std::string> epilogue;
      for (const auto& op : kinds)
        if (op != "linear" && op != "matmul" && op != "cast") epilogue.insert(op);
      if (epilogue.size() > 1 || (epilogue.size() == 1 && !epilogue.count("add")))
        return {true, "scope auto: complex matmul epilogue (" + list(epilogue) + ")"};
      return {false, "scope auto: matmul with " + (epilogue.empty() ? std::string("no epilogue") : "a simple epilogue (" + list(epilogue) + ")")};
    }
    case Category::kRmsNorm:
    case Category::kRopeKvAppend:
    case Category::kSoftmax:
    case Category::kElementwise:
      if (kinds.size() > 1) return {true, "scope auto: mixed region (" + list(kinds) + ")"};
      return {false, "scope auto: single-op region (" + list(kinds) + ")"};
    default:
      return {false, std::string("scope auto: ") + analysis::category_name(s.category) + " regions are ordered by heuristics"};
  }
}

}  // namespace agentcompile::advisor
