// Admission of one region's candidates and their results as JSON (see admission.h).
#include "tune/admission.h"

#include "tune/admission_worker.h"

namespace agentcompile::tune {

using json = nlohmann::json;

json timing_json(const Timing& t) {
  return {{"T", t.bindings.T}, {"L", t.bindings.L}, {"pos", t.bindings.pos}, {"median_us", t.median_us}, {"p10_us", t.p10_us},
          {"p90_us", t.p90_us}, {"repetitions", t.repetitions}, {"launches_per_sample", t.launches_per_sample},
          {"buffer_sets", t.buffer_sets}, {"stopped_early", t.stopped_early}, {"fastest_us", t.fastest_us}, {"stop_bar_us", t.stop_bar_us}};
}

// json::value throws when a field holds another type: the callers turn that into an error.
Expected<Timing> timing_from_json(const json& t) {
  if (!t.is_object()) return error(ErrorCode::kParse, "a timing must be an object");
  try {
    Timing timing;
    timing.bindings = RegionBindings{t.value("T", int64_t{1}), t.value("L", int64_t{1}), t.value("pos", 0)};
    timing.median_us = t.value("median_us", 0.0);
    timing.p10_us = t.value("p10_us", 0.0);
    timing.p90_us = t.value("p90_us", 0.0);
    timing.repetitions = t.value("repetitions", 0);
    timing.buffer_sets = t.value("buffer_sets", 0);
    timing.launches_per_sample = t.value("launches_per_sample", 1);
    timing.stopped_early = t.value("stopped_early", false);
    timing.fastest_us = t.value("fastest_us", 0.0);
    timing.stop_bar_us = t.value("stop_bar_us", 0.0);
    return timing;
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, std::string("a timing of the wrong shape: ") + e.what());
  }
}

json candidate_result_json(const CandidateResult& r) {
  json timings = json::array();
  for (const auto& t : r.timings) timings.push_back(timing_json(t));
  return json{{"id", r.id}, {"name", r.name}, {"compiled", r.compiled}, {"validated", r.validated}, {"measured", r.measured},
              {"faulted", r.faulted}, {"rejection", r.rejection}, {"max_abs_error", r.max_abs_error},
              {"max_rel_error", r.max_rel_error}, {"cases", r.cases}, {"median_us", r.median_us}, {"p10_us", r.p10_us},
              {"p90_us", r.p90_us}, {"timings", timings}};
}

Expected<CandidateResult> candidate_result_from_json(const json& j) {
  if (!j.is_object()) return error(ErrorCode::kParse, "a candidate result must be an object");
  try {
    CandidateResult r;
    r.id = j.value("id", "");
    r.name = j.value("name", "");
    r.compiled = j.value("compiled", false);
    r.validated = j.value("validated", false);
    r.measured = j.value("measured", false);
    r.faulted = j.value("faulted", false);
    r.rejection = j.value("rejection", "");
    r.max_abs_error = j.value("max_abs_error", 0.0);
    r.max_rel_error = j.value("max_rel_error", 0.0);
    r.cases = j.value("cases", 0);
    r.median_us = j.value("median_us", 0.0);
    r.p10_us = j.value("p10_us", 0.0);
    r.p90_us = j.value("p90_us", 0.0);
    for (const auto& t : j.value("timings", json::array())) {
      AC_ASSIGN_OR_RETURN(Timing timing, timing_from_json(t));
      r.timings.push_back(timing);
    }
    return r;
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, std::string("a candidate result of the wrong shape: ") + e.what());
  }
}

Expected<std::vector<CandidateResult>> admit_candidates(const ir::Module& region_module, const RegionBindings& bindings,
                                                         const std::vector<RegionCase>& cases,
                                                         const std::vector<plan::Candidate>& candidates,
                                                         const std::vector<codegen::CompileResult>& compiled,
                                                         const AdmitOptions& options) {
  if (compiled.size() != candidates.size())
    return error(ErrorCode::kInvalidArgument, "admission needs one compile result per candidate (" + std::to_string(candidates.size()) +
                                                  " candidates, " + std::to_string(compiled.size()) + " results)");
  RegionWork work;
  work.id = region_module.name;
  work.region_module = &region_module;
  work.bindings = bindings;
  work.cases = &cases;
  work.candidates = &candidates;
  work.compiled = &compiled;
  work.options = options;
  const std::vector<RegionWork> table = {work};
  AdmissionWorker worker(&table);
  std::vector<int> all(candidates.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  AC_ASSIGN_OR_RETURN(AdmissionOutcome outcome, worker.admit(0, all));
  return outcome.results;
}

}  // namespace agentcompile::tune
