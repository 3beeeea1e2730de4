// Dispatch from a candidate's family to its renderer, and the helpers renderers share.
#include "codegen/render.h"

#include <cstdio>

#include "codegen/renderers/renderers.h"

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

std::string role_pointer(const plan::Match& match, const std::string& role, const std::string& type, bool is_const) {
  auto it = match.roles.find(role);
  if (it == match.roles.end()) return "nullptr";
  const std::string expr = slot_expression(it->second);
  if (expr.empty()) return "nullptr";
  return "static_cast<" + std::string(is_const ? "const " : "") + type + "*>(" + expr + ")";
}

bool family_places_producer_wait(const std::string& family) {
  // gemv.cuh issues its first weight loads, which read no activation, before it waits;
  // attention_decode.cuh its first loads of cache rows that earlier steps wrote.
  return family == "gemv" || family == "attention_decode";
}

bool has_generated_launch(const plan::Candidate& candidate) {
  for (const auto& launch : candidate.launches)
    if (!launch.library) return true;
  return false;
}

Expected<std::string> render_source(const plan::Candidate& candidate) {
  if (!has_generated_launch(candidate))
    return error(ErrorCode::kInvalidArgument, candidate.id + " (" + candidate.family + ") is library calls only: it has no source");
  for (const auto& [family, renderer] : renderers()) {
    if (family != candidate.family) continue;
    return family_places_producer_wait(candidate.family) ? renderer(candidate) : with_producer_wait(renderer(candidate));
  }
  return error(ErrorCode::kInternal, "no renderer for template family '" + candidate.family + "'");
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
