// Device buffer sets and candidate launches (see device_sets.h).
#include "tune/device_sets.h"

#include <cstring>

namespace agentcompile::tune {

Expected<bool> device_holds(const gpu::DeviceBuffer& buffer, const std::vector<uint8_t>& expected, gpu::PinnedBuffer& staging) {
  constexpr size_t kPiece = size_t{64} << 20;
  if (const size_t needed = std::min(expected.size(), kPiece); staging.bytes() < needed) {
    staging = gpu::PinnedBuffer();  // the old one first
    AC_ASSIGN_OR_RETURN(staging, gpu::PinnedBuffer::allocate(std::max(needed, size_t{1} << 20)));
  }
  for (size_t offset = 0; offset < expected.size(); offset += kPiece) {
    const size_t bytes = std::min(kPiece, expected.size() - offset);
    AC_TRY(buffer.download(staging.data(), bytes, offset));
    if (std::memcmp(staging.data(), expected.data() + offset, bytes) != 0) return false;
  }
  return true;
}

// Uploads a case; its weights come from `shared` when given (already on the device), else are copied.
Expected<DeviceSet> upload_set(const RegionLayout& layout, const RegionCase& c, const plan::Candidate& candidate,
                               const RegionBindings& bindings, const SharedWeights* shared) {
  DeviceSet set;
  auto upload = [](const TestTensor& t) -> Expected<gpu::DeviceBuffer> {
    AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer buffer, gpu::DeviceBuffer::allocate(std::max<size_t>(t.device_bytes(), 16)));
    if (!t.bytes.empty()) AC_TRY(buffer.upload(t.bytes.data(), t.bytes.size()));
    if (t.periodic && !t.bytes.empty()) AC_TRY(buffer.repeat_prefix(t.bytes.size()));
    return buffer;
  };
  for (const auto& t : c.inputs) {
    AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, upload(t));
    set.inputs.push_back(std::move(b));
  }
  if (!shared) {
    for (const auto& t : c.params) {
      AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, upload(*t));
      set.params.push_back(std::move(b));
    }
  }
  for (const auto& t : c.states) {
    AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, upload(t));
    set.states.push_back(std::move(b));
  }
  for (size_t o = 0; o < layout.outputs.size(); ++o) {
    if (layout.output_state[o] >= 0) {
      set.outputs.emplace_back();
      continue;
    }
    int64_t count = 1;
    for (int64_t size : layout.symbols.resolve(layout.outputs[o].shape)) count *= size;
    AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, gpu::DeviceBuffer::allocate(std::max<size_t>(16, static_cast<size_t>(count) * ir::dtype_size(layout.outputs[o].dtype))));
    set.outputs.push_back(std::move(b));
  }
  const int64_t workspace = candidate.workspace_bytes_per_token * bindings.T + candidate.workspace_bytes_fixed;
  AC_ASSIGN_OR_RETURN(set.workspace, gpu::DeviceBuffer::allocate(static_cast<size_t>(std::max<int64_t>(workspace, 16))));
  for (size_t i = 0; i < set.inputs.size(); ++i) set.args.in[i] = set.inputs[i].get();
  if (shared)
    for (size_t i = 0; i < shared->device.size(); ++i) set.args.w[i] = shared->device[i].get();
  else
    for (size_t i = 0; i < set.params.size(); ++i) set.args.w[i] = set.params[i].get();
  for (size_t i = 0; i < set.states.size(); ++i) set.args.state[i] = set.states[i].get();
  for (size_t o = 0; o < set.outputs.size(); ++o)
    set.args.out[o] = layout.output_state[o] >= 0 ? set.states[static_cast<size_t>(layout.output_state[o])].get() : set.outputs[o].get();
  set.args.workspace = set.workspace.get();
  set.args.T = static_cast<int32_t>(bindings.T);
  set.args.L = static_cast<int32_t>(bindings.L);
  return set;
}

Expected<LoadedCandidate> load_candidate(const plan::Candidate& candidate, const std::vector<char>& cubin, bool compiled,
                                         gpu::LibraryRunner* library) {
  LoadedCandidate loaded;
  loaded.library = library;
  if (compiled) {
    AC_ASSIGN_OR_RETURN(loaded.module, gpu::CudaModule::load(cubin, candidate.name()));
  }
  for (const auto& launch : candidate.launches) {
    if (launch.library) {
      loaded.functions.push_back(nullptr);
      continue;
    }
    if (!loaded.module) return error(ErrorCode::kInternal, launch.kernel + " was not compiled");
    AC_ASSIGN_OR_RETURN(CUfunction function, loaded.module->function(launch.kernel));
    loaded.functions.push_back(function);
  }
  return loaded;
}

// `programmatic`: generated kernels launch as the runtime launches them on sm_90+ (programmatic
// dependent launch), so what a kernel does before its producer wait overlaps the launch before it.
Status run_launches(const plan::Candidate& candidate, const LoadedCandidate& loaded, const gpu::RegionArgs& args,
                    const RegionBindings& bindings, CUstream stream, bool programmatic) {
  for (size_t l = 0; l < candidate.launches.size(); ++l) {
    const plan::Launch& launch = candidate.launches[l];
    if (launch.library) {
      if (!loaded.library) return error(ErrorCode::kInternal, "no library runner for " + launch.kernel);
      AC_TRY(loaded.library->run(launch, candidate.match, args));
      continue;
    }
    AC_TRY(gpu::launch_kernel(loaded.functions[l], launch.kernel, static_cast<unsigned>(launch.grid_x.at(bindings.T)),
                         static_cast<unsigned>(launch.grid_y.at(bindings.T)), static_cast<unsigned>(launch.grid_z.at(bindings.T)),
                         static_cast<unsigned>(launch.block_x), static_cast<unsigned>(launch.shared_bytes), stream, &args,
                         programmatic));
  }
  return Status::ok();
}


}  // namespace agentcompile::tune
