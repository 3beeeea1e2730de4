// A region's buffers on the device and its candidates' launches, shared by admission (one candidate
// at a time) and sequence timing (several regions' kernels in one chain).
#pragma once

#include <memory>
#include <vector>

#include "agentcompile/status.h"
#include "plan/candidate.h"
#include "gpu/cuda_driver.h"
#include "gpu/library_calls.h"
#include "gpu/region_args.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {

// Device copies of one case's buffers, bound into a RegionArgs.
struct DeviceSet {
  std::vector<gpu::DeviceBuffer> inputs, params, states, outputs;
  gpu::DeviceBuffer workspace;
  gpu::RegionArgs args;
};

// A region's weights, uploaded once per worker and shared by every case and candidate (they can be
// 0.6 GB: an lm_head).
struct SharedWeights {
  RegionWeights host;
  std::vector<gpu::DeviceBuffer> device;
};

// Whether `buffer` starts with the bytes `expected` (an input or weight a kernel must not write),
// read back through `staging` (page-locked, allocated here when too small) in pieces of at most
// 64 MiB: a 0.6 GB weight is checked without a host buffer of its size, and the caller keeps
// `staging` from one check to the next.
Expected<bool> device_holds(const gpu::DeviceBuffer& buffer, const std::vector<uint8_t>& expected, gpu::PinnedBuffer& staging);

// Uploads a case; its weights come from `shared` when given (already on the device), else are copied.
Expected<DeviceSet> upload_set(const RegionLayout& layout, const RegionCase& c, const plan::Candidate& candidate,
                               const RegionBindings& bindings, const SharedWeights* shared = nullptr);

struct LoadedCandidate {
  std::unique_ptr<gpu::CudaModule> module;  // null for library-only candidates
  std::vector<CUfunction> functions;   // per launch; null for library launches
  gpu::LibraryRunner* library = nullptr;
};

// Loads a candidate's cubin (when it has generated launches) and its functions; library launches
// get a null function and run through `library`.
Expected<LoadedCandidate> load_candidate(const plan::Candidate& candidate, const std::vector<char>& cubin, bool compiled,
                                         gpu::LibraryRunner* library);

// `programmatic`: generated kernels launch as the runtime launches them on sm_90+ (programmatic
// dependent launch), so what a kernel does before its producer wait overlaps the launch before it.
Status run_launches(const plan::Candidate& candidate, const LoadedCandidate& loaded, const gpu::RegionArgs& args,
                    const RegionBindings& bindings, CUstream stream, bool programmatic = false);

}  // namespace agentcompile::tune
