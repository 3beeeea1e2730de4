// Region extraction: one region as a standalone module whose `region` function takes the region's
// inputs as arguments and returns its outputs, with the region's weights as parameters and the
// states it writes as states. The reference interpreter runs it to check a candidate kernel of the
// region against the IR's own semantics, for any region the analyzer forms.
#pragma once

#include "agentcompile/status.h"
#include "analysis/regions.h"
#include "ir/graph.h"

namespace agentcompile::analysis {

// Arguments are named in0, in1, ... in region-input order; results follow region-output order.
Expected<ir::Module> extract_region(const ir::Module& module, const ir::Function& function, const Region& region);

}  // namespace agentcompile::analysis
