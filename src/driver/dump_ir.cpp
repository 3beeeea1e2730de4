// --dump-ir: listings into the artifact's ir/ folder beside module.ir (the module compiled):
// <function>.regions.txt after analyze (regions, unique regions and their summaries).
#include "analysis/summary.h"
#include "driver/stages.h"

namespace agentcompile::driver {

void IrListings::analyzed(const Analysis& analysis) {
  if (!enabled_) return;
  for (const auto& f : analysis.functions)
    files_[f.function->name + ".regions.txt"] = analysis::describe_regions(*f.function, f.partition, f.unique);
}

}  // namespace agentcompile::driver
