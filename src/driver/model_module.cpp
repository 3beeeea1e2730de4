// The module a model compiles to (see model_module.h).
#include "driver/model_module.h"

#include "ir/verifier.h"

namespace agentcompile::driver {

Expected<ModelModule> model_module(const frontend::ModelSource& source) {
  ModelModule out;
  AC_ASSIGN_OR_RETURN(out.module, frontend::source_module(source));
  AC_TRY(ir::verify_module(out.module));
  return out;
}

}  // namespace agentcompile::driver
