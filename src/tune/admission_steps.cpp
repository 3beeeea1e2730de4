// A region's candidates validated and timed inside a worker (see admission_steps.h).
#include "tune/admission_steps.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace agentcompile::tune {

namespace {

using Clock = std::chrono::steady_clock;

// Adds the time since the last lap to a stage.
class Laps {
 public:
  explicit Laps(AdmissionTimes& times) : times_(times) {}
  void lap(double AdmissionTimes::*stage) {
    const auto now = Clock::now();
    times_.*stage += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  AdmissionTimes& times_;
  Clock::time_point last_ = Clock::now();
};

int64_t workspace_bytes(const plan::Candidate& c, int64_t tokens) { return c.workspace_bytes_per_token * tokens + c.workspace_bytes_fixed; }

// Whether random_case draws the same data at `size` as at the validation bindings: the same resolved
// shapes of every input and state, and the same position where an input takes it. A captured module's
// shapes are static, so its timing size (another L, a bucket's T) often resolves to the very same tensors.
bool same_case_data(const RegionLayout& layout, const RegionBindings& size, const RegionLayout& validation, const RegionWork& work) {
  auto resolved = [](const std::vector<ir::TensorType>& types, const ir::SymbolBindings& symbols) {
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& type : types) shapes.push_back(symbols.resolve(type.shape));
    return shapes;
  };
  if (resolved(layout.inputs, layout.symbols) != resolved(validation.inputs, validation.symbols)) return false;
  if (resolved(layout.states, layout.symbols) != resolved(validation.states, validation.symbols)) return false;
  for (const auto& type : layout.inputs)  // a scalar i32 input is the position (random_case)
    if (type.dtype == ir::DType::kI32 && type.shape.empty() && size.pos != work.bindings.pos) return false;
  return true;
}

// The rotating buffer sets of one timing size: enough sets (random data) that a set's bytes have left
// L2 when it comes round again. One set reads the weights already on the device; several need their
// own copies to leave L2. The workspace is the largest any of the region's candidates needs, so every
// candidate runs on the same sets.
Expected<TimingSets> upload_timing_sets(gpu::CudaContext& ctx, const ir::Module& region_module, const RegionWork& work,
                                        const RegionBindings& size, RegionOnDevice& region, Laps& laps) {
  SharedWeights& weights = region.weights;
  AC_ASSIGN_OR_RETURN(RegionLayout layout, region_layout(region_module, size));
  // Weights do not depend on T: time with the validation weights; inputs and states at this size,
  // drawn as (seed 1, normal). At the validation size that draw is already among the cases: reuse it
  // rather than draw gigabytes again (a KernelBench input can hold 2^31 elements); at another size a
  // huge tensor is drawn as one period that the upload repeats (random_case).
  const RegionCase* data = nullptr;
  if (same_case_data(layout, size, region.layout, work))
    for (const RegionCase& c : *region.cases)
      if (c.seed == 1 && c.distribution == Distribution::kNormal) data = &c;
  std::optional<RegionCase> drawn;
  if (!data) data = &drawn.emplace(random_case(region_module, layout, size, weights.host, 1, Distribution::kNormal, kTimingPeriodElements));
  laps.lap(&AdmissionTimes::timing_data_s);
  int64_t set_bytes = 0;
  for (const auto& t : data->inputs) set_bytes += static_cast<int64_t>(t.device_bytes());
  for (const auto& t : data->params) set_bytes += static_cast<int64_t>(t->device_bytes());
  for (const auto& t : data->states) set_bytes += static_cast<int64_t>(t.device_bytes());
  const int64_t l2 = std::max<int64_t>(ctx.info().l2_bytes, 1 << 20);
  const int sets_needed = static_cast<int>(std::clamp<int64_t>(3 * l2 / std::max<int64_t>(set_bytes, 1) + 1, 1, 64));
  const plan::Candidate* widest = &work.candidates->front();
  for (const auto& c : *work.candidates)
    if (workspace_bytes(c, size.T) > workspace_bytes(*widest, size.T)) widest = &c;
  TimingSets timing;
  for (int s = 0; s < sets_needed; ++s) {
    AC_ASSIGN_OR_RETURN(DeviceSet set, upload_set(layout, *data, *widest, size, sets_needed == 1 ? &weights : nullptr));
    timing.sets.push_back(std::move(set));
  }
  laps.lap(&AdmissionTimes::timing_buffers_s);
  return timing;
}

// Per-launch microseconds of `samples` samples of `batch` back-to-back launches each, rotating
// through the sets from `next_set`; events bracket every sample.
Expected<std::vector<double>> sample(gpu::CudaContext& ctx, const plan::Candidate& candidate, const LoadedCandidate& loaded, const RegionBindings& size,
                                     const std::vector<DeviceSet>& sets, size_t& next_set, int samples, int batch, bool programmatic) {
  std::vector<gpu::CudaEvent> events;
  for (int i = 0; i <= samples; ++i) {
    AC_ASSIGN_OR_RETURN(gpu::CudaEvent event, gpu::CudaEvent::create());
    events.push_back(std::move(event));
  }
  AC_TRY(events[0].record(ctx.stream()));
  for (int rep = 0; rep < samples; ++rep) {
    for (int b = 0; b < batch; ++b)
      AC_TRY(run_launches(candidate, loaded, sets[next_set++ % sets.size()].args, size, ctx.stream(), programmatic));
    AC_TRY(events[static_cast<size_t>(rep) + 1].record(ctx.stream()));
  }
  std::vector<double> times;
  for (int rep = 0; rep < samples; ++rep) {
    AC_ASSIGN_OR_RETURN(float ms, events[static_cast<size_t>(rep) + 1].elapsed_since(events[static_cast<size_t>(rep)]));
    times.push_back(ms * 1000.0 / batch);
  }
  return times;
}

// Times one candidate at one size over the region's sets for it. Launches are programmatic on
// sm_90+, as in the runtime's decode and prefill.
Expected<Timing> time_candidate(gpu::CudaContext& ctx, const plan::Candidate& candidate, const LoadedCandidate& loaded, const RegionBindings& size,
                                TimingSets& timing_sets, const AdmitOptions& options) {
  const std::vector<DeviceSet>& sets = timing_sets.sets;
  const bool programmatic = ctx.info().sm_major >= 9;
  for (int w = 0; w < options.warmup; ++w)
    AC_TRY(run_launches(candidate, loaded, sets[static_cast<size_t>(w) % sets.size()].args, size, ctx.stream(), programmatic));
  // Short kernels are timed in batches of back-to-back launches (about 100 us of work per sample),
  // so event and launch latency do not masquerade as kernel time; each sample is per launch.
  AC_ASSIGN_OR_RETURN(gpu::CudaEvent probe_start, gpu::CudaEvent::create());
  AC_ASSIGN_OR_RETURN(gpu::CudaEvent probe_end, gpu::CudaEvent::create());
  AC_TRY(probe_start.record(ctx.stream()));
  for (int i = 0; i < 3; ++i)
    AC_TRY(run_launches(candidate, loaded, sets[static_cast<size_t>(i) % sets.size()].args, size, ctx.stream(), programmatic));
  AC_TRY(probe_end.record(ctx.stream()));
  AC_ASSIGN_OR_RETURN(float probe_ms, probe_end.elapsed_since(probe_start));
  const int batch = static_cast<int>(std::clamp(0.1 / std::max(probe_ms / 3.0, 1e-4), 1.0, 64.0));
  size_t next_set = 0;
  std::vector<double> times;
  bool stopped = false;
  if (options.early_stop_margin > 0 && timing_sets.best_us > 0 && options.screen_samples > 0) {
    // Screening samples on top of the timed ones: a candidate that goes on is timed as it always was.
    AC_ASSIGN_OR_RETURN(times, sample(ctx, candidate, loaded, size, sets, next_set, options.screen_samples, batch, programmatic));
    stopped = clearly_behind(times, timing_sets.best_us, options.early_stop_margin);
  }
  if (!stopped) {
    next_set = 0;
    AC_ASSIGN_OR_RETURN(times, sample(ctx, candidate, loaded, size, sets, next_set, options.repetitions, batch, programmatic));
  }
  if (times.empty()) return error(ErrorCode::kInvalidArgument, "timing needs at least one repetition");
  std::sort(times.begin(), times.end());
  auto at = [&](double q) { return times[static_cast<size_t>(std::lround(q * static_cast<double>(times.size() - 1)))]; };
  Timing timing;
  timing.bindings = size;
  timing.median_us = at(0.5);
  timing.p10_us = at(0.1);
  timing.p90_us = at(0.9);
  timing.repetitions = static_cast<int>(times.size());
  timing.launches_per_sample = batch;
  timing.buffer_sets = static_cast<int>(sets.size());
  timing.stopped_early = stopped;
  timing.fastest_us = times.front();
  if (stopped) timing.stop_bar_us = timing_sets.best_us;
  if (!stopped && (timing_sets.best_us <= 0 || timing.median_us < timing_sets.best_us)) timing_sets.best_us = timing.median_us;
  return timing;
}

}  // namespace

bool clearly_behind(const std::vector<double>& samples, double best_us, double margin) {
  if (samples.empty() || best_us <= 0 || margin <= 0) return false;
  return *std::min_element(samples.begin(), samples.end()) > best_us * (1.0 + margin);
}

std::string check_case_outputs(const RegionLayout& layout, const RegionCase& c, const std::vector<std::vector<uint8_t>>& outputs,
                               const std::vector<std::vector<uint8_t>>& states, double& max_abs, double& max_rel) {
  auto check = [&](const std::vector<uint8_t>& bytes, const TestTensor& expected, const std::string& what) -> std::string {
    const size_t needed = static_cast<size_t>(expected.elements()) * ir::dtype_size(expected.dtype);
    if (bytes.size() != needed) return what + ": read back " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(needed);
    const Comparison cmp = compare_encoded(bytes, expected.values, expected.dtype, layout.precision);
    max_abs = std::max(max_abs, cmp.max_abs_error);
    max_rel = std::max(max_rel, cmp.max_rel_error);
    return cmp.ok ? "" : what + " (" + c.label + "): " + cmp.reason;
  };
  for (size_t o = 0; o < layout.outputs.size(); ++o)
    if (layout.output_state[o] < 0)
      if (auto why = check(outputs.at(o), c.expected_outputs.at(o), "output " + std::to_string(o)); !why.empty()) return why;
  for (size_t s = 0; s < layout.states.size(); ++s)
    if (auto why = check(states.at(s), c.expected_states.at(s), "state " + std::to_string(s)); !why.empty()) return why;
  return "";
}

Expected<std::unique_ptr<RegionOnDevice>> prepare_region(const RegionWork& work, AdmissionTimes& times, WeightCache* cache) {
  auto region = std::make_unique<RegionOnDevice>();
  AC_ASSIGN_OR_RETURN(region->layout, region_layout(*work.region_module, work.bindings));
  if (work.cases) {
    region->cases = work.cases;
  } else {
    AC_ASSIGN_OR_RETURN(region->built, build_region_cases(*work.region_module, work.bindings, work.seeds, work.distributions, &times, cache));
    region->cases = &region->built;
  }
  if (region->cases->empty()) return error(ErrorCode::kInvalidArgument, work.id + ": no validation cases");
  Laps laps(times);
  region->weights.host = region->cases->front().params;
  for (const auto& t : region->weights.host) {
    AC_ASSIGN_OR_RETURN(gpu::DeviceBuffer buffer, gpu::DeviceBuffer::allocate(std::max<size_t>(t->bytes.size(), 16)));
    if (!t->bytes.empty()) AC_TRY(buffer.upload(t->bytes.data(), t->bytes.size()).with_context("uploading " + work.id + "'s weights"));
    region->weights.device.push_back(std::move(buffer));
  }
  laps.lap(&AdmissionTimes::weights_upload_s);
  return region;
}

CandidateResult admit_candidate(gpu::CudaContext& ctx, gpu::LibraryRunner* library, RegionOnDevice& region, const RegionWork& work, size_t index,
                                AdmissionTimes& times) {
  const plan::Candidate& candidate = (*work.candidates)[index];
  const codegen::CompileResult& compiled = (*work.compiled)[index];
  const RegionLayout& layout = region.layout;
  const AdmitOptions& options = work.options;
  Laps laps(times);
  ++times.candidates;
  CandidateResult r;
  r.id = candidate.id;
  r.name = candidate.name();
  r.compiled = true;
  auto fail = [&](const Status& status, bool fault) {
    r.faulted = fault;
    r.rejection = (fault ? "fault: " : "") + status.message();
    return r;
  };
  auto load = load_candidate(candidate, compiled.cubin, compiled.ok, library);
  laps.lap(&AdmissionTimes::module_load_s);
  if (!load) return fail(load.status(), false);
  const LoadedCandidate& loaded = *load;

  for (const RegionCase& c : *region.cases) {
    auto set = upload_set(layout, c, candidate, work.bindings, &region.weights);
    if (!set) return fail(set.status(), false);
    for (auto& out : set->outputs)
      if (out.bytes()) {
        if (Status s = out.fill_bytes(0xff); !s) return fail(s, true);  // NaN in f16, bf16 and f32
      }
    laps.lap(&AdmissionTimes::validation_upload_s);
    Status status = run_launches(candidate, loaded, set->args, work.bindings, ctx.stream());
    if (status) status = ctx.synchronize();
    laps.lap(&AdmissionTimes::validation_run_s);
    if (!status) return fail(status, true);
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const auto unchanged = device_holds(set->inputs[i], c.inputs[i].bytes, region.staging);
      if (!unchanged) return fail(error(ErrorCode::kMismatch, "cannot read back input " + std::to_string(i) + ": " + unchanged.status().message()), false);
      if (!*unchanged) return fail(error(ErrorCode::kMismatch, "input " + std::to_string(i) + " was modified by the kernel"), false);
    }
    auto read_back = [](const gpu::DeviceBuffer& buffer, const TestTensor& expected, std::vector<uint8_t>& bytes) {
      bytes.resize(static_cast<size_t>(expected.elements()) * ir::dtype_size(expected.dtype));
      if (!buffer.download(bytes.data(), bytes.size())) bytes.clear();  // reported as a short read by the check
    };
    std::vector<std::vector<uint8_t>>& outputs = region.output_bytes;
    std::vector<std::vector<uint8_t>>& states = region.state_bytes;
    outputs.resize(layout.outputs.size());
    states.resize(layout.states.size());
    for (size_t o = 0; o < layout.outputs.size(); ++o)
      if (layout.output_state[o] < 0) read_back(set->outputs[o], c.expected_outputs[o], outputs[o]);
    for (size_t s = 0; s < layout.states.size(); ++s) read_back(set->states[s], c.expected_states[s], states[s]);
    const std::string why = check_case_outputs(layout, c, outputs, states, r.max_abs_error, r.max_rel_error);
    laps.lap(&AdmissionTimes::validation_check_s);
    if (!why.empty()) return fail(error(ErrorCode::kMismatch, why), false);
    ++r.cases;
  }
  // The shared weights must come back as uploaded (checked once, after every case ran).
  for (size_t i = 0; i < region.weights.device.size(); ++i) {
    const auto unchanged = device_holds(region.weights.device[i], region.weights.host[i]->bytes, region.staging);
    if (!unchanged) return fail(error(ErrorCode::kMismatch, "cannot read back weight " + std::to_string(i) + ": " + unchanged.status().message()), false);
    if (!*unchanged) return fail(error(ErrorCode::kMismatch, "weight " + std::to_string(i) + " was modified by the kernel"), false);
  }
  laps.lap(&AdmissionTimes::validation_check_s);
  r.validated = true;
  ++times.validated;
  if (!options.measure) return r;

  std::vector<RegionBindings> sizes = options.timing;
  if (sizes.empty()) sizes.push_back(work.bindings);
  for (const RegionBindings& size : sizes) {
    const auto key = std::make_tuple(size.T, size.L, size.pos);
    if (!region.timing.count(key)) {
      auto sets = upload_timing_sets(ctx, *work.region_module, work, size, region, laps);
      if (!sets) return fail(sets.status(), true);
      region.timing.emplace(key, std::move(*sets));
    }
    laps.lap(&AdmissionTimes::timing_buffers_s);
    auto timing = time_candidate(ctx, candidate, loaded, size, region.timing.at(key), options);
    laps.lap(&AdmissionTimes::timing_run_s);
    if (!timing) return fail(timing.status(), true);
    ++times.timings;
    times.stopped_early += timing->stopped_early;
    r.timings.push_back(*timing);
  }
  r.median_us = r.timings.front().median_us;
  r.p10_us = r.timings.front().p10_us;
  r.p90_us = r.timings.front().p90_us;
  r.measured = true;
  return r;
}

}  // namespace agentcompile::tune
