// The collective family's source: none. Its one launch is an NCCL call (plan/families/collective.h)
// that the runtime makes through the rank's communicator; the file only records that.
#include "codegen/renderers/renderer.h"
#include "plan/families/collective.h"

namespace agentcompile::codegen {

namespace {

std::string render_collective(const plan::CollectiveConfig&, const std::vector<plan::Launch>& launches) {
  return "// " + (launches.empty() ? std::string("collective") : launches.front().kernel) +
         ": an NCCL call on the region's stream (gpu/nccl.h), no generated kernel\n#include \"common.cuh\"\n";
}

}  // namespace

AC_REGISTER_RENDERER(collective, plan::CollectiveConfig, render_collective, ProducerWait::kInserted)

}  // namespace agentcompile::codegen
