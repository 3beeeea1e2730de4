// How a model's weights are stored in its IR module: as the checkpoint holds them, GGUF blocks kept
// in their own formats (the default), or a checkpoint's matrices quantized at compile time
// (`--quantize int8|int4[:gG]`). A parameter's format is its IR type (ir/quant.h); the analyzer and
// the planner see the same matmul regions, with a quantized weight operand.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "frontend/weights.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/quant.h"

namespace agentcompile::frontend {

struct WeightFormatOptions {
  // Linear weights are quantized to this row format (i8_*, i4*); nullopt: kept as the checkpoint holds them.
  std::optional<ir::DType> quantize;
  // The output projection (the LM head) in this row format; nullopt: as the checkpoint holds it. A head
  // tied to the embedding table gets a copy of its own in this format (ir::ParamDecl::values_of).
  std::optional<ir::DType> quantize_head;
  // GGUF: every tensor dequantized to the model's float type at load, as before native formats;
  // with `quantize` too, the linear weights are then quantized again from those values.
  bool dequantize = false;
  // The module is compiled for (or run on) the GPU: GGUF blocks no kernel family reads yet
  // (gpu_reads_natively) are dequantized at load like --dequantize; the CPU interpreter reads all.
  bool gpu = false;

  // Short words for directory names and messages: "", "int4-g128", "int8", "dequantized",
  // "dequantized-int8".
  std::string tag() const;
};

// Parses --quantize's value: int8[:bf16] or int4[:gG][:zp][:bf16], G one of 32, 64, 128 (default 128),
// zp for zero points (asymmetric groups), bf16 for bf16 scales (default f16). Errors say the grammar.
Expected<ir::DType> parse_quantize_spec(const std::string& text);
// The spelling parse_quantize_spec reads back: "int4:g128", "int8:bf16", "int4:g64:zp".
std::string quantize_spec_text(ir::DType format);
// The options of a compile's --quantize text ("" for none), --dequantize flag and --quantize-head text
// (the same grammar as --quantize; "" for none); `gpu` as above.
Expected<WeightFormatOptions> weight_format_options(const std::string& quantize, bool dequantize, bool gpu,
                                                    const std::string& quantize_head = "");

// Whether the GPU kernel families read `format` as stored: the row formats (qgemv), not yet GGUF's
// blocks (a GGUF file runs dequantized on the GPU until they do).
bool gpu_reads_natively(ir::DType format);

// Sets the storage formats of `module`'s parameters, before anything else sees the module:
//   - GGUF (unless options.dequantize, or options.gpu for a type gpu_reads_natively refuses): a
//     parameter stored in a quantized GGUF type (`stored`: HF name
//     -> stored dtype) whose every read is a linear's weight or an embedding's table keeps that type;
//     its embeddings name the model's float type (attr dtype). Others stay in the model's dtype.
//   - options.quantize: every parameter read only as the weight of linears is declared in that
//     format, except the output projection (a weight whose linear's result is a function result, through
//     float casts at most): the logits stay in the checkpoint's precision, as AWQ and GPTQ keep
//     lm_head. A parameter also read as an embedding table keeps its dtype.
//   - options.quantize_head: the output projection in that format, tied or not (a tied head through a
//     copy of the table, read by the head alone); first, before the GGUF and --quantize formats.
// Errors name `source` and the parameter: a row length the format cannot store (a group size that does
// not divide K).
Status apply_weight_formats(ir::Module& module, const std::map<std::string, ir::DType>& stored, const WeightFormatOptions& options,
                            const std::string& source);

// A quantized parameter's bytes in `format`: the store's own bytes when it holds the tensor so (GGUF),
// else its values quantized to nearest (ir::quantize_rows; `error`, when given, receives the
// quantization error, zero for stored bytes). The tensor must be a matrix. Errors name the store and
// the tensor.
Status read_packed(const WeightStore& store, const std::string& name, ir::DType format, std::vector<uint8_t>& out,
                   ir::QuantError* error = nullptr);

// The reference interpreter's loaders over `store` (which must outlive them): values as f32, and
// quantized parameters through read_packed, so the interpreter dequantizes exactly what a kernel reads.
struct InterpreterLoaders {
  ir::WeightLoader values;
  ir::PackedWeightLoader packed;
};
InterpreterLoaders interpreter_loaders(const WeightStore& store);

}  // namespace agentcompile::frontend
