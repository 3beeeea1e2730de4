// Advice requests: a compact, deterministic JSON description of one region and its candidate
// space, the JSON schema an answer must match (generated from that space), and the scope rule that
// decides which regions are worth a question.
//
// The request is canonical (nlohmann::json's sorted keys, compact dump), so its SHA-256 names the
// exchange in the cache and in advice.json: the same region, candidates and device give the same
// hash on every machine. The schema enumerates every allowed value (candidate ids, labels, hint
// values), so a backend with constrained decoding cannot even write advice outside the space; the
// validator checks again, since not every backend constrains.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/candidate.h"
#include "plan/device_profile.h"
#include "plan/planner.h"

namespace agentcompile::advisor {

struct Request {
  std::string kind;          // "advice" | "diagnosis"
  std::string region;        // "decode.r6"
  std::string candidate;     // diagnosis only
  nlohmann::json body;       // what the advisor is told
  nlohmann::json schema;     // what its answer must match
  std::string canonical;     // body.dump(): the exact bytes sent and hashed
  std::string hash;          // SHA-256 of canonical
};

// The risk kinds an advisor may annotate a candidate with.
const std::vector<std::string>& risk_kinds();

// The device as the advisor sees it (name, arch, SMs, L2, shared memory).
nlohmann::json device_json(const plan::DeviceProfile& device);

// The advice request for one region ("decode.r6") of the plan.
Request advice_request(const std::string& region_id, const plan::RegionPlan& plan, const nlohmann::json& device);

// A request for diagnostic hints after `candidate` failed to compile with NVRTC `log`.
Request diagnosis_request(const std::string& region_id, const plan::RegionPlan& plan, const plan::Candidate& candidate,
                          const std::string& log, const nlohmann::json& device);

// The system prompt (instructions) for a request kind.
const std::string& instructions(const std::string& kind);

// The whole prompt as one text (for command backends): instructions, request, schema.
std::string prompt_text(const Request& request);

// Whether the advisor should be asked about a region: "all" asks wherever there are candidates;
// "auto" only where semantics help (mixed regions, complex GEMM/GEMV epilogues, reduction-pointwise
// regions) and there is a choice to make. `why` says which rule decided.
struct ScopeDecision {
  bool ask = false;
  std::string why;
};
ScopeDecision scope_decision(const plan::RegionPlan& plan, const std::string& scope);

}  // namespace agentcompile::advisor
