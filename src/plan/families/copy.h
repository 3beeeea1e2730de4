// What the copy renderer needs from the copy family's planning (plan/families/copy.cpp).
#pragma once

#include <cstdint>

#include "plan/candidate.h"

namespace agentcompile::plan {

// The output dim P of a tiled transpose (the one that reads the source's innermost axis); -1 when
// the copy has no tiled form.
int64_t copy_tiled_dim(const Match& match);

}  // namespace agentcompile::plan
