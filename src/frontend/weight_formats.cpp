// Parameter storage formats (see weight_formats.h): which parameters keep GGUF blocks or are
// quantized, the --quantize grammar, and a quantized parameter's bytes.
#include "frontend/weight_formats.h"

#include <set>

namespace agentcompile::frontend {

namespace {

using ir::DType;

struct FormatChoice {
  const char* words;  // one of the group sizes and scale types
  int64_t group;
  bool zero_points;
  bool bf16;
  DType dtype;
};

constexpr FormatChoice kInt4[] = {
    {"g32", 32, false, false, DType::kI4G32_F16},     {"g32", 32, false, true, DType::kI4G32_BF16},
    {"g64", 64, false, false, DType::kI4G64_F16},     {"g64", 64, false, true, DType::kI4G64_BF16},
    {"g128", 128, false, false, DType::kI4G128_F16},  {"g128", 128, false, true, DType::kI4G128_BF16},
    {"g32", 32, true, false, DType::kI4G32Z_F16},     {"g32", 32, true, true, DType::kI4G32Z_BF16},
    {"g64", 64, true, false, DType::kI4G64Z_F16},     {"g64", 64, true, true, DType::kI4G64Z_BF16},
    {"g128", 128, true, false, DType::kI4G128Z_F16},  {"g128", 128, true, true, DType::kI4G128Z_BF16},
};

Status bad_spec(const std::string& text, const std::string& why) {
  return error(ErrorCode::kInvalidArgument, "--quantize '" + text + "': " + why +
                                                " (expected int8[:bf16] or int4[:g32|:g64|:g128][:zp][:bf16], e.g. int4:g128)");
}

// How each parameter is read, over every function: (op, operand index) pairs, and whether a linear
// reading it produces a function result (through float casts at most).
struct ParamReads {
  std::set<std::pair<ir::OpKind, size_t>> reads;
  bool output_projection = false;
};

bool reaches_result(const ir::Function& f, ir::ValueId value, const std::vector<std::vector<size_t>>& readers) {
  for (ir::ValueId result : f.results)
    if (result == value) return true;
  for (size_t reader : readers[static_cast<size_t>(value)]) {
    const ir::Node& node = f.nodes[reader];
    if (node.op == ir::OpKind::kCast && ir::is_float(f.type(node.result).dtype) && reaches_result(f, node.result, readers)) return true;
  }
  return false;
}

std::map<std::string, ParamReads> param_reads(const ir::Module& module) {
  std::map<std::string, ParamReads> out;
  for (const ir::Function& f : module.functions) {
    std::vector<std::vector<size_t>> readers(f.values.size());
    for (size_t i = 0; i < f.nodes.size(); ++i)
      for (ir::ValueId operand : f.nodes[i].operands) readers[static_cast<size_t>(operand)].push_back(i);
    for (const ir::Node& node : f.nodes) {
      if (node.op != ir::OpKind::kWeight) continue;
      ParamReads& reads = out[node.string_attr("name")];
      for (size_t reader : readers[static_cast<size_t>(node.result)]) {
        const ir::Node& user = f.nodes[reader];
        for (size_t i = 0; i < user.operands.size(); ++i)
          if (user.operands[i] == node.result) reads.reads.insert({user.op, i});
        if (user.op == ir::OpKind::kLinear && user.operands[1] == node.result && reaches_result(f, user.result, readers))
          reads.output_projection = true;
      }
    }
  }
  return out;
}

bool only_reads(const ParamReads& reads, std::initializer_list<std::pair<ir::OpKind, size_t>> allowed) {
  if (reads.reads.empty()) return false;
  for (const auto& read : reads.reads) {
    bool ok = false;
    for (const auto& a : allowed) ok |= read == a;
    if (!ok) return false;
  }
  return true;
}

// Declares `param` in `format`: the parameter, every weight node that reads it, and (with `row_dtype`)
// attr dtype on the embeddings that gather its rows, which keep returning the float type they did.
void set_format(ir::Module& module, ir::ParamDecl& param, DType format) {
  const DType before = param.type.dtype;
  param.type.dtype = format;
  for (ir::Function& f : module.functions)
    for (const ir::Node& node : f.nodes) {
      if (node.op != ir::OpKind::kWeight || node.string_attr("name") != param.name) continue;
      f.values[static_cast<size_t>(node.result)].type.dtype = format;
      for (ir::Node& user : f.nodes)
        if (user.op == ir::OpKind::kEmbedding && user.operands[0] == node.result)
          user.attrs["dtype"] = std::string(ir::dtype_name(before));
    }
}

std::set<std::string> aliased(const ir::Module& module) {
  std::set<std::string> names;
  for (const ir::ParamDecl& p : module.params)
    if (p.is_alias()) names.insert(p.name), names.insert(p.alias_of);
  return names;
}

// A name for a new parameter (`wanted`, or `wanted` with a number) that no parameter has yet.
std::string free_param_name(const ir::Module& module, const std::string& wanted) {
  std::string name = wanted;
  for (int k = 1; module.find_param(name); ++k) name = wanted + "." + std::to_string(k);
  return name;
}

// Inserts before node `at` of `f` a weight node reading `param` (of `type`) and makes it operand
// `operand` of that node; the nodes after it move one place, and their values' producers with them.
void read_weight_before(ir::Function& f, size_t at, size_t operand, const std::string& param, const ir::TensorType& type) {
  std::set<std::string> names;
  for (const ir::Value& v : f.values) names.insert(v.name);
  std::string name = "lm_head";
  for (int k = 1; names.count(name); ++k) name = "lm_head." + std::to_string(k);
  for (ir::Value& v : f.values)
    if (v.producer >= static_cast<int32_t>(at)) ++v.producer;
  const auto id = static_cast<ir::ValueId>(f.values.size());
  f.values.push_back(ir::Value{name, type, static_cast<int32_t>(at)});
  ir::Node node;
  node.op = ir::OpKind::kWeight;
  node.attrs["name"] = param;
  node.result = id;
  node.loc = f.nodes[at].loc;
  f.nodes.insert(f.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::move(node));
  f.nodes[at + 1].operands[operand] = id;
  // Values in definition order again (arguments, then node results), as a parsed function has them.
  std::vector<ir::ValueId> renamed(f.values.size(), ir::kNoValue);
  std::vector<ir::Value> values;
  auto define = [&](ir::ValueId old) {
    renamed[static_cast<size_t>(old)] = static_cast<ir::ValueId>(values.size());
    values.push_back(f.values[static_cast<size_t>(old)]);
  };
  for (ir::ValueId arg : f.args) define(arg);
  for (const ir::Node& n : f.nodes) define(n.result);
  for (ir::ValueId& arg : f.args) arg = renamed[static_cast<size_t>(arg)];
  for (ir::Node& n : f.nodes) {
    n.result = renamed[static_cast<size_t>(n.result)];
    for (ir::ValueId& v : n.operands) v = renamed[static_cast<size_t>(v)];
  }
  for (ir::ValueId& r : f.results) r = renamed[static_cast<size_t>(r)];
  f.values = std::move(values);
}

// The output projections of `f` that read `table` (linears whose weight operand is a weight node of it
// and whose result is a function result) read `copy` instead, through a weight node of their own.
void redirect_head_reads(ir::Function& f, const std::string& table, const std::string& copy, const ir::TensorType& type) {
  std::vector<std::vector<size_t>> readers(f.values.size());
  for (size_t i = 0; i < f.nodes.size(); ++i)
    for (ir::ValueId operand : f.nodes[i].operands) readers[static_cast<size_t>(operand)].push_back(i);
  std::vector<size_t> heads;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const ir::Node& node = f.nodes[i];
    if (node.op != ir::OpKind::kLinear || node.operands.size() < 2) continue;
    const int32_t producer = f.value(node.operands[1]).producer;
    if (producer < 0) continue;
    const ir::Node& weight = f.nodes[static_cast<size_t>(producer)];
    if (weight.op == ir::OpKind::kWeight && weight.string_attr("name") == table && reaches_result(f, node.result, readers)) heads.push_back(i);
  }
  for (auto it = heads.rbegin(); it != heads.rend(); ++it) read_weight_before(f, *it, 1, copy, type);  // last first: indices hold
}

// --quantize-head: the output projections (a parameter read as a linear's weight whose result is the
// function's, the logits) in `format`. An untied head is declared in it. A head tied to the embedding
// table gets a copy of the table's values of its own, in that format (ir::ParamDecl::values_of), read
// by the head's linears alone; the embedding keeps gathering the table's rows in the checkpoint's dtype.
Status quantize_heads(ir::Module& module, const std::map<std::string, ParamReads>& reads, const std::set<std::string>& in_alias, DType format,
                      const std::string& source) {
  bool any = false;
  for (size_t i = 0; i < module.params.size(); ++i) {  // by index: a tied head's copy is appended
    const std::string name = module.params[i].name;
    const auto it = reads.find(name);
    if (it == reads.end() || !it->second.output_projection) continue;
    const ir::TensorType type = module.params[i].type;
    const std::string at = source + ": --quantize-head " + quantize_spec_text(format) + ": the LM head @" + name + " " + type.to_string();
    if (in_alias.count(name) || type.shape.size() != 2)
      return error(ErrorCode::kUnsupported, at + " is not a matrix of its own (an alias or a fused tensor)");
    if (!ir::is_float(type.dtype))
      return error(ErrorCode::kInvalidArgument, at + " is stored as " + std::string(ir::dtype_name(type.dtype)) +
                                                    " already; --quantize-head applies to float heads (a GGUF file's with --dequantize)");
    if (std::string problem = ir::row_length_problem(format, type.shape[1].value); !problem.empty())
      return error(ErrorCode::kInvalidArgument, at + ": " + problem + " (choose a group size that divides " + std::to_string(type.shape[1].value) + ")");
    any = true;
    if (only_reads(it->second, {{ir::OpKind::kLinear, 1}})) {
      set_format(module, module.params[i], format);
      continue;
    }
    ir::ParamDecl copy{free_param_name(module, "lm_head.weight"), ir::TensorType{format, type.shape}};
    copy.values_of = name;
    const std::string copy_name = copy.name;
    const ir::TensorType copy_type = copy.type;
    module.params.push_back(std::move(copy));
    for (ir::Function& f : module.functions) redirect_head_reads(f, name, copy_name, copy_type);
  }
  if (!any)
    return error(ErrorCode::kInvalidArgument, source + ": --quantize-head " + quantize_spec_text(format) +
                                                  ": no output projection (a linear whose result is the logits) reads a parameter of its own");
  return Status::ok();
}

}  // namespace

std::string WeightFormatOptions::tag() const {
  auto words = [](DType format) {
    std::string text = quantize_spec_text(format);
    for (char& c : text)
      if (c == ':') c = '-';
    return text;
  };
  std::string text = quantize ? words(*quantize) : "";
  if (quantize_head) text += (text.empty() ? "" : "-") + std::string("head-") + words(*quantize_head);
  if (!dequantize) return text;
  return text.empty() ? "dequantized" : "dequantized-" + text;
}

Expected<DType> parse_quantize_spec(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t colon = text.find(':', at);
    parts.push_back(text.substr(at, colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  const std::string& kind = parts[0];
  if (kind != "int8" && kind != "int4") return bad_spec(text, "the format must be int8 or int4");
  std::string group;
  bool zero_points = false, bf16 = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part == "bf16" && !bf16) {
      bf16 = true;
    } else if (part == "zp" && !zero_points && kind == "int4") {
      zero_points = true;
    } else if (part.size() > 1 && part[0] == 'g' && group.empty() && kind == "int4") {
      group = part;
      if (group != "g32" && group != "g64" && group != "g128")
        return bad_spec(text, "the group size must be 32, 64 or 128, not " + part.substr(1));
    } else {
      return bad_spec(text, "'" + part + "' is not an option of " + kind + " here");
    }
  }
  if (kind == "int8") return bf16 ? DType::kI8_BF16 : DType::kI8_F16;
  if (group.empty()) group = "g128";
  for (const FormatChoice& choice : kInt4)
    if (group == choice.words && choice.zero_points == zero_points && choice.bf16 == bf16) return choice.dtype;
  return bad_spec(text, "no such format");
}

std::string quantize_spec_text(DType format) {
  const ir::QuantLayout layout = ir::quant_layout(format);
  const std::string scale = layout.scale == DType::kBF16 ? ":bf16" : "";
  if (layout.kind == ir::QuantLayout::Kind::kInt8Channel) return "int8" + scale;
  return "int4:g" + std::to_string(layout.group) + (layout.zero_points ? ":zp" : "") + scale;
}

bool gpu_reads_natively(DType format) {
  const ir::QuantLayout::Kind kind = ir::quant_layout(format).kind;
  return kind == ir::QuantLayout::Kind::kInt8Channel || kind == ir::QuantLayout::Kind::kInt8Group ||
         kind == ir::QuantLayout::Kind::kInt4Group;
}

Expected<WeightFormatOptions> weight_format_options(const std::string& quantize, bool dequantize, bool gpu, const std::string& quantize_head) {
  WeightFormatOptions options;
  options.dequantize = dequantize;
  options.gpu = gpu;
  if (!quantize.empty()) {
    AC_ASSIGN_OR_RETURN(options.quantize, parse_quantize_spec(quantize));
    // With --dequantize too, a GGUF file's blocks are dequantized and its linear weights quantized
    // again from those values (asked for explicitly: it adds a second rounding error).
  }
  if (!quantize_head.empty()) {
    auto head = parse_quantize_spec(quantize_head);
    if (!head) return error(ErrorCode::kInvalidArgument, "--quantize-head: " + head.status().message());
    options.quantize_head = *head;
  }
  return options;
}

Status apply_weight_formats(ir::Module& module, const std::map<std::string, DType>& stored, const WeightFormatOptions& options,
                            const std::string& source) {
  if (options.quantize_head) {
    // The head first, while it is still the float parameter the builder declared (a GGUF table kept in
    // its blocks is refused there), then everything else.
    AC_TRY(quantize_heads(module, param_reads(module), aliased(module), *options.quantize_head, source));
  }
  if ((options.dequantize && !options.quantize) || (stored.empty() && !options.quantize)) return Status::ok();
  if (options.gpu && !options.quantize && !options.quantize_head) {
    // A GGUF table in Q8_0 / Q4_0 / Q4_1 / Q4_K that a head is tied to: the embedding gathers it
    // dequantized (no GPU kernel gathers blocks), and the head reads a copy of its own in the row format
    // holding its values (Q4_K's scales rounded to f16, ir::transcode_ggml_rows), at the blocks' size
    // (--quantize-head's copy, transcoded rather than quantized).
    const std::map<std::string, ParamReads> reads = param_reads(module);
    const auto table = std::find_if(reads.begin(), reads.end(), [&](const auto& entry) {
      return stored.count(entry.first) && entry.second.output_projection && !only_reads(entry.second, {{ir::OpKind::kLinear, 1}});
    });
    if (table != reads.end())
      if (const std::optional<DType> row_format = ir::ggml_row_format(stored.at(table->first)))
        AC_TRY(quantize_heads(module, reads, aliased(module), *row_format, source));
  }
  const std::map<std::string, ParamReads> reads = param_reads(module);
  const std::set<std::string> in_alias = aliased(module);
  for (ir::ParamDecl& param : module.params) {
    const auto it = reads.find(param.name);
    if (it == reads.end() || in_alias.count(param.name) || param.type.shape.size() != 2) continue;
    const ParamReads& how = it->second;
    DType format = param.type.dtype;
    if (const auto kept = stored.find(param.name); kept != stored.end() && !options.quantize) {
      if (!only_reads(how, {{ir::OpKind::kLinear, 1}, {ir::OpKind::kEmbedding, 0}})) continue;  // dequantized at load
      format = kept->second;
      if (options.gpu && !gpu_reads_natively(format)) {
        // Q8_0 / Q4_0 / Q4_1 / Q4_K matrices that only linears read run as the row format holding their
        // values (read_packed transcodes the blocks; Q4_K's scales rounded to f16); tables read by an
        // embedding, and Q5_K / Q6_K, are dequantized at load: no GPU kernel reads them yet.
        const std::optional<DType> row_format = ir::ggml_row_format(format);
        if (!row_format || !only_reads(how, {{ir::OpKind::kLinear, 1}})) continue;
        format = *row_format;
      }
    } else if (options.quantize) {
      if (!only_reads(how, {{ir::OpKind::kLinear, 1}}) || how.output_projection) continue;
      format = *options.quantize;
    } else {
      continue;
    }
    if (std::string problem = ir::row_length_problem(format, param.type.shape[1].value); !problem.empty())
      return error(ErrorCode::kInvalidArgument, source + ": " + param.name + " " + param.type.to_string() + " cannot be stored as " +
                                                    std::string(ir::dtype_name(format)) + ": " + problem +
                                                    (options.quantize ? " (choose a group size that divides " +
                                                                            std::to_string(param.type.shape[1].value) + ")"
                                                                      : ""));
    set_format(module, param, format);
  }
  return Status::ok();
}

Status read_packed(const WeightStore& store, const std::string& name, DType format, std::vector<uint8_t>& out, ir::QuantError* error_out) {
  const TensorInfo* info = store.find(name);
  if (!info) return error(ErrorCode::kNotFound, store.source() + ": no tensor " + store.tensor_label(name));
  ir::TensorType type{format, {}};
  for (int64_t dim : info->shape) type.shape.push_back(ir::Dim::of(dim));
  const std::string at = store.source() + ": tensor " + store.tensor_label(name) + " as " + type.to_string();
  if (!ir::is_quantized(format) || type.shape.size() != 2) return error(ErrorCode::kInvalidArgument, at + ": not a quantized matrix");
  if (std::string problem = ir::row_length_problem(format, info->shape[1]); !problem.empty())
    return error(ErrorCode::kInvalidArgument, at + ": " + problem);
  if (info->dtype == format) {
    AC_TRY(store.read_stored(name, format, out));
    if (error_out) *error_out = {};
    if (out.size() != ir::tensor_bytes(type))
      return error(ErrorCode::kMismatch, at + ": the file holds " + std::to_string(out.size()) + " bytes, the format needs " +
                                             std::to_string(ir::tensor_bytes(type)));
    return Status::ok();
  }
  if (ir::quant_layout(format).kind == ir::QuantLayout::Kind::kGgml)
    return error(ErrorCode::kMismatch, at + ": the file stores it as " + std::string(ir::dtype_name(info->dtype)));
  if (ir::ggml_row_format(info->dtype) == format) {
    // GGUF blocks into the row format that holds their values: the same values, bit for bit.
    std::vector<uint8_t> blocks;
    AC_TRY(store.read_stored(name, info->dtype, blocks));
    ir::TensorType stored_type = type;
    stored_type.dtype = info->dtype;
    if (blocks.size() != ir::tensor_bytes(stored_type))
      return error(ErrorCode::kMismatch, at + ": the file holds " + std::to_string(blocks.size()) + " bytes of " +
                                             std::string(ir::dtype_name(info->dtype)) + ", its shape needs " +
                                             std::to_string(ir::tensor_bytes(stored_type)));
    out.assign(ir::tensor_bytes(type), 0);
    if (error_out) *error_out = {};
    return ir::transcode_ggml_rows(info->dtype, blocks.data(), info->shape[0], info->shape[1], out.data()).with_context(at);
  }
  if (ir::holds_ggml_blocks_only(format))
    return error(ErrorCode::kInvalidArgument, at + ": " + std::string(ir::dtype_name(format)) +
                                                  " holds GGUF blocks' values only; the file stores " + std::string(ir::dtype_name(info->dtype)));
  std::vector<float> values;
  AC_TRY(store.read_f32(name, values));
  const int64_t rows = info->shape[0], K = info->shape[1];
  if (static_cast<int64_t>(values.size()) != rows * K)
    return error(ErrorCode::kMismatch, at + ": the store gave " + std::to_string(values.size()) + " values");
  out.assign(ir::tensor_bytes(type), 0);
  return ir::quantize_rows(format, values.data(), rows, K, out.data(), error_out).with_context(at);
}

InterpreterLoaders interpreter_loaders(const WeightStore& store) {
  return {[&store](const std::string& name, std::vector<float>& out) { return store.read_f32(name, out); },
          [&store](const std::string& name, DType format, std::vector<uint8_t>& out) { return read_packed(store, name, format, out); }};
}

}  // namespace agentcompile::frontend
