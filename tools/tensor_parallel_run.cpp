// One engine per rank, a thread per GPU (see tensor_parallel_run.h).
#include "tensor_parallel_run.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include "agentcompile/first_use.h"
#include "commands.h"
#include "runtime/rank_lockstep.h"

namespace agentcompile::tools {

namespace {

// Runs `work(r)` for every rank at once, each on a thread of its own, and waits for all of them.
void on_every_rank(int ranks, const std::function<void(int)>& work) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(work, r);
  for (auto& thread : threads) thread.join();
}

// Ends the process from a rank's thread: the other ranks may wait in NCCL for this one forever, and no
// exception can leave a thread (`fail` throws).
[[noreturn]] void end_process(const std::string& message) {
  std::fprintf(stderr, "agentcompile: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

std::unique_ptr<RankEngines> RankEngines::load_or_fail(const EngineFlags& flags, bool quiet) {
  const int ranks = flags.tensor_parallel;
  auto say = [quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "%s\n", line.c_str());
  };
  std::vector<EngineOptions> rank_options;
  for (int r = 0; r < ranks; ++r) {
    EngineOptions o = engine_options(flags);
    o.compile.rank = r;
    o.device = r;
    if (!flags.artifact.empty()) {
      o.artifact = std::filesystem::path(flags.artifact) / ("rank" + std::to_string(r));
    } else {
      auto prepared = prepare_artifact(o, say);
      if (!prepared) fail("rank " + std::to_string(r) + ": " + prepared.status().to_string());
      o.artifact = prepared->dir;
    }
    rank_options.push_back(std::move(o));
  }
  auto id = nccl_unique_id();
  if (!id) fail(id.status().to_string());
  auto out = std::unique_ptr<RankEngines>(new RankEngines());
  out->engines_.resize(static_cast<size_t>(ranks));
  std::mutex lines;
  on_every_rank(ranks, [&](int r) {
    EngineOptions o = rank_options[static_cast<size_t>(r)];
    o.nccl_id = *id;
    auto engine = Engine::load(o, [&](const std::string& line) {
      std::lock_guard lock(lines);
      say("rank " + std::to_string(r) + ": " + line);
    });
    if (!engine) {
      std::lock_guard lock(lines);
      end_process("rank " + std::to_string(r) + ": " + engine.status().to_string());
    }
    out->engines_[static_cast<size_t>(r)] = std::move(*engine);
  });
  return out;
}

RankEngines::~RankEngines() {
  on_every_rank(ranks(), [this](int r) { engines_[static_cast<size_t>(r)].reset(); });
}

Expected<GenerateResult> RankEngines::generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token) {
  std::vector<GenerateResult> results(engines_.size());
  runtime::RankLockstep lockstep;
  std::mutex lines;
  on_every_rank(ranks(), [&](int r) {
    size_t next = 0;
    TokenCallback callback = r == 0 ? TokenCallback([&](int32_t token) { return lockstep.decide(on_token ? on_token(token) : true); })
                                    : TokenCallback([&](int32_t) { return lockstep.follow(next++); });
    auto result = engines_[static_cast<size_t>(r)]->generate(prompt, options, callback);
    if (r == 0) lockstep.leader_done();
    if (!result) {  // the other ranks may be waiting for this one in a collective
      std::lock_guard lock(lines);
      end_process("rank " + std::to_string(r) + ": " + result.status().to_string());
    }
    results[static_cast<size_t>(r)] = std::move(*result);
  });
  for (int r = 1; r < ranks(); ++r)
    if (results[static_cast<size_t>(r)].tokens != results[0].tokens)
      return error(ErrorCode::kInternal, "rank " + std::to_string(r) + " generated other tokens than rank 0: the ranks disagree");
  return std::move(results[0]);
}

GenerateResult RankEngines::generate_or_fail(const std::vector<int32_t>& prompt, const GenerateOptions& options) {
  auto result = generate(prompt, options);
  if (!result) fail(result.status().to_string());
  return std::move(*result);
}

std::string RankEngines::gpu() const { return info().gpu + " x" + std::to_string(ranks()); }

}  // namespace agentcompile::tools
