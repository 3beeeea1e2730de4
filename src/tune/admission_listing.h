// Admission and selection as text, for --dump-ir and golden tests.
//
// describe_admission (the listing after admit) is the one listing with measured values, since they
// are the point of it: per candidate validated (errors, cases) and timed (median per size, early
// stops, tuning-database reuse), rejected (the reason's first line), or not measured (outside the
// search budget). describe_selections (after select, and again after the chain timing) names each
// bucket's pick and the first words of its reason, without the times the full reason carries
// (metadata.json has them), so two compiles that pick alike list alike.
#pragma once

#include <string>
#include <vector>

#include "plan/planner.h"
#include "tune/search.h"
#include "tune/selection.h"

namespace agentcompile::tune {

std::string describe_admission(const plan::RegionPlan& plan, const AdmittedRegion& admitted);

std::string describe_selections(const plan::RegionPlan& plan, const std::vector<Selection>& selections);

}  // namespace agentcompile::tune
