// View resolution: walks a value back through layout-only nodes to the value that owns its bytes.
#include "analysis/views.h"

#include <string>
#include <vector>

#include "analysis/regions.h"

namespace agentcompile::analysis {

int64_t value_bytes(const ir::Function& function, ir::ValueId value, const ir::SymbolBindings& at) {
  const ir::TensorType& type = function.type(value);
  int64_t count = 1;
  for (int64_t size : at.resolve(type.shape)) count *= size;
  return count * static_cast<int64_t>(ir::dtype_size(type.dtype));
}

Expected<ResolvedValue> resolve_value(const ir::Function& function, ir::ValueId value, const ir::SymbolBindings& at) {
  ResolvedValue resolved{value, 0};
  while (true) {
    const int producer = function.value(resolved.root).producer;
    if (producer < 0) return resolved;
    const ir::Node& node = function.nodes[static_cast<size_t>(producer)];
    if (!analysis::is_view_node(node)) return resolved;
    const ir::ValueId source = node.operands[0];
    if (node.op == ir::OpKind::kSlice) {
      const std::vector<int64_t> dims = at.resolve(function.type(source).shape);
      int64_t start = node.int_attr("start");
      if (start < 0) start += dims.front();
      const int64_t length = node.int_attr("length");
      if (start < 0 || start + length > dims.front())
        return error(ErrorCode::kInvalidArgument, "slice of %" + function.value(source).name + " rows [" + std::to_string(start) + ", " +
                                                      std::to_string(start + length) + ") is out of its " + std::to_string(dims.front()) + " rows");
      int64_t row = static_cast<int64_t>(ir::dtype_size(function.type(source).dtype));
      for (size_t d = 1; d < dims.size(); ++d) row *= dims[d];
      resolved.byte_offset += start * row;
    } else if (node.op == ir::OpKind::kBroadcast && value_bytes(function, node.result, at) != value_bytes(function, source, at)) {
      return error(ErrorCode::kUnsupported, "a region reads %" + function.value(node.result).name +
                                                ", a broadcast that repeats data; the runtime binds buffers, it does not materialize broadcasts");
    }
    resolved.root = source;
  }
}

}  // namespace agentcompile::analysis
