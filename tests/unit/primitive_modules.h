// Small IR modules of primitive ops, one per KernelBench-style problem (level 1: activations,
// softmax, norms, reductions, scans, losses, matmuls of every shape, layout copies and gathers;
// level 2: GEMMs with pointwise epilogues), as a graph captured from PyTorch would spell them once
// nothing recognized them. Shapes are small; the structure is what the published problems compute.
// Shared by tests/unit/primitive_families_test.cpp (regions, plans, NVRTC) and
// tests/gpu/primitive_admission_test.cpp (validation against the interpreter).
#pragma once

#include <string>
#include <vector>

#include "ir/text.h"

namespace agentcompile::testing {

struct PrimitiveModule {
  std::string name;
  std::string kernelbench;             // the problems it stands for ("L1/19 ReLU")
  std::vector<std::string> families;   // families that must implement some region of it
  std::string text;                    // IR text; $DT stands for the activation dtype
  std::vector<ir::DType> dtypes = {ir::DType::kF32, ir::DType::kF16};
};

inline std::string with_dtype(std::string text, ir::DType dtype) {
  const std::string dt(ir::dtype_name(dtype));
  for (size_t at = text.find("$DT"); at != std::string::npos; at = text.find("$DT", at + dt.size())) text.replace(at, 3, dt);
  return text;
}

// A one-function module "f" around `body` (the nodes and the return line).
inline std::string unary_module(const std::string& input, const std::string& output, const std::string& body,
                                const std::string& decls = "") {
  return "module m {\n" + decls + "  func @f(" + input + ") -> (" + output + ") {\n" + body + "  }\n}\n";
}

inline std::vector<PrimitiveModule> primitive_modules() {
  std::vector<PrimitiveModule> out;
  auto add = [&](std::string name, std::string kb, std::vector<std::string> families, std::string text,
                 std::vector<ir::DType> dtypes = {ir::DType::kF32, ir::DType::kF16}) {
    out.push_back({std::move(name), std::move(kb), std::move(families), std::move(text), std::move(dtypes)});
  };
  const std::string x = "%x: $DT[64, 1000]", y = "$DT[64, 1000]";
  auto c = [](const std::string& name, const std::string& value) {
    return "    %" + name + " = constant {dtype = \"$DT\", shape = [], value = " + value + "} : $DT[]\n";
  };
  // Activations (level 1, 19-32 and 88): elementwise chains with constants.
  add("relu", "L1/19 ReLU", {"elementwise"}, unary_module(x, y, "    %0 = relu(%x) : $DT[64, 1000]\n    return %0\n"));
  add("leaky_relu", "L1/20 LeakyReLU", {"elementwise"},
      unary_module(x, y, "    %0 = leaky_relu(%x) {slope = 0.01} : $DT[64, 1000]\n    return %0\n"));
  add("sigmoid_tanh", "L1/21 Sigmoid, L1/22 Tanh", {"elementwise"},
      unary_module(x, y, "    %0 = sigmoid(%x) : $DT[64, 1000]\n    %1 = tanh(%0) : $DT[64, 1000]\n    return %1\n"));
  add("swish", "L1/25 Swish", {"elementwise"},
      unary_module(x, y, "    %0 = sigmoid(%x) : $DT[64, 1000]\n    %1 = mul(%x, %0) : $DT[64, 1000]\n    return %1\n"));
  add("gelu", "L1/26 GELU", {"elementwise"},
      unary_module(x, y, "    %0 = gelu(%x) : $DT[64, 1000]\n    %1 = gelu(%0) {approximate = \"tanh\"} : $DT[64, 1000]\n    return %1\n"));
  add("selu", "L1/27 SELU, L1/31 ELU", {"elementwise"},
      unary_module(x, y,
                   c("zero", "0.0") + c("scale", "1.0507009873554805") + c("alpha_scale", "1.7580993408473766") +
                       "    %p = gt(%x, %zero) : bool[64, 1000]\n    %a = mul(%x, %scale) : $DT[64, 1000]\n"
                       "    %e = expm1(%x) : $DT[64, 1000]\n    %b = mul(%e, %alpha_scale) : $DT[64, 1000]\n"
                       "    %0 = where(%p, %a, %b) : $DT[64, 1000]\n    return %0\n"));
  add("hardsigmoid", "L1/28 HardSigmoid, L1/32 HardTanh", {"elementwise"},
      unary_module(x, y,
                   c("six", "6.0") + c("half", "0.5") +
                       "    %0 = div(%x, %six) : $DT[64, 1000]\n    %1 = add(%0, %half) : $DT[64, 1000]\n"
                       "    %2 = clamp(%1) {hi = 1.0, lo = 0.0} : $DT[64, 1000]\n    %3 = clamp(%2) {lo = -1.0} : $DT[64, 1000]\n"
                       "    return %3\n"));
  add("softplus", "L1/29 Softplus, L1/30 Softsign", {"elementwise"},
      unary_module(x, y,
                   c("threshold", "20.0") + c("one", "1.0") +
                       "    %p = gt(%x, %threshold) : bool[64, 1000]\n    %e = exp(%x) : $DT[64, 1000]\n"
                       "    %l = log1p(%e) : $DT[64, 1000]\n    %s = where(%p, %x, %l) : $DT[64, 1000]\n"
                       "    %a = abs(%s) : $DT[64, 1000]\n    %d = add(%a, %one) : $DT[64, 1000]\n"
                       "    %0 = div(%s, %d) : $DT[64, 1000]\n    return %0\n"));
  add("new_gelu", "L1/88 MinGPTNewGelu", {"elementwise"},
      unary_module(x, y,
                   c("half", "0.5") + c("three", "3.0") + c("k", "0.044715") + c("s", "0.7978845608028654") + c("one", "1.0") +
                       "    %0 = mul(%half, %x) : $DT[64, 1000]\n    %1 = pow(%x, %three) : $DT[64, 1000]\n"
                       "    %2 = mul(%k, %1) : $DT[64, 1000]\n    %3 = add(%x, %2) : $DT[64, 1000]\n"
                       "    %4 = mul(%s, %3) : $DT[64, 1000]\n    %5 = tanh(%4) : $DT[64, 1000]\n"
                       "    %6 = add(%one, %5) : $DT[64, 1000]\n    %7 = mul(%0, %6) : $DT[64, 1000]\n    return %7\n"));
  // Every unary math op, in its domain (abs first where the op needs positive inputs).
  add("unary_math", "primitive unary ops", {"elementwise"},
      unary_module(x, y,
                   c("one", "1.0") +
                       "    %a = abs(%x) : $DT[64, 1000]\n    %p = add(%a, %one) : $DT[64, 1000]\n"
                       "    %0 = log(%p) : $DT[64, 1000]\n    %1 = log1p(%a) : $DT[64, 1000]\n    %2 = sqrt(%a) : $DT[64, 1000]\n"
                       "    %3 = rsqrt(%p) : $DT[64, 1000]\n    %4 = reciprocal(%p) : $DT[64, 1000]\n    %5 = expm1(%x) : $DT[64, 1000]\n"
                       "    %6 = erf(%x) : $DT[64, 1000]\n    %7 = sin(%x) : $DT[64, 1000]\n    %8 = cos(%x) : $DT[64, 1000]\n"
                       "    %9 = floor(%x) : $DT[64, 1000]\n    %10 = ceil(%x) : $DT[64, 1000]\n    %11 = round(%x) : $DT[64, 1000]\n"
                       "    %12 = sign(%x) : $DT[64, 1000]\n    %13 = neg(%x) : $DT[64, 1000]\n    %14 = exp(%13) : $DT[64, 1000]\n"
                       "    %s0 = add(%0, %1) : $DT[64, 1000]\n    %s1 = add(%s0, %2) : $DT[64, 1000]\n    %s2 = add(%s1, %3) : $DT[64, 1000]\n"
                       "    %s3 = add(%s2, %4) : $DT[64, 1000]\n    %s4 = add(%s3, %5) : $DT[64, 1000]\n    %s5 = add(%s4, %6) : $DT[64, 1000]\n"
                       "    %s6 = add(%s5, %7) : $DT[64, 1000]\n    %s7 = add(%s6, %8) : $DT[64, 1000]\n    %s8 = add(%s7, %9) : $DT[64, 1000]\n"
                       "    %s9 = add(%s8, %10) : $DT[64, 1000]\n    %s10 = add(%s9, %11) : $DT[64, 1000]\n"
                       "    %s11 = add(%s10, %12) : $DT[64, 1000]\n    %s12 = add(%s11, %14) : $DT[64, 1000]\n    return %s12\n"));
  // Binary ops with broadcasting, comparisons to bool outputs, logical ops, casts to and from bool
  // and i32, and i32 arithmetic (integer division truncates). The integers come from floor(4x), which
  // both sides compute exactly, so no truncation can differ.
  add("binary_bool_int", "comparisons, where, casts", {"elementwise"},
      unary_module("%x: $DT[32, 256], %y: $DT[256], %m: bool[32, 256]", "$DT[32, 256], bool[32, 256], i32[32, 256]",
                   c("two", "2.0") +
                       "    %0 = maximum(%x, %y) : $DT[32, 256]\n    %1 = minimum(%x, %y) : $DT[32, 256]\n"
                       "    %a = abs(%x) : $DT[32, 256]\n    %2 = pow(%a, %two) : $DT[32, 256]\n"
                       "    %3 = sub(%0, %1) : $DT[32, 256]\n    %4 = add(%3, %2) : $DT[32, 256]\n"
                       "    %lt = lt(%x, %y) : bool[32, 256]\n    %ge = ge(%x, %y) : bool[32, 256]\n    %eq = eq(%x, %y) : bool[32, 256]\n"
                       "    %ne = ne(%lt, %ge) : bool[32, 256]\n    %and = logical_and(%ne, %m) : bool[32, 256]\n"
                       "    %or = logical_or(%and, %eq) : bool[32, 256]\n    %not = logical_not(%or) : bool[32, 256]\n"
                       "    %le = le(%x, %y) : bool[32, 256]\n    %gt = gt(%x, %y) : bool[32, 256]\n"
                       "    %b = logical_and(%not, %le) : bool[32, 256]\n    %bb = logical_or(%b, %gt) : bool[32, 256]\n"
                       "    %f = cast(%m) {dtype = \"$DT\"} : $DT[32, 256]\n    %5 = mul(%4, %f) : $DT[32, 256]\n"
                       "    %four = constant {dtype = \"$DT\", shape = [], value = 4.0} : $DT[]\n    %x4 = mul(%x, %four) : $DT[32, 256]\n"
                       "    %fl = floor(%x4) : $DT[32, 256]\n"
                       "    %i = cast(%fl) {dtype = \"i32\"} : i32[32, 256]\n    %three = constant {dtype = \"i32\", shape = [], value = 3.0} : i32[]\n"
                       "    %q = div(%i, %three) : i32[32, 256]\n    %n = neg(%q) : i32[32, 256]\n    %ia = abs(%n) : i32[32, 256]\n"
                       "    %is = sign(%n) : i32[32, 256]\n    %ir = add(%ia, %is) : i32[32, 256]\n"
                       "    %mb = cast(%ir) {dtype = \"bool\"} : bool[32, 256]\n    %mm = logical_and(%mb, %bb) : bool[32, 256]\n"
                       "    return %5, %mm, %ir\n"));
  // Softmax and log_softmax over rows (L1/23, L1/24), and over one long row (split form).
  add("softmax", "L1/23 Softmax", {"softmax"},
      unary_module("%x: $DT[32, 4096]", "$DT[32, 4096]", "    %0 = softmax(%x) {axis = 1} : $DT[32, 4096]\n    return %0\n"));
  add("log_softmax", "L1/24 LogSoftmax", {"softmax"},
      unary_module("%x: $DT[32, 4096]", "$DT[32, 4096]", "    %0 = log_softmax(%x) {axis = 1} : $DT[32, 4096]\n    return %0\n"));
  add("log_softmax_long", "L1/24 LogSoftmax (long rows)", {"softmax"},
      unary_module("%x: $DT[2, 65536]", "$DT[2, 65536]", "    %0 = log_softmax(%x) {axis = -1} : $DT[2, 65536]\n    return %0\n"));
  // Norms: LayerNorm with and without affine (L1/40), over one long row (split form); L1 and L2
  // norms (L1/38, L1/39) and a mean over a middle axis (L1/36 RMSNorm) as reductions with a
  // broadcast divide after them.
  add("layer_norm", "L1/40 LayerNorm", {"layernorm"},
      unary_module("%x: $DT[64, 1024]", "$DT[64, 1024]",
                   "    %w = weight {name = \"ln.weight\"} : $DT[1024]\n    %b = weight {name = \"ln.bias\"} : $DT[1024]\n"
                   "    %0 = layer_norm(%x, %w, %b) {eps = 1e-5} : $DT[64, 1024]\n    return %0\n",
                   "  param @ln.weight : $DT[1024]\n  param @ln.bias : $DT[1024]\n"));
  add("layer_norm_long", "L1/40 LayerNorm (a whole image per row)", {"layernorm"},
      unary_module("%x: $DT[2, 262144]", "$DT[2, 262144]", "    %0 = layer_norm(%x) {eps = 1e-5} : $DT[2, 262144]\n    return %0\n"));
  add("l1_norm", "L1/38 L1Norm", {"reduction", "elementwise"},
      unary_module("%x: $DT[32, 4095]", "$DT[32, 4095]",
                   "    %a = abs(%x) : $DT[32, 4095]\n    %m = reduce_mean(%a) {axis = 1, keepdim = 1} : $DT[32, 1]\n"
                   "    %0 = div(%x, %m) : $DT[32, 4095]\n    return %0\n"));
  add("l2_norm", "L1/39 L2Norm", {"reduction", "elementwise"},
      unary_module("%x: $DT[32, 4095]", "$DT[32, 4095]",
                   "    %s = mul(%x, %x) : $DT[32, 4095]\n    %t = reduce_sum(%s) {axis = 1, keepdim = 1} : $DT[32, 1]\n"
                   "    %n = sqrt(%t) : $DT[32, 1]\n    %0 = div(%x, %n) : $DT[32, 4095]\n    return %0\n"));
  add("rms_middle_axis", "L1/36 RMSNorm (over features, dim 1)", {"columns", "elementwise"},
      unary_module("%x: $DT[4, 64, 32, 32]", "$DT[4, 64, 32, 32]",
                   c("eps", "1e-5") +
                       "    %s = mul(%x, %x) : $DT[4, 64, 32, 32]\n    %m = reduce_mean(%s) {axis = 1, keepdim = 1} : $DT[4, 1, 32, 32]\n"
                       "    %e = add(%m, %eps) : $DT[4, 1, 32, 32]\n    %r = sqrt(%e) : $DT[4, 1, 32, 32]\n"
                       "    %0 = div(%x, %r) : $DT[4, 64, 32, 32]\n    return %0\n"));
  add("frobenius", "L1/37 FrobeniusNorm, L1/94 MSELoss (a reduction over every element)", {"elementwise", "reduction"},
      unary_module("%x: $DT[16, 64, 64]", "$DT[16, 64, 64]",
                   "    %s = mul(%x, %x) : $DT[16, 64, 64]\n    %f = reshape(%s) {shape = [65536]} : $DT[65536]\n"
                   "    %t = reduce_sum(%f) {axis = 0} : $DT[]\n    %n = sqrt(%t) : $DT[]\n    %0 = div(%x, %n) : $DT[16, 64, 64]\n"
                   "    return %0\n"));
  // pow of a signed base (L1/94's (predictions - targets) ** 2): kernels build with --use_fast_math, where
  // powf is exp2(b * log2(a)) and NaN for a negative base; squares, cubes and other integral exponents
  // must keep the reference's values and signs. The base is scaled by 1/8 so that its fourth power stays
  // finite in f16 for every input admission draws (heavy-tailed draws reach |x - y| = 60).
  add("pow_signed", "L1/94 MSELoss ((x - y) ** 2), integral powers of a signed base", {"elementwise"},
      unary_module("%x: $DT[64, 1000], %y: $DT[64, 1000]", "$DT[64, 1000]",
                   c("two", "2.0") + c("three", "3.0") + c("four", "4.0") + c("eighth", "0.125") +
                       "    %e = sub(%x, %y) : $DT[64, 1000]\n    %d = mul(%e, %eighth) : $DT[64, 1000]\n"
                       "    %s = pow(%d, %two) : $DT[64, 1000]\n"
                       "    %k = pow(%d, %three) : $DT[64, 1000]\n    %q = pow(%d, %four) : $DT[64, 1000]\n"
                       "    %a = add(%s, %k) : $DT[64, 1000]\n    %0 = add(%a, %q) : $DT[64, 1000]\n    return %0\n"));
  // Reductions over dim 1 of [B, D1, D2] (L1/47-53): the column family.
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "argmax", "argmin"}) {
    const bool index = std::string(op).rfind("arg", 0) == 0;
    const std::string t = index ? "i32" : "$DT";
    add(std::string(op) + "_dim1", "L1/47-53 reductions over a dimension", {"columns"},
        unary_module("%x: $DT[8, 256, 255]", t + "[8, 255]",
                     "    %0 = " + std::string(op) + "(%x) {axis = 1} : " + t + "[8, 255]\n    return %0\n"));
  }
  add("sum_dim1_keepdim", "L1/47 Sum reduction (keepdim)", {"columns"},
      unary_module("%x: $DT[8, 256, 256]", "$DT[8, 1, 256]",
                   "    %0 = reduce_sum(%x) {axis = 1, keepdim = 1} : $DT[8, 1, 256]\n    return %0\n"));
  add("batch_mean", "L2/33 BatchNorm statistics (over the batch)", {"columns"},
      unary_module("%x: $DT[1024, 512]", "$DT[512]", "    %0 = reduce_mean(%x) {axis = 0} : $DT[512]\n    return %0\n"));
  add("prod_last", "reduce_prod, argmin over rows", {"reduction"},
      unary_module("%x: $DT[64, 300]", "$DT[64], i32[64, 1]",
                   "    %0 = reduce_prod(%x) {axis = 1} : $DT[64]\n    %1 = argmin(%x) {axis = 1, keepdim = 1} : i32[64, 1]\n"
                   "    return %0, %1\n"));
  // Scans (L1/89-93).
  add("cumsum", "L1/89 cumsum", {"scan"},
      unary_module("%x: $DT[64, 4000]", "$DT[64, 4000]", "    %0 = cumsum(%x) {axis = 1} : $DT[64, 4000]\n    return %0\n"));
  add("cumprod", "L1/90 cumprod", {"scan"},
      unary_module("%x: $DT[64, 4000]", "$DT[64, 4000]", "    %0 = cumprod(%x) {axis = 1} : $DT[64, 4000]\n    return %0\n"));
  add("cumsum_reverse", "L1/91 cumsum_reverse", {"copy", "scan"},
      unary_module("%x: $DT[64, 4000]", "$DT[64, 4000]",
                   "    %0 = flip(%x) {axis = 1} : $DT[64, 4000]\n    %1 = cumsum(%0) {axis = 1} : $DT[64, 4000]\n"
                   "    %2 = flip(%1) {axis = 1} : $DT[64, 4000]\n    return %2\n"));
  add("cumsum_exclusive", "L1/92 cumsum_exclusive", {"copy", "scan"},
      unary_module("%x: $DT[64, 4000]", "$DT[64, 4000]",
                   "    %0 = slice(%x) {axis = 1, length = 3999, start = 0} : $DT[64, 3999]\n"
                   "    %1 = cumsum(%0) {axis = 1} : $DT[64, 3999]\n"
                   "    %z = constant {dtype = \"$DT\", shape = [64, 1], value = 0.0} : $DT[64, 1]\n"
                   "    %2 = concat(%z, %1) {axis = 1} : $DT[64, 4000]\n    return %2\n"));
  add("cumsum_masked", "L1/93 masked_cumsum", {"scan"},
      unary_module("%x: $DT[64, 4000], %m: bool[64, 4000]", "$DT[64, 4000]",
                   "    %f = cast(%m) {dtype = \"$DT\"} : $DT[64, 4000]\n    %0 = mul(%x, %f) : $DT[64, 4000]\n"
                   "    %1 = cumsum(%0) {axis = 1} : $DT[64, 4000]\n    return %1\n"));
  add("cumsum_dim0", "cumsum over a leading axis", {"columns"},
      unary_module("%x: $DT[300, 128]", "$DT[300, 128]", "    %0 = cumsum(%x) {axis = 0} : $DT[300, 128]\n    return %0\n"));
  // Losses (L1/94-100): elementwise chains, then a mean over every element (a reshape to one row).
  add("hinge_loss", "L1/100 HingeLoss, L1/96 HuberLoss", {"elementwise", "reduction"},
      unary_module("%p: $DT[128, 512], %t: $DT[128, 512]", "$DT[]",
                   c("one", "1.0") +
                       "    %0 = mul(%p, %t) : $DT[128, 512]\n    %1 = sub(%one, %0) : $DT[128, 512]\n"
                       "    %2 = clamp(%1) {lo = 0.0} : $DT[128, 512]\n    %3 = reshape(%2) {shape = [65536]} : $DT[65536]\n"
                       "    %4 = reduce_mean(%3) {axis = 0} : $DT[]\n    return %4\n"));
  add("cross_entropy", "L1/95 CrossEntropyLoss", {"softmax", "gather", "reduction"},
      unary_module("%x: $DT[64, 1000], %t: i32[64]", "$DT[]",
                   "    %0 = log_softmax(%x) {axis = 1} : $DT[64, 1000]\n    %t2 = reshape(%t) {shape = [64, 1]} : i32[64, 1]\n"
                   "    %1 = gather(%0, %t2) {axis = 1} : $DT[64, 1]\n    %2 = neg(%1) : $DT[64, 1]\n"
                   "    %3 = reshape(%2) {shape = [64]} : $DT[64]\n    %4 = reduce_mean(%3) {axis = 0} : $DT[]\n    return %4\n"));
  // Matmuls (L1/1-18): cuBLAS, operands through transposes, batched, matrix-vector, and a
  // triangular result (a where on arange comparisons after the product).
  add("matmul", "L1/1, 2, 6-9 matmul", {"cublas"},
      unary_module("%a: $DT[64, 96], %b: $DT[96, 80]", "$DT[64, 80]", "    %0 = matmul(%a, %b) : $DT[64, 80]\n    return %0\n"));
  // Large enough to be bound by its FLOPs in fp32 (74 per byte): f32 also gets the 3xTF32 candidate.
  add("gemm_compute_bound", "L2 GEMM + activation (compute-bound)", {"cublas"},
      unary_module("%a: $DT[384, 512], %b: $DT[512, 448]", "$DT[384, 448]",
                   "    %0 = matmul(%a, %b) : $DT[384, 448]\n    %1 = relu(%0) : $DT[384, 448]\n    return %1\n"));
  // The split's other layouts: odd sizes (scalar split passes) with B read transposed, and a batch.
  add("gemm_compute_bound_odd", "L1/8 irregular shapes, L1/17 transposed B (compute-bound)", {"cublas"},
      unary_module("%a: $DT[385, 513], %b: $DT[447, 513]", "$DT[385, 447]",
                   "    %0 = transpose(%b) {perm = [1, 0]} : $DT[513, 447]\n    %1 = matmul(%a, %0) : $DT[385, 447]\n"
                   "    return %1\n"));
  add("bmm_compute_bound", "L1/3 batched matmul (compute-bound)", {"cublas"},
      unary_module("%a: $DT[3, 384, 512], %b: $DT[3, 512, 448]", "$DT[3, 384, 448]",
                   "    %0 = matmul(%a, %b) : $DT[3, 384, 448]\n    return %0\n"));
  add("matmul_transposed", "L1/16-18 transposed operands", {"cublas"},
      unary_module("%a: $DT[96, 64], %b: $DT[80, 96]", "$DT[64, 80]",
                   "    %0 = transpose(%a) {perm = [1, 0]} : $DT[64, 96]\n    %1 = transpose(%b) {perm = [1, 0]} : $DT[96, 80]\n"
                   "    %2 = matmul(%0, %1) : $DT[64, 80]\n    return %2\n"));
  add("bmm", "L1/3 batched matmul", {"cublas"},
      unary_module("%a: $DT[4, 32, 64], %b: $DT[4, 64, 48]", "$DT[4, 32, 48]",
                   "    %0 = matmul(%a, %b) : $DT[4, 32, 48]\n    return %0\n"));
  add("tensor_matrix", "L1/10 3-D tensor-matrix, L1/11 4-D", {"cublas"},
      unary_module("%a: $DT[4, 32, 64], %b: $DT[64, 48]", "$DT[4, 32, 48]",
                   "    %0 = reshape(%a) {shape = [128, 64]} : $DT[128, 64]\n    %1 = matmul(%0, %b) : $DT[128, 48]\n"
                   "    %2 = reshape(%1) {shape = [4, 32, 48]} : $DT[4, 32, 48]\n    return %2\n"));
  add("matvec", "L1/4 matrix-vector", {"cublas"},
      unary_module("%a: $DT[256, 1024], %b: $DT[1024, 1]", "$DT[256, 1]", "    %0 = matmul(%a, %b) : $DT[256, 1]\n    return %0\n"));
  add("triu_matmul", "L1/14 upper, L1/15 lower triangular", {"cublas"},
      unary_module("%a: $DT[64, 64], %b: $DT[64, 64]", "$DT[64, 64]",
                   "    %0 = matmul(%a, %b) : $DT[64, 64]\n"
                   "    %r = arange {dtype = \"i32\", length = [64], start = 0.0, step = 1.0} : i32[64]\n"
                   "    %rr = reshape(%r) {shape = [64, 1]} : i32[64, 1]\n"
                   "    %cc = arange {dtype = \"i32\", length = [64], start = 0.0, step = 1.0} : i32[64]\n"
                   "    %d = sub(%cc, %rr) : i32[64, 64]\n    %zi = constant {dtype = \"i32\", shape = [], value = 0.0} : i32[]\n"
                   "    %k = ge(%d, %zi) : bool[64, 64]\n    %z = constant {dtype = \"$DT\", shape = [], value = 0.0} : $DT[]\n"
                   "    %1 = where(%k, %0, %z) : $DT[64, 64]\n    return %1\n"));
  add("diag_scale", "L1/12 diagonal matrix, L1/5 matrix-scalar", {"elementwise"},
      unary_module("%a: $DT[256], %b: $DT[256, 128]", "$DT[256, 128]",
                   c("s", "3.14") +
                       "    %0 = reshape(%a) {shape = [256, 1]} : $DT[256, 1]\n    %1 = mul(%0, %b) : $DT[256, 128]\n"
                       "    %2 = mul(%1, %s) : $DT[256, 128]\n    return %2\n"));
  // Level 2: linear (bias) + pointwise epilogues; a row op after the GEMM is a region of its own.
  const std::string linear_decls = "  param @fc.weight : $DT[256, 512]\n  param @fc.bias : $DT[256]\n";
  const std::string linear = "    %w = weight {name = \"fc.weight\"} : $DT[256, 512]\n    %bias = weight {name = \"fc.bias\"} : $DT[256]\n"
                             "    %0 = linear(%x, %w, %bias) : $DT[128, 256]\n";
  add("gemm_leaky", "L2/12 Gemm_Multiply_LeakyReLU, L2/63, L2/76", {"cublas"},
      unary_module("%x: $DT[128, 512]", "$DT[128, 256]",
                   linear + c("two", "2.0") + "    %1 = mul(%0, %two) : $DT[128, 256]\n    %2 = leaky_relu(%1) {slope = 0.1} : $DT[128, 256]\n"
                                               "    return %2\n",
                   linear_decls));
  add("gemm_sigmoid_residual", "L2/70 Gemm_Sigmoid_Scaling_ResidualAdd, L2/59", {"cublas"},
      unary_module("%x: $DT[128, 512]", "$DT[128, 256]",
                   linear + c("s", "2.0") + "    %1 = sigmoid(%0) : $DT[128, 256]\n    %2 = mul(%1, %s) : $DT[128, 256]\n"
                                             "    %3 = add(%2, %0) : $DT[128, 256]\n    return %3\n",
                   linear_decls));
  add("gemm_swish_clamp_tanh", "L2/81 Gemm_Swish_Divide_Clamp_Tanh_Clamp, L2/86", {"cublas"},
      unary_module("%x: $DT[128, 512]", "$DT[128, 256]",
                   linear + c("two", "2.0") +
                       "    %1 = sigmoid(%0) : $DT[128, 256]\n    %2 = mul(%0, %1) : $DT[128, 256]\n    %3 = div(%2, %two) : $DT[128, 256]\n"
                       "    %4 = clamp(%3) {hi = 1.0, lo = -1.0} : $DT[128, 256]\n    %5 = tanh(%4) : $DT[128, 256]\n"
                       "    %6 = gelu(%5) : $DT[128, 256]\n    return %6\n",
                   linear_decls));
  add("gemm_gelu_softmax", "L2/99 Matmul_GELU_Softmax, L2/66", {"cublas", "softmax"},
      unary_module("%x: $DT[128, 512]", "$DT[128, 256]",
                   linear + "    %1 = gelu(%0) : $DT[128, 256]\n    %2 = softmax(%1) {axis = 1} : $DT[128, 256]\n    return %2\n",
                   linear_decls));
  add("gemm_sum", "L2/18 Matmul_Sum (a reduction after the GEMM)", {"cublas", "reduction"},
      unary_module("%x: $DT[128, 512]", "$DT[128, 1]",
                   linear + "    %1 = reduce_sum(%0) {axis = 1, keepdim = 1} : $DT[128, 1]\n    return %1\n", linear_decls));
  // f16/bf16: the tensor-core GEMM runs the epilogue's program on its accumulators (T rows).
  add("gemm_program_tc", "L2 GEMM epilogues in f16 (fused into the tensor-core GEMM)", {"gemm", "cublas"},
      unary_module("%x: $DT[T, 512], %r: $DT[T, 256]", "$DT[T, 256], bool[T, 256]",
                   "    %w = weight {name = \"fc.weight\"} : $DT[256, 512]\n    %bias = weight {name = \"fc.bias\"} : $DT[256]\n"
                   "    %0 = linear(%x, %w, %bias) : $DT[T, 256]\n" +
                       c("s", "0.5") +
                       "    %1 = gelu(%0) {approximate = \"tanh\"} : $DT[T, 256]\n    %2 = mul(%1, %s) : $DT[T, 256]\n"
                       "    %3 = add(%2, %r) : $DT[T, 256]\n    %4 = gt(%0, %r) : bool[T, 256]\n    return %3, %4\n",
                   linear_decls),
      {ir::DType::kF16, ir::DType::kBF16});
  add("linear_odd_k", "a linear with K % 8 != 0 and rank-3 input", {"cublas"},
      unary_module("%x: $DT[2, 60, 100]", "$DT[2, 60, 48]",
                   "    %w = weight {name = \"fc.weight\"} : $DT[48, 100]\n    %0 = linear(%x, %w) : $DT[2, 60, 48]\n"
                   "    %1 = relu(%0) : $DT[2, 60, 48]\n    return %1\n",
                   "  param @fc.weight : $DT[48, 100]\n"));
  // Layout copies and gathers.
  add("transpose_2d", "a transpose that moves the innermost axis (tiled)", {"copy"},
      unary_module("%x: $DT[96, 130]", "$DT[130, 96]", "    %0 = transpose(%x) {perm = [1, 0]} : $DT[130, 96]\n    return %0\n"));
  add("transpose_heads", "a transpose that keeps the innermost axis", {"copy"},
      unary_module("%x: $DT[16, 8, 64]", "$DT[8, 16, 64]", "    %0 = transpose(%x) {perm = [1, 0, 2]} : $DT[8, 16, 64]\n    return %0\n"));
  add("copies_t_rows", "copies of T rows (a captured LM's head transposes and concats)", {"copy"},
      unary_module("%x: $DT[T, 8, 64], %y: $DT[T, 8, 64]", "$DT[T, 64, 8], $DT[T, 16, 64]",
                   "    %0 = transpose(%x) {perm = [0, 2, 1]} : $DT[T, 64, 8]\n    %1 = flip(%y) {axis = 2} : $DT[T, 8, 64]\n"
                   "    %2 = concat(%x, %1) {axis = 1} : $DT[T, 16, 64]\n    return %0, %2\n"));
  add("concat_flip", "concat, flip on the outer axis", {"copy"},
      unary_module("%x: $DT[16, 64], %y: $DT[16, 32]", "$DT[16, 96]",
                   "    %0 = flip(%x) {axis = 0} : $DT[16, 64]\n    %1 = concat(%0, %y) {axis = 1} : $DT[16, 96]\n    return %1\n"));
  add("index_select", "index_select (an embedding of an input table)", {"gather"},
      unary_module("%x: $DT[8, 100, 16], %i: i32[20]", "$DT[8, 20, 16]",
                   "    %0 = index_select(%x, %i) {axis = 1} : $DT[8, 20, 16]\n    return %0\n"));
  add("index_copy", "index_copy into a state", {"gather"},
      "module m {\n  state @buf : $DT[64, 32]\n  func @f(%src: $DT[10, 32], %i: i32[10]) -> ($DT[64, 32]) {\n"
      "    %0 = index_copy(%src, %i) {axis = 0, state = \"buf\"} : $DT[64, 32]\n    return %0\n  }\n}\n");
  return out;
}

}  // namespace agentcompile::testing
