// A region's candidate space as text, for --dump-ir (the listing after plan) and golden tests: the
// candidates in the planner's heuristic order with their family, spelled name, form, parameters,
// score and whether each is the fallback. Deterministic: the same plan prints the same text.
#pragma once

#include <string>

#include "plan/planner.h"

namespace agentcompile::plan {

std::string describe_candidates(const RegionPlan& plan);

}  // namespace agentcompile::plan
