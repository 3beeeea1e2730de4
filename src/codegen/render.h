// Rendering candidates to CUDA sources. Each family's renderer (codegen/renderers/renderer.h) writes
// a typed params struct from the candidate's configuration record and calls the family's template;
// nothing from outside the candidate space (least of all advisor text) reaches the source.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "agentcompile/status.h"
#include "plan/candidate.h"

namespace agentcompile::codegen {

// The full .cu source of a generated candidate: one extern "C" __global__ wrapper per launch
// (sharing one translation unit), including the family's header from src/kernels.
Expected<std::string> render_source(const plan::Candidate& candidate);

// True when the candidate launches at least one generated kernel (library-only candidates have no source).
bool has_generated_launch(const plan::Candidate& candidate);

// C++ spelling of a dtype in generated code: __half, __nv_bfloat16, float, int, unsigned char (bool).
const char* cuda_type(ir::DType dtype);

// An exact float literal for generated code: hexadecimal, with the f suffix ("0x1.0c6f7ap-20f").
std::string float_literal(float value);

// "in3" -> "a.in[3]": how a wrapper reads an interface slot of ac::RegionArgs `a` ("workspace": a.workspace).
std::string slot_expression(const std::string& slot);

// One template argument, named after the template's own parameter (src/kernels): {"THREADS", 256}.
struct TemplateArg {
  TemplateArg(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
  TemplateArg(std::string n, const char* v) : name(std::move(n)), value(v) {}
  TemplateArg(std::string n, int64_t v) : name(std::move(n)), value(std::to_string(v)) {}
  std::string name, value;
};
// The arguments of a template call in generated code, each named so the source reads without
// counting positions: "/*T=*/__half, /*THREADS=*/256". Every renderer writes its template arguments
// through this (the comments are the only thing they add to the code).
std::string template_args(const std::vector<TemplateArg>& args);

// "static_cast<const T*>(a.in[3])" for an interface slot, or "nullptr" for none ("").
std::string slot_pointer(const std::string& slot, const std::string& type, bool is_const);

// Inserts the programmatic-dependent-launch wait (ac::wait_for_producer_grid) as the first
// statement of every kernel in `source` (every function with the RegionArgs signature), followed by
// the trigger that lets the next kernel launch (ac::launch_dependent_grids).
std::string with_producer_wait(std::string source);

}  // namespace agentcompile::codegen
