// Elementwise epilogues that follow library GEMMs (the cuBLAS fallback of matmul regions):
// bias add over up to three row segments (from the GEMMs' outputs, or from their fp32 results so
// that the sum is rounded once), residual add, and act(gate)·up from fp32 GEMM results (act SiLU or
// GELU, activation.cuh).
// One thread per output element; T*N elements in [T, N] row-major order.
#pragma once

#include "activation.cuh"
#include "common.cuh"

namespace ac {

template <typename T, typename OutT>
struct EpilogueParams {
  OutT* y[3];            // GEMM outputs, updated in place (plain/multi/residual), or the output (gate_up)
  const float* acc[3] = {nullptr, nullptr, nullptr};  // per segment, the fp32 GEMM results ([T, rows_s]) that y is
                                                    // computed from, or null: y holds the product
  const T* bias[3];      // per segment, may be null
  const T* residual;     // [T, N] for the residual variant
  const float* gate;     // [T, N] fp32 GEMM results for gate_up
  const float* up;
  int rows[3];           // segment widths; N = rows[0] + rows[1] + rows[2]
  long long elements;    // T * N
};

enum EpilogueKind { kEpilogueBias = 0, kEpilogueResidual = 1, kEpilogueGateUp = 2 };

template <typename T, typename OutT, int KIND, int ACT = kActSilu>
__device__ __forceinline__ void epilogue(const EpilogueParams<T, OutT>& p) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= p.elements) return;
  const int n = p.rows[0] + p.rows[1] + p.rows[2];
  const long long t = e / n;
  int col = static_cast<int>(e % n);
  if (KIND == kEpilogueGateUp) {
    float g = p.gate[e], u = p.up[e];
    if (p.bias[0]) g += to_float(p.bias[0][col]);
    if (p.bias[1]) u += to_float(p.bias[1][col]);
    p.y[0][e] = from_float<OutT>(gate_activation<ACT>(g) * u);
    return;
  }
  int seg = 0;
  if (col >= p.rows[0]) { col -= p.rows[0]; seg = 1; if (col >= p.rows[1]) { col -= p.rows[1]; seg = 2; } }
  OutT* y = p.y[seg] + t * p.rows[seg] + col;
  float v = p.acc[seg] ? p.acc[seg][t * p.rows[seg] + col] : to_float(*y);
  if (p.bias[seg]) v += to_float(p.bias[seg][col]);
  if (KIND == kEpilogueResidual) v += to_float(p.residual[e]);
  *y = from_float<OutT>(v);
}

}  // namespace ac
