// Checkpoints that disagree with themselves or with their config are refused by every tool that opens
// them, with the tensor or key named, instead of giving wrong tokens (issue 23): GGUF tensors whose
// bytes overlap or whose n_dims is 0, a GGUF block_count far past any model, tensors of the checkpoint
// that the config's graph never uses (a qwen3 or qwen2 checkpoint labelled llama, an lm_head beside
// tied embeddings, a stray GGUF tensor), and a truncated safetensors shard seen by the tools that
// read no weights (inspect, compile --no-gpu). What checkpoints legitimately carry beyond the graph
// (rotary inv_freq buffers of old transformers) still loads.
#include <gtest/gtest.h>

#include "bad_input_fixtures.h"
#include "frontend/safetensors.h"

namespace agentcompile {
namespace {

using namespace testing::bad_input;
using testing::CommandRun;

const fs::path kTinyGguf = kFixtures / "gguf" / "tiny_llama.gguf";

std::string compile_args(const fs::path& model, const fs::path& work) {
  return "compile --no-gpu --device-profile h200 --max-candidates 1 " + model.string() + " -o " + (work / "artifact").string() +
         " --cache-dir " + (work / "cache").string();
}

// Every tool that opens `model` fails with all of `fragments` in its message.
void expect_refused_everywhere(const fs::path& model, const fs::path& work, const std::vector<std::string>& fragments) {
  for (const std::string& args : {"reference " + model.string() + " --tokens 1,2 -n 2", "inspect --no-ir " + model.string(),
                                  compile_args(model, work)}) {
    const CommandRun run = cli(args);
    EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
    for (const auto& fragment : fragments) EXPECT_TRUE(contains(run.output, fragment)) << args << ": no '" << fragment << "' in\n" << run.output;
  }
}

TEST(CheckpointChecks, GgufTensorsWhoseBytesOverlapAreRefused) {
  const fs::path work = work_dir("gguf-overlap");
  GgufEdit edit = GgufEdit::read(kTinyGguf);
  edit.tensor("blk.0.ffn_up.weight").offset = edit.tensor("blk.0.ffn_gate.weight").offset;
  edit.write(work / "overlap.gguf");
  expect_refused_everywhere(work / "overlap.gguf", work, {"'blk.0.ffn_gate.weight'", "'blk.0.ffn_up.weight'", "overlap"});
}

TEST(CheckpointChecks, GgufNDimsZeroNamesTheTensor) {
  const fs::path work = work_dir("gguf-ndims");
  std::vector<uint8_t> bytes = read_bytes(kTinyGguf);
  const std::string name = "blk.0.attn_norm.weight";
  const size_t at = find_gguf_string(bytes, name);
  ASSERT_NE(at, std::string::npos);
  std::memset(&bytes[at + 8 + name.size()], 0, 4);  // n_dims = 0, its one dim left in place
  write_bytes(work / "ndims.gguf", bytes);
  const CommandRun run = cli("reference " + (work / "ndims.gguf").string() + " --tokens 1,2 -n 2");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "'" + name + "'")) << run.output;
  EXPECT_TRUE(contains(run.output, "n_dims is 0; it must be 1 to 4")) << run.output;
  EXPECT_FALSE(contains(run.output, "quant type")) << run.output;
}

TEST(CheckpointChecks, GgufBlockCountPastAnyModelFailsAtOnceNamingTheKey) {
  const fs::path work = work_dir("gguf-blocks");
  GgufEdit edit = GgufEdit::read(kTinyGguf);
  edit.set_u32("llama.block_count", 2147483647);
  edit.write(work / "blocks.gguf");
  const CommandRun run = cli("reference " + (work / "blocks.gguf").string() + " --tokens 1,2 -n 2");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_LT(run.seconds, 10);
  EXPECT_TRUE(contains(run.output, "GGUF metadata key 'llama.block_count'")) << run.output;
  EXPECT_TRUE(contains(run.output, "2147483647")) << run.output;
}

TEST(CheckpointChecks, AGgufTensorTheGraphNeverUsesIsAnError) {
  const fs::path work = work_dir("gguf-unused");
  GgufEdit edit = GgufEdit::read(kTinyGguf);
  edit.add_f32("blk.0.attn_sinks.weight", {4});
  edit.write(work / "extra.gguf");
  expect_refused_everywhere(work / "extra.gguf", work, {"'blk.0.attn_sinks.weight'", "not used"});
}

TEST(CheckpointChecks, AQwen3CheckpointLabelledLlamaReportsItsQkNorms) {
  const fs::path work = work_dir("qwen3-as-llama");
  const fs::path model = checkpoint_copy("tiny-qwen3", work / "model", {{"model_type", "llama"}});
  expect_refused_everywhere(model, work, {"self_attn.q_norm.weight'", "not used"});
}

TEST(CheckpointChecks, AQwen2CheckpointLabelledLlamaReportsItsBiases) {
  const fs::path work = work_dir("qwen2-as-llama");
  const fs::path model = checkpoint_copy("tiny-qwen2", work / "model", {{"model_type", "llama"}});
  expect_refused_everywhere(model, work, {"self_attn.q_proj.bias'", "not used"});
}

TEST(CheckpointChecks, AnLmHeadBesideTiedEmbeddingsIsAnError) {
  const fs::path work = work_dir("tied-lm-head");
  const fs::path model = checkpoint_copy("tiny-qwen3", work / "model", {{"tie_word_embeddings", true}});
  expect_refused_everywhere(model, work, {"'lm_head.weight'", "tie_word_embeddings"});
}

// transformers before 4.31 saved each layer's rotary inv_freq buffer; it recomputes them from the
// config on load, and so do we: they are the one kind of tensor a checkpoint may carry unused.
TEST(CheckpointChecks, RotaryInvFreqBuffersStillLoad) {
  const fs::path work = work_dir("inv-freq");
  const fs::path model = checkpoint_copy("tiny-llama", work / "model");
  auto file = frontend::SafetensorsFile::open(model / "model.safetensors");
  ASSERT_TRUE(file) << file.status().to_string();
  std::vector<std::vector<uint8_t>> data;  // owned: the mapping goes before the second write
  for (const auto& entry : (*file)->header().tensors)
    data.emplace_back((*file)->bytes(entry), (*file)->bytes(entry) + (entry.end - entry.begin));
  std::vector<frontend::TensorToWrite> tensors;
  for (size_t i = 0; i < data.size(); ++i) {
    const auto& entry = (*file)->header().tensors[i];
    tensors.push_back({entry.name, entry.dtype, entry.shape, data[i].data()});
  }
  const std::vector<float> inv_freq(8, 0.5f);  // head_dim 16
  for (const char* layer : {"0", "1"})
    tensors.push_back({std::string("model.layers.") + layer + ".self_attn.rotary_emb.inv_freq", ir::DType::kF32, {8}, inv_freq.data()});
  ASSERT_TRUE(frontend::write_safetensors(work / "model.safetensors", tensors, {{"format", "pt"}}).is_ok());
  file->reset();
  fs::rename(work / "model.safetensors", model / "model.safetensors");

  const CommandRun run = cli("reference " + model.string() + " --tokens 1,2,3 -n 2");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // One of another shape is not such a buffer.
  tensors.back().shape = {4};
  ASSERT_TRUE(frontend::write_safetensors(model / "model.safetensors", tensors, {{"format", "pt"}}).is_ok());
  const CommandRun wrong = cli("inspect --no-ir " + model.string());
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_TRUE(contains(wrong.output, "'model.layers.1.self_attn.rotary_emb.inv_freq'")) << wrong.output;
}

TEST(CheckpointChecks, InspectAndCompileNoticeATruncatedShard) {
  const fs::path work = work_dir("truncated");
  const fs::path model = checkpoint_copy("tiny-qwen3", work / "model");
  fs::resize_file(model / "model.safetensors", fs::file_size(model / "model.safetensors") / 2);
  for (const std::string& args : {"inspect --no-ir " + model.string(), compile_args(model, work)}) {
    const CommandRun run = cli(args);
    EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "model.safetensors")) << args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "past the data section")) << args << "\n" << run.output;
  }
}

}  // namespace
}  // namespace agentcompile
