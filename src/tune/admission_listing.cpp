// Admission and selection as text (see admission_listing.h).
#include "tune/admission_listing.h"

#include <cstdio>

namespace agentcompile::tune {

namespace {

constexpr size_t kReasonChars = 160;

std::string number(const char* format, double value) {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string first_line(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.size() > kReasonChars ? line.substr(0, kReasonChars) + "..." : line;
}

// A selection reason's first words: "fastest validated", "fallback", "no candidate validated", ...
std::string reason_head(const std::string& reason) { return reason.substr(0, reason.find_first_of(":;(")); }

}  // namespace

std::string describe_admission(const plan::RegionPlan& plan, const AdmittedRegion& admitted) {
  const SearchRecord& s = admitted.search;
  std::string text = "r" + std::to_string(plan.unique_id) + ": ";
  if (admitted.results.empty()) {
    text += "not admitted" + (s.note.empty() ? std::string() : " (" + s.note + ")") + "\n";
    return text;
  }
  text += "spent " + std::to_string(s.spent) + " of " + std::to_string(plan.candidates.size()) + " in " + s.order_source + " order" +
          (s.exhaustive ? " (exhaustive)" : "") + (s.note.empty() ? "" : "; " + s.note) + "\n";
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const plan::Candidate& c = plan.candidates[i];
    text += "  " + c.id + " " + c.name() + ": ";
    if (i < s.measured.size() && !s.measured[i]) {
      text += "not measured (outside the search budget)\n";
      continue;
    }
    const CandidateResult& r = admitted.results[i];
    if (!r.validated) {
      text += std::string(r.faulted ? "faulted: " : "rejected: ") + first_line(r.rejection) + "\n";
      continue;
    }
    text += "validated (max abs " + number("%.3g", r.max_abs_error) + ", rel " + number("%.3g", r.max_rel_error) + ", " +
            std::to_string(r.cases) + " cases)" + (r.reused ? " from the tuning database" : "");
    for (const Timing& t : r.timings)
      text += "; T=" + std::to_string(t.bindings.T) + " L=" + std::to_string(t.bindings.L) + " pos=" + std::to_string(t.bindings.pos) + ": " +
              number("%.2f", t.median_us) + " us" + (t.stopped_early ? " (stopped early)" : "");
    text += "\n";
  }
  return text;
}

std::string describe_selections(const plan::RegionPlan& plan, const std::vector<Selection>& selections) {
  std::string text = "r" + std::to_string(plan.unique_id) + ":" + (selections.empty() ? " no selection\n" : "\n");
  for (const Selection& s : selections) {
    text += "  " + s.bucket + ": ";
    if (s.candidate < 0) {
      text += "none (" + reason_head(s.reason) + ")\n";
      continue;
    }
    const plan::Candidate& c = plan.candidates[static_cast<size_t>(s.candidate)];
    text += c.id + " " + c.name() + " (" + reason_head(s.reason) + ")\n";
  }
  return text;
}

}  // namespace agentcompile::tune
