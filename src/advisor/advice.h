// Advice as data: what one exchange with an advisor brought back for one region, and what the
// compiler made of each part of it (DESIGN.md, "Contracts: Advice").
//
// Every part of a reply ends up in exactly one bucket: accepted (inside the candidate space),
// rejected (outside it, with the reason) or ignored (well-formed but not part of what the compiler
// uses: unknown fields, duplicates, diagnostic hints). A failed exchange (no reply) has no parts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agentcompile::advisor {

// One request and its reply (or the reason there was none), as recorded in advice.json and the cache.
struct Exchange {
  std::string kind;          // "advice" | "diagnosis"
  std::string region;        // "decode.r6"
  std::string candidate;     // diagnosis only: the candidate that failed to compile
  std::string request_hash;  // SHA-256 of the canonical request
  std::string backend;       // "openai:gpt-4o", "anthropic:...", "command:./advise.sh", "replay:<file>"
  bool ok = false;           // a reply arrived (its content is judged separately)
  std::string reply;         // the advice text the model wrote, keys redacted
  std::string error;         // why no reply: timeout, HTTP status, crash, ...
  int attempts = 0;
  double seconds = 0;
  std::string source;        // "backend" | "cache" | "replay"
};

struct Rejection {
  std::string part;    // "label", "priority[2]", "hints.split", "risks[0].candidate", "reply"
  std::string value;   // what the advisor said (truncated)
  std::string kind;    // not_json | not_object | wrong_region | unknown_label | unknown_candidate |
                       // unknown_parameter | value_outside_space | unknown_risk_kind | malformed
  std::string reason;  // why it is outside the space, in words
};

struct Ignored {
  std::string part;
  std::string reason;
};

struct Risk {
  std::string candidate;
  std::string kind;  // numerics | performance | resources | correctness
  std::string note;
};

// The accepted advice of one region, and the fate of everything else.
struct Verdict {
  std::string label;                     // "" when none was accepted
  std::vector<std::string> priority;     // candidate ids, most promising first
  std::map<std::string, int64_t> hints;  // parameter -> value some candidate has
  std::vector<Risk> risks;
  std::vector<Rejection> rejected;
  std::vector<Ignored> ignored;

  size_t accepted_count() const { return (label.empty() ? 0 : 1) + priority.size() + hints.size() + risks.size(); }
};

// A diagnosis asked for after a candidate failed to compile: recorded, never used as code.
struct Diagnosis {
  Exchange exchange;
  std::string text;  // the advisor's diagnosis (truncated), or empty
  Verdict verdict;   // a readable reply is one ignored part; an unreadable one is rejected
};

// Everything the advisor step recorded for one region (metadata.json "advice").
struct RegionAdvice {
  std::string backend = "none";
  bool asked = false;
  std::string why;                  // why the advisor was asked, or why not
  std::optional<Exchange> exchange;
  Verdict verdict;
  std::vector<Diagnosis> diagnoses;
};

// Totals over a compile (metadata.json "advisor", the CLI's advice line).
struct AdviceCounts {
  size_t regions = 0, asked = 0, not_asked = 0, answered = 0, failed = 0, from_cache = 0;
  size_t accepted = 0, rejected = 0, ignored = 0, diagnoses = 0;
  std::map<std::string, size_t> rejections_by_kind;
};

}  // namespace agentcompile::advisor
