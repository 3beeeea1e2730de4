// Random checkpoints: byte-identical for a seed whatever the thread count, sharded like transformers,
// readable back through SafetensorsStore and consistent with build_module(config).
#include "frontend/init_random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "frontend/model_builder.h"
#include "frontend/safetensors.h"

namespace agentcompile::frontend {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "test-tmp" / "init_random" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Qwen3 exercises q/k norms and tied embeddings; the llama variant carries biases and an lm_head.
ModelConfig config_of(const std::string& text) {
  auto config = parse_hf_config(nlohmann::json::parse(text), "tiny.json");
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  return *config;
}
ModelConfig tiny_qwen3() {
  return config_of(R"({"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
      "tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": [2, 3], "dtype": "bfloat16",
      "initializer_range": 0.02})");
}
ModelConfig tiny_llama() {
  return config_of(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
      "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 128, "attention_bias": true,
      "mlp_bias": true, "tie_word_embeddings": false, "torch_dtype": "float32", "initializer_range": 0.05})");
}

std::map<std::string, std::string> files_in(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& item : fs::directory_iterator(dir)) files[item.path().filename().string()] = read_bytes(item.path());
  return files;
}

TEST(InitRandom, SameSeedIsByteIdenticalAndAnotherSeedDiffers) {
  const ModelConfig config = tiny_qwen3();
  const fs::path a = fresh_dir("seed_a"), b = fresh_dir("seed_b"), c = fresh_dir("seed_c");
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kBF16, 7, a, 1 << 30).is_ok());
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kBF16, 7, b, 1 << 30).is_ok());
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kBF16, 8, c, 1 << 30).is_ok());
  const auto files_a = files_in(a);
  EXPECT_EQ(files_a.size(), 4u);  // config.json, generation_config.json, model.safetensors and the record of them
  EXPECT_EQ(files_a, files_in(b));
  const auto files_c = files_in(c);
  EXPECT_EQ(files_a.at("config.json"), files_c.at("config.json"));
  EXPECT_NE(files_a.at("model.safetensors"), files_c.at("model.safetensors"));

  // Every tensor differs between seeds, not just some bytes of the file.
  auto store_a = open_safetensors_checkpoint(a);
  auto store_c = open_safetensors_checkpoint(c);
  ASSERT_TRUE(store_a.has_value() && store_c.has_value());
  for (const auto& info : (*store_a)->tensors()) {
    std::vector<float> va, vc;
    ASSERT_TRUE((*store_a)->read_f32(info.name, va).is_ok());
    ASSERT_TRUE((*store_c)->read_f32(info.name, vc).is_ok());
    EXPECT_NE(va, vc) << info.name;
  }
}

TEST(InitRandom, ValuesDoNotDependOnThreadCount) {
  const uint64_t n = 300001;  // several chunks and an odd tail
  for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16}) {
    std::vector<uint8_t> one(n * ir::dtype_size(dtype)), many(one.size());
    fill_random_tensor("model.layers.0.mlp.up_proj.weight", 11, {0.0f, 0.02f}, dtype, n, one.data(), 1);
    fill_random_tensor("model.layers.0.mlp.up_proj.weight", 11, {0.0f, 0.02f}, dtype, n, many.data(), 5);
    EXPECT_EQ(one, many) << ir::dtype_name(dtype);
  }
}

TEST(InitRandom, ShardedCheckpointReadsBackEveryTensor) {
  const ModelConfig config = tiny_llama();
  const fs::path single = fresh_dir("single"), sharded = fresh_dir("sharded");
  RandomCheckpointSummary summary;
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kF16, 3, single, 1 << 30).is_ok());
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kF16, 3, sharded, 20000, &summary).is_ok());
  EXPECT_FALSE(fs::exists(sharded / "model.safetensors"));
  ASSERT_TRUE(fs::exists(sharded / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(sharded / "generation_config.json"));  // the config names no bos/eos

  const auto index = nlohmann::json::parse(read_bytes(sharded / "model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), summary.tensor_bytes);
  size_t shards = 0;
  for (const auto& file : summary.files)
    if (file.extension() == ".safetensors") ++shards;
  ASSERT_GT(shards, 2u);
  char first[64];
  std::snprintf(first, sizeof(first), "model-00001-of-%05zu.safetensors", shards);
  EXPECT_TRUE(fs::exists(sharded / first)) << first;
  for (size_t s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", s + 1, shards);
    auto file = SafetensorsFile::open(sharded / name);
    ASSERT_TRUE(file.has_value()) << file.status().to_string();
    EXPECT_EQ((*file)->header().metadata.at("format"), "pt");
  }

  auto module = build_module(config);
  ASSERT_TRUE(module.has_value());
  auto store = open_safetensors_checkpoint(sharded);
  auto reference = open_safetensors_checkpoint(single);
  ASSERT_TRUE(store.has_value()) << store.status().to_string();
  ASSERT_TRUE(reference.has_value());
  EXPECT_EQ((*store)->tensors().size(), module->params.size());
  int64_t parameters = 0;
  for (const auto& param : module->params) {
    std::vector<float> got, want;
    ASSERT_TRUE((*store)->read_f32(param.name, got).is_ok()) << param.name;
    ASSERT_TRUE((*reference)->read_f32(param.name, want).is_ok()) << param.name;
    EXPECT_EQ(got, want) << param.name << ": sharding changed the values";
    parameters += static_cast<int64_t>(got.size());
    EXPECT_EQ(index["weight_map"].contains(param.name), true) << param.name;
  }
  EXPECT_EQ(summary.parameters, parameters);
  EXPECT_NE((*store)->find("lm_head.weight"), nullptr);
  EXPECT_NE((*store)->find("model.layers.0.mlp.down_proj.bias"), nullptr);

  // Writing an unsharded checkpoint over the sharded one removes the shards it replaces.
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kF16, 3, sharded, 1 << 30).is_ok());
  EXPECT_EQ(files_in(sharded), files_in(single));
}

TEST(InitRandom, MatchesTheConfigInEveryDtype) {
  for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16}) {
    SCOPED_TRACE(std::string(ir::dtype_name(dtype)));
    ModelConfig config = tiny_qwen3();
    const fs::path dir = fresh_dir(std::string("dtype_") + std::string(ir::dtype_name(dtype)));
    ASSERT_TRUE(write_random_checkpoint(config, dtype, 1, dir, 1 << 30).is_ok());
    auto written = read_hf_config(dir / "config.json");
    ASSERT_TRUE(written.has_value()) << written.status().to_string();
    EXPECT_EQ(written->dtype, dtype);
    const auto raw = nlohmann::json::parse(read_bytes(dir / "config.json"));
    EXPECT_EQ(raw["torch_dtype"], raw["dtype"]);  // both keys agree, whichever a reader prefers
    auto module = build_module(*written);
    auto store = open_safetensors_checkpoint(dir);
    ASSERT_TRUE(module.has_value() && store.has_value());
    EXPECT_TRUE(check_weights(*module, **store).is_ok()) << check_weights(*module, **store).to_string();
    EXPECT_EQ((*store)->find("lm_head.weight"), nullptr);  // tied
    const auto generation = nlohmann::json::parse(read_bytes(dir / "generation_config.json"));
    EXPECT_EQ(generation["bos_token_id"], 1);
    EXPECT_EQ(generation["eos_token_id"], nlohmann::json({2, 3}));
  }
}

TEST(InitRandom, DistributionsFollowTheConfig) {
  const ModelConfig config = tiny_qwen3();
  const fs::path dir = fresh_dir("distributions");
  ASSERT_TRUE(write_random_checkpoint(config, ir::DType::kF32, 5, dir, 1 << 30).is_ok());
  auto store = open_safetensors_checkpoint(dir);
  ASSERT_TRUE(store.has_value());
  auto moments = [&](const std::string& name) {
    std::vector<float> values;
    EXPECT_TRUE((*store)->read_f32(name, values).is_ok()) << name;
    double sum = 0, squares = 0;
    for (float v : values) sum += v;
    const double mean = sum / values.size();
    for (float v : values) squares += (v - mean) * (v - mean);
    return std::pair{mean, std::sqrt(squares / values.size())};
  };
  auto [embed_mean, embed_std] = moments("model.embed_tokens.weight");  // 16384 values
  EXPECT_NEAR(embed_mean, 0.0, 0.001);
  EXPECT_NEAR(embed_std, 0.02, 0.001);
  for (const std::string name : {"model.norm.weight", "model.layers.0.input_layernorm.weight",
                                 "model.layers.1.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight"}) {
    std::vector<float> values;
    ASSERT_TRUE((*store)->read_f32(name, values).is_ok());
    size_t ones = 0;
    for (float v : values) ones += v == 1.0f;
    EXPECT_LT(ones, values.size()) << name << " is all ones";
    auto [mean, stddev] = moments(name);
    EXPECT_NEAR(mean, 1.0, 0.05) << name;
    EXPECT_GT(stddev, 0.05) << name;
    EXPECT_LT(stddev, 0.15) << name;
  }
}

TEST(InitRandom, RejectsBadArguments) {
  const ModelConfig config = tiny_qwen3();
  const fs::path dir = fresh_dir("bad");
  Status status = write_random_checkpoint(config, ir::DType::kI32, 1, dir, 1 << 30);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("i32"), std::string::npos) << status.message();
  status = write_random_checkpoint(config, ir::DType::kF16, 1, dir, 0);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  ModelConfig no_raw = config;
  no_raw.raw = nullptr;
  status = write_random_checkpoint(no_raw, ir::DType::kF16, 1, dir, 1 << 30);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("config.json"), std::string::npos) << status.message();
  const fs::path blocker = fresh_dir("blocker");
  std::ofstream(blocker) << "a file where the directory should go";
  status = write_random_checkpoint(config, ir::DType::kF16, 1, blocker / "out", 1 << 30);
  EXPECT_EQ(status.code(), ErrorCode::kIo);
  EXPECT_NE(status.message().find("blocker"), std::string::npos) << status.message();
}

#ifdef AC_CLI
TEST(InitRandom, CommandLineWritesACheckpoint) {
  const fs::path dir = fresh_dir("cli");
  const fs::path config = fs::path(AC_BINARY_DIR) / "test-tmp" / "init_random" / "cli_config.json";
  std::ofstream(config) << tiny_qwen3().raw.dump();
  const std::string command = std::string(AC_CLI) + " init-random --config " + config.string() +
                              " --dtype f16 --seed 9 --out " + dir.string() + " --max-shard-mb 1 > " +
                              (dir.string() + ".log") + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_bytes(dir.string() + ".log");
  auto store = open_safetensors_checkpoint(dir);
  ASSERT_TRUE(store.has_value()) << store.status().to_string();
  EXPECT_EQ((*store)->tensors()[0].dtype, ir::DType::kF16);
  EXPECT_NE(read_bytes(dir.string() + ".log").find("model.safetensors"), std::string::npos);

  const std::string bad = std::string(AC_CLI) + " init-random --config " + (dir / "nope.json").string() +
                          " --dtype f16 --seed 1 --out " + dir.string() + " > /dev/null 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
}
#endif

}  // namespace
}  // namespace agentcompile::frontend
