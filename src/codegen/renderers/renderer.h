// How a family's renderer plugs into render_source: it is a function of the family's own record
// (plan/families/<family>.h) and the candidate's launches (their kernel names and geometry), and
// registers itself with AC_REGISTER_RENDERER in its own file; the build collects those lines into the
// renderer table (cmake/template_families.cmake), so adding a family edits no shared file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "codegen/render.h"
#include "plan/candidate.h"

namespace agentcompile::codegen {

// Where a generated kernel waits for the grid it follows (programmatic dependent launch, render.h).
enum class ProducerWait {
  kInserted,    // render_source inserts the wait and the trigger as every kernel's first statements
  kInTemplate,  // the family's template places them itself, after loads that read only weights
};

using CandidateRenderer = Expected<std::string> (*)(const plan::Candidate& candidate);

// Family name -> its renderer, from every AC_REGISTER_RENDERER line (generated).
const std::map<std::string, CandidateRenderer>& renderer_table();

// Renders `candidate` with `render`, which takes the family's record `Config`.
template <class Config>
Expected<std::string> render_as(const plan::Candidate& candidate,
                                std::string (*render)(const Config&, const std::vector<plan::Launch>&), ProducerWait wait) {
  const Config* config = plan::config_as<Config>(candidate);
  if (!config) {
    const std::string why = candidate.config ? "its configuration is not its family's record"
                                             : "no configuration to render (a candidate read back from metadata.json is launched, not rendered)";
    return error(ErrorCode::kInvalidArgument, candidate.name() + " (" + candidate.family + "): " + why);
  }
  std::string source = render(*config, candidate.launches);
  return wait == ProducerWait::kInserted ? with_producer_wait(std::move(source)) : source;
}

// Registers `render` (std::string render(const Config&, const std::vector<plan::Launch>&)) as the
// renderer of the family `name`; write it at the start of a line, in namespace agentcompile::codegen,
// in the family's file under src/codegen/renderers/.
#define AC_REGISTER_RENDERER(name, Config, render, wait)                                    \
  Expected<std::string> name##_renderer(const plan::Candidate& candidate) {                 \
    return render_as<Config>(candidate, render, wait);                                      \
  }

}  // namespace agentcompile::codegen
