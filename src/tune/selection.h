// Selection (DESIGN.md, "measure & select"): one candidate per region and bucket, by measured latency
// of validated candidates only. The fastest validated candidate wins; the reason names its time and
// the best fallback's; if none beats the fallback, the fallback is selected and the reason says so;
// if none validated, nothing is selected and the reason lists the rejections. Without a GPU nothing
// was measured: the first candidate of the heuristic order that compiled stands in, marked unmeasured.
// The decode layer's chain timing may change a pick afterwards (pipeline context tuning), with a
// reason of its own.
#pragma once

#include <string>
#include <vector>

#include "codegen/nvrtc_compiler.h"
#include "plan/candidate.h"
#include "tune/admission.h"

namespace agentcompile::tune {

struct Selection {
  std::string bucket;
  int candidate = -1;          // index into the region's candidates; -1: none usable
  std::string reason;
  bool measured = false;
};

// The fastest validated candidate of `results` (one per candidate) at timing `timing_index`, or the
// fallback, or none; with the reason.
Selection select_measured(const std::vector<plan::Candidate>& candidates, const std::vector<CandidateResult>& results,
                          size_t timing_index, const std::string& bucket);

// Without measurements: the first candidate that compiled (the heuristic order's best), unmeasured.
Selection select_unmeasured(const std::vector<codegen::CompileResult>& compiled, const std::string& bucket);

}  // namespace agentcompile::tune
