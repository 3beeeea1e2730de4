// Host tensors of a function call (agentcompile::Tensor, include/agentcompile/function.h): their specs
// from the IR and the capture manifest, checks against a spec, and the conversions to and from the
// reference interpreter's HostTensor (float values held as f32, ints and bools as i32).
#pragma once

#include <vector>

#include "agentcompile/function.h"
#include "frontend/model_source.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

namespace agentcompile::runtime {

// Argument and result specs of `function`: static shapes, with T at the size the capture binds it to
// (a function with L, or an unbound T, is not run this way). Names come from the capture manifest when
// it lists the function.
Expected<std::vector<TensorSpec>> argument_specs(const ir::Function& function, const frontend::ModelSource& source);
Expected<std::vector<TensorSpec>> result_specs(const ir::Function& function, const frontend::ModelSource& source);

// Checks count, dtype, shape and byte size of `inputs` against `specs`; errors name the input.
Status check_inputs(const std::vector<Tensor>& inputs, const std::vector<TensorSpec>& specs);

Expected<ir::HostTensor> to_host_tensor(const Tensor& tensor);
// `value` as a Tensor of `spec` (rounded to f16/bf16 to nearest even where the spec says so).
Expected<Tensor> from_host_tensor(const ir::HostTensor& value, const TensorSpec& spec);

size_t tensor_bytes(const TensorSpec& spec);

}  // namespace agentcompile::runtime
