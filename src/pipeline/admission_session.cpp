// The worker, the tuning database and the chain timings of a compile's admission (see
// admission_session.h).
#include "pipeline/admission_session.h"

#include <chrono>

#include "analysis/extract.h"
#include "pipeline/stages.h"
#include "support/sha256.h"

namespace agentcompile::pipeline {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

const std::vector<tune::Distribution> kDistributions = {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed};

// The chain's key in the database: every step's region, alternatives, size and links, the start and
// the search's options.
json chain_key(const std::vector<std::string>& region_keys,
               const std::vector<std::vector<std::string>>& fingerprints, const std::vector<tune::ChainStep>& steps,
               const std::vector<int>& start, const tune::SequenceOptions& options) {
  json key_steps = json::array();
  for (const auto& step : steps) {
    json alternatives = json::array(), links = json::array();
    for (int a : step.alternatives) alternatives.push_back(fingerprints[step.region][static_cast<size_t>(a)]);
    for (const auto& l : step.links) links.push_back({l.input, l.from_step, l.output, l.byte_offset, l.previous_copy});
    key_steps.push_back({{"region", region_keys[step.region]}, {"alternatives", alternatives},
                         {"at", {step.bindings.T, step.bindings.L, step.bindings.pos}}, {"links", links}});
  }
  return {{"kind", "chain"}, {"steps", key_steps}, {"start", start},
          {"options", {options.repeats, options.replays, options.min_gain, options.passes}}};
}

}  // namespace

json region_tuning_context(const AdmissionContext& context, const analysis::RegionSummary& summary) {
  return {{"format", tune::kTuningDbFormat}, {"admission", tune::kAdmissionVersion}, {"device", context.device}, {"toolkit", context.toolkit},
          {"compiler", context.compiler}, {"region", summary.signature}};
}

double admission_eta_s(size_t done, size_t reused, size_t total, double elapsed_s) {
  const size_t measured = done > reused ? done - reused : 0;
  if (measured == 0) return -1;
  return elapsed_s / static_cast<double>(measured) * static_cast<double>(total > done ? total - done : 0);
}

Expected<std::unique_ptr<AdmissionSession>> AdmissionSession::open(const ir::Module& module, const Plan& plan, const Generated& generated,
                                                                  const CompileOptions& options, AdmissionContext context) {
  std::unique_ptr<AdmissionSession> session(new AdmissionSession(std::move(context), options.retune));
  const size_t n = plan.regions.size();
  const double margin = options.search.ablate_advisor ? 0.0 : options.early_stop_margin;
  session->modules_.resize(n);
  session->table_.resize(n);
  session->fingerprints_.resize(n);
  session->region_keys_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const PlannedRegion& region = plan.regions[r];
    tune::RegionWork& work = session->table_[r];
    work.id = region.id;
    work.candidates = &region.plan.candidates;
    work.compiled = &generated.compiled[r];
    if (!admits(region)) continue;
    const auto f = std::find_if(plan.functions.begin(), plan.functions.end(),
                                [&](const emit::CompiledFunction& fn) { return fn.name == region.plan.function; });
    const ir::Function& function = *module.find_function(region.plan.function);
    const auto& site = f->partition.regions[static_cast<size_t>(region.plan.sites.front())];
    AC_ASSIGN_OR_RETURN(session->modules_[r], analysis::extract_region(module, function, site));
    work.region_module = &session->modules_[r];
    work.bindings = region.sizes.validation;
    work.seeds = options.seeds;
    work.distributions = kDistributions;
    work.options.repetitions = options.repetitions;
    work.options.early_stop_margin = margin;
    work.options.timing = region.sizes.timing;
    for (size_t i = 0; i < region.plan.candidates.size(); ++i)
      session->fingerprints_[r].push_back(tune::candidate_fingerprint(region.plan.candidates[i], generated.compiled[r][i]));
    session->region_keys_[r] = support::sha256_hex(region_tuning_context(session->context_, region.plan.summary).dump());
  }
  if (!session->context_.tuning_db.empty()) session->db_.emplace(session->context_.tuning_db);
  session->worker_ = std::make_unique<tune::AdmissionWorker>(&session->table_);
  return session;
}

std::optional<tune::TuningFile> AdmissionSession::load(const json& context, tune::AdmissionTimes& times) {
  if (!db_) return std::nullopt;
  const auto started = Clock::now();
  std::optional<tune::TuningFile> file = retune_ ? tune::TuningFile(context) : db_->load(context, warnings);
  times.database_s += seconds_since(started);
  return file;
}

void AdmissionSession::store(const tune::TuningFile& file, tune::AdmissionTimes& times) {
  const auto started = Clock::now();
  if (Status stored = db_->store(file); !stored) warnings.push_back("tuning database not written: " + stored.message());
  times.database_s += seconds_since(started);
}

void AdmissionSession::open_chains() {
  const json chain_context = {{"format", tune::kTuningDbFormat}, {"admission", tune::kAdmissionVersion}, {"device", context_.device},
                              {"toolkit", context_.toolkit}, {"compiler", context_.compiler}, {"chains", "decode layer"}};
  if (db_) chains_ = retune_ ? tune::TuningFile(chain_context) : db_->load(chain_context, warnings);
}

Expected<ChainTiming> AdmissionSession::time_chain(const std::vector<tune::ChainStep>& steps, const std::vector<int>& start,
                                                   const tune::SequenceOptions& options, tune::AdmissionTimes& times) {
  const json key = chain_key(region_keys_, fingerprints_, steps, start, options);
  if (chains_ && !retune_)
    if (const auto stored = chains_->get(key)) {
      auto result = tune::sequence_result_from_json(*stored);
      if (result && result->best.size() == steps.size() && result->start == start) return ChainTiming{std::move(*result), true};
      warnings.push_back("tuning database: a stored chain of the decode layer did not fit its key; timed again");
    }
  AC_ASSIGN_OR_RETURN(tune::SequenceResult result, worker_->time_chain(steps, start, options, times));
  if (chains_) chains_->put(key, tune::sequence_result_json(result));
  return ChainTiming{std::move(result), false};
}

void AdmissionSession::close_chains(tune::AdmissionTimes& times) {
  if (chains_) store(*chains_, times);
  chains_.reset();
}

}  // namespace agentcompile::pipeline
