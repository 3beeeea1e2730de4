// The token loop: decode steps are enqueued a few ahead of the host, which waits only for the step
// whose token it streams next, so the GPU never idles on the host. A step is one replay of the
// captured decode graph (or, with graphs off, the same launches issued one by one). Per-step events
// time prefill and decode on the device's clock.
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "agentcompile/engine.h"
#include "agentcompile/status.h"

namespace agentcompile::runtime {

// The decode step captured once into a CUDA graph.
class DecodeGraph {
 public:
  // Captures what `body` enqueues on `stream`; errors name the failing call.
  static Expected<std::unique_ptr<DecodeGraph>> capture(CUstream stream, const std::function<Status()>& body);
  ~DecodeGraph();
  Status launch(CUstream stream);
  size_t nodes() const { return nodes_; }

 private:
  DecodeGraph() = default;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  size_t nodes_ = 0;
};

// Timing events: one at the start of a request, one when the first token is sampled, and a ring
// for later steps.
class StepEvents {
 public:
  static constexpr int kRing = 16;
  static Expected<std::unique_ptr<StepEvents>> create();
  ~StepEvents();
  Status record_start(CUstream stream);
  Status record_step(int64_t step, CUstream stream);
  Status wait_step(int64_t step);
  // Device milliseconds from the start to step 0, and from step 0 to `step` (recorded recently).
  Expected<double> prefill_ms();
  Expected<double> decode_ms(int64_t step);

 private:
  StepEvents() = default;
  CUevent event_for(int64_t step) const { return step == 0 ? first_ : ring_[static_cast<size_t>(step % kRing)]; }
  CUevent start_ = nullptr, first_ = nullptr;
  std::vector<CUevent> ring_;
};

struct DecodeLoop {
  static constexpr int64_t kLookahead = 8;  // steps enqueued ahead of the host; < StepEvents::kRing - 1
  int64_t max_new_tokens = 1;
  std::function<Status(int64_t step)> launch_step;   // enqueues the step that produces token `step`
  std::function<int32_t(int64_t step)> token_of;     // token of a completed step

  // Token 0 (sampled after prefill) must already be enqueued with its step event recorded.
  Expected<GenerateResult> run(StepEvents& events, CUstream stream, const std::set<int32_t>& stops, const TokenCallback& on_token) const;
};

}  // namespace agentcompile::runtime
