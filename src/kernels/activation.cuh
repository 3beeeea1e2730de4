// Gate activations of the gated-MLP epilogues (gemv.cuh, gemm.cuh, epilogue.cuh): act(gate) * up,
// with act SiLU (Llama, Qwen, Phi-3, OLMo-2) or GELU (Gemma: gelu_pytorch_tanh), in fp32.
#pragma once

#include "common.cuh"

namespace ac {

enum GateActivation { kActSilu = 0, kActGeluTanh = 1, kActGeluErf = 2 };

template <int ACT>
__device__ __forceinline__ float gate_activation(float x) {
  if constexpr (ACT == kActGeluTanh) {
    // PyTorch's gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    const float inner = 0.7978845608028654f * (x + 0.044715f * (x * x * x));
    return 0.5f * x * (1.f + tanhf(inner));
  } else if constexpr (ACT == kActGeluErf) {
    return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
  } else {
    return silu(x);
  }
}

}  // namespace ac
