// The compile's GPU worker process and its line protocol (see admission_worker.h).
//
// Caller to worker, one line per request:
//   ADMIT <region> <i>,<j>,...     validate and time these candidates of the region, in order
//   CHAIN <json>                   time a chain: {"steps": [...], "start": [...], "options": {...}}
// Worker to caller:
//   READY                          the context and the cuBLAS handle exist
//   SETUP <json times>             the region's cases and weights are ready (what that cost)
//   BEGIN <i>                      candidate i starts (its timeout starts now)
//   RESULT <i> <json>              {"result": CandidateResult, "times": AdmissionTimes}
//   DONE                           every candidate of the request is reported
//   CHAIN_RESULT <json>            a SequenceResult
//   ERROR <json string>            the request cannot be served (the worker exits)
// The worker exits at the first fault (its context may be unusable) and at end of input.
#include "tune/admission_worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "gpu/gpu_worker.h"

namespace agentcompile::tune {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

Clock::time_point after_seconds(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

json link_json(const SequenceLink& link) {
  return {{"input", link.input}, {"from_step", link.from_step}, {"output", link.output}, {"byte_offset", link.byte_offset},
          {"previous_copy", link.previous_copy}};
}

// Reads whole lines from a socket. Returns nullopt at end of input, on a read error and at `deadline`
// (then `timed_out` is set).
std::optional<std::string> read_line(int fd, std::string& pending, std::optional<Clock::time_point> deadline, bool* timed_out) {
  while (true) {
    if (const size_t newline = pending.find('\n'); newline != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      return line;
    }
    int wait_ms = -1;
    if (deadline) {
      wait_ms = static_cast<int>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count()));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (timed_out) *timed_out = true;
      return std::nullopt;
    }
    char chunk[65536];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    pending.append(chunk, static_cast<size_t>(n));
  }
}

std::vector<int> parse_indices(const std::string& text) {
  std::vector<int> indices;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = text.find(',', at);
    indices.push_back(std::stoi(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return indices;
}

[[noreturn]] void fail_and_exit(int fd, const std::string& why) {
  gpu::write_all(fd, "ERROR " + json(why).dump() + "\n");
  _exit(2);
}

// The chain of a CHAIN request, as sequence_timing.h wants it, from the worker's table.
Expected<std::vector<SequenceStep>> chain_steps(const json& request, const std::vector<RegionWork>& work) {
  std::vector<SequenceStep> steps;
  for (const auto& j : request.at("steps")) {
    const size_t r = j.at("region").get<size_t>();
    if (r >= work.size()) return error(ErrorCode::kInvalidArgument, "a chain step names region " + std::to_string(r) + " of " + std::to_string(work.size()));
    const RegionWork& region = work[r];
    SequenceStep step;
    step.region = region.id;
    step.region_module = region.region_module;
    step.bindings = RegionBindings{j.at("T").get<int64_t>(), j.at("L").get<int64_t>(), j.at("pos").get<int32_t>()};
    for (int a : j.at("alternatives").get<std::vector<int>>()) {
      if (a < 0 || static_cast<size_t>(a) >= region.candidates->size())
        return error(ErrorCode::kInvalidArgument, region.id + " has no candidate " + std::to_string(a));
      step.alternatives.push_back((*region.candidates)[static_cast<size_t>(a)]);
      step.compiled.push_back((*region.compiled)[static_cast<size_t>(a)]);
    }
    for (const auto& l : j.at("links"))
      step.links.push_back({l.at("input").get<int>(), l.at("from_step").get<int>(), l.at("output").get<int>(), l.at("byte_offset").get<int64_t>(),
                            l.at("previous_copy").get<bool>()});
    steps.push_back(std::move(step));
  }
  return steps;
}

// The worker: serves requests until end of input; exits at the first fault.
[[noreturn]] void worker_main(int fd, const std::vector<RegionWork>& work) {
  auto ctx = gpu::CudaContext::create();
  if (!ctx) fail_and_exit(fd, ctx.status().to_string());
  auto library = gpu::LibraryRunner::create((*ctx)->stream());
  gpu::LibraryRunner* runner = library ? library->get() : nullptr;
  gpu::write_all(fd, "READY\n");
  WeightCache weights;  // the compile's weights, drawn once for every region and chain that has them
  std::unique_ptr<RegionOnDevice> region;
  size_t current = SIZE_MAX;
  std::string pending;
  while (auto line = read_line(fd, pending, std::nullopt, nullptr)) {
    if (line->rfind("ADMIT ", 0) == 0) {
      const size_t space = line->find(' ', 6);
      const size_t r = std::stoul(line->substr(6, space - 6));
      const std::vector<int> indices = parse_indices(line->substr(space + 1));
      AdmissionTimes setup;
      if (r >= work.size()) fail_and_exit(fd, "no region " + std::to_string(r));
      if (current != r) {
        region.reset();  // the previous region's device memory first
        current = SIZE_MAX;
        auto prepared = prepare_region(work[r], setup, &weights);
        if (!prepared) fail_and_exit(fd, work[r].id + ": " + prepared.status().to_string());
        region = std::move(*prepared);
        current = r;
      }
      gpu::write_all(fd, "SETUP " + to_json(setup).dump() + "\n");
      for (int i : indices) {
        gpu::write_all(fd, "BEGIN " + std::to_string(i) + "\n");
        AdmissionTimes times;
        const CandidateResult result = admit_candidate(**ctx, runner, *region, work[r], static_cast<size_t>(i), times);
        gpu::write_all(fd, "RESULT " + std::to_string(i) + " " + json{{"result", candidate_result_json(result)}, {"times", to_json(times)}}.dump() + "\n");
        if (result.faulted) _exit(3);
        if (!result.validated) {
          // A rejected kernel may have scribbled over the shared weights: restore them for the next one.
          const auto& host = region->weights.host;
          for (size_t w = 0; w < region->weights.device.size(); ++w)
            if (!host[w]->bytes.empty() && !region->weights.device[w].upload(host[w]->bytes.data(), host[w]->bytes.size())) _exit(3);
        }
      }
      gpu::write_all(fd, "DONE\n");
    } else if (line->rfind("CHAIN ", 0) == 0) {
      region.reset();  // the chain's copies of the layer need the memory
      current = SIZE_MAX;
      const json request = json::parse(line->substr(6), nullptr, false);
      Expected<SequenceResult> result = error(ErrorCode::kInvalidArgument, "malformed chain request");
      if (!request.is_discarded()) {
        try {
          auto steps = chain_steps(request, work);
          if (!steps) {
            result = steps.status();
          } else {
            const json& o = request.at("options");
            SequenceOptions options;
            options.repeats = o.at("repeats").get<int>();
            options.replays = o.at("replays").get<int>();
            options.min_gain = o.at("min_gain").get<double>();
            options.passes = o.at("passes").get<int>();
            result = time_sequence(**ctx, *steps, request.at("start").get<std::vector<int>>(), options, &weights);
          }
        } catch (const json::exception& e) {
          result = error(ErrorCode::kInvalidArgument, std::string("malformed chain request: ") + e.what());
        }
      }
      // A chain that failed may have left the context unusable: the worker ends with it.
      if (!result) fail_and_exit(fd, result.status().to_string());
      gpu::write_all(fd, "CHAIN_RESULT " + sequence_result_json(*result).dump() + "\n");
    } else {
      fail_and_exit(fd, "unknown request: " + line->substr(0, 40));
    }
  }
  _exit(0);
}

}  // namespace

bool runnable(const plan::Candidate& candidate, const codegen::CompileResult& compiled) {
  for (const auto& launch : candidate.launches)
    if (!launch.library) return compiled.ok;
  return true;
}

AdmissionWorker::AdmissionWorker(const std::vector<RegionWork>* work) : work_(work) {}

AdmissionWorker::~AdmissionWorker() { stop(); }

Status AdmissionWorker::spawn(AdmissionTimes& times) {
  const auto started = Clock::now();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return error(ErrorCode::kIo, "socketpair() for the admission worker failed");
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return error(ErrorCode::kIo, "fork() for the admission worker failed");
  }
  if (pid == 0) {
    close(fds[0]);
    worker_main(fds[1], *work_);
  }
  close(fds[1]);
  pid_ = pid;
  socket_ = fds[0];
  pending_.clear();
  ++times.workers;
  const double timeout = work_->empty() ? 600 : work_->front().options.setup_timeout_s;
  bool timed_out = false;
  const auto line = read_line(socket_, pending_, after_seconds(timeout), &timed_out);
  times.worker_start_s += seconds_since(started);
  if (line && *line == "READY") return Status::ok();
  stop();
  if (line && line->rfind("ERROR ", 0) == 0) {
    const json why = json::parse(line->substr(6), nullptr, false);
    return error(ErrorCode::kUnsupported, "admission worker: " + (why.is_string() ? why.get<std::string>() : *line));
  }
  return error(ErrorCode::kInternal, timed_out ? "the admission worker did not start within " + std::to_string(timeout) + " s"
                                               : "the admission worker died while starting");
}

void AdmissionWorker::stop() {
  if (pid_ < 0) return;
  close(socket_);  // end of input: an idle worker exits
  socket_ = -1;
  int wstatus = 0;
  for (int waited_ms = 0; waitpid(pid_, &wstatus, WNOHANG) == 0; waited_ms += 10) {
    if (waited_ms >= 2000) {  // busy in a kernel, or hung: it has nothing left to give us
      kill(pid_, SIGKILL);
      waitpid(pid_, &wstatus, 0);
      break;
    }
    usleep(10000);
  }
  pid_ = -1;
}

bool AdmissionWorker::send(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::send(socket_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

Expected<AdmissionOutcome> AdmissionWorker::admit(size_t region, const std::vector<int>& indices, const ResultFn& on_result) {
  if (region >= work_->size()) return error(ErrorCode::kInvalidArgument, "no region " + std::to_string(region) + " to admit");
  const RegionWork& work = (*work_)[region];
  AdmissionOutcome out;
  out.results.resize(indices.size());
  std::vector<bool> reported(indices.size(), false);
  bool respawned = false;  // a worker found dead while idle is replaced once
  for (size_t k = 0; k < indices.size(); ++k) {
    const size_t i = static_cast<size_t>(indices[k]);
    if (i >= work.candidates->size()) return error(ErrorCode::kInvalidArgument, work.id + " has no candidate " + std::to_string(i));
    CandidateResult& r = out.results[k];
    r.id = (*work.candidates)[i].id;
    r.name = (*work.candidates)[i].name();
    r.compiled = i < work.compiled->size() && (*work.compiled)[i].ok;
    if (i >= work.compiled->size() || !runnable((*work.candidates)[i], (*work.compiled)[i])) {
      r.rejection = "compile error: " + (i < work.compiled->size() ? (*work.compiled)[i].log : std::string("not compiled"));
      reported[k] = true;
      if (on_result) on_result(k, r);
    }
  }
  auto position_of = [&](long i) -> std::optional<size_t> {
    for (size_t k = 0; k < indices.size(); ++k)
      if (indices[k] == i && !reported[k]) return k;
    return std::nullopt;
  };
  while (true) {
    std::string request;
    for (size_t k = 0; k < indices.size(); ++k)
      if (!reported[k]) request += (request.empty() ? "" : ",") + std::to_string(indices[k]);
    if (request.empty()) return out;
    if (pid_ < 0) AC_TRY(spawn(out.times));
    const bool sent = send("ADMIT " + std::to_string(region) + " " + request + "\n");
    long running = -1;
    bool progress = false, finished = false, timed_out = false;
    std::string worker_error;
    auto deadline = after_seconds(work.options.setup_timeout_s);
    while (sent && !finished && worker_error.empty()) {
      const auto line = read_line(socket_, pending_, deadline, &timed_out);
      if (!line) break;
      if (line->rfind("SETUP ", 0) == 0) {
        const json times = json::parse(line->substr(6), nullptr, false);
        if (!times.is_discarded()) out.times += admission_times_from_json(times);
      } else if (line->rfind("BEGIN ", 0) == 0) {
        running = std::stol(line->substr(6));
        deadline = after_seconds(work.options.candidate_timeout_s);
      } else if (line->rfind("RESULT ", 0) == 0) {
        const size_t space = line->find(' ', 7);
        const auto k = position_of(std::stol(line->substr(7, space - 7)));
        const json j = json::parse(line->substr(space + 1), nullptr, false);
        auto result = k && j.is_object() && j.contains("result") ? candidate_result_from_json(j["result"])
                                                                 : Expected<CandidateResult>(error(ErrorCode::kParse, "no result"));
        if (!result) {
          worker_error = "the admission worker sent a malformed result: " + result.status().message();
          break;
        }
        out.results[*k] = std::move(*result);
        out.times += admission_times_from_json(j.value("times", json::object()));
        reported[*k] = true;
        progress = true;
        running = -1;
        // Restoring the weights after a rejection comes before the next BEGIN: it gets a timeout of its own.
        deadline = after_seconds(work.options.candidate_timeout_s);
        if (on_result) on_result(*k, out.results[*k]);
      } else if (*line == "DONE") {
        finished = true;
      } else if (line->rfind("ERROR ", 0) == 0) {
        const json why = json::parse(line->substr(6), nullptr, false);
        worker_error = why.is_string() ? why.get<std::string>() : *line;
      }
    }
    if (finished) continue;
    // The worker is gone (a fault, a hang, or an error it reported): replace it for what is left.
    if (timed_out) kill(pid_, SIGKILL);
    const pid_t pid = pid_;
    close(socket_);
    socket_ = -1;
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    pid_ = -1;
    if (!worker_error.empty()) return error(ErrorCode::kUnsupported, "admission worker (" + work.id + "): " + worker_error);
    const auto k = running >= 0 ? position_of(running) : std::nullopt;
    if (k) {
      // The worker died (or hung) inside this candidate: a fault of the candidate, not of the compile.
      CandidateResult& r = out.results[*k];
      r.faulted = true;
      r.rejection = timed_out ? "fault: no answer within " + std::to_string(work.options.candidate_timeout_s) + " s (killed)"
                    : WIFSIGNALED(wstatus) ? "fault: worker killed by signal " + std::to_string(WTERMSIG(wstatus))
                                           : "fault: worker exited with status " + std::to_string(WEXITSTATUS(wstatus));
      reported[*k] = true;
      if (on_result) on_result(*k, r);
    } else if (!sent && !respawned) {
      respawned = true;
    } else if (!progress) {
      return error(ErrorCode::kInternal, "the admission worker (" + work.id + ") ended without reporting" +
                                             (timed_out ? " within " + std::to_string(work.options.setup_timeout_s) + " s" : ""));
    }
  }
}

Expected<SequenceResult> AdmissionWorker::time_chain(const std::vector<ChainStep>& steps, const std::vector<int>& start,
                                                     const SequenceOptions& options, AdmissionTimes& times) {
  const auto started = Clock::now();
  json request_steps = json::array();
  for (const ChainStep& step : steps) {
    json links = json::array();
    for (const auto& link : step.links) links.push_back(link_json(link));
    request_steps.push_back({{"region", step.region}, {"alternatives", step.alternatives}, {"T", step.bindings.T}, {"L", step.bindings.L},
                             {"pos", step.bindings.pos}, {"links", links}});
  }
  const json request = {{"steps", request_steps}, {"start", start},
                        {"options", {{"repeats", options.repeats}, {"replays", options.replays}, {"min_gain", options.min_gain}, {"passes", options.passes}}}};
  if (pid_ < 0) AC_TRY(spawn(times));
  bool timed_out = false;
  std::optional<std::string> line;
  if (send("CHAIN " + request.dump() + "\n"))
    line = read_line(socket_, pending_, after_seconds(options.timeout_s), &timed_out);
  times.chain_s += seconds_since(started);
  if (line && line->rfind("CHAIN_RESULT ", 0) == 0) {
    const json j = json::parse(line->substr(13), nullptr, false);
    AC_ASSIGN_OR_RETURN(SequenceResult result, sequence_result_from_json(j));
    if (result.best.size() != steps.size()) return error(ErrorCode::kInternal, "the chain worker returned a choice of the wrong length");
    return result;
  }
  if (timed_out) kill(pid_, SIGKILL);
  stop();
  if (line && line->rfind("ERROR ", 0) == 0) {
    const json why = json::parse(line->substr(6), nullptr, false);
    return error(ErrorCode::kUnsupported, why.is_string() ? why.get<std::string>() : *line);
  }
  return error(ErrorCode::kInternal, timed_out ? "the chain was not timed within " + std::to_string(options.timeout_s) + " s"
                                               : "the GPU worker died while timing the chain");
}

}  // namespace agentcompile::tune
