// Weights (DESIGN.md, "capture"): the record of how the compiled module stores its weights, for
// metadata.json "weights" and report.md: the formats, the bytes one decode step reads, and for a
// checkpoint quantized with --quantize the round-to-nearest error of every quantized matrix (the
// weights are read and quantized here exactly as the runtime quantizes them at upload:
// frontend::read_packed). Run only when the compile is not reused warm.
#include "analysis/weight_traffic.h"
#include "frontend/weight_formats.h"
#include "ir/quant.h"
#include "pipeline/stages.h"

namespace agentcompile::pipeline {

using json = nlohmann::json;

Expected<json> weights_record(const CapturedModel& model, const CompileOptions& options, const ProgressFn& say) {
  const ir::Module& module = model.module.module;
  std::vector<const ir::ParamDecl*> quantized;
  for (const ir::ParamDecl& p : module.params)
    if (ir::is_quantized(p.type.dtype)) quantized.push_back(&p);
  if (quantized.empty() && options.quantize.empty() && options.quantize_head.empty() && !options.dequantize) return json();  // as stored
  const analysis::WeightTraffic traffic = analysis::weight_traffic(module, "decode");
  json record{{"quantize", options.quantize}, {"quantize_head", options.quantize_head}, {"dequantize", options.dequantize},
              {"decode_bytes_per_token", traffic.bytes}, {"quantized_bytes_per_token", traffic.quantized_bytes},
              {"quantized_matrices", quantized.size()}};
  if (quantized.empty()) return record;
  // Errors need the values: a config alone has none (a compile of shapes), and GGUF blocks are the
  // file's own (no rounding here).
  const bool measured = model.source.format != frontend::ModelFormat::kHfConfigOnly && (!options.quantize.empty() || !options.quantize_head.empty());
  if (!measured) {
    record["errors"] = model.source.format == frontend::ModelFormat::kGguf ? "none: the file's blocks are used as stored"
                                                                           : "not measured: no weights (a config alone)";
    return record;
  }
  std::string to = options.quantize.empty() ? "" : options.quantize;
  if (!options.quantize_head.empty()) to += (to.empty() ? "" : ", ") + ("the LM head to " + options.quantize_head);
  say("weights: quantizing " + std::to_string(quantized.size()) + " matrices to " + to + " for their error");
  AC_ASSIGN_OR_RETURN(const frontend::WeightFormatOptions formats,
                      frontend::weight_format_options(options.quantize, options.dequantize, /*gpu=*/true, options.quantize_head));
  AC_ASSIGN_OR_RETURN(const frontend::ModelSource source, frontend::open_model(options.model, /*with_weights=*/true, formats));
  json tensors = json::array();
  double worst_rel = 0;
  std::string worst;
  std::vector<uint8_t> bytes;
  for (const ir::ParamDecl* p : quantized) {
    ir::QuantError err;
    AC_TRY(frontend::read_packed(*source.weights, p->checkpoint_name(), p->type.dtype, bytes, &err));
    tensors.push_back({{"name", p->name}, {"format", std::string(ir::dtype_name(p->type.dtype))}, {"type", p->type.to_string()},
                       {"bytes", bytes.size()}, {"rel_rms", err.rel_rms}, {"max_abs", err.max_abs}});
    if (err.rel_rms >= worst_rel) worst_rel = err.rel_rms, worst = p->name;
  }
  record["errors"] = "round to nearest: rel_rms = |W - dequantized W|_2 / |W|_2, max_abs = max |W - dequantized W|";
  record["max_rel_rms"] = worst_rel;
  record["max_rel_rms_tensor"] = worst;
  record["tensors"] = std::move(tensors);
  say("weights: largest relative RMS error " + std::to_string(worst_rel) + " (" + worst + ")");
  return record;
}

}  // namespace agentcompile::pipeline
