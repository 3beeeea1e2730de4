// CUDA graph capture, step events and the streaming token loop.
#include "runtime/decode_loop.h"

#include "gpu/cuda_driver.h"
#include "gpu/driver_api.h"

namespace agentcompile::runtime {

namespace {
const gpu::DriverApi& api() { return *gpu::driver_api(); }
}  // namespace

Expected<std::unique_ptr<DecodeGraph>> DecodeGraph::capture(CUstream stream, const std::function<Status()>& body) {
  std::unique_ptr<DecodeGraph> g(new DecodeGraph());
  AC_CU(api().StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture(decode step)");
  const Status enqueued = body();
  const CUresult ended = api().StreamEndCapture(stream, &g->graph_);
  AC_TRY(enqueued.with_context("capturing the decode step"));
  AC_CU(ended, "cuStreamEndCapture(decode step)");
  AC_CU(api().GraphInstantiateWithFlags(&g->exec_, g->graph_, 0), "cuGraphInstantiate(decode step)");
  AC_CU(api().GraphGetNodes(g->graph_, nullptr, &g->nodes_), "cuGraphGetNodes(decode step)");
  return g;
}

DecodeGraph::~DecodeGraph() {
  if (exec_) api().GraphExecDestroy(exec_);
  if (graph_) api().GraphDestroy(graph_);
}

Status DecodeGraph::launch(CUstream stream) { return gpu::cuda_status(api().GraphLaunch(exec_, stream), "cuGraphLaunch(decode step)"); }

Expected<std::unique_ptr<StepEvents>> StepEvents::create() {
  std::unique_ptr<StepEvents> e(new StepEvents());
  AC_CU(api().EventCreate(&e->start_, CU_EVENT_DEFAULT), "cuEventCreate");
  AC_CU(api().EventCreate(&e->first_, CU_EVENT_DEFAULT), "cuEventCreate");
  e->ring_.resize(kRing, nullptr);
  for (auto& event : e->ring_) AC_CU(api().EventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
  return e;
}

StepEvents::~StepEvents() {
  for (CUevent event : ring_)
    if (event) api().EventDestroy(event);
  if (start_) api().EventDestroy(start_);
  if (first_) api().EventDestroy(first_);
}

Status StepEvents::record_start(CUstream stream) { return gpu::cuda_status(api().EventRecord(start_, stream), "cuEventRecord"); }
Status StepEvents::record_step(int64_t step, CUstream stream) {
  return gpu::cuda_status(api().EventRecord(event_for(step), stream), "cuEventRecord");
}
Status StepEvents::wait_step(int64_t step) {
  return gpu::cuda_status(api().EventSynchronize(event_for(step)), "waiting for decode step " + std::to_string(step));
}

Expected<double> StepEvents::prefill_ms() {
  float ms = 0;
  AC_CU(api().EventElapsedTime(&ms, start_, first_), "cuEventElapsedTime(prefill)");
  return static_cast<double>(ms);
}

Expected<double> StepEvents::decode_ms(int64_t step) {
  float ms = 0;
  AC_CU(api().EventElapsedTime(&ms, first_, event_for(step)), "cuEventElapsedTime(decode)");
  return static_cast<double>(ms);
}

Expected<GenerateResult> DecodeLoop::run(StepEvents& events, CUstream stream, const std::set<int32_t>& stops, const TokenCallback& on_token) const {
  GenerateResult result;
  result.stop_reason = "max_new_tokens";
  int64_t submitted = 1, last = 0;
  for (int64_t consumed = 0; consumed < max_new_tokens; ++consumed) {
    while (submitted < max_new_tokens && submitted - consumed <= kLookahead) {
      AC_TRY(launch_step(submitted));
      AC_TRY(events.record_step(submitted, stream));
      ++submitted;
    }
    AC_TRY(events.wait_step(consumed));
    if (consumed == 0) {
      AC_ASSIGN_OR_RETURN(result.prefill_ms, events.prefill_ms());
    }
    const int32_t token = token_of(consumed);
    if (token < 0)  // the sampler's mark for a logits row without a number (kernels/sampling.cuh)
      return error(ErrorCode::kUnsupported,
                   (consumed == 0 ? std::string("the prompt's logits") : "the logits of decode step " + std::to_string(consumed)) +
                       " hold no number (every one NaN or -inf), so no token can be chosen: the model's activations left "
                       "the range of its dtype (f16 ends at 65504; bf16 or f32 weights may fit) or a kernel wrote NaN" +
                       (consumed > 0 ? " (" + std::to_string(consumed) + " tokens were produced before it)" : std::string()));
    result.tokens.push_back(token);
    last = consumed;
    if (stops.count(token)) {
      result.stop_reason = "eos";
      break;
    }
    if (on_token && !on_token(token)) {
      result.stop_reason = "callback";
      break;
    }
  }
  result.decode_steps = last;
  if (last > 0) {
    AC_ASSIGN_OR_RETURN(result.decode_ms, events.decode_ms(last));
  }
  return result;
}

}  // namespace agentcompile::runtime
