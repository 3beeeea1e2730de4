// The advisor step: scope, budget, cache, backend, validation, records (see advisor.h).
#include "advisor/advisor.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "advisor/validate.h"
#include "support/utf8.h"

namespace agentcompile::advisor {

using json = nlohmann::json;

namespace {

constexpr size_t kLogReplyChars = 600;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string short_text(const std::string& text, size_t limit) { return support::utf8::truncated(text, limit); }

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f s", seconds);
  return text;
}

// While one question is outstanding, a progress line every `every` seconds it stays unanswered.
class StallNotice {
 public:
  StallNotice(const LogFn& progress, const std::string& what, double every_s, std::chrono::steady_clock::time_point deadline) {
    if (!progress) return;
    thread_ = std::thread([this, progress, what, every_s, deadline] {
      const auto start = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mutex_);
      while (!answered_.wait_for(lock, std::chrono::duration<double>(every_s), [this] { return done_; })) {
        const double left = std::max(0.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
        progress("advisor: still waiting for " + what + " (" + seconds_text(seconds_since(start)) + " so far; " + seconds_text(left) +
                 " of the advice budget left)");
      }
    });
  }
  StallNotice(const StallNotice&) = delete;
  StallNotice& operator=(const StallNotice&) = delete;
  ~StallNotice() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    answered_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable answered_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

Expected<std::unique_ptr<Advisor>> Advisor::create(const AdvisorOptions& options, const std::filesystem::path& default_cache,
                                                   const json& device, LogFn log, LogFn progress) {
  if (options.scope != "auto" && options.scope != "all")
    return error(ErrorCode::kInvalidArgument, "--advisor-scope must be auto or all, not '" + options.scope + "'");
  // Seconds become deadlines and curl's millisecond timeouts: NaN, infinity or 1e300 would overflow
  // them (and CLI11's range checks let NaN through).
  for (const auto& [flag, value, positive, most] : {std::tuple{"--advisor-timeout", options.request_timeout_s, true, kMaxAdvisorSeconds},
                                                    {"--advisor-connect-timeout", options.connect_timeout_s, true, kMaxAdvisorSeconds},
                                                    {"--advisor-budget", options.budget_s, false, kMaxAdvisorSeconds}})
    if (!std::isfinite(value) || value < 0 || (positive && value == 0) || value > most) {
      char text[64];
      std::snprintf(text, sizeof(text), " and at most %.0f seconds, not %g", most, value);
      return error(ErrorCode::kInvalidArgument, std::string(flag) + " must be " + (positive ? "more than 0" : "0 or more") + text);
    }
  // The settings are recorded (artifact key, metadata.json, the cache): they must be text.
  for (const auto& [flag, value] : {std::pair{"--advisor", &options.backend}, {"--advisor-url", &options.url}, {"--advisor-model", &options.model}})
    if (!support::utf8::is_valid(*value))
      return error(ErrorCode::kInvalidArgument, std::string(flag) + " is not valid UTF-8: '" + support::utf8::repaired(*value) + "'");
  std::unique_ptr<Advisor> advisor(new Advisor());
  advisor->options_ = options;
  advisor->device_ = device;
  advisor->log_ = std::move(log);
  advisor->progress_ = std::move(progress);
  AC_ASSIGN_OR_RETURN(advisor->backend_, make_backend(options));
  advisor->key_ = known_keys(options);
  if (advisor->backend_ && advisor->backend_->kind() != "replay")
    advisor->cache_ = AdviceCache(options.cache_dir.empty() ? default_cache : options.cache_dir, advisor->backend_->identity());
  return advisor;
}

bool Advisor::budget_spent() {
  const auto now = std::chrono::steady_clock::now();
  if (!deadline_) deadline_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(options_.budget_s));
  return now >= *deadline_;
}

Exchange Advisor::exchange(const Request& request) {
  const auto start = std::chrono::steady_clock::now();
  Exchange e;
  e.kind = request.kind;
  e.region = request.region;
  e.candidate = request.candidate;
  e.request_hash = request.hash;
  e.backend = backend_->identity();
  // A reply (or an error quoting one) is outside text: invalid UTF-8 in it is replaced here, where it
  // enters the compiler, so the validator, the cache, advice.json and metadata.json all see one text.
  bool unreachable = false;
  if (auto cached = cache_.load(request)) {
    e.ok = true;
    e.reply = key_.redact(*cached);
    e.source = "cache";
  } else {
    Reply reply = ask_backend(request);
    e.ok = reply.ok;
    e.reply = key_.redact(support::utf8::repaired(reply.text));
    e.error = key_.redact(support::utf8::repaired(reply.error));
    e.attempts = reply.attempts;
    e.source = backend_->kind() == "replay" ? "replay" : "backend";
    cache_.store(request, e);
    unreachable = reply.unreachable;
    if (unreachable) {
      unreachable_ = e.error;
      if (progress_)
        progress_(key_.redact("advisor: " + backend_->identity() + " is unreachable (" + short_text(e.error, 300) +
                              "): the remaining regions keep the heuristic order"));
    }
  }
  e.seconds = seconds_since(start);
  exchanges_[request.hash] = {{"kind", e.kind}, {"region", e.region}, {"candidate", e.candidate}, {"ok", e.ok},
                              {"reply", e.reply}, {"error", e.error}, {"attempts", e.attempts}, {"seconds", e.seconds},
                              {"source", e.source}, {"request", request.body}};
  if (unreachable) exchanges_[request.hash]["unreachable"] = true;  // so a replay stops asking at the same region
  return e;
}

Reply Advisor::ask_backend(const Request& request) {
  // A line every quarter of the per-attempt timeout (between 1 and 15 s) a question stays unanswered.
  const double every_s = std::clamp(options_.request_timeout_s / 4, 1.0, 15.0);
  Reply reply;
  {
    StallNotice notice(progress_, key_.redact(backend_->identity()) + " on " + request.kind + " " + request.region, every_s, *deadline_);
    reply = backend_->ask(request, *deadline_);
  }
  if (reply.ok && reply.text.size() > kMaxReplyBytes) {
    reply.ok = false;
    reply.error = "the reply is " + std::to_string(reply.text.size()) + " bytes, which exceeds the limit of " +
                  std::to_string(kMaxReplyBytes >> 10) + " KiB for advice";
    reply.text.clear();
  }
  return reply;
}

RegionAdvice Advisor::advise(const std::string& region_id, const plan::RegionPlan& plan) {
  RegionAdvice advice;
  if (!backend_) {
    advice.why = "no advisor (heuristic order)";
    return advice;
  }
  advice.backend = backend_->identity();
  const ScopeDecision scope = scope_decision(plan, options_.scope);
  advice.why = scope.why;
  if (!scope.ask) return advice;
  if (budget_spent()) {
    char budget[32];
    std::snprintf(budget, sizeof(budget), "%g", options_.budget_s);
    advice.why = std::string("not asked: the advice time budget (") + budget + " s) is spent";
    return advice;
  }
  if (!unreachable_.empty()) {
    advice.why = "not asked: the advisor is unreachable (" + short_text(unreachable_, 200) + "); heuristic order";
    return advice;
  }
  advice.asked = true;
  const Request request = advice_request(region_id, plan, device_);
  advice.exchange = exchange(request);
  if (advice.exchange->ok) advice.verdict = validate_advice(request, advice.exchange->reply);
  if (log_) {
    const Exchange& e = *advice.exchange;
    std::string line = "  advisor " + region_id + " (" + request.hash.substr(0, 12) + ", " + e.source + "): ";
    if (!e.ok) {
      line += "failed after " + std::to_string(e.attempts) + " attempt(s): " + short_text(e.error, 300);
    } else {
      line += std::to_string(advice.verdict.accepted_count()) + " accepted, " + std::to_string(advice.verdict.rejected.size()) +
              " rejected, " + std::to_string(advice.verdict.ignored.size()) + " ignored; reply " + short_text(trimmed(e.reply), kLogReplyChars);
      for (const auto& r : advice.verdict.rejected) line += "\n    rejected " + r.part + " = " + r.value + ": " + r.reason;
    }
    log_(key_.redact(line));
  }
  return advice;
}

Diagnosis Advisor::diagnose(const std::string& region_id, const plan::RegionPlan& plan, const plan::Candidate& candidate,
                            const std::string& log) {
  Diagnosis d;
  if (!backend_ || budget_spent() || !unreachable_.empty()) return d;
  const Request request = diagnosis_request(region_id, plan, candidate, log, device_);
  d.exchange = exchange(request);
  if (d.exchange.ok) {
    d.verdict = judge_diagnosis(request, d.exchange.reply, &d.text);
    d.text = key_.redact(d.text);
  }
  if (log_) log_(key_.redact("  advisor diagnosis " + region_id + "/" + candidate.id + ": " + (d.exchange.ok ? short_text(d.text, 300) : d.exchange.error)));
  return d;
}

json Advisor::record() const {
  return json{{"format", "agentcompile-advice/1"}, {"backend", backend_ ? backend_->identity() : "none"}, {"scope", options_.scope},
              {"model", options_.model}, {"exchanges", exchanges_}};
}

json Advisor::settings() const {
  return json{{"backend", backend_ ? backend_->identity() : "none"}, {"kind", backend_ ? backend_->kind() : "none"},
              {"model", options_.model}, {"scope", options_.scope}, {"cache", cache_.enabled()},
              {"budget_s", options_.budget_s}, {"request_timeout_s", options_.request_timeout_s}, {"retries", options_.retries}};
}

AdviceCounts count_advice(const std::vector<const RegionAdvice*>& regions) {
  AdviceCounts c;
  for (const RegionAdvice* r : regions) {
    ++c.regions;
    if (!r->asked) {
      ++c.not_asked;
    } else if (r->exchange && r->exchange->ok) {
      ++c.asked, ++c.answered;
      c.from_cache += r->exchange->source == "cache";
    } else {
      ++c.asked, ++c.failed;
    }
    c.accepted += r->verdict.accepted_count();
    c.rejected += r->verdict.rejected.size();
    c.ignored += r->verdict.ignored.size();
    for (const auto& rejection : r->verdict.rejected) ++c.rejections_by_kind[rejection.kind];
    for (const auto& d : r->diagnoses) {
      ++c.diagnoses;
      c.ignored += d.verdict.ignored.size();  // recorded, never used
      c.rejected += d.verdict.rejected.size();
      for (const auto& rejection : d.verdict.rejected) ++c.rejections_by_kind[rejection.kind];
    }
  }
  return c;
}

json counts_json(const AdviceCounts& c) {
  return json{{"regions", c.regions}, {"asked", c.asked}, {"not_asked", c.not_asked}, {"answered", c.answered},
              {"failed", c.failed}, {"from_cache", c.from_cache}, {"accepted", c.accepted}, {"rejected", c.rejected},
              {"ignored", c.ignored}, {"diagnoses", c.diagnoses}, {"rejections_by_kind", c.rejections_by_kind}};
}

std::string counts_line(const std::string& backend, const AdviceCounts& c) {
  std::string line = "advice (" + backend + "): " + std::to_string(c.asked) + " of " + std::to_string(c.regions) + " regions asked, " +
                     std::to_string(c.answered) + " answered (" + std::to_string(c.from_cache) + " from cache), " +
                     std::to_string(c.failed) + " failed; parts: " + std::to_string(c.accepted) + " accepted, " +
                     std::to_string(c.rejected) + " rejected, " + std::to_string(c.ignored) + " ignored";
  if (!c.rejections_by_kind.empty()) {
    line += " (rejected:";
    for (const auto& [kind, n] : c.rejections_by_kind) line += " " + kind + " " + std::to_string(n);
    line += ")";
  }
  if (c.diagnoses) line += "; " + std::to_string(c.diagnoses) + " diagnoses recorded";
  return line;
}

}  // namespace agentcompile::advisor
