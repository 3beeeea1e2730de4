// Requests the host cannot hold are errors that name what and how much, before anything is
// allocated (issue 23): a KV cache of 10^12 rows in `reference`, 100000 interpreter threads, a random
// checkpoint whose embedding alone is 2 TiB. Under a 4 GiB address-space limit none of them may end
// in std::bad_alloc, std::system_error or the OOM killer.
#include <gtest/gtest.h>

#include "bad_input_fixtures.h"

namespace agentcompile {
namespace {

using namespace testing::bad_input;
using testing::CommandRun;

const fs::path kTinyLlama = kFixtures / "models" / "tiny-llama";

TEST(HostLimits, AKvCacheLargerThanTheHostIsRefusedNamingItsSize) {
  // Rows past the model's context could never be used.
  const CommandRun rows = cli("reference " + kTinyLlama.string() + " --tokens 1,2,3 -n 2 --max-context 1000000000000");
  EXPECT_EQ(rows.exit_code, 1) << rows.output;
  EXPECT_TRUE(contains(rows.output, "--max-context 1000000000000 exceeds the model's context of 256")) << rows.output;

  // A context of 2^24 rows: four caches of 2 GiB, refused before the first is allocated.
  const fs::path model = checkpoint_copy("tiny-llama", work_dir("kv-cache") / "model", {{"max_position_embeddings", 16777216}});
  const CommandRun run = cli("reference " + model.string() + " --tokens 1,2,3 -n 2 --max-context 16777216");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "4 states (KV caches) of f32[16777216, 2, 16]")) << run.output;
  EXPECT_TRUE(contains(run.output, "f32[16777216, 2, 16]: 8 GiB")) << run.output;
  EXPECT_TRUE(contains(run.output, "is more than this host can hold")) << run.output;
}

TEST(HostLimits, ThreadCountsAreBounded) {
  const CommandRun run = cli("reference " + kTinyLlama.string() + " --tokens 1,2,3 -n 2 --threads 100000");
  EXPECT_GT(run.exit_code, 0) << run.output;  // a flag out of range: CLI11's exit code
  EXPECT_TRUE(contains(run.output, "--threads")) << run.output;
  EXPECT_FALSE(contains(run.output, "system_error")) << run.output;
  const CommandRun fine = cli("reference " + kTinyLlama.string() + " --tokens 1,2,3 -n 2 --threads 3");
  EXPECT_EQ(fine.exit_code, 0) << fine.output;
}

TEST(HostLimits, ARandomCheckpointLargerThanTheHostIsRefusedBeforeWriting) {
  const fs::path work = work_dir("init-random-huge");
  // Every size within the configuration's bounds, 2.2e12 parameters: a 2 TiB embedding in bf16.
  const json config = {{"model_type", "llama"}, {"hidden_size", 65536}, {"intermediate_size", 64}, {"num_hidden_layers", 1},
                       {"num_attention_heads", 1024}, {"num_key_value_heads", 1024}, {"vocab_size", 16777216},
                       {"max_position_embeddings", 256}, {"torch_dtype", "bfloat16"}};
  write_text(work / "config.json", config.dump());
  const CommandRun run = cli("init-random --config " + (work / "config.json").string() + " --out " + (work / "out").string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_LT(run.seconds, 30);
  EXPECT_TRUE(contains(run.output, "'model.embed_tokens.weight'")) << run.output;
  EXPECT_TRUE(contains(run.output, "2 TiB")) << run.output;
  EXPECT_FALSE(fs::exists(work / "out")) << run.output;
}

}  // namespace
}  // namespace agentcompile
