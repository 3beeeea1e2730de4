// NCCL through dlopen (see nccl.h).
#include "gpu/nccl.h"

#include "gpu/peer_all_reduce.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace agentcompile::gpu {

namespace {

// nccl.h's types, as its ABI defines them.
using NcclResult = int;  // ncclResult_t; 0 is ncclSuccess
using NcclComm = void*;  // ncclComm_t
constexpr int kNcclSum = 0;
constexpr int kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclBfloat16 = 9;

struct Api {
  NcclResult (*get_version)(int*) = nullptr;
  NcclResult (*get_unique_id)(NcclUniqueId*) = nullptr;
  NcclResult (*comm_init_rank)(NcclComm*, int, NcclUniqueId, int) = nullptr;
  NcclResult (*comm_destroy)(NcclComm) = nullptr;
  NcclResult (*all_reduce)(const void*, void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*all_gather)(const void*, void*, size_t, int, NcclComm, CUstream) = nullptr;
  const char* (*error_string)(NcclResult) = nullptr;
  NcclLibrary library;
  std::string why;  // empty once loaded
};

// The pip package's lib/ folder, asked of python3 (the package is a namespace package: its __path__).
std::string pip_nccl_dir() {
  FILE* pipe = popen("python3 -c \"import nvidia.nccl as m; print(list(m.__path__)[0])\" 2>/dev/null", "r");
  if (!pipe) return "";
  char line[4096] = {};
  const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
  pclose(pipe);
  if (!read) return "";
  std::string dir(line);
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  return dir.empty() ? "" : dir + "/lib";
}

template <typename Fn>
bool bind(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

const Api& api() {
  static Api loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& path : nccl_search_paths()) {
      void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!library) {
        tried += "\n  " + path + ": " + dlerror();
        continue;
      }
      bool all = bind(library, "ncclGetVersion", loaded.get_version) && bind(library, "ncclGetUniqueId", loaded.get_unique_id) &&
                 bind(library, "ncclCommInitRank", loaded.comm_init_rank) && bind(library, "ncclCommDestroy", loaded.comm_destroy) &&
                 bind(library, "ncclAllReduce", loaded.all_reduce) && bind(library, "ncclAllGather", loaded.all_gather) &&
                 bind(library, "ncclGetErrorString", loaded.error_string);
      if (!all || loaded.get_version(&loaded.library.version) != 0) {
        tried += "\n  " + path + ": loaded, but it lacks an NCCL 2 entry point";
        dlclose(library);
        continue;
      }
      loaded.library.path = path;
      return;
    }
    loaded.why = "cannot load NCCL (libnccl.so.2; set AGENTCOMPILE_NCCL to the library or its folder, or pip install "
                 "nvidia-nccl-cu13); looked in:" + tried;
  });
  return loaded;
}

Status nccl_status(NcclResult result, const std::string& what) {
  if (result == 0) return Status::ok();
  return error(ErrorCode::kIo, what + ": NCCL error " + std::to_string(result) + ": " + api().error_string(result));
}

Expected<int> nccl_dtype(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return kNcclFloat32;
    case ir::DType::kF16: return kNcclFloat16;
    case ir::DType::kBF16: return kNcclBfloat16;
    default: return error(ErrorCode::kUnsupported, "NCCL collectives take f32, f16 or bf16, not " + std::string(ir::dtype_name(dtype)));
  }
}

Expected<const Api*> loaded_api() {
  const Api& a = api();
  if (!a.why.empty()) return error(ErrorCode::kNotFound, a.why);
  return &a;
}

}  // namespace

std::vector<std::string> nccl_search_paths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("AGENTCOMPILE_NCCL"); env && *env) {
    std::error_code ec;
    paths.push_back(std::filesystem::is_directory(env, ec) ? std::string(env) + "/libnccl.so.2" : std::string(env));
  }
  paths.push_back("libnccl.so.2");
  if (std::string dir = pip_nccl_dir(); !dir.empty()) paths.push_back(dir + "/libnccl.so.2");
  return paths;
}

Expected<NcclLibrary> load_nccl() {
  AC_ASSIGN_OR_RETURN(const Api* a, loaded_api());
  return a->library;
}

Expected<NcclUniqueId> NcclCommunicator::unique_id() {
  AC_ASSIGN_OR_RETURN(const Api* a, loaded_api());
  NcclUniqueId id{};
  AC_TRY(nccl_status(a->get_unique_id(&id), "ncclGetUniqueId"));
  return id;
}

Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(int ranks, int rank, const NcclUniqueId& id) {
  AC_ASSIGN_OR_RETURN(const Api* a, loaded_api());
  // NVLink SHARP (multicast) stays off on the shared machines, whatever the environment says.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  std::unique_ptr<NcclCommunicator> comm(new NcclCommunicator());
  comm->ranks_ = ranks;
  comm->rank_ = rank;
  AC_TRY(nccl_status(a->comm_init_rank(&comm->comm_, ranks, id, rank),
                     "ncclCommInitRank(rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ")"));
  return comm;
}

NcclCommunicator::~NcclCommunicator() {
  peer_.reset();
  if (comm_) api().comm_destroy(comm_);
}

void NcclCommunicator::use_peer_all_reduce(std::unique_ptr<PeerAllReduce> peer) { peer_ = std::move(peer); }

Status NcclCommunicator::all_reduce_sum(CUdeviceptr in, CUdeviceptr out, size_t count, ir::DType dtype, CUstream stream) {
  if (peer_ && PeerAllReduce::takes(count, dtype)) return peer_->all_reduce_sum(in, out, count, dtype, stream);
  AC_ASSIGN_OR_RETURN(int type, nccl_dtype(dtype));
  return nccl_status(api().all_reduce(reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), count, type, kNcclSum, comm_, stream),
                     "ncclAllReduce(" + std::to_string(count) + " elements)");
}

Status NcclCommunicator::all_gather(CUdeviceptr in, CUdeviceptr out, size_t count, ir::DType dtype, CUstream stream) {
  AC_ASSIGN_OR_RETURN(int type, nccl_dtype(dtype));
  return nccl_status(api().all_gather(reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out), count, type, comm_, stream),
                     "ncclAllGather(" + std::to_string(count) + " elements per rank)");
}

}  // namespace agentcompile::gpu
