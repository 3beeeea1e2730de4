// cuBLAS execution of library launches.
//
// Row-major C[M, N] = A[M, K] · B[N, K]ᵀ is, in cuBLAS's column-major terms, Cᵀ[N, M] = B·Aᵀ with B
// read transposed: cublasGemmEx(OP_T, OP_N, n=N, m=M, k=K, B (ld K), A (ld K), C (ld N)), fp32 compute.
#include "tune/library_calls.h"

#include <cublas_v2.h>

#include <string>

namespace agentcompile::tune {

namespace {

Status cublas_status(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return error(ErrorCode::kInternal, what + ": " + cublasGetStatusString(status));
}

Expected<const void*> slot_pointer(const std::string& slot, const RegionArgs& args) {
  auto index = [&](size_t prefix) { return static_cast<size_t>(std::stoul(slot.substr(prefix))); };
  if (slot.rfind("in", 0) == 0) return args.in[index(2)];
  if (slot.rfind("out", 0) == 0) return static_cast<const void*>(args.out[index(3)]);
  if (slot.rfind("w", 0) == 0) return args.w[index(1)];
  if (slot.rfind("workspace:", 0) == 0)
    return static_cast<const void*>(static_cast<const char*>(args.workspace) + std::stoll(slot.substr(10)) * args.T);
  return error(ErrorCode::kInternal, "library launch names an unknown slot '" + slot + "'");
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
  if (arg("op") != "gemm") return error(ErrorCode::kUnsupported, "library launch op '" + arg("op") + "' is not known");
  const int m = arg("m") == "T" ? args.T : std::stoi(arg("m"));
  const int n = std::stoi(arg("n"));
  const int k = std::stoi(arg("k"));
  AC_ASSIGN_OR_RETURN(const void* A, slot_pointer(arg("a"), args));
  AC_ASSIGN_OR_RETURN(const void* B, slot_pointer(arg("b"), args));
  AC_ASSIGN_OR_RETURN(const void* C, slot_pointer(arg("c"), args));
  const cudaDataType_t in_type = cuda_data_type(std::string(ir::dtype_name(match.dtype)));
  const float alpha = 1.0f, beta = 0.0f;
  return cublas_status(cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, B, in_type, k,
                                    A, in_type, k, &beta, const_cast<void*>(C), cuda_data_type(arg("c_dtype")), n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx(" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ")");
}

}  // namespace agentcompile::tune
