// The renderers, one file per template family.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/ops.h"
#include "plan/candidate.h"

namespace agentcompile::codegen {

using Renderer = std::function<std::string(const plan::Candidate&)>;

// The RoPE inverse-frequency table of a match with rope_* facts (rope_kv, the attention prologue) as
// `__device__ const float ac_inv_freq[D/2]`: the rope op's own table, or for the parametric form the
// interpreter's values (ir::kernels::rope_inv_freq, float32 and llama3 scaling as transformers
// computes them), in exact hexadecimal literals (plan/families/rope_params.h). Empty when the match
// has no RoPE.
std::string rope_inv_freq_table(const plan::Match& match, int64_t head_dim);

// The ac::RowReduction of a reduction op (reduction.cuh): "ac::kRowSum", "ac::kRowArgmin", ...
const char* row_reduction_enum(ir::OpKind op);

std::string render_gemv(const plan::Candidate& candidate);
std::string render_rmsnorm(const plan::Candidate& candidate);
std::string render_embedding(const plan::Candidate& candidate);
std::string render_elementwise(const plan::Candidate& candidate);
std::string render_softmax(const plan::Candidate& candidate);
std::string render_reduction(const plan::Candidate& candidate);
std::string render_rope_kv(const plan::Candidate& candidate);
std::string render_attention_decode(const plan::Candidate& candidate);
std::string render_attention_prefill(const plan::Candidate& candidate);
std::string render_gemm(const plan::Candidate& candidate);
std::string render_cublas_epilogue(const plan::Candidate& candidate);
std::string render_attention_reference(const plan::Candidate& candidate);
std::string render_layernorm(const plan::Candidate& candidate);
std::string render_scan(const plan::Candidate& candidate);
std::string render_columns(const plan::Candidate& candidate);
std::string render_copy(const plan::Candidate& candidate);
std::string render_gather(const plan::Candidate& candidate);

inline const std::vector<std::pair<std::string, Renderer>>& renderers() {
  static const std::vector<std::pair<std::string, Renderer>> table = {
      {"gemv", render_gemv},
      {"rmsnorm", render_rmsnorm},
      {"embedding", render_embedding},
      {"elementwise", render_elementwise},
      {"softmax", render_softmax},
      {"reduction", render_reduction},
      {"rope_kv", render_rope_kv},
      {"attention_decode", render_attention_decode},
      {"attention_prefill", render_attention_prefill},
      {"gemm", render_gemm},
      {"cublas", render_cublas_epilogue},
      {"attention_reference", render_attention_reference},
      {"layernorm", render_layernorm},
      {"scan", render_scan},
      {"columns", render_columns},
      {"copy", render_copy},
      {"gather", render_gather},
  };
  return table;
}

}  // namespace agentcompile::codegen
