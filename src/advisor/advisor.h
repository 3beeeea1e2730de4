// The advisor step (DESIGN.md, "advise"): for each region in scope, one request to the configured
// backend (through the cache), the reply judged by the validator, and everything recorded: the
// exchange for advice.json and replay, the verdict for metadata.json, counts for the report.
//
// Order of a question: scope -> time budget -> reachable backend -> cache -> backend -> cache store.
// Every string that leaves here (replies, errors, log lines) has the API key redacted. Without a
// backend ("none") nothing is asked and every region records why. A reply longer than
// kMaxReplyBytes is a failed exchange (no advice is that long), which bounds advice.json and the
// cache. A backend that cannot be reached at all is asked once: the regions after it keep the
// heuristic order, and a progress line says so; so does one line per stretch of a question that
// goes unanswered, so a stalled advisor is visible while the budget runs down.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor/advice.h"
#include "advisor/backend.h"
#include "advisor/cache.h"
#include "advisor/request.h"
#include "agentcompile/compiler.h"

namespace agentcompile::advisor {

using LogFn = std::function<void(const std::string&)>;

// The longest advice reply taken (the schema's answer for the largest region is a few KiB).
inline constexpr size_t kMaxReplyBytes = size_t{64} << 10;
// The longest timeout or advice budget taken, in seconds (a week).
inline constexpr double kMaxAdvisorSeconds = 7 * 24 * 3600;

class Advisor {
 public:
  // `default_cache` is used when options.cache_dir is empty; `device` goes into every request. `log`
  // receives a line per exchange (verbose), `progress` the lines always shown (a stalled question, an
  // unreachable backend).
  static Expected<std::unique_ptr<Advisor>> create(const AdvisorOptions& options, const std::filesystem::path& default_cache,
                                                   const nlohmann::json& device, LogFn log = {}, LogFn progress = {});

  bool enabled() const { return backend_ != nullptr; }

  // Advice for one region: asked (or not, and why), validated part by part.
  RegionAdvice advise(const std::string& region_id, const plan::RegionPlan& plan);

  // Diagnostic hints for a candidate NVRTC failed to compile: recorded, never used as code.
  Diagnosis diagnose(const std::string& region_id, const plan::RegionPlan& plan, const plan::Candidate& candidate,
                     const std::string& log);

  // advice.json: the settings and every exchange, keyed by request hash (what replay:FILE reads).
  nlohmann::json record() const;

  // The settings as recorded in metadata.json (backend identity, model, scope; never a key).
  nlohmann::json settings() const;

 private:
  Advisor() = default;
  Exchange exchange(const Request& request);
  Reply ask_backend(const Request& request);
  bool budget_spent();

  AdvisorOptions options_;
  std::unique_ptr<Backend> backend_;
  Secret key_;  // every known key, for redaction
  AdviceCache cache_;
  nlohmann::json device_;
  LogFn log_;
  LogFn progress_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // set at the first question
  std::string unreachable_;  // why the backend cannot be reached, once an exchange found out
  nlohmann::json exchanges_ = nlohmann::json::object();
};

// Totals over regions.
AdviceCounts count_advice(const std::vector<const RegionAdvice*>& regions);
nlohmann::json counts_json(const AdviceCounts& counts);
// "advice (openai:...): 12 regions asked, 11 answered, 1 failed; parts 40 accepted, 3 rejected, 1 ignored"
std::string counts_line(const std::string& backend, const AdviceCounts& counts);

}  // namespace agentcompile::advisor
