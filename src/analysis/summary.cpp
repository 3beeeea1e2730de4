// Region summaries, structural signatures and classification.
//
// The signature spells a region's computation without its layer: op sequence, attributes (except
// parameter and state names), operand wiring relative to the region, and every type. Layers of one
// model therefore share a signature and are compiled once. FLOPs and bytes are counted at concrete
// bindings of T and L; bytes are the fewest a kernel must move (each input, weight and output once).
#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis/summary.h"
#include "ir/quant.h"

namespace agentcompile::analysis {

using ir::OpKind;

const char* category_name(Category category) {
  switch (category) {
    case Category::kGemm: return "gemm";
    case Category::kGemmEpilogue: return "gemm_epilogue";
    case Category::kGemv: return "gemv";
    case Category::kGemvEpilogue: return "gemv_epilogue";
    case Category::kAttentionPrefill: return "attention_prefill";
    case Category::kAttentionDecode: return "attention_decode";
    case Category::kRmsNorm: return "rmsnorm";
    case Category::kLayerNorm: return "layernorm";
    case Category::kScan: return "scan";
    case Category::kRopeKvAppend: return "rope_kv_append";
    case Category::kSoftmax: return "softmax";
    case Category::kReductionPointwise: return "reduction_pointwise";
    case Category::kElementwise: return "elementwise";
    case Category::kGather: return "gather";
    case Category::kCopy: return "copy";
    case Category::kCollective: return "collective";
  }
  return "?";
}

const std::vector<std::string>& all_category_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int c = 0; c <= static_cast<int>(Category::kCollective); ++c) out.push_back(category_name(static_cast<Category>(c)));
    return out;
  }();
  return names;
}

namespace {

std::string hash_hex(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

double elements(const ir::TensorType& type, const ir::SymbolBindings& bindings) {
  double count = 1;
  for (int64_t size : bindings.resolve(type.shape)) count *= static_cast<double>(size);
  return count;
}

double type_bytes(const ir::TensorType& type, const ir::SymbolBindings& bindings) {
  // A quantized weight (always static) takes its format's bytes, scales and padding included.
  if (ir::is_quantized(type.dtype)) return static_cast<double>(ir::tensor_bytes(type));
  return elements(type, bindings) * static_cast<double>(ir::dtype_size(type.dtype));
}

bool has_symbol(const ir::Shape& shape, ir::Symbol symbol) {
  return std::any_of(shape.begin(), shape.end(), [&](const ir::Dim& d) { return d.symbol == symbol; });
}

// FLOPs of one node at the given bindings; attention assumes a causal prefill from position 0, or
// one query over L cached rows when T is 1.
double node_flops(const ir::Function& function, const ir::Node& node, const ir::SymbolBindings& bindings) {
  const ir::TensorType& out = function.type(node.result);
  const double out_elems = elements(out, bindings);
  switch (node.op) {
    case OpKind::kLinear:
    case OpKind::kMatmul: {
      const auto& a = function.type(node.operands[0]);
      return 2.0 * out_elems * static_cast<double>(bindings.resolve(a.shape.back()));
    }
    case OpKind::kAttention: {
      const auto& q = function.type(node.operands[0]);
      const double tokens = static_cast<double>(bindings.resolve(q.shape[0]));
      const double heads = static_cast<double>(q.shape[1].value), dim = static_cast<double>(q.shape[2].value);
      const double keys = tokens == 1 ? static_cast<double>(bindings.L) : tokens * (tokens + 1) / 2;
      return 4.0 * heads * dim * keys;
    }
    case OpKind::kRmsNorm: return 4.0 * out_elems;
    case OpKind::kRope: return 6.0 * out_elems;
    case OpKind::kSilu: return 4.0 * out_elems;
    case OpKind::kSoftmax: return 5.0 * out_elems;
    case OpKind::kKvAppend:
    case OpKind::kCast:
    case OpKind::kEmbedding: return 0;
    default: return out_elems;
  }
}

struct Wiring {
  std::map<ir::ValueId, int> input_index;
  std::map<ir::ValueId, int> node_index;
  std::map<std::string, int> param_index;
};

std::string canonical_signature(const ir::Module& module, const ir::Function& function, const Region& region) {
  Wiring wiring;
  for (size_t i = 0; i < region.inputs.size(); ++i) wiring.input_index[region.inputs[i]] = static_cast<int>(i);
  for (size_t i = 0; i < region.params.size(); ++i) wiring.param_index[region.params[i]] = static_cast<int>(i);
  std::string text = std::string(region_kind_name(region.kind)) + "{";
  for (size_t i = 0; i < region.nodes.size(); ++i) {
    const ir::Node& node = function.nodes[static_cast<size_t>(region.nodes[i])];
    wiring.node_index[node.result] = static_cast<int>(i);
    text += std::string(ir::op_name(node.op)) + "(";
    for (ir::ValueId operand : node.operands) {
      // Operands are named by their role: a region input, an earlier node, or a parameter.
      ir::ValueId seen = operand;
      std::string views;
      while (true) {
        if (auto it = wiring.input_index.find(seen); it != wiring.input_index.end()) { text += "in" + std::to_string(it->second); break; }
        if (auto it = wiring.node_index.find(seen); it != wiring.node_index.end()) { text += "n" + std::to_string(it->second); break; }
        const int producer = function.value(seen).producer;
        const ir::Node& source = function.nodes[static_cast<size_t>(producer)];
        if (source.op == OpKind::kWeight) {
          const std::string name = source.string_attr("name");
          text += "p" + std::to_string(wiring.param_index[name]) + ":" + module.find_param(name)->type.to_string();
          break;
        }
        if (analysis::is_source_node(source)) {  // a constant or arange: its attributes are its value
          text += std::string(ir::op_name(source.op)) + "{";
          for (const auto& [key, value] : source.attrs) text += key + "=" + ir::attr_to_string(value) + ";";
          text += "}" + function.type(seen).to_string();
          break;
        }
        views += std::string(ir::op_name(source.op)) + function.type(seen).to_string() + "<";
        seen = source.operands[0];
      }
      text += views + ",";
    }
    text += ")";
    for (const auto& [key, value] : node.attrs)
      if (key != "name" && key != "state") text += key + "=" + ir::attr_to_string(value) + ";";
    text += "->" + function.type(node.result).to_string() + " ";
  }
  text += "} in(";
  for (ir::ValueId input : region.inputs) text += function.type(input).to_string() + ",";
  text += ") out(";
  for (ir::ValueId output : region.outputs) text += "n" + std::to_string(wiring.node_index[output]) + ",";
  return text + ")";
}

Category classify(const ir::Function& function, const Region& region, const std::vector<std::string>& ops) {
  auto count = [&](OpKind op) {
    return std::count_if(region.nodes.begin(), region.nodes.end(),
                         [&](int n) { return function.nodes[static_cast<size_t>(n)].op == op; });
  };
  // One token: the first node's rows, or for attention its query's (a prologue may start from
  // another layout, such as one token's [H, 1, D] query).
  const ir::Node& first = function.nodes[static_cast<size_t>(region.nodes.front())];
  const ir::Node& last = function.nodes[static_cast<size_t>(region.nodes.back())];
  const bool one_token = [&] {
    const ir::ValueId rows = region.kind == RegionKind::kAttention && !last.operands.empty() ? last.operands[0] : first.result;
    const auto& shape = function.type(rows).shape;
    return !shape.empty() && shape[0].is_static() && shape[0].value == 1;
  }();
  switch (region.kind) {
    case RegionKind::kGather: return Category::kGather;
    case RegionKind::kCopy: return Category::kCopy;
    case RegionKind::kCollective: return Category::kCollective;
    case RegionKind::kAttention:
      // The per-row form (decode_batch: pos and base per row) is one query per sequence over its own cache rows.
      return one_token || last.operands.size() == 5 ? Category::kAttentionDecode : Category::kAttentionPrefill;
    case RegionKind::kMatmul: {
      // Operand transposes are layouts of the GEMM's operands, not fused work.
      const size_t matmuls = static_cast<size_t>(count(OpKind::kLinear) + count(OpKind::kMatmul));
      const size_t layouts = static_cast<size_t>(count(OpKind::kTranspose) + count(OpKind::kCast));
      const bool fused = matmuls > 1 || region.nodes.size() > matmuls + layouts;
      if (one_token) return fused ? Category::kGemvEpilogue : Category::kGemv;
      return fused ? Category::kGemmEpilogue : Category::kGemm;
    }
    case RegionKind::kFusion:
      if (count(OpKind::kKvAppend) || count(OpKind::kRope)) return Category::kRopeKvAppend;
      if (count(OpKind::kRmsNorm)) return Category::kRmsNorm;
      if (count(OpKind::kLayerNorm)) return Category::kLayerNorm;
      if (count(OpKind::kSoftmax) || count(OpKind::kLogSoftmax)) return Category::kSoftmax;
      if (count(OpKind::kCumsum) || count(OpKind::kCumprod)) return Category::kScan;
      if (std::any_of(region.nodes.begin(), region.nodes.end(), [&](int n) {
            return ir::op_info(function.nodes[static_cast<size_t>(n)].op).op_class == ir::OpClass::kReduction;
          }))
        return Category::kReductionPointwise;
      if (count(OpKind::kIndexCopy)) return Category::kCopy;
      return Category::kElementwise;
  }
  return Category::kElementwise;
}

}  // namespace

RegionSummary summarize_region(const ir::Module& module, const ir::Function& function, const Region& region,
                               const ir::SymbolBindings& bindings) {
  RegionSummary s;
  s.signature = canonical_signature(module, function, region);
  s.signature_hash = hash_hex(s.signature);
  double dominant_flops = -1;
  for (int index : region.nodes) {
    const ir::Node& node = function.nodes[static_cast<size_t>(index)];
    s.op_sequence.emplace_back(ir::op_name(node.op));
    const double flops = node_flops(function, node, bindings);
    s.flops += flops;
    if (flops > dominant_flops) {
      dominant_flops = flops;
      s.dominant_op = std::string(ir::op_name(node.op));
    }
    const auto& out = function.type(node.result).shape;
    if (node.op == OpKind::kLinear || node.op == OpKind::kMatmul) {
      s.reduction_axes.push_back(std::string(ir::op_name(node.op)) + ":K=" + function.type(node.operands[0]).shape.back().to_string());
    } else if (node.op == OpKind::kRmsNorm) {
      s.reduction_axes.push_back("rmsnorm:last=" + out.back().to_string());
    } else if (node.op == OpKind::kAttention) {
      s.reduction_axes.push_back("attention:keys");
      const auto& q = function.type(node.operands[0]);
      const auto& k = function.type(node.operands[1]);
      const double kv_rows = q.shape[0].is_static() && q.shape[0].value == 1 ? static_cast<double>(bindings.L)
                                                                             : static_cast<double>(bindings.resolve(q.shape[0]));
      s.bytes += 2 * kv_rows * static_cast<double>(k.shape[1].value * k.shape[2].value) * static_cast<double>(ir::dtype_size(k.dtype));
      s.depends_on_L = true;
    } else if (node.op == OpKind::kLayerNorm) {
      s.reduction_axes.push_back("layer_norm:last=" + out.back().to_string());
    } else if (is_row_op(node.op)) {
      s.reduction_axes.push_back(std::string(ir::op_name(node.op)) + ":axis=" + std::to_string(node.int_attr("axis", -1)));
    }
    if (node.op == OpKind::kKvAppend) {
      s.bytes += type_bytes(function.type(node.operands[0]), bindings);  // rows written into the cache
    }
  }
  for (ir::ValueId input : region.inputs) {
    s.inputs.push_back(function.type(input));
    if (function.type(input).shape.size() == 3 && function.type(input).shape[0].symbol == ir::Symbol::kL) continue;  // counted as KV reads
    s.bytes += type_bytes(function.type(input), bindings);
  }
  const bool gather = region.kind == RegionKind::kGather;
  for (const auto& name : region.params) {
    s.params.push_back(module.find_param(name)->type);
    if (!gather) s.bytes += type_bytes(s.params.back(), bindings);  // a gather reads only the rows it outputs
  }
  if (gather) s.bytes += type_bytes(function.type(region.outputs.front()), bindings);
  for (ir::ValueId output : region.outputs) {
    const auto& type = function.type(output);
    s.outputs.push_back(type);
    if (!(type.shape.size() == 3 && type.shape[0].symbol == ir::Symbol::kL)) s.bytes += type_bytes(type, bindings);
  }
  for (const auto& types : {&s.inputs, &s.outputs})
    for (const auto& type : *types) {
      s.depends_on_T |= has_symbol(type.shape, ir::Symbol::kT);
      s.depends_on_L |= has_symbol(type.shape, ir::Symbol::kL);
    }
  const ir::Node& first = function.nodes[static_cast<size_t>(region.nodes.front())];
  s.dtype = function.type(first.result).dtype;
  s.intensity = s.bytes > 0 ? s.flops / s.bytes : 0;
  s.category = classify(function, region, s.op_sequence);
  switch (s.category) {
    case Category::kGemv:
    case Category::kGemvEpilogue: s.access_pattern = "weight-streaming"; break;
    case Category::kGemm:
    case Category::kGemmEpilogue:
    case Category::kAttentionPrefill: s.access_pattern = "tiled"; break;
    case Category::kAttentionDecode: s.access_pattern = "kv-scan"; break;
    case Category::kGather: s.access_pattern = "gather"; break;
    case Category::kCollective: s.access_pattern = "collective"; break;
    default: s.access_pattern = "row-wise"; break;
  }
  return s;
}

std::vector<UniqueRegion> unique_regions(const ir::Module& module, const ir::Function& function,
                                         const RegionPartition& partition, const ir::SymbolBindings& bindings) {
  std::vector<UniqueRegion> unique;
  std::map<std::string, size_t> by_signature;
  for (const Region& region : partition.regions) {
    RegionSummary summary = summarize_region(module, function, region, bindings);
    auto it = by_signature.find(summary.signature);
    if (it != by_signature.end()) {
      unique[it->second].sites.push_back(region.index);
      continue;
    }
    by_signature[summary.signature] = unique.size();
    UniqueRegion entry;
    entry.id = static_cast<int>(unique.size());
    entry.function = function.name;
    entry.sites = {region.index};
    entry.summary = std::move(summary);
    unique.push_back(std::move(entry));
  }
  return unique;
}

std::string describe_regions(const ir::Function& function, const RegionPartition& partition,
                             const std::vector<UniqueRegion>& unique) {
  std::string text = "function " + function.name + ": " + std::to_string(function.nodes.size()) + " nodes, " +
                     std::to_string(partition.regions.size()) + " regions, " + std::to_string(unique.size()) + " unique\n";
  for (const UniqueRegion& entry : unique) {
    const RegionSummary& s = entry.summary;
    const Region& first = partition.regions[static_cast<size_t>(entry.sites.front())];
    char numbers[160];
    std::snprintf(numbers, sizeof(numbers), "flops %.4g, bytes %.4g, intensity %.3g", s.flops, s.bytes, s.intensity);
    text += "r" + std::to_string(entry.id) + " " + category_name(s.category) + " (" + region_kind_name(first.kind) +
            ") x" + std::to_string(entry.sites.size()) + " sig " + s.signature_hash + "\n";
    text += "  ops:";
    for (const auto& op : s.op_sequence) text += " " + op;
    text += "\n  in:";
    for (const auto& type : s.inputs) text += " " + type.to_string();
    text += "\n  params:";
    for (const auto& type : s.params) text += " " + type.to_string();
    text += "\n  out:";
    for (const auto& type : s.outputs) text += " " + type.to_string();
    if (!first.states.empty()) {
      text += "\n  writes:";
      for (const auto& state : first.states) text += " @" + state;
    }
    text += "\n  reduces:";
    for (const auto& axis : s.reduction_axes) text += " " + axis;
    text += "\n  " + std::string(numbers) + ", dominant " + s.dominant_op + ", " + s.access_pattern +
            (s.depends_on_T ? ", dynamic T" : "") + (s.depends_on_L ? ", reads cache" : "") + "\n";
  }
  return text;
}

}  // namespace agentcompile::analysis
