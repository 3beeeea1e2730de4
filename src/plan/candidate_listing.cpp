// The candidate space of a region as text (see candidate_listing.h).
#include "plan/candidate_listing.h"

#include <cstdio>

namespace agentcompile::plan {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string params_text(const ParamSet& params) {
  std::string text = "{";
  for (const auto& [name, value] : params) text += (text.size() > 1 ? ", " : "") + name + "=" + std::to_string(value);
  return text + "}";
}

}  // namespace

std::string describe_candidates(const RegionPlan& plan) {
  std::string text = "r" + std::to_string(plan.unique_id) + " " + analysis::category_name(plan.summary.category) + " x" +
                     std::to_string(plan.sites.size()) + ", families matched:";
  for (const auto& family : plan.families_matched) text += " " + family;
  text += "; kept " + std::to_string(plan.candidates.size()) + " of " + std::to_string(plan.enumerated) + " enumerated\n";
  if (plan.candidates.empty()) text += "  no candidates: " + plan.unplanned_reason + "\n";
  for (const Candidate& c : plan.candidates) {
    text += "  " + c.id + " " + c.family + " " + c.name() + (c.form.empty() ? "" : " form " + c.form) + " fusion " + c.fusion +
            " score " + number(c.score) + (c.fallback ? " fallback" : "") + " " + params_text(c.params) + "\n";
  }
  return text;
}

}  // namespace agentcompile::plan
