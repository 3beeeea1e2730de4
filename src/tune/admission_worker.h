// The GPU worker of a compile: one forked process with one CUDA context that admits every region's
// candidates and times the decode layer's chains, so a compile pays for a process, a context and a
// cuBLAS handle once rather than once per region.
//
// The worker is forked from the caller after everything it may be asked about is in memory (the
// table of RegionWork: region modules, candidates, cubins), and reads it from its copy; requests
// name regions and candidates by index. Per region it builds the reference cases (random data and
// the interpreter's outputs) when the region's first candidates arrive and keeps them, the weights on
// the device and the timing buffers until another region is asked for.
//
// A candidate that faults (an illegal address, a trap, a hang past its timeout) kills the worker: it
// is recorded as a fault, and the next request starts a new worker, which builds that region's cases
// again. Nothing of a candidate's fault reaches the caller's process.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "tune/admission.h"
#include "tune/admission_steps.h"
#include "tune/admission_times.h"
#include "tune/sequence_timing.h"

namespace agentcompile::tune {

// One step of a chain, by index into the worker's table: the region, its alternatives (candidate
// indices), the size it runs at and its inputs that read other steps' outputs.
struct ChainStep {
  size_t region = 0;
  std::vector<int> alternatives;
  RegionBindings bindings;
  std::vector<SequenceLink> links;
};

struct AdmissionOutcome {
  std::vector<CandidateResult> results;  // one per candidate asked for, in that order
  AdmissionTimes times;                  // what they cost (worker start and the region's cases included)
};

class AdmissionWorker {
 public:
  // `work` must outlive this object and stay unchanged; nothing starts until the first request.
  explicit AdmissionWorker(const std::vector<RegionWork>* work);
  ~AdmissionWorker();
  AdmissionWorker(const AdmissionWorker&) = delete;
  AdmissionWorker& operator=(const AdmissionWorker&) = delete;

  // Called as each candidate's result arrives: its position in the request, and the result.
  using ResultFn = std::function<void(size_t position, const CandidateResult& result)>;

  // Validates candidates `indices` of region `region` in that order and times those that pass.
  // Candidates whose generated launches did not compile are rejected here without the worker.
  Expected<AdmissionOutcome> admit(size_t region, const std::vector<int>& indices, const ResultFn& on_result = {});

  // Times the chain (sequence_timing.h) in the worker; `times.chain_s` gets what it cost.
  Expected<SequenceResult> time_chain(const std::vector<ChainStep>& steps, const std::vector<int>& start, const SequenceOptions& options,
                                      AdmissionTimes& times);

 private:
  Status spawn(AdmissionTimes& times);
  void stop();
  // Sends a request line; false when the worker is gone.
  bool send(const std::string& line);

  const std::vector<RegionWork>* work_;
  pid_t pid_ = -1;
  int socket_ = -1;       // our end of the worker's socket pair
  std::string pending_;   // bytes read past the last whole line
};

// A candidate can run when its generated launches compiled (library-only candidates need nothing).
bool runnable(const plan::Candidate& candidate, const codegen::CompileResult& compiled);

}  // namespace agentcompile::tune
