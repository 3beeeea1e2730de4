// Dispatch from a candidate's family to its renderer (the generated renderer table), and the
// helpers renderers share.
#include "codegen/render.h"

#include <cstdio>

#include "codegen/renderers/renderer.h"

namespace agentcompile::codegen {

const char* cuda_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF16: return "__half";
    case ir::DType::kBF16: return "__nv_bfloat16";
    case ir::DType::kI32: return "int";
    case ir::DType::kBool: return "unsigned char";  // one byte, 0 or 1
    default: return "float";
  }
}

std::string float_literal(float value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%af", static_cast<double>(value));
  return text;
}

std::string slot_expression(const std::string& slot) {
  if (slot == "workspace") return "a.workspace";
  const size_t digit = slot.find_first_of("0123456789");
  if (digit == std::string::npos || digit == 0) return "";
  return "a." + slot.substr(0, digit) + "[" + slot.substr(digit) + "]";
}

std::string template_args(const std::vector<TemplateArg>& args) {
  std::string text;
  for (const TemplateArg& arg : args) text += (text.empty() ? "/*" : ", /*") + arg.name + "=*/" + arg.value;
  return text;
}

std::string slot_pointer(const std::string& slot, const std::string& type, bool is_const) {
  const std::string expr = slot_expression(slot);
  if (expr.empty()) return "nullptr";
  return "static_cast<" + std::string(is_const ? "const " : "") + type + "*>(" + expr + ")";
}

bool has_generated_launch(const plan::Candidate& candidate) {
  for (const auto& launch : candidate.launches)
    if (!launch.library) return true;
  return false;
}

Expected<std::string> render_source(const plan::Candidate& candidate) {
  if (!has_generated_launch(candidate))
    return error(ErrorCode::kInvalidArgument, candidate.id + " (" + candidate.family + ") is library calls only: it has no source");
  const auto& table = renderer_table();
  const auto it = table.find(candidate.family);
  if (it == table.end()) return error(ErrorCode::kInternal, "no renderer for template family '" + candidate.family + "'");
  return it->second(candidate);
}

// Programmatic dependent launch: the runtime may start a kernel before the one it follows has
// finished (its launch and block scheduling then overlap the producer), so every generated kernel's
// first statements wait until the producer grid's writes are visible and then let the next kernel
// launch. Inserted here, once for every family, after the one kernel signature all renderers emit.
std::string with_producer_wait(std::string source) {
  const std::string signature = "(const ac::RegionArgs a) {\n";
  const std::string wait = "  ac::wait_for_producer_grid();\n  ac::launch_dependent_grids();\n";
  for (size_t at = source.find(signature); at != std::string::npos; at = source.find(signature, at + signature.size() + wait.size()))
    source.insert(at + signature.size(), wait);
  return source;
}

}  // namespace agentcompile::codegen
