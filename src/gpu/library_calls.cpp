// cuBLAS execution of library launches.
//
// Row-major C[M, N] = A[M, K] · B[N, K]ᵀ is, in cuBLAS's column-major terms, Cᵀ[N, M] = B·Aᵀ with B
// read transposed: cublasGemmEx(OP_T, OP_N, n=N, m=M, k=K, B (ld K), A (ld K), C (ld N)), fp32 compute.
//
// "gemm_batched" (general matmul regions) is C[b] = op(A[b]) · op(B[b]) for row-major operands that
// are stored as they are read ([M, K], [K, N]) or transposed ([K, M], [N, K]): in column-major terms
// Cᵀ = op(B)ᵀ · op(A)ᵀ, where a row-major [r, c] matrix is the column-major [c, r] one with leading
// dimension c. fp32 compute in the handle's default math mode, so f32 GEMMs never use TF32 (torch's
// default as well), except where the launch asks for it: the 3xTF32 candidate's GEMMs, whose split
// operands keep the result at fp32 accuracy (src/kernels/split_tf32.cuh).
#include "gpu/library_calls.h"

#include <cublas_v2.h>

#include "gpu/cuda_driver.h"
#include "gpu/driver_api.h"

#include <cstdint>
#include <string>

namespace agentcompile::gpu {

namespace {

Status cublas_status(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return error(ErrorCode::kInternal, what + ": " + cublasGetStatusString(status));
}

// Digits after `prefix` in `text`, or -1 when they are missing or not all digits.
long long number_after(const std::string& text, size_t prefix) {
  if (text.size() <= prefix || text.size() - prefix > 18) return -1;
  long long value = 0;
  for (size_t i = prefix; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

Expected<const void*> slot_pointer(const std::string& slot, const RegionArgs& args) {
  auto bad = [&] { return error(ErrorCode::kInternal, "library launch names an unknown slot '" + slot + "'"); };
  if (slot.rfind("workspace:", 0) == 0) {
    // "workspace:P" is P bytes per token in; "workspace:P+F" F bytes into the fixed part after P per token
    // (the dequantized weights of a quantized matmul's fallback).
    const size_t plus = slot.find('+');
    const long long per_token = number_after(slot.substr(0, plus), 10);
    const long long fixed = plus == std::string::npos ? 0 : number_after(slot, plus + 1);
    if (per_token < 0 || fixed < 0) return bad();
    return static_cast<const void*>(static_cast<const char*>(args.workspace) + per_token * args.T + fixed);
  }
  struct Prefix {
    const char* name;
    size_t length;
    size_t count;
  };
  for (const Prefix& p : {Prefix{"out", 3, 8}, Prefix{"in", 2, 8}, Prefix{"w", 1, 8}}) {
    if (slot.rfind(p.name, 0) != 0) continue;
    const long long index = number_after(slot, p.length);
    if (index < 0 || static_cast<size_t>(index) >= p.count) return bad();
    if (p.length == 3) return static_cast<const void*>(args.out[index]);
    if (p.length == 2) return args.in[index];
    return args.w[index];
  }
  return bad();
}

cudaDataType_t cuda_data_type(const std::string& dtype) {
  if (dtype == "f16") return CUDA_R_16F;
  if (dtype == "bf16") return CUDA_R_16BF;
  return CUDA_R_32F;
}

}  // namespace

Expected<std::unique_ptr<LibraryRunner>> LibraryRunner::create(CUstream stream) {
  std::unique_ptr<LibraryRunner> runner(new LibraryRunner());
  cublasHandle_t handle = nullptr;
  AC_TRY(cublas_status(cublasCreate(&handle), "cublasCreate"));
  runner->handle_ = handle;
  runner->stream_ = stream;
  AC_TRY(cublas_status(cublasSetStream(handle, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream"));
  return runner;
}

LibraryRunner::~LibraryRunner() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

Status LibraryRunner::run(const plan::Launch& launch, const plan::Match& match, const RegionArgs& args) {
  const auto& a = launch.library_args;
  auto arg = [&](const char* key) -> std::string {
    auto it = a.find(key);
    return it == a.end() ? "" : it->second;
  };
  if (arg("op") == "gemm_batched") return run_batched(launch, args);
  if (arg("op") == "nccl_all_reduce" || arg("op") == "nccl_all_gather") return run_collective(launch, args);
  if (arg("op") != "gemm") return error(ErrorCode::kUnsupported, "library launch op '" + arg("op") + "' is not known");
  const long long m = arg("m") == "T" ? args.T : number_after(arg("m"), 0);
  const long long n = number_after(arg("n"), 0);
  const long long k = number_after(arg("k"), 0);
  if (m < 0 || n <= 0 || k <= 0) return error(ErrorCode::kInternal, "library gemm has malformed sizes m=" + arg("m") + " n=" + arg("n") + " k=" + arg("k"));
  AC_ASSIGN_OR_RETURN(const void* A, slot_pointer(arg("a"), args));
  AC_ASSIGN_OR_RETURN(const void* B, slot_pointer(arg("b"), args));
  AC_ASSIGN_OR_RETURN(const void* C, slot_pointer(arg("c"), args));
  const cudaDataType_t in_type = cuda_data_type(std::string(ir::dtype_name(match.dtype)));
  const float alpha = 1.0f, beta = 0.0f;
  if (m == 0) return Status::ok();
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  return cublas_status(cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, ni, mi, ki, &alpha, B, in_type, ki,
                                    A, in_type, ki, &beta, const_cast<void*>(C), cuda_data_type(arg("c_dtype")), ni,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx(" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ")");
}

Status LibraryRunner::run_collective(const plan::Launch& launch, const RegionArgs& args) {
  const auto& a = launch.library_args;
  auto arg = [&](const char* key) -> std::string {
    auto it = a.find(key);
    return it == a.end() ? "" : it->second;
  };
  const long long rows = arg("rows") == "T" ? args.T : number_after(arg("rows"), 0);
  const long long row = number_after(arg("row"), 0), ranks = number_after(arg("ranks"), 0);
  const ir::DType dtype = ir::parse_dtype(arg("dtype")).value_or(ir::DType::kF32);
  if (rows < 0 || row <= 0 || ranks < 1)
    return error(ErrorCode::kInternal, "library " + arg("op") + " has malformed sizes rows=" + arg("rows") + " row=" + arg("row"));
  AC_ASSIGN_OR_RETURN(const void* in, slot_pointer(arg("in"), args));
  AC_ASSIGN_OR_RETURN(const void* out, slot_pointer(arg("out"), args));
  const size_t count = static_cast<size_t>(rows * row);
  if (count == 0) return Status::ok();
  const auto src = reinterpret_cast<CUdeviceptr>(in), dst = reinterpret_cast<CUdeviceptr>(out);
  if (!communicator_) {
    if (ranks != 1)
      return error(ErrorCode::kInvalidArgument, arg("op") + " over " + arg("ranks") +
                                                    " ranks needs the rank's NCCL communicator (run with --tensor-parallel)");
    if (src == dst) return Status::ok();
    return cuda_status(driver_api()->MemcpyDtoDAsync(dst, src, count * ir::dtype_size(dtype), stream_), arg("op") + " of one rank");
  }
  if (communicator_->ranks() != ranks)
    return error(ErrorCode::kMismatch, arg("op") + " spans " + arg("ranks") + " ranks but the communicator has " +
                                           std::to_string(communicator_->ranks()));
  if (arg("op") == "nccl_all_reduce") return communicator_->all_reduce_sum(src, dst, count, dtype, stream_);
  return communicator_->all_gather(src, dst, count, dtype, stream_);
}

Status LibraryRunner::run_batched(const plan::Launch& launch, const RegionArgs& args) {
  const auto& a = launch.library_args;
  auto arg = [&](const char* key) -> std::string {
    auto it = a.find(key);
    return it == a.end() ? "" : it->second;
  };
  const long long m = arg("m") == "T" ? args.T : number_after(arg("m"), 0);
  const long long n = number_after(arg("n"), 0), k = number_after(arg("k"), 0);
  // The batch: a count, "T", or "T*<count>" (T tokens of count products each: [T, heads, M, N]).
  const std::string batch_arg = arg("batch");
  const bool per_token = batch_arg == "T" || batch_arg.rfind("T*", 0) == 0;
  const long long per_token_batch = batch_arg == "T" ? 1 : per_token ? number_after(batch_arg, 2) : 0;
  const long long batch = per_token ? (per_token_batch > 0 ? args.T * per_token_batch : -1) : number_after(batch_arg, 0);
  const bool ta = arg("trans_a") == "1", tb = arg("trans_b") == "1";
  if (m < 0 || n <= 0 || k <= 0 || batch < 0 || (batch == 0 && !per_token) || batch > INT32_MAX || m > INT32_MAX || n > INT32_MAX ||
      k > INT32_MAX)
    return error(ErrorCode::kInternal, "library gemm_batched has malformed sizes m=" + arg("m") + " n=" + arg("n") + " k=" + arg("k") +
                                           " batch=" + arg("batch"));
  AC_ASSIGN_OR_RETURN(const void* A, slot_pointer(arg("a"), args));
  AC_ASSIGN_OR_RETURN(const void* B, slot_pointer(arg("b"), args));
  AC_ASSIGN_OR_RETURN(const void* C, slot_pointer(arg("c"), args));
  if (m == 0 || batch == 0) return Status::ok();
  const cudaDataType_t ab_type = cuda_data_type(arg("ab_dtype"));
  // "compute" "tf32": TF32 tensor cores for fp32 operands (the 3xTF32 split's GEMMs, whose operands
  // are already TF32 values or residuals); "beta" "1": the product is added to C (the split's later terms).
  if (!arg("compute").empty() && arg("compute") != "tf32")
    return error(ErrorCode::kInternal, "library gemm_batched has an unknown compute mode '" + arg("compute") + "'");
  const cublasComputeType_t compute = arg("compute") == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = arg("beta") == "1" ? 1.0f : 0.0f;
  // Leading dimensions of the stored matrices: row-major [M, K] or [K, M] for A, [K, N] or [N, K] for B.
  const long long lda = ta ? m : k, ldb = tb ? k : n;
  return cublas_status(
      cublasGemmStridedBatchedEx(static_cast<cublasHandle_t>(handle_), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, B, ab_type,
                                 static_cast<int>(ldb), k * n, A, ab_type, static_cast<int>(lda), m * k, &beta,
                                 const_cast<void*>(C), cuda_data_type(arg("c_dtype")), static_cast<int>(n), m * n,
                                 static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx(" + std::to_string(batch) + " x " + std::to_string(m) + "x" + std::to_string(n) + "x" +
          std::to_string(k) + ")");
}

}  // namespace agentcompile::gpu
