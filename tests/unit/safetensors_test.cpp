// Safetensors: exact write/read round trips (single and sharded), and a clear error — code, file and
// tensor or key — for each way a checkpoint can be broken.
#include "frontend/safetensors.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include "frontend/model_builder.h"
#include "frontend/weights.h"

namespace agentcompile::frontend {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "test-tmp" / "safetensors" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A file from a header text and a data section of `data_size` zero bytes.
std::string st_file(const std::string& header, size_t data_size) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  return out + header + std::string(data_size, '\0');
}

Expected<SafetensorsHeader> parse(const std::string& bytes, const std::string& source = "test.safetensors") {
  return parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), source);
}

// Asserts a failure with `code` whose message contains every one of `parts`.
template <typename T>
void expect_error(const Expected<T>& result, ErrorCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  for (const auto& part : parts) EXPECT_NE(result.status().message().find(part), std::string::npos)
      << "'" << part << "' not in: " << result.status().message();
}
void expect_error(const Status& status, ErrorCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), code) << status.to_string();
  for (const auto& part : parts)
    EXPECT_NE(status.message().find(part), std::string::npos) << "'" << part << "' not in: " << status.message();
}

TEST(Safetensors, RoundTripIsExact) {
  const fs::path dir = fresh_dir("round_trip");
  const std::vector<float> f32 = {0.0f, -0.0f, 1.0f, -2.5f, 1e-30f, 3.4e38f, std::numeric_limits<float>::infinity(),
                                  0.1f, -7.25e-5f, 123456.789f, 1e-45f, -1.0f};
  std::vector<uint16_t> f16, bf16;
  for (float v : {0.0f, 1.0f, -2.0f, 65504.0f, 6.1e-5f, 5.96e-8f, 0.333f, -0.1f}) f16.push_back(ir::float_to_half(v));
  for (float v : {0.0f, 1.0f, -2.0f, 3e38f, 1e-38f, 0.333f, -0.1f, 7.0f}) bf16.push_back(ir::float_to_bf16(v));
  const std::vector<int32_t> ints = {1, -2, 3};
  // Written out of name order on purpose: the writer sorts.
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors",
                                {{"z.f32", ir::DType::kF32, {3, 4}, f32.data()},
                                 {"a.f16", ir::DType::kF16, {2, 2, 2}, f16.data()},
                                 {"m.bf16", ir::DType::kBF16, {8}, bf16.data()},
                                 {"i.i32", ir::DType::kI32, {3}, ints.data()},
                                 {"empty", ir::DType::kF32, {0, 5}, nullptr}},
                                {{"format", "pt"}})
                  .is_ok());

  const std::string bytes = read_bytes(dir / "model.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u);  // padded like Hugging Face
  EXPECT_EQ(bytes.size(), 8 + header_len + 48 + 16 + 16 + 12);
  EXPECT_EQ(bytes[8 + header_len - 1] == ' ' || bytes[8 + header_len - 1] == '}', true);

  auto store = open_safetensors_checkpoint(dir);
  ASSERT_TRUE(store.has_value()) << store.status().to_string();
  ASSERT_EQ((*store)->tensors().size(), 5u);
  EXPECT_EQ((*store)->tensors()[0].name, "a.f16");  // contiguous in name order
  EXPECT_TRUE((*store)->dtypes_are_exact());

  std::vector<float> out;
  ASSERT_TRUE((*store)->read_f32("z.f32", out).is_ok());
  ASSERT_EQ(out.size(), f32.size());
  EXPECT_EQ(std::memcmp(out.data(), f32.data(), f32.size() * 4), 0);
  ASSERT_TRUE((*store)->read_f32("a.f16", out).is_ok());
  for (size_t i = 0; i < f16.size(); ++i) EXPECT_EQ(out[i], ir::half_to_float(f16[i])) << i;
  ASSERT_TRUE((*store)->read_f32("m.bf16", out).is_ok());
  for (size_t i = 0; i < bf16.size(); ++i) EXPECT_EQ(out[i], ir::bf16_to_float(bf16[i])) << i;
  ASSERT_TRUE((*store)->read_f32("i.i32", out).is_ok());
  EXPECT_EQ(out, (std::vector<float>{1, -2, 3}));
  ASSERT_TRUE((*store)->read_f32("empty", out).is_ok());
  EXPECT_TRUE(out.empty());

  auto raw = (*store)->raw("m.bf16");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->dtype, ir::DType::kBF16);
  EXPECT_EQ(raw->shape, std::vector<int64_t>{8});
  ASSERT_EQ(raw->size, 16u);
  EXPECT_EQ(std::memcmp(raw->bytes, bf16.data(), 16), 0);
  expect_error((*store)->raw("nope"), ErrorCode::kNotFound, {"round_trip", "'nope'"});
  expect_error((*store)->read_f32("nope", out), ErrorCode::kNotFound, {"round_trip", "'nope'"});

  auto file = SafetensorsFile::open(dir / "model.safetensors");
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ((*file)->header().metadata.at("format"), "pt");
}

TEST(Safetensors, ShardedRoundTripThroughIndex) {
  const fs::path dir = fresh_dir("sharded");
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6}, c = {7};
  ASSERT_TRUE(write_safetensors(dir / "model-00001-of-00002.safetensors",
                                {{"a", ir::DType::kF32, {2, 2}, a.data()}, {"b", ir::DType::kF32, {2}, b.data()}}, {})
                  .is_ok());
  ASSERT_TRUE(write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", ir::DType::kF32, {1}, c.data()}},
                                {{"format", "pt"}})
                  .is_ok());
  write_bytes(dir / "model.safetensors.index.json",
              R"({"metadata": {"total_size": 28}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                  "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  auto store = open_safetensors_checkpoint(dir);
  ASSERT_TRUE(store.has_value()) << store.status().to_string();
  EXPECT_EQ((*store)->tensors().size(), 3u);
  EXPECT_EQ((*store)->files().size(), 2u);
  std::vector<float> out;
  ASSERT_TRUE((*store)->read_f32("a", out).is_ok());
  EXPECT_EQ(out, a);
  ASSERT_TRUE((*store)->read_f32("c", out).is_ok());
  EXPECT_EQ(out, c);

  // The index points at a shard that lacks the tensor.
  write_bytes(dir / "model.safetensors.index.json",
              R"({"weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                  "c": "model-00002-of-00002.safetensors"}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kNotFound,
               {"model.safetensors.index.json", "'a'", "model-00002-of-00002.safetensors", "lacks it",
                "it is in model-00001-of-00002.safetensors"});
  write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": {"zz": "model-00002-of-00002.safetensors"}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kNotFound, {"'zz'", "lacks it"});

  // A shard the index names is missing.
  write_bytes(dir / "model.safetensors.index.json",
              R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "d": "model-00003-of-00003.safetensors"}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kNotFound,
               {"model-00003-of-00003.safetensors", "cannot open"});

  // The same tensor in two shards.
  ASSERT_TRUE(write_safetensors(dir / "extra.safetensors", {{"a", ir::DType::kF32, {1}, c.data()}}, {}).is_ok());
  write_bytes(dir / "model.safetensors.index.json",
              R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "x": "extra.safetensors"}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kParse,
               {"'a'", "extra.safetensors", "model-00001-of-00002.safetensors", "both"});

  // Malformed indexes.
  write_bytes(dir / "model.safetensors.index.json", "{\"weight_map\": [");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kParse, {"model.safetensors.index.json", "JSON"});
  write_bytes(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kParse, {"model.safetensors.index.json", "weight_map"});
  write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "../model-00001-of-00002.safetensors"}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kParse, {"'a'", "not a file name"});
  write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": {"a": 3}})");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kParse, {"'a'", "string"});
}

TEST(Safetensors, MissingCheckpointFiles) {
  const fs::path dir = fresh_dir("missing");
  expect_error(open_safetensors_checkpoint(dir), ErrorCode::kNotFound, {"missing", "model.safetensors"});
  expect_error(open_safetensors_checkpoint(dir / "nonexistent"), ErrorCode::kNotFound, {"nonexistent"});
  expect_error(SafetensorsFile::open(dir / "gone.safetensors"), ErrorCode::kNotFound, {"gone.safetensors"});
  expect_error(SafetensorsFile::open(dir), ErrorCode::kIo, {"missing", "not a regular file"});
}

TEST(Safetensors, TruncatedFiles) {
  const fs::path dir = fresh_dir("truncated");
  write_bytes(dir / "short.safetensors", "abc");
  expect_error(SafetensorsFile::open(dir / "short.safetensors"), ErrorCode::kParse,
               {"short.safetensors", "3 bytes", "too short"});
  write_bytes(dir / "empty.safetensors", "");
  expect_error(SafetensorsFile::open(dir / "empty.safetensors"), ErrorCode::kParse, {"empty.safetensors", "0 bytes"});

  // A whole file cut inside its data section: the last tensor now runs past the end.
  const std::vector<float> values(16, 1.0f);
  ASSERT_TRUE(write_safetensors(dir / "cut.safetensors",
                                {{"w.first", ir::DType::kF32, {8}, values.data()},
                                 {"w.second", ir::DType::kF32, {8}, values.data()}},
                                {})
                  .is_ok());
  const std::string whole = read_bytes(dir / "cut.safetensors");
  write_bytes(dir / "cut.safetensors", whole.substr(0, whole.size() - 5));
  expect_error(SafetensorsFile::open(dir / "cut.safetensors"), ErrorCode::kParse,
               {"cut.safetensors", "'w.second'", "past the data section"});

  // Cut inside the header.
  write_bytes(dir / "cut.safetensors", whole.substr(0, 20));
  expect_error(SafetensorsFile::open(dir / "cut.safetensors"), ErrorCode::kParse,
               {"cut.safetensors", "header length", "runs past end of file (size 20)"});
}

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  std::string bytes = st_file("{}", 4);
  bytes[0] = static_cast<char>(0xe8), bytes[1] = 0x03;  // 1000
  expect_error(parse(bytes, "big.safetensors"), ErrorCode::kParse,
               {"big.safetensors", "header length 1000", "size 14"});
  bytes.assign(8, static_cast<char>(0xff));  // 2^64 - 1: must not wrap around
  expect_error(parse(bytes), ErrorCode::kParse, {"header length 18446744073709551615", "size 8"});
}

struct BadHeader {
  const char* label;
  std::string header;
  size_t data_size;
  ErrorCode code;
  std::vector<std::string> parts;
};

TEST(Safetensors, BadHeadersNameTheTensorOrKey) {
  const std::vector<BadHeader> cases = {
      {"invalid json", R"({"w": {"dtype": "F32", )", 0, ErrorCode::kParse, {"not valid JSON"}},
      {"not an object", R"([1, 2])", 0, ErrorCode::kParse, {"JSON object"}},
      {"entry not an object", R"({"w": 3})", 0, ErrorCode::kParse, {"'w'", "object"}},
      {"no dtype", R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4, ErrorCode::kParse, {"'w'", "'dtype'"}},
      {"no shape", R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4, ErrorCode::kParse, {"'w'", "'shape'"}},
      {"no offsets", R"({"w": {"dtype": "F32", "shape": [1]}})", 4, ErrorCode::kParse, {"'w'", "'data_offsets'"}},
      {"unknown dtype", R"({"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}})", 4, ErrorCode::kParse,
       {"'w'", "unknown dtype 'F99'"}},
      {"unsupported dtype", R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1,
       ErrorCode::kUnsupported, {"'w'", "'U8'", "not supported"}},
      {"dtype not string", R"({"w": {"dtype": 1, "shape": [1], "data_offsets": [0, 4]}})", 4, ErrorCode::kParse,
       {"'w'", "'dtype'"}},
      {"negative dim", R"({"w": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 4]}})", 4, ErrorCode::kParse,
       {"'w'", "negative dim -1"}},
      {"fractional dim", R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4, ErrorCode::kParse,
       {"'w'", "integers", "1.5"}},
      {"element overflow", R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4,
       ErrorCode::kParse, {"'w'", "overflows"}},
      {"byte overflow", R"({"w": {"dtype": "F32", "shape": [4611686018427387905], "data_offsets": [0, 4]}})", 4,
       ErrorCode::kParse, {"'w'", "overflows"}},
      {"offsets not a pair", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4, ErrorCode::kParse,
       {"'w'", "[begin, end]"}},
      {"negative offset", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4, ErrorCode::kParse,
       {"'w'", "[begin, end]"}},
      {"begin after end", R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 8, ErrorCode::kParse,
       {"'w'", "begin 8 > end 4"}},
      {"offsets out of range", R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 8,
       ErrorCode::kParse, {"'w'", "end 12", "past the data section (8 bytes: is the file truncated?)"}},
      {"size disagrees", R"({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 8]}})", 8, ErrorCode::kParse,
       {"'w'", "8 bytes", "needs 6"}},
      {"overlap", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
       12, ErrorCode::kParse, {"'a'", "'b'", "overlap"}},
      {"contained overlap", R"({"big": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                "mid": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]},
                                "small": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
       16, ErrorCode::kParse, {"'big'", "'small'", "overlap"}},
      {"metadata not object", R"({"__metadata__": "pt"})", 0, ErrorCode::kParse, {"'__metadata__'"}},
      {"metadata not string", R"({"__metadata__": {"format": 1}})", 0, ErrorCode::kParse,
       {"'__metadata__'", "'format'"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    std::vector<std::string> parts = c.parts;
    parts.push_back("bad.safetensors");
    expect_error(parse(st_file(c.header, c.data_size), "bad.safetensors"), c.code, parts);
  }
}

TEST(Safetensors, AcceptsEdgeCasesTheSpecAllows) {
  // Empty tensors may share an offset with anything; "-0" is a zero; padding spaces end the header.
  auto header = parse(st_file(R"({"e": {"dtype": "F16", "shape": [0], "data_offsets": [4, 4]},
                                  "s": {"dtype": "F32", "shape": [], "data_offsets": [-0, 4]},
                                  "t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}     )",
                              8));
  ASSERT_TRUE(header.has_value()) << header.status().to_string();
  ASSERT_EQ(header->tensors.size(), 3u);
  EXPECT_EQ(header->find("s")->elements, 1u);
  EXPECT_TRUE(header->find("s")->shape.empty());
  EXPECT_EQ(header->find("e")->elements, 0u);
  EXPECT_EQ(header->find("x"), nullptr);
}

// Writes every parameter of `module` as zeros, letting `edit` change the list first.
void write_module_checkpoint(const fs::path& dir, const ir::Module& module,
                             const std::function<void(std::vector<TensorToWrite>&)>& edit) {
  static const std::vector<uint8_t> zeros(1 << 20, 0);
  std::vector<TensorToWrite> tensors;
  for (const auto& param : module.params) {
    std::vector<int64_t> shape;
    for (const auto& dim : param.type.shape) shape.push_back(dim.value);
    tensors.push_back({param.name, param.type.dtype, shape, zeros.data()});
  }
  edit(tensors);
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}}).is_ok());
}

ModelConfig tiny_config() {
  auto config = parse_hf_config(nlohmann::json::parse(R"({
      "model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "torch_dtype": "bfloat16"})"),
                                "tiny.json");
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  return *config;
}

TEST(Safetensors, CheckWeightsAgainstConfig) {
  const ModelConfig config = tiny_config();
  auto module = build_module(config);
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const fs::path dir = fresh_dir("check_weights");
  auto check = [&] {
    auto store = open_safetensors_checkpoint(dir);
    EXPECT_TRUE(store.has_value()) << store.status().to_string();
    return store.has_value() ? check_weights(*module, **store) : store.status();
  };

  write_module_checkpoint(dir, *module, [](auto&) {});
  EXPECT_TRUE(check().is_ok()) << check().to_string();

  write_module_checkpoint(dir, *module, [](auto& tensors) {
    for (auto& t : tensors)
      if (t.name == "model.layers.1.mlp.up_proj.weight") t.dtype = ir::DType::kF16;
  });
  expect_error(check(), ErrorCode::kMismatch,
               {"check_weights", "'model.layers.1.mlp.up_proj.weight'", "is f16", "says bf16"});

  write_module_checkpoint(dir, *module, [](auto& tensors) {
    for (auto& t : tensors)
      if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {32, 32};
  });
  expect_error(check(), ErrorCode::kMismatch,
               {"check_weights", "'model.layers.0.self_attn.k_proj.weight'", "[32, 32]", "[16, 32]"});

  write_module_checkpoint(dir, *module, [](auto& tensors) {
    std::erase_if(tensors, [](const TensorToWrite& t) { return t.name == "model.norm.weight"; });
  });
  expect_error(check(), ErrorCode::kNotFound, {"check_weights", "missing tensor 'model.norm.weight'"});
}

// Tensors past the writer's 64 MiB run are cut into runs that several threads write at their offsets:
// every byte lands where the header says, whatever order the runs finish in.
TEST(Safetensors, LargeTensorsWrittenInParallelRunsRoundTrip) {
  const fs::path dir = fresh_dir("parallel_runs");
  std::vector<uint32_t> big((uint64_t{150} << 20) / 4), odd(12345);  // 150 MiB: three runs, the last partial
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint32_t>(i * 2654435761u);
  for (size_t i = 0; i < odd.size(); ++i) odd[i] = static_cast<uint32_t>(~i);
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors",
                                {{"b.big", ir::DType::kI32, {static_cast<int64_t>(big.size())}, big.data()},
                                 {"a.odd", ir::DType::kI32, {static_cast<int64_t>(odd.size())}, odd.data()}},
                                {})
                  .is_ok());
  auto file = SafetensorsFile::open(dir / "model.safetensors");
  ASSERT_TRUE(file.has_value()) << file.status().to_string();
  auto store = open_safetensors_checkpoint(dir);
  ASSERT_TRUE(store.has_value()) << store.status().to_string();
  auto raw_big = (*store)->raw("b.big");
  auto raw_odd = (*store)->raw("a.odd");
  ASSERT_TRUE(raw_big.has_value() && raw_odd.has_value());
  ASSERT_EQ(raw_big->size, big.size() * 4);
  EXPECT_EQ(std::memcmp(raw_big->bytes, big.data(), raw_big->size), 0);
  ASSERT_EQ(raw_odd->size, odd.size() * 4);
  EXPECT_EQ(std::memcmp(raw_odd->bytes, odd.data(), raw_odd->size), 0);
}

// A write the file system cuts short (here a file-size limit of 1 MiB, in a child process) is an I/O
// error that names the file and the cause, and leaves neither the file nor its temporary behind.
TEST(Safetensors, AWriteCutShortLeavesNoFile) {
  const fs::path dir = fresh_dir("cut_short");
  const std::vector<float> data((uint64_t{8} << 20) / 4, 1.0f);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // past the limit, write fails with EFBIG instead of killing the process
    const rlimit limit{uint64_t{1} << 20, uint64_t{1} << 20};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
    const Status status = write_safetensors(dir / "model.safetensors", {{"w", ir::DType::kF32, {static_cast<int64_t>(data.size())}, data.data()}}, {});
    if (status.is_ok()) _exit(11);
    if (status.code() != ErrorCode::kIo) _exit(12);
    if (status.message().find("model.safetensors") == std::string::npos || status.message().find("write failed") == std::string::npos) _exit(13);
    if (fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.tmp")) _exit(14);
    _exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << "the child died of signal " << WTERMSIG(wstatus);
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "10: setrlimit failed, 11: the write succeeded, 12: wrong code, 13: message, 14: a file left";
}

TEST(Safetensors, WriterRejectsBadInput) {
  const fs::path dir = fresh_dir("writer");
  const float value = 1.0f;
  expect_error(write_safetensors(dir / "x.safetensors",
                                 {{"a", ir::DType::kF32, {1}, &value}, {"a", ir::DType::kF32, {1}, &value}}, {}),
               ErrorCode::kInvalidArgument, {"x.safetensors", "'a'", "twice"});
  expect_error(write_safetensors(dir / "x.safetensors", {{"q", ir::DType::kQ4_0, {32}, &value}}, {}),
               ErrorCode::kUnsupported, {"'q'", "q4_0"});
  expect_error(write_safetensors(dir / "x.safetensors", {{"n", ir::DType::kF32, {-1}, &value}}, {}),
               ErrorCode::kInvalidArgument, {"'n'", "shape"});
  expect_error(write_safetensors(dir / "x.safetensors", {{"d", ir::DType::kF32, {2}, nullptr}}, {}),
               ErrorCode::kInvalidArgument, {"'d'", "no data"});
  expect_error(write_safetensors(dir / "no" / "such" / "x.safetensors", {}, {}), ErrorCode::kIo, {"x.safetensors"});
  EXPECT_FALSE(fs::exists(dir / "x.safetensors"));
}

}  // namespace
}  // namespace agentcompile::frontend
