// Random checkpoints: deterministic parallel generation, Hugging Face sharding and file names.
//
// Generator: splitmix64 expands a 64-bit seed into xoshiro256** state; normals come from Box-Muller on
// 24-bit uniforms (std::normal_distribution is implementation-defined, so it would make the files
// differ between standard libraries). Work is split into chunks of kChunkElements; chunk k of tensor t
// is seeded from (seed, fnv1a(t), k), which is what makes the bytes independent of scheduling.
#include "frontend/init_random.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "frontend/checkpoint_output.h"
#include "frontend/model_builder.h"
#include "frontend/safetensors.h"
#include "support/host_limits.h"

namespace agentcompile::frontend {

namespace {

constexpr uint64_t kChunkElements = uint64_t{1} << 16;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t mix(uint64_t value) { return splitmix64(value); }

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

uint64_t tensor_seed(uint64_t seed, const std::string& name) { return mix(seed ^ mix(fnv1a(name))); }

// Writes elements [chunk * kChunkElements, ...) of one tensor.
void fill_chunk(uint64_t tseed, uint64_t chunk, InitDistribution dist, ir::DType dtype, uint64_t elements, void* out) {
  const uint64_t begin = chunk * kChunkElements;
  const uint64_t end = std::min(elements, begin + kChunkElements);
  Xoshiro256 rng(mix(tseed + mix(chunk + 1)));
  constexpr float kTwoPi = 6.28318530717958647692f;
  constexpr float kScale = 1.0f / 16777216.0f;  // 2^-24
  auto store = [&](uint64_t i, float value) {
    switch (dtype) {
      case ir::DType::kF32: static_cast<float*>(out)[i] = value; break;
      case ir::DType::kF16: static_cast<uint16_t*>(out)[i] = ir::float_to_half(value); break;
      default: static_cast<uint16_t*>(out)[i] = ir::float_to_bf16(value); break;
    }
  };
  for (uint64_t i = begin; i < end; i += 2) {
    const uint64_t bits = rng.next();
    const float u1 = static_cast<float>((bits >> 40) + 1) * kScale;       // (0, 1]: log stays finite
    const float u2 = static_cast<float>((bits >> 16) & 0xFFFFFF) * kScale;  // [0, 1)
    const float radius = std::sqrt(-2.0f * std::log(u1));
    const float angle = kTwoPi * u2;
    store(i, dist.mean + dist.stddev * radius * std::cos(angle));
    if (i + 1 < end) store(i + 1, dist.mean + dist.stddev * radius * std::sin(angle));
  }
}

struct TensorJob {
  std::string name;
  uint64_t seed;
  InitDistribution dist;
  ir::DType dtype;
  uint64_t elements;
  void* out;
};

// Generates every chunk of every job on `threads` threads pulling chunks from a shared counter.
void run_jobs(const std::vector<TensorJob>& jobs, unsigned threads) {
  std::vector<std::pair<size_t, uint64_t>> chunks;  // (job, chunk)
  for (size_t j = 0; j < jobs.size(); ++j)
    for (uint64_t c = 0; c * kChunkElements < jobs[j].elements; ++c) chunks.emplace_back(j, c);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < chunks.size(); k = next++) {
      const TensorJob& job = jobs[chunks[k].first];
      fill_chunk(job.seed, chunks[k].second, job.dist, job.dtype, job.elements, job.out);
    }
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(chunks.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
}

unsigned default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

std::string torch_dtype_name(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF16: return "float16";
    case ir::DType::kBF16: return "bfloat16";
    default: return "float32";
  }
}

Status write_json(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  out.close();
  if (!out) return error(ErrorCode::kIo, path.string() + ": write failed");
  return Status::ok();
}

std::string shard_file_name(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

}  // namespace

InitDistribution init_distribution(const std::string& name, const ModelConfig& config) {
  if (name.ends_with("norm.weight")) return {1.0f, 0.1f};
  return {0.0f, static_cast<float>(config.initializer_range)};
}

void fill_random_tensor(const std::string& name, uint64_t seed, InitDistribution dist, ir::DType dtype,
                        uint64_t elements, void* out, unsigned threads) {
  run_jobs({TensorJob{name, tensor_seed(seed, name), dist, dtype, elements, out}}, threads);
}

Status write_random_checkpoint(const ModelConfig& config, ir::DType dtype, uint64_t seed,
                               const std::filesystem::path& out_dir, uint64_t max_shard_bytes,
                               RandomCheckpointSummary* summary, bool force) {
  if (dtype != ir::DType::kF32 && dtype != ir::DType::kF16 && dtype != ir::DType::kBF16)
    return error(ErrorCode::kInvalidArgument, "random checkpoint dtype must be f32, f16 or bf16, got " +
                                                  std::string(ir::dtype_name(dtype)));
  if (max_shard_bytes == 0) return error(ErrorCode::kInvalidArgument, "max shard size must be positive");
  // config.json is written back from the JSON the config was read from; without it the checkpoint
  // would not load anywhere.
  if (!config.raw.is_object())
    return error(ErrorCode::kInvalidArgument, "random checkpoint: the config carries no config.json (raw) to write");
  ModelConfig typed = config;
  typed.dtype = dtype;
  AC_ASSIGN_OR_RETURN(ir::Module module, build_module(typed));
  RandomCheckpointSummary result;

  nlohmann::json config_json = config.raw;
  config_json["torch_dtype"] = torch_dtype_name(dtype);
  if (config_json.contains("dtype")) config_json["dtype"] = torch_dtype_name(dtype);  // transformers >= 4.56 key
  nlohmann::json generation = nlohmann::json::object();
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"})
    if (auto it = config_json.find(key); it != config_json.end() && !it->is_null()) generation[key] = *it;

  // Shards fill in parameter order (the state-dict order transformers shards in); a tensor larger than
  // the limit gets a shard of its own.
  struct Planned {
    const ir::ParamDecl* param;
    uint64_t elements;
    uint64_t bytes;
  };
  std::vector<std::vector<Planned>> shards(1);
  std::vector<uint64_t> shard_bytes(1, 0);
  for (const auto& param : module.params) {
    // The configuration's bounds keep these products far from overflow (config_invariants.h).
    uint64_t elements = 1;
    for (const auto& dim : param.type.shape) elements *= static_cast<uint64_t>(dim.value);
    const uint64_t bytes = elements * ir::dtype_size(dtype);
    if (!shards.back().empty() && shard_bytes.back() + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes.push_back(0);
    }
    shards.back().push_back({&param, elements, bytes});
    shard_bytes.back() += bytes;
    result.parameters += static_cast<int64_t>(elements);
    result.tensor_bytes += bytes;
  }

  // Every file is known before anything is written, so the output directory is checked first and
  // the files go into a temporary directory that replaces nothing until all of them are complete.
  std::vector<std::string> names = {"config.json"};
  if (!generation.empty()) names.push_back("generation_config.json");
  for (size_t s = 0; s < shards.size(); ++s) names.push_back(shards.size() == 1 ? "model.safetensors" : shard_file_name(s, shards.size()));
  if (shards.size() > 1) names.push_back("model.safetensors.index.json");

  // A shard is made in memory whole, and the checkpoint must fit on disk: both are checked before
  // anything is allocated or written.
  for (size_t s = 0; s < shards.size(); ++s) {
    const Planned* largest = &shards[s].front();
    for (const Planned& planned : shards[s])
      if (planned.bytes > largest->bytes) largest = &planned;
    AC_TRY(support::check_host_allocation(
        shard_bytes[s], "random checkpoint: shard " + names[(generation.empty() ? 1 : 2) + s] + " (" + std::to_string(shards[s].size()) +
                            " tensors, the largest '" + largest->param->name + "' " + largest->param->type.to_string() + ")"));
  }
  AC_TRY(support::check_disk_space(out_dir, result.tensor_bytes,
                                   "random checkpoint of " + std::to_string(result.parameters) + " parameters (" + std::string(ir::dtype_name(dtype)) + ")"));
  AC_ASSIGN_OR_RETURN(CheckpointOutput output, CheckpointOutput::open(out_dir, names, force));
  AC_TRY(write_json(output.staged("config.json"), config_json));
  if (!generation.empty()) AC_TRY(write_json(output.staged("generation_config.json"), generation));

  // Shard s + 1 is generated while shard s is written, in two buffers, where the host holds two shards
  // at once (the largest neighbouring pair); one buffer otherwise. Either way the bytes are the same.
  bool overlap = shards.size() > 1;
  for (size_t s = 0; overlap && s + 1 < shards.size(); ++s)
    overlap = support::check_host_allocation(shard_bytes[s] + shard_bytes[s + 1], "two random checkpoint shards").is_ok();
  nlohmann::json weight_map = nlohmann::json::object();
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};  // transformers refuses files without it
  std::unique_ptr<uint8_t[]> buffers[2];
  std::future<Status> writing;  // the previous shard's write, while the next is generated
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shards.size() == 1 ? "model.safetensors" : shard_file_name(s, shards.size());
    // The buffer this shard fills: the previous shard's write (if any) must not be reading it.
    std::unique_ptr<uint8_t[]>& buffer = buffers[overlap ? s % 2 : 0];
    if (!overlap && writing.valid()) AC_TRY(writing.get());
    buffer = std::make_unique_for_overwrite<uint8_t[]>(std::max<uint64_t>(shard_bytes[s], 1));
    std::vector<TensorJob> jobs;
    std::vector<TensorToWrite> tensors;
    uint64_t offset = 0;
    for (const auto& planned : shards[s]) {
      const std::string& name = planned.param->name;
      void* data = buffer.get() + offset;
      offset += planned.bytes;
      jobs.push_back({name, tensor_seed(seed, name), init_distribution(name, config), dtype, planned.elements, data});
      std::vector<int64_t> shape;
      for (const auto& dim : planned.param->type.shape) shape.push_back(dim.value);
      tensors.push_back({name, dtype, std::move(shape), data});
      weight_map[name] = file;
    }
    run_jobs(jobs, default_threads());
    if (writing.valid()) AC_TRY(writing.get());  // the other buffer is free once its shard is on disk
    writing = std::async(std::launch::async, [path = output.staged(file), tensors = std::move(tensors), &metadata] {
      return write_safetensors(path, tensors, metadata);
    });
  }
  if (writing.valid()) AC_TRY(writing.get());
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", result.tensor_bytes}}}, {"weight_map", weight_map}};
    AC_TRY(write_json(output.staged("model.safetensors.index.json"), index));
  }
  AC_TRY(output.commit());
  for (const auto& name : names) result.files.push_back(out_dir / name);
  if (summary) *summary = std::move(result);
  return Status::ok();
}

}  // namespace agentcompile::frontend
