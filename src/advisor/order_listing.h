// A region's measuring order and the advice behind it as text, for --dump-ir (the listing after
// advise) and golden tests: the order by candidate id, where it came from and the budget, then what
// the advisor was asked and what of its answer was accepted, rejected or ignored.
#pragma once

#include <string>
#include <vector>

#include "advisor/advice.h"
#include "plan/planner.h"

namespace agentcompile::advisor {

// `order` holds candidate indices; `source` is "heuristic" or "advisor"; `budget` 0 means all.
std::string describe_order(const plan::RegionPlan& plan, const RegionAdvice& advice, const std::vector<int>& order,
                           const std::string& source, int budget);

}  // namespace agentcompile::advisor
