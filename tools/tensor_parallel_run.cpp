// One engine per rank on a thread per GPU (see tensor_parallel_run.h).
//
// Artifacts first, in this thread: each rank's is `--artifact DIR`/rank<r>, or the rank's own compiled
// on first use (one compile after another, before this process touches a GPU, so the compiles may still
// fork their admission workers). Then the engines load at once: each creates its NCCL communicator from
// the same id, and ncclCommInitRank waits for all ranks. A rank that fails before that point leaves the
// others waiting in it: the command then ends the process with that rank's error.
#include "tensor_parallel_run.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "agentcompile/first_use.h"
#include "commands.h"

namespace agentcompile::tools {

RanksResult generate_on_ranks(const EngineFlags& flags, const std::vector<int32_t>& prompt, const GenerateOptions& options, bool quiet) {
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
  std::vector<std::optional<Expected<GenerateResult>>> results(static_cast<size_t>(ranks));
  std::string gpu, all_reduce;
  std::mutex lines;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      EngineOptions o = rank_options[static_cast<size_t>(r)];
      o.nccl_id = *id;
      auto engine = Engine::load(o, [&](const std::string& line) {
        std::lock_guard lock(lines);
        say("rank " + std::to_string(r) + ": " + line);
      });
      if (!engine) {
        std::lock_guard lock(lines);
        // The other ranks may wait for this one in ncclCommInitRank forever: end the process here.
        fail("rank " + std::to_string(r) + ": " + engine.status().to_string());
      }
      if (r == 0) {
        gpu = (*engine)->info().gpu + " x" + std::to_string(ranks);
        all_reduce = (*engine)->info().all_reduce;
      }
      results[static_cast<size_t>(r)].emplace((*engine)->generate(prompt, options, {}));
    });
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < ranks; ++r)
    if (!results[static_cast<size_t>(r)]->has_value()) fail("rank " + std::to_string(r) + ": " + results[static_cast<size_t>(r)]->status().to_string());
  for (int r = 1; r < ranks; ++r)
    if (results[static_cast<size_t>(r)]->value().tokens != results[0]->value().tokens)
      fail("rank " + std::to_string(r) + " generated other tokens than rank 0: the ranks disagree");
  return {results[0]->value(), gpu, all_reduce};
}

}  // namespace agentcompile::tools
