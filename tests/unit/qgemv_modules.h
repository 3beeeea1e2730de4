// Small quantized matmul modules for the qgemv family's tests, one matmul region each: a linear with
// a bias, with a residual add, a gate/up pair (SiLU(gate)·up), two linears of one x (multi-segment
// rows), or a linear behind an RMSNorm (the norm prologue, one token). tests/unit/qgemv_test.cpp
// plans them on the CPU (which kernels and epilogues they get); tests/gpu/qgemv_admission_test.cpp
// admits their candidates against the interpreter.
#pragma once

#include <cstdint>
#include <string>

namespace agentcompile::testing {

enum class QGemvCase { kBias, kResidual, kGateUp, kMulti, kNorm };

inline const char* qgemv_case_name(QGemvCase c) {
  switch (c) {
    case QGemvCase::kBias: return "bias";
    case QGemvCase::kResidual: return "residual";
    case QGemvCase::kGateUp: return "gate_up";
    case QGemvCase::kMulti: return "multi";
    case QGemvCase::kNorm: return "norm";
  }
  return "";
}

// The module's text: function @decode over `rows` tokens ("1", "3" or "T"), f16 activations, weights
// [N, K] (the second linear of gate_up and multi: [N2, K], N2 = N for gate_up) in `w_dtype`.
inline std::string qgemv_case_module(QGemvCase c, const std::string& w_dtype, int64_t N, int64_t K, const std::string& rows) {
  const std::string n = std::to_string(N), k = std::to_string(K);
  const std::string n2 = c == QGemvCase::kMulti ? std::to_string(N / 2 + 8) : n;
  const std::string w = w_dtype + "[" + n + ", " + k + "]", w2 = w_dtype + "[" + n2 + ", " + k + "]";
  const std::string x = "f16[" + rows + ", " + k + "]", y = "f16[" + rows + ", " + n + "]", y2 = "f16[" + rows + ", " + n2 + "]";
  std::string params = "  param @w : " + w + "\n";
  std::string inputs = "%x: " + x;
  std::string body = "    %w = weight {name = \"w\"} : " + w + "\n";
  std::string results = y;
  std::string returned;
  switch (c) {
    case QGemvCase::kBias:
      params += "  param @b : f16[" + n + "]\n";
      body += "    %b = weight {name = \"b\"} : f16[" + n + "]\n    %y = linear(%x, %w, %b) : " + y + "\n";
      returned = "%y";
      break;
    case QGemvCase::kResidual:
      inputs += ", %r: " + y;
      body += "    %l = linear(%x, %w) : " + y + "\n    %y = add(%l, %r) : " + y + "\n";
      returned = "%y";
      break;
    case QGemvCase::kGateUp:
      params += "  param @u : " + w2 + "\n";
      body += "    %u = weight {name = \"u\"} : " + w2 + "\n    %g = linear(%x, %w) : " + y + "\n    %v = linear(%x, %u) : " + y2 +
              "\n    %s = silu(%g) : " + y + "\n    %y = mul(%s, %v) : " + y + "\n";
      returned = "%y";
      break;
    case QGemvCase::kMulti:
      params += "  param @u : " + w2 + "\n";
      body += "    %u = weight {name = \"u\"} : " + w2 + "\n    %y = linear(%x, %w) : " + y + "\n    %z = linear(%x, %u) : " + y2 + "\n";
      results += ", " + y2;
      returned = "%y, %z";
      break;
    case QGemvCase::kNorm:
      params += "  param @nw : f16[" + k + "]\n";
      body += "    %nw = weight {name = \"nw\"} : f16[" + k + "]\n    %n = rmsnorm(%x, %nw) {eps = 1e-06} : " + x +
              "\n    %y = linear(%n, %w) : " + y + "\n";
      returned = "%y";
      break;
  }
  return "module m {\n" + params + "  func @decode(" + inputs + ") -> (" + results + ") {\n" + body + "    return " + returned + "\n  }\n}\n";
}

}  // namespace agentcompile::testing
