// Admission worker: validation and timing of candidates in a forked process (see admission.h).
#include "tune/admission.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tune/cuda_driver.h"
#include "tune/device_sets.h"
#include "tune/gpu_worker.h"
#include "tune/library_calls.h"
#include "tune/region_args.h"

namespace agentcompile::tune {

namespace {

using json = nlohmann::json;

// Times one candidate at one size: rotates through enough buffer sets (random data) that a set's
// bytes have left L2 when it comes round again; events bracket every repetition. Launches are
// programmatic on sm_90+, as in the runtime's decode and prefill.
Expected<Timing> time_candidate(CudaContext& ctx, const ir::Module& region_module, const plan::Candidate& candidate,
                                const LoadedCandidate& loaded, const RegionBindings& size, SharedWeights& weights,
                                const AdmitOptions& options) {
  AC_ASSIGN_OR_RETURN(RegionLayout layout, region_layout(region_module, size));
  // Weights do not depend on T: time with the validation weights; inputs and states at this size.
  const auto key = std::make_tuple(size.T, size.L, size.pos);
  if (!weights.timing_data.count(key)) {
    auto host_weights = std::shared_ptr<const std::vector<TestTensor>>(weights.host, [](const std::vector<TestTensor>*) {});
    weights.timing_data.emplace(key, random_case(region_module, layout, size, host_weights, 1, Distribution::kNormal));
  }
  const RegionCase& data = weights.timing_data.at(key);
  int64_t set_bytes = 0;
  for (const auto& t : data.inputs) set_bytes += static_cast<int64_t>(t.bytes.size());
  for (const auto& t : *data.params) set_bytes += static_cast<int64_t>(t.bytes.size());
  for (const auto& t : data.states) set_bytes += static_cast<int64_t>(t.bytes.size());
  const int64_t l2 = std::max<int64_t>(ctx.info().l2_bytes, 1 << 20);
  const int sets_needed = static_cast<int>(std::clamp<int64_t>(3 * l2 / std::max<int64_t>(set_bytes, 1) + 1, 1, 64));
  std::vector<DeviceSet> sets;
  for (int s = 0; s < sets_needed; ++s) {
    // One set reuses the weights already on the device; several need their own copies to leave L2.
    AC_ASSIGN_OR_RETURN(DeviceSet set, upload_set(layout, data, candidate, size, sets_needed == 1 ? &weights : nullptr));
    sets.push_back(std::move(set));
  }
  const bool programmatic = ctx.info().sm_major >= 9;
  for (int w = 0; w < options.warmup; ++w)
    AC_TRY(run_launches(candidate, loaded, sets[static_cast<size_t>(w) % sets.size()].args, size, ctx.stream(), programmatic));
  // Short kernels are timed in batches of back-to-back launches (about 100 us of work per sample),
  // so event and launch latency do not masquerade as kernel time; each sample is per launch.
  AC_ASSIGN_OR_RETURN(CudaEvent probe_start, CudaEvent::create());
  AC_ASSIGN_OR_RETURN(CudaEvent probe_end, CudaEvent::create());
  AC_TRY(probe_start.record(ctx.stream()));
  for (int i = 0; i < 3; ++i)
    AC_TRY(run_launches(candidate, loaded, sets[static_cast<size_t>(i) % sets.size()].args, size, ctx.stream(), programmatic));
  AC_TRY(probe_end.record(ctx.stream()));
  AC_ASSIGN_OR_RETURN(float probe_ms, probe_end.elapsed_since(probe_start));
  const int batch = static_cast<int>(std::clamp(0.1 / std::max(probe_ms / 3.0, 1e-4), 1.0, 64.0));
  std::vector<CudaEvent> events;
  for (int i = 0; i <= options.repetitions; ++i) {
    AC_ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::create());
    events.push_back(std::move(event));
  }
  size_t next_set = 0;
  AC_TRY(events[0].record(ctx.stream()));
  for (int rep = 0; rep < options.repetitions; ++rep) {
    for (int b = 0; b < batch; ++b)
      AC_TRY(run_launches(candidate, loaded, sets[next_set++ % sets.size()].args, size, ctx.stream(), programmatic));
    AC_TRY(events[static_cast<size_t>(rep) + 1].record(ctx.stream()));
  }
  std::vector<double> times;
  for (int rep = 0; rep < options.repetitions; ++rep) {
    AC_ASSIGN_OR_RETURN(float ms, events[static_cast<size_t>(rep) + 1].elapsed_since(events[static_cast<size_t>(rep)]));
    times.push_back(ms * 1000.0 / batch);
  }
  std::sort(times.begin(), times.end());
  auto at = [&](double q) { return times[static_cast<size_t>(std::lround(q * static_cast<double>(times.size() - 1)))]; };
  Timing timing;
  timing.bindings = size;
  timing.median_us = at(0.5);
  timing.p10_us = at(0.1);
  timing.p90_us = at(0.9);
  timing.repetitions = options.repetitions;
  timing.launches_per_sample = batch;
  timing.buffer_sets = sets_needed;
  return timing;
}

// Validates one candidate over every case; returns false in `fault` when the context is now unusable.
CandidateResult validate_and_time(CudaContext& ctx, LibraryRunner* library, SharedWeights& weights,
                                  const ir::Module& region_module, const RegionLayout& layout, const std::vector<RegionCase>& cases,
                                  const plan::Candidate& candidate, const codegen::CompileResult& compiled,
                                  const RegionBindings& bindings, const AdmitOptions& options) {
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
  if (!load) return fail(load.status(), false);
  const LoadedCandidate& loaded = *load;

  for (const RegionCase& c : cases) {
    auto set = upload_set(layout, c, candidate, bindings, &weights);
    if (!set) return fail(set.status(), false);
    for (auto& out : set->outputs)
      if (out.bytes()) {
        if (Status s = out.fill_bytes(0xff); !s) return fail(s, true);  // NaN in f16, bf16 and f32
      }
    Status status = run_launches(candidate, loaded, set->args, bindings, ctx.stream());
    if (status) status = ctx.synchronize();
    if (!status) return fail(status, true);
    auto check_unchanged = [&](const std::vector<DeviceBuffer>& buffers, const std::vector<TestTensor>& host, const char* what) -> std::string {
      for (size_t i = 0; i < host.size(); ++i) {
        if (host[i].bytes.empty()) continue;
        std::vector<uint8_t> back(host[i].bytes.size());
        if (!buffers[i].download(back.data(), back.size())) return std::string("cannot read back ") + what;
        if (back != host[i].bytes) return std::string(what) + " " + std::to_string(i) + " was modified by the kernel";
      }
      return "";
    };
    if (auto why = check_unchanged(set->inputs, c.inputs, "input"); !why.empty()) return fail(error(ErrorCode::kMismatch, why), false);
    auto check = [&](const DeviceBuffer& buffer, const TestTensor& expected, const std::string& what) -> std::string {
      std::vector<uint8_t> bytes(static_cast<size_t>(expected.elements()) * ir::dtype_size(expected.dtype));
      if (!buffer.download(bytes.data(), bytes.size())) return "cannot read back " + what;
      Comparison cmp = compare(decode_values(expected.dtype, bytes), expected.values, expected.dtype, layout.precision);
      r.max_abs_error = std::max(r.max_abs_error, cmp.max_abs_error);
      r.max_rel_error = std::max(r.max_rel_error, cmp.max_rel_error);
      return cmp.ok ? "" : what + " (" + c.label + "): " + cmp.reason;
    };
    for (size_t o = 0; o < layout.outputs.size(); ++o)
      if (layout.output_state[o] < 0)
        if (auto why = check(set->outputs[o], c.expected_outputs[o], "output " + std::to_string(o)); !why.empty())
          return fail(error(ErrorCode::kMismatch, why), false);
    for (size_t s = 0; s < layout.states.size(); ++s)
      if (auto why = check(set->states[s], c.expected_states[s], "state " + std::to_string(s)); !why.empty())
        return fail(error(ErrorCode::kMismatch, why), false);
    ++r.cases;
  }
  // The shared weights must come back as uploaded (checked once, after every case ran).
  for (size_t i = 0; i < weights.device.size(); ++i) {
    const auto& host = (*weights.host)[i].bytes;
    std::vector<uint8_t> back(host.size());
    if (!host.empty() && (!weights.device[i].download(back.data(), back.size()) || back != host))
      return fail(error(ErrorCode::kMismatch, "weight " + std::to_string(i) + " was modified by the kernel"), false);
  }
  r.validated = true;
  if (!options.measure) return r;

  std::vector<RegionBindings> sizes = options.timing;
  if (sizes.empty()) sizes.push_back(bindings);
  for (const RegionBindings& size : sizes) {
    auto timing = time_candidate(ctx, region_module, candidate, loaded, size, weights, options);
    if (!timing) return fail(timing.status(), true);
    r.timings.push_back(*timing);
  }
  r.median_us = r.timings.front().median_us;
  r.p10_us = r.timings.front().p10_us;
  r.p90_us = r.timings.front().p90_us;
  r.measured = true;
  return r;
}

json timings_json(const std::vector<Timing>& timings) {
  json out = json::array();
  for (const auto& t : timings)
    out.push_back({{"T", t.bindings.T}, {"L", t.bindings.L}, {"pos", t.bindings.pos}, {"median_us", t.median_us},
                   {"p10_us", t.p10_us}, {"p90_us", t.p90_us}, {"repetitions", t.repetitions},
                   {"launches_per_sample", t.launches_per_sample}, {"buffer_sets", t.buffer_sets}});
  return out;
}

json to_json(const CandidateResult& r) {
  return json{{"id", r.id}, {"name", r.name}, {"compiled", r.compiled}, {"validated", r.validated}, {"measured", r.measured},
              {"faulted", r.faulted}, {"rejection", r.rejection}, {"max_abs_error", r.max_abs_error},
              {"max_rel_error", r.max_rel_error}, {"cases", r.cases}, {"median_us", r.median_us}, {"p10_us", r.p10_us},
              {"p90_us", r.p90_us}, {"timings", timings_json(r.timings)}};
}

CandidateResult from_json(const json& j) {
  CandidateResult r;
  r.id = j.value("id", "");
  r.name = j.value("name", "");
  r.compiled = j.value("compiled", false);
  r.validated = j.value("validated", false);
  r.measured = j.value("measured", false);
  r.faulted = j.value("faulted", false);
  r.rejection = j.value("rejection", "");
  r.max_abs_error = j.value("max_abs_error", 0.0);
  r.max_rel_error = j.value("max_rel_error", 0.0);
  r.cases = j.value("cases", 0);
  r.median_us = j.value("median_us", 0.0);
  r.p10_us = j.value("p10_us", 0.0);
  r.p90_us = j.value("p90_us", 0.0);
  if (j.contains("timings"))
    for (const auto& t : j["timings"]) {
      Timing timing;
      timing.bindings = RegionBindings{t.value("T", int64_t{1}), t.value("L", int64_t{1}), t.value("pos", 0)};
      timing.median_us = t.value("median_us", 0.0);
      timing.p10_us = t.value("p10_us", 0.0);
      timing.p90_us = t.value("p90_us", 0.0);
      timing.repetitions = t.value("repetitions", 0);
      timing.buffer_sets = t.value("buffer_sets", 0);
      timing.launches_per_sample = t.value("launches_per_sample", 1);
      r.timings.push_back(timing);
    }
  return r;
}

// A candidate can run when its generated launches compiled (library-only candidates need nothing).
bool runnable(const plan::Candidate& candidate, const codegen::CompileResult& compiled) {
  for (const auto& launch : candidate.launches)
    if (!launch.library) return compiled.ok;
  return true;
}


// The worker: runs candidates [first, end) and reports one JSON line each; exits at the first fault.
[[noreturn]] void worker_main(int fd, size_t first, const ir::Module& region_module, const RegionLayout& layout, const std::vector<RegionCase>& cases,
                              const std::vector<plan::Candidate>& candidates,
                              const std::vector<codegen::CompileResult>& compiled, const RegionBindings& bindings,
                              const AdmitOptions& options) {
  auto ctx = CudaContext::create();
  if (!ctx) {
    write_all(fd, "ERROR " + json(ctx.status().to_string()).dump() + "\n");
    _exit(2);
  }
  auto library = LibraryRunner::create((*ctx)->stream());
  SharedWeights weights;
  weights.host = cases.front().params.get();
  for (const auto& t : *weights.host) {
    auto buffer = DeviceBuffer::allocate(std::max<size_t>(t.bytes.size(), 16));
    if (!buffer || (!t.bytes.empty() && !buffer->upload(t.bytes.data(), t.bytes.size()))) {
      write_all(fd, "ERROR " + json("uploading the region's weights: " + (buffer ? std::string("copy failed") : buffer.status().to_string())).dump() + "\n");
      _exit(2);
    }
    weights.device.push_back(std::move(*buffer));
  }
  for (size_t i = first; i < candidates.size(); ++i) {
    if (!runnable(candidates[i], compiled[i])) continue;
    write_all(fd, "BEGIN " + std::to_string(i) + "\n");
    CandidateResult r = validate_and_time(**ctx, library ? library->get() : nullptr, weights, region_module, layout, cases,
                                          candidates[i], compiled[i], bindings, options);
    write_all(fd, "RESULT " + std::to_string(i) + " " + to_json(r).dump() + "\n");
    if (r.faulted) _exit(3);
    if (!r.validated) {
      // A rejected kernel may have scribbled over the shared weights: restore them for the next one.
      for (size_t w = 0; w < weights.device.size(); ++w)
        if (!(*weights.host)[w].bytes.empty() && !weights.device[w].upload((*weights.host)[w].bytes.data(), (*weights.host)[w].bytes.size()))
          _exit(3);
    }
  }
  _exit(0);
}

}  // namespace

Expected<std::vector<CandidateResult>> admit_candidates(const ir::Module& region_module, const RegionBindings& bindings,
                                                         const std::vector<RegionCase>& cases,
                                                         const std::vector<plan::Candidate>& candidates,
                                                         const std::vector<codegen::CompileResult>& compiled,
                                                         const AdmitOptions& options) {
  AC_ASSIGN_OR_RETURN(RegionLayout layout, region_layout(region_module, bindings));
  std::vector<CandidateResult> results(candidates.size());
  std::vector<bool> reported(candidates.size(), false);
  for (size_t i = 0; i < candidates.size(); ++i) {
    results[i].id = candidates[i].id;
    results[i].name = candidates[i].name();
    results[i].compiled = i < compiled.size() && compiled[i].ok;
    if (i >= compiled.size() || !runnable(candidates[i], compiled[i])) {
      results[i].rejection = "compile error: " + (i < compiled.size() ? compiled[i].log : std::string("not compiled"));
      reported[i] = true;
    }
  }
  size_t next = 0;
  while (true) {
    while (next < candidates.size() && reported[next]) ++next;
    if (next >= candidates.size()) break;
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return error(ErrorCode::kIo, "pipe() for the admission worker failed");
    const pid_t pid = fork();
    if (pid < 0) return error(ErrorCode::kIo, "fork() for the admission worker failed");
    if (pid == 0) {
      close(pipe_fds[0]);
      worker_main(pipe_fds[1], next, region_module, layout, cases, candidates, compiled, bindings, options);
    }
    close(pipe_fds[1]);
    std::string buffer;
    long running = -1;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.candidate_timeout_s);
    bool timed_out = false;
    std::string worker_error;
    while (true) {
      pollfd pfd{pipe_fds[0], POLLIN, 0};
      const int wait_ms = static_cast<int>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                    deadline - std::chrono::steady_clock::now()).count()));
      const int ready = poll(&pfd, 1, wait_ms);
      if (ready == 0) {
        timed_out = true;
        kill(pid, SIGKILL);
        break;
      }
      char chunk[4096];
      const ssize_t n = read(pipe_fds[0], chunk, sizeof(chunk));
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t newline;
      while ((newline = buffer.find('\n')) != std::string::npos) {
        const std::string line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        if (line.rfind("BEGIN ", 0) == 0) {
          running = std::stol(line.substr(6));
          deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.candidate_timeout_s);
        } else if (line.rfind("RESULT ", 0) == 0) {
          const size_t space = line.find(' ', 7);
          const size_t index = std::stoul(line.substr(7, space - 7));
          json j = json::parse(line.substr(space + 1), nullptr, false);
          if (!j.is_discarded() && index < results.size()) {
            results[index] = from_json(j);
            reported[index] = true;
          }
          running = -1;
        } else if (line.rfind("ERROR ", 0) == 0) {
          json j = json::parse(line.substr(6), nullptr, false);
          worker_error = j.is_string() ? j.get<std::string>() : line;
        }
      }
    }
    close(pipe_fds[0]);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    if (!worker_error.empty()) return error(ErrorCode::kUnsupported, "admission worker: " + worker_error);
    if (running >= 0 && !reported[static_cast<size_t>(running)]) {
      // The worker died (or hung) inside this candidate: a fault of the candidate, not of the compile.
      CandidateResult& r = results[static_cast<size_t>(running)];
      r.faulted = true;
      r.rejection = timed_out ? "fault: no answer within " + std::to_string(options.candidate_timeout_s) + " s (killed)"
                              : WIFSIGNALED(wstatus) ? "fault: worker killed by signal " + std::to_string(WTERMSIG(wstatus))
                                                     : "fault: worker exited with status " + std::to_string(WEXITSTATUS(wstatus));
      reported[static_cast<size_t>(running)] = true;
    } else if (running < 0 && next < candidates.size() && !reported[next]) {
      bool any_new = false;
      for (size_t i = next; i < candidates.size(); ++i) any_new |= reported[i];
      if (!any_new) return error(ErrorCode::kInternal, "admission worker ended without reporting");
    }
  }
  return results;
}


Expected<DeviceInfo> probe_device() {
  AC_ASSIGN_OR_RETURN(std::string text, run_forked([]() -> Expected<std::string> {
    AC_ASSIGN_OR_RETURN(auto ctx, CudaContext::create());
    const DeviceInfo& i = ctx->info();
    return json{{"name", i.name}, {"sm_major", i.sm_major}, {"sm_minor", i.sm_minor}, {"multiprocessors", i.multiprocessors},
                {"total_memory", i.total_memory}, {"l2_bytes", i.l2_bytes}, {"shared_per_block_optin", i.shared_per_block_optin},
                {"driver_version", i.driver_version}}.dump();
  }, 120));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return error(ErrorCode::kInternal, "device probe returned malformed JSON");
  DeviceInfo info;
  info.name = j.value("name", "");
  info.sm_major = j.value("sm_major", 0);
  info.sm_minor = j.value("sm_minor", 0);
  info.multiprocessors = j.value("multiprocessors", 0);
  info.total_memory = j.value("total_memory", int64_t{0});
  info.l2_bytes = j.value("l2_bytes", int64_t{0});
  info.shared_per_block_optin = j.value("shared_per_block_optin", int64_t{0});
  info.driver_version = j.value("driver_version", 0);
  return info;
}

std::string nvrtc_arch(const DeviceInfo& info) {
  if (info.sm_major == 9 && info.sm_minor == 0) return "sm_90a";
  return "sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor);
}

Expected<double> measure_copy_bandwidth_gbs(size_t bytes) {
  AC_ASSIGN_OR_RETURN(std::string text, run_forked([bytes]() -> Expected<std::string> {
    AC_ASSIGN_OR_RETURN(auto ctx, CudaContext::create());
    AC_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::allocate(bytes));
    AC_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(bytes));
    AC_TRY(a.fill_bytes(1));
    AC_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create());
    AC_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create());
    AC_TRY(copy_device(b, a, bytes, ctx->stream()));
    AC_TRY(ctx->synchronize());
    constexpr int kReps = 10;
    AC_TRY(start.record(ctx->stream()));
    for (int i = 0; i < kReps; ++i) AC_TRY(copy_device(i % 2 ? a : b, i % 2 ? b : a, bytes, ctx->stream()));
    AC_TRY(stop.record(ctx->stream()));
    AC_ASSIGN_OR_RETURN(float ms, stop.elapsed_since(start));
    return std::to_string(2.0 * static_cast<double>(bytes) * kReps / (ms * 1e-3) / 1e9);
  }, 120));
  return std::stod(text);
}

}  // namespace agentcompile::tune
