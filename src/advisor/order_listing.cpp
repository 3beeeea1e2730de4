// A region's measuring order and its advice as text (see order_listing.h).
#include "advisor/order_listing.h"

namespace agentcompile::advisor {

std::string describe_order(const plan::RegionPlan& plan, const RegionAdvice& advice, const std::vector<int>& order,
                           const std::string& source, int budget) {
  std::string text = "r" + std::to_string(plan.unique_id) + ": " + source + " order, budget " +
                     (budget > 0 ? std::to_string(budget) : std::string("all")) + ":";
  for (int i : order) text += " " + plan.candidates[static_cast<size_t>(i)].id;
  text += "\n  advisor " + advice.backend + ", " + (advice.asked ? "asked" : "not asked") + (advice.why.empty() ? "" : ": " + advice.why);
  if (advice.exchange) text += advice.exchange->ok ? "; answered" : "; no answer: " + advice.exchange->error;
  text += "\n";
  const Verdict& v = advice.verdict;
  if (!v.label.empty()) text += "  accepted label " + v.label + "\n";
  if (!v.priority.empty()) {
    text += "  accepted priority";
    for (const auto& id : v.priority) text += " " + id;
    text += "\n";
  }
  for (const auto& [name, value] : v.hints) text += "  accepted hint " + name + "=" + std::to_string(value) + "\n";
  for (const auto& r : v.risks) text += "  risk " + r.candidate + " " + r.kind + ": " + r.note + "\n";
  for (const auto& r : v.rejected) text += "  rejected " + r.part + " (" + r.kind + "): " + r.reason + "\n";
  for (const auto& g : v.ignored) text += "  ignored " + g.part + ": " + g.reason + "\n";
  return text;
}

}  // namespace agentcompile::advisor
