// The template families, one file each under src/plan/families/.
#pragma once

#include "plan/template_family.h"

namespace agentcompile::plan {

const TemplateFamily& gemv_family();

}  // namespace agentcompile::plan
