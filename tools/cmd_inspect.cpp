// `agentcompile inspect MODEL`: the IR, node counts per function, parameter counts by group and the
// weight bytes one decode step reads (as declared, and in the formats --quantize would give).
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "analysis/weight_traffic.h"
#include "commands.h"
#include "emit/model_module.h"
#include "frontend/model_builder.h"
#include "frontend/model_source.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::tools {

namespace {

std::string with_commas(int64_t value) {
  std::string digits = std::to_string(value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

// Groups parameters by what they are part of: embedding, attention, mlp, norms, lm_head.
std::string param_group(const std::string& name) {
  if (name.find("embed_tokens") != std::string::npos) return "embedding";
  if (name.rfind("lm_head", 0) == 0) return "lm_head";
  if (name.find("norm") != std::string::npos && name.find("self_attn") == std::string::npos) return "norms";
  if (name.find("self_attn") != std::string::npos) return "attention";
  if (name.find(".mlp.") != std::string::npos) return "mlp";
  return "other";
}

// Bytes per decode token of the module as declared and of the same model in the other formats a
// compile could choose: int8 and int4 g128 for a checkpoint in floats, the dequantized f16 path for
// a quantized GGUF file. The floor at a copy bandwidth B is bytes / B (bench prints it on a GPU).
void print_weight_traffic(const frontend::ModelSource& source, const ir::Module& module) {
  if (!module.find_function("decode")) return;
  std::printf("weight bytes read per decode token (decode floor = bytes / copy bandwidth):\n");
  auto line = [](const std::string& label, const analysis::WeightTraffic& t) {
    std::printf("  %-44s %10.2f MB", label.c_str(), t.bytes / 1e6);
    if (t.quantized_params > 0) std::printf("  (%lld quantized matrices, %.2f MB)", static_cast<long long>(t.quantized_params), t.quantized_bytes / 1e6);
    std::printf("\n");
  };
  auto flags = [](const std::string& quantize, const std::string& head) {
    std::string text = quantize.empty() ? "" : "--quantize " + quantize;
    if (!head.empty()) text += (text.empty() ? "" : " ") + ("--quantize-head " + head);
    return text;
  };
  std::string declared = flags(source.formats.quantize ? frontend::quantize_spec_text(*source.formats.quantize) : "",
                               source.formats.quantize_head ? frontend::quantize_spec_text(*source.formats.quantize_head) : "");
  if (declared.empty()) declared = source.formats.dequantize ? "--dequantize" : "as stored";
  line(declared, analysis::weight_traffic(module, "decode"));
  if (source.format == frontend::ModelFormat::kCaptured) return;
  auto plain = frontend::build_module(source.config);
  if (!plain) return;
  if (!source.stored_quantized.empty() && !source.formats.dequantize) {
    line("--dequantize", analysis::weight_traffic(*plain, "decode"));
    return;
  }
  if (!source.stored_quantized.empty()) return;
  // The linear weights' formats, then with the LM head in int8 too (a tied head as a copy of its own).
  const std::pair<const char*, const char*> choices[] = {{"int8", ""},     {"int4:g128", ""},     {"int4:g64", ""}, {"int4:g32", ""},
                                                         {"", "int8"},     {"int8", "int8"},      {"int4:g128", "int8"}};
  for (const auto& [spec, head] : choices) {
    const std::string label = flags(spec, head);
    if (label == declared) continue;
    frontend::WeightFormatOptions options;
    if (*spec) options.quantize = frontend::parse_quantize_spec(spec).value();
    if (*head) options.quantize_head = frontend::parse_quantize_spec(head).value();
    ir::Module copy = *plain;
    const Status status = frontend::apply_weight_formats(copy, {}, options, source.path.string());
    if (!status.is_ok()) {
      std::printf("  %-44s (%s)\n", label.c_str(), status.message().c_str());
      continue;
    }
    line(label, analysis::weight_traffic(copy, "decode"));
  }
}

void run_inspect(const std::string& model_path, bool print_ir, const std::string& ir_out, const std::string& quantize,
                 const std::string& quantize_head, bool dequantize) {
  auto formats = frontend::weight_format_options(quantize, dequantize, /*gpu=*/false, quantize_head);
  if (!formats) fail(formats.status().to_string());
  auto source = frontend::open_model(model_path, /*with_weights=*/false, *formats);
  if (!source) fail(source.status().to_string());
  auto prepared = emit::model_module(*source);
  if (!prepared) fail(prepared.status().to_string());
  const ir::Module* module = &prepared->module;
  for (const auto& line : prepared->recognized) std::printf("recognized %s\n", line.c_str());

  const auto& c = source->config;
  std::printf("model: %s (%s, %s)\n", model_path.c_str(), c.model_type.c_str(), frontend::model_format_name(source->format));
  if (source->capture)
    for (const auto& note : source->capture->notes) std::printf("  capture note: %s\n", note.c_str());
  if (!source->is_language_model()) {
    for (const auto& f : module->functions) {
      std::string signature;
      for (ir::ValueId a : f.args) signature += (signature.empty() ? "" : ", ") + f.value(a).name + ": " + f.type(a).to_string();
      std::string results;
      for (ir::ValueId r : f.results) results += (results.empty() ? "" : ", ") + f.type(r).to_string();
      std::printf("  @%s(%s) -> (%s)\n", f.name.c_str(), signature.c_str(), results.c_str());
    }
  } else {
    std::printf("  hidden %lld, intermediate %lld, layers %lld, heads %lld, kv heads %lld, head dim %lld, vocab %lld, %s, %s\n",
                (long long)c.hidden_size, (long long)c.intermediate_size, (long long)c.num_layers, (long long)c.num_heads,
                (long long)c.num_kv_heads, (long long)c.head_dim, (long long)c.vocab_size,
                c.tie_word_embeddings ? "tied embeddings" : "untied embeddings", std::string(ir::dtype_name(c.dtype)).c_str());
  }
  const std::string text = ir::print_module(*module);
  if (print_ir) std::printf("\n%s\n", text.c_str());
  if (!ir_out.empty()) {
    std::ofstream out(ir_out);
    out << text;
    if (!out) fail(ir_out + ": cannot write the IR");
  }

  for (const auto& function : module->functions) {
    std::map<std::string, int> counts;
    for (const auto& node : function.nodes) ++counts[std::string(ir::op_name(node.op))];
    std::printf("function %s: %zu nodes\n", function.name.c_str(), function.nodes.size());
    for (const auto& [op, count] : counts) std::printf("  %-12s %6d\n", op.c_str(), count);
  }

  std::map<std::string, int64_t> groups;
  int64_t total = 0;
  for (const auto& param : module->params) {
    const int64_t count = ir::static_elements(param.type.shape);
    groups[param_group(param.name)] += count;
    total += count;
  }
  std::printf("parameters by group:\n");
  for (const auto& [group, count] : groups) std::printf("  %-10s %18s\n", group.c_str(), with_commas(count).c_str());
  std::printf("parameters: %s\n", with_commas(total).c_str());
  if (source->is_language_model()) print_weight_traffic(*source, *module);
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print a model's IR, node counts and parameter counts (needs only config.json)");
  auto model = std::make_shared<std::string>();
  auto no_ir = std::make_shared<bool>(false);
  auto ir_out = std::make_shared<std::string>();
  cmd->add_option("model", *model, "HF checkpoint directory, config.json, or .gguf file")->required();
  cmd->add_flag("--no-ir", *no_ir, "Skip printing the IR");
  cmd->add_option("--ir-out", *ir_out, "Also write the IR text to this file");
  auto quantize = std::make_shared<std::string>();
  auto quantize_head = std::make_shared<std::string>();
  auto dequantize = std::make_shared<bool>(false);
  cmd->add_option("--quantize", *quantize, "Inspect the model with its linear weights quantized: int8[:bf16] or int4[:gG][:zp][:bf16]");
  cmd->add_option("--quantize-head", *quantize_head, "Inspect the model with its LM head quantized too (e.g. int8)");
  cmd->add_flag("--dequantize", *dequantize, "GGUF: inspect the f16 path (the file's blocks dequantized)");
  cmd->callback([model, no_ir, ir_out, quantize, quantize_head, dequantize] {
    run_inspect(*model, !*no_ir, *ir_out, *quantize, *quantize_head, *dequantize);
  });
}

}  // namespace agentcompile::tools
