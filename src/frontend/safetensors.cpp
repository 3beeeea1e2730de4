// Safetensors reading (validated header, mmap, checkpoint store) and writing.
//
// The parser trusts nothing: every length is checked against the file before it is used, arithmetic on
// sizes is overflow-checked, and the JSON parser runs without exceptions. Offsets are validated as a set
// (no two tensors may share bytes) because the runtime uploads each tensor's byte range as is.
#include "frontend/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "frontend/tensor_ranges.h"
#include "ir/thread_pool.h"

namespace agentcompile::frontend {

// Tensor bytes are used in place, as the host's native numbers.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using nlohmann::json;

struct DTypeName {
  const char* name;
  ir::DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"F32", ir::DType::kF32}, {"F16", ir::DType::kF16}, {"BF16", ir::DType::kBF16},
    {"I32", ir::DType::kI32}, {"I64", ir::DType::kI64}, {"BOOL", ir::DType::kBool},
};
// In the safetensors spec but not something a llama/qwen checkpoint stores; named so that the error
// says "not supported" rather than "unknown".
constexpr const char* kSpecOnlyDTypes[] = {"U8",      "I8",      "I16",    "U16",     "U32",     "U64",
                                           "F64",  "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",
                                           "C64"};

// The reference implementation refuses larger headers too; it bounds parse time on hostile input.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

Status parse_error(const std::string& source, const std::string& message) {
  return error(ErrorCode::kParse, source + ": " + message);
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}

std::string errno_text(int err) { return std::system_category().message(err); }

// A JSON integer >= 0. "-0" parses as a signed zero, so signedness alone does not decide.
std::optional<uint64_t> non_negative_integer(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

Status parse_entry(const std::string& source, const std::string& name, const json& value, uint64_t data_size,
                   SafetensorsEntry& entry) {
  const std::string where = "tensor '" + name + "'";
  if (!value.is_object()) return parse_error(source, where + ": entry must be a JSON object");
  entry.name = name;

  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end()) return parse_error(source, where + " has no 'dtype'");
  if (!dtype_it->is_string()) return parse_error(source, where + ": 'dtype' must be a string");
  const std::string& dtype = dtype_it->get_ref<const std::string&>();
  const auto* known =
      std::find_if(std::begin(kDTypes), std::end(kDTypes), [&](const DTypeName& d) { return dtype == d.name; });
  if (known != std::end(kDTypes)) {
    entry.dtype = known->dtype;
  } else {
    for (const char* spec : kSpecOnlyDTypes)
      if (dtype == spec)
        return error(ErrorCode::kUnsupported,
                     source + ": " + where + " has dtype '" + dtype + "', which is not supported (F32, F16, BF16)");
    return parse_error(source, where + " has unknown dtype '" + dtype + "'");
  }

  auto shape_it = value.find("shape");
  if (shape_it == value.end()) return parse_error(source, where + " has no 'shape'");
  if (!shape_it->is_array()) return parse_error(source, where + ": 'shape' must be an array");
  uint64_t elements = 1;
  for (const auto& dim : *shape_it) {
    if (!dim.is_number_integer())
      return parse_error(source, where + ": shape dims must be integers, got " +
                                     dim.dump(-1, ' ', false, json::error_handler_t::replace));
    const std::optional<uint64_t> dim_size = non_negative_integer(dim);
    if (!dim_size) return parse_error(source, where + ": shape has negative dim " + std::to_string(dim.get<int64_t>()));
    const uint64_t size = *dim_size;
    if (size > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(elements, size, &elements))
      return parse_error(source, where + ": element count of its shape overflows");
    entry.shape.push_back(static_cast<int64_t>(size));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(ir::dtype_size(entry.dtype)), &bytes))
    return parse_error(source, where + ": byte size of its shape overflows");
  entry.elements = elements;

  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end()) return parse_error(source, where + " has no 'data_offsets'");
  const json& offsets = *offsets_it;
  std::optional<uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = non_negative_integer(offsets[0]);
    end = non_negative_integer(offsets[1]);
  }
  if (!begin || !end)
    return parse_error(source, where + ": 'data_offsets' must be [begin, end] with non-negative integers");
  entry.begin = *begin;
  entry.end = *end;
  if (entry.begin > entry.end)
    return parse_error(source, where + ": data_offsets begin " + std::to_string(entry.begin) + " > end " +
                                   std::to_string(entry.end));
  if (entry.end > data_size)
    return parse_error(source, where + ": data_offsets end " + std::to_string(entry.end) +
                                   " is past the data section (" + std::to_string(data_size) + " bytes: is the file truncated?)");
  if (entry.end - entry.begin != bytes)
    return parse_error(source, where + ": data_offsets span " + std::to_string(entry.end - entry.begin) +
                                   " bytes but " + dtype + " with " + std::to_string(elements) +
                                   " elements needs " + std::to_string(bytes));
  return Status::ok();
}

}  // namespace

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const SafetensorsEntry& entry, const std::string& key) { return entry.name < key; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

std::string safetensors_dtype_name(ir::DType dtype) {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "";
}

Expected<SafetensorsHeader> parse_safetensors_header(const uint8_t* data, size_t size, const std::string& source) {
  if (size < 8)
    return parse_error(source, "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  const uint64_t header_len = read_u64_le(data);
  if (header_len > size - 8)
    return parse_error(source, "header length " + std::to_string(header_len) + " runs past end of file (size " +
                                   std::to_string(size) + ")");
  if (header_len > kMaxHeaderBytes)
    return parse_error(source, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                                   std::to_string(kMaxHeaderBytes) + " bytes");
  const json root = json::parse(data + 8, data + 8 + header_len, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return parse_error(source, "header (" + std::to_string(header_len) + " bytes) is not valid JSON");
  if (!root.is_object()) return parse_error(source, "header must be a JSON object");

  SafetensorsHeader header;
  header.data_start = 8 + header_len;
  header.data_size = size - header.data_start;
  // json objects iterate in key order, so `tensors` comes out sorted by name for find().
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return parse_error(source, "'__metadata__' must be an object of strings");
      for (auto meta = it->begin(); meta != it->end(); ++meta) {
        if (!meta->is_string())
          return parse_error(source, "'__metadata__' key '" + meta.key() + "' must map to a string");
        header.metadata[meta.key()] = meta->get<std::string>();
      }
      continue;
    }
    SafetensorsEntry entry;
    AC_TRY(parse_entry(source, it.key(), *it, header.data_size, entry));
    header.tensors.push_back(std::move(entry));
  }
  std::vector<TensorRange> ranges;
  for (const auto& entry : header.tensors) ranges.push_back({&entry.name, entry.begin, entry.end});
  AC_TRY(check_disjoint(source, std::move(ranges)));
  return header;
}

// --- SafetensorsFile ---------------------------------------------------------------------------------

Expected<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::filesystem::path& path) {
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  AC_ASSIGN_OR_RETURN(file->mapped_, support::MappedFile::open(path));
  AC_ASSIGN_OR_RETURN(file->header_, parse_safetensors_header(file->mapped_.data(), file->mapped_.size(), path.string()));
  return file;
}

// --- SafetensorsStore --------------------------------------------------------------------------------

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// Reads the index's weight_map (tensor -> shard file name).
Expected<std::map<std::string, std::string>> read_index(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(ErrorCode::kIo, name + ": cannot open: " + errno_text(errno));
  const json root = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return parse_error(name, "not valid JSON");
  if (!root.is_object()) return parse_error(name, "must be a JSON object");
  auto map_it = root.find("weight_map");
  if (map_it == root.end()) return parse_error(name, "has no 'weight_map'");
  if (!map_it->is_object()) return parse_error(name, "'weight_map' must be an object of tensor -> shard file");
  std::map<std::string, std::string> weight_map;
  for (auto it = map_it->begin(); it != map_it->end(); ++it) {
    if (!it->is_string()) return parse_error(name, "weight_map entry '" + it.key() + "' must be a string");
    const std::string shard = it->get<std::string>();
    // Shards live beside the index; refusing paths keeps a hostile index from reaching other files.
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      return parse_error(name, "weight_map entry '" + it.key() + "' names '" + shard +
                                   "', which is not a file name in the checkpoint directory");
    weight_map[it.key()] = shard;
  }
  if (weight_map.empty()) return parse_error(name, "'weight_map' is empty");
  return weight_map;
}

}  // namespace

Status SafetensorsStore::add_file(const std::filesystem::path& path) {
  AC_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
  for (const auto& entry : file->header().tensors) {
    auto [it, inserted] = locations_.try_emplace(entry.name, Location{file.get(), &entry});
    if (!inserted)
      return parse_error(source_, "tensor '" + entry.name + "' is stored in both " + it->second.file->path().string() + " and " +
                                      path.string());
    tensors_.push_back(TensorInfo{entry.name, entry.dtype, entry.shape});
  }
  files_.push_back(std::move(file));
  return Status::ok();
}

Expected<std::vector<std::filesystem::path>> checkpoint_safetensors_files(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return error(ErrorCode::kNotFound, dir.string() + ": not a checkpoint directory");
  if (std::filesystem::exists(dir / kSingleFile, ec)) return std::vector<std::filesystem::path>{dir / kSingleFile};
  if (!std::filesystem::exists(dir / kIndexFile, ec))
    return error(ErrorCode::kNotFound, dir.string() + ": has neither " + kSingleFile + " nor " + kIndexFile);
  AC_ASSIGN_OR_RETURN(auto weight_map, read_index(dir / kIndexFile));
  std::set<std::string> shard_names;
  for (const auto& [tensor, shard] : weight_map) shard_names.insert(shard);
  std::vector<std::filesystem::path> files;
  for (const auto& shard : shard_names) files.push_back(dir / shard);
  return files;
}

Expected<std::unique_ptr<SafetensorsStore>> open_safetensors_files(const std::string& source,
                                                                  const std::vector<std::filesystem::path>& files) {
  std::unique_ptr<SafetensorsStore> store(new SafetensorsStore());
  store->source_ = source;
  for (const auto& path : files) AC_TRY(store->add_file(path));
  return store;
}

Expected<std::unique_ptr<SafetensorsStore>> open_safetensors_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return error(ErrorCode::kNotFound, dir.string() + ": not a checkpoint directory");
  std::unique_ptr<SafetensorsStore> store(new SafetensorsStore());
  store->source_ = dir.string();

  std::set<std::string> shard_names;
  std::map<std::string, std::string> weight_map;
  const bool single = std::filesystem::exists(dir / kSingleFile, ec);
  if (single) {
    shard_names.insert(kSingleFile);
  } else if (std::filesystem::exists(dir / kIndexFile, ec)) {
    AC_ASSIGN_OR_RETURN(weight_map, read_index(dir / kIndexFile));
    for (const auto& [tensor, shard] : weight_map) shard_names.insert(shard);
  } else {
    return error(ErrorCode::kNotFound,
                 dir.string() + ": has neither " + kSingleFile + " nor " + kIndexFile);
  }

  for (const auto& shard : shard_names) AC_TRY(store->add_file(dir / shard));
  for (const auto& [tensor, shard] : weight_map) {
    auto it = store->locations_.find(tensor);
    if (it == store->locations_.end())
      return error(ErrorCode::kNotFound, (dir / kIndexFile).string() + ": maps tensor '" + tensor + "' to " + shard +
                                             ", which lacks it");
    const std::string actual = it->second.file->path().filename().string();
    if (actual != shard)
      return error(ErrorCode::kNotFound, (dir / kIndexFile).string() + ": maps tensor '" + tensor + "' to " + shard +
                                             ", which lacks it (it is in " + actual + ")");
  }
  return store;
}

std::vector<std::filesystem::path> SafetensorsStore::files() const {
  std::vector<std::filesystem::path> paths;
  for (const auto& file : files_) paths.push_back(file->path());
  return paths;
}

Expected<RawTensor> SafetensorsStore::raw(const std::string& name) const {
  auto it = locations_.find(name);
  if (it == locations_.end()) return error(ErrorCode::kNotFound, source_ + ": no tensor '" + name + "'");
  const auto& [file, entry] = it->second;
  return RawTensor{entry->dtype, entry->shape, file->bytes(*entry), static_cast<size_t>(entry->end - entry->begin)};
}

Status SafetensorsStore::read_f32(const std::string& name, std::vector<float>& out) const {
  auto it = locations_.find(name);
  if (it == locations_.end()) return error(ErrorCode::kNotFound, source_ + ": no tensor '" + name + "'");
  const auto& [file, entry] = it->second;
  const uint8_t* bytes = file->bytes(*entry);
  const size_t n = static_cast<size_t>(entry->elements);
  out.resize(n);
  // memcpy per element: data offsets carry no alignment promise.
  switch (entry->dtype) {
    case ir::DType::kF32:
      if (n) std::memcpy(out.data(), bytes, n * 4);
      break;
    case ir::DType::kF16:
    case ir::DType::kBF16: {
      const bool half = entry->dtype == ir::DType::kF16;
      for (size_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] = half ? ir::half_to_float(bits) : ir::bf16_to_float(bits);
      }
      break;
    }
    case ir::DType::kI32:
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, bytes + 4 * i, 4);
        out[i] = static_cast<float>(v);
      }
      break;
    case ir::DType::kI64:
      for (size_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, bytes + 8 * i, 8);
        out[i] = static_cast<float>(v);
      }
      break;
    case ir::DType::kBool:
      for (size_t i = 0; i < n; ++i) out[i] = bytes[i] != 0 ? 1.f : 0.f;
      break;
    default:
      return error(ErrorCode::kUnsupported, file->path().string() + ": tensor '" + name + "' has dtype " +
                                                std::string(ir::dtype_name(entry->dtype)) +
                                                ", which cannot be read as f32");
  }
  return Status::ok();
}

// --- writing -----------------------------------------------------------------------------------------

Status write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  const std::string name = path.string();
  std::vector<const TensorToWrite*> sorted;
  for (const auto& tensor : tensors) sorted.push_back(&tensor);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->name < b->name; });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TensorToWrite& t = *sorted[i];
    const std::string where = name + ": tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__")
      return error(ErrorCode::kInvalidArgument, name + ": invalid tensor name '" + t.name + "'");
    if (i > 0 && sorted[i - 1]->name == t.name)
      return error(ErrorCode::kInvalidArgument, where + " is given twice");
    const std::string dtype = safetensors_dtype_name(t.dtype);
    if (dtype.empty())
      return error(ErrorCode::kUnsupported, where + " has dtype " + std::string(ir::dtype_name(t.dtype)) +
                                                ", which safetensors cannot store");
    uint64_t elements = 1;
    for (int64_t dim : t.shape)
      if (dim < 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements))
        return error(ErrorCode::kInvalidArgument, where + " has an invalid shape");
    const uint64_t bytes = elements * ir::dtype_size(t.dtype);
    if (bytes > 0 && t.data == nullptr) return error(ErrorCode::kInvalidArgument, where + " has no data");
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", json::array({offset, offset + bytes})}};
    sizes.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned, as HF does

  const std::string temp = name + ".tmp";
  // The file's pieces at their offsets: the length, the header, then each tensor's bytes, the larger ones
  // cut into runs of kWriteRun so several threads write one file (a multi-GB shard is bound by one
  // thread's copy into the page cache otherwise; random checkpoints of 70B parameters are 141 GB).
  struct Piece {
    uint64_t offset;
    const uint8_t* data;
    uint64_t size;
  };
  constexpr uint64_t kWriteRun = uint64_t{64} << 20;
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  std::vector<Piece> pieces = {{0, length, 8}, {8, reinterpret_cast<const uint8_t*>(text.data()), text.size()}};
  const uint64_t data_start = 8 + text.size();
  uint64_t at = data_start;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const auto* bytes = static_cast<const uint8_t*>(sorted[i]->data);
    for (uint64_t done = 0; done < sizes[i]; done += kWriteRun) pieces.push_back({at + done, bytes + done, std::min(kWriteRun, sizes[i] - done)});
    at += sizes[i];
  }
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return error(ErrorCode::kIo, temp + ": cannot create: " + errno_text(errno));
  std::atomic<int> failed_errno{0};  // the first failure's; once set, the pieces left are skipped
  ir::ThreadPool pool(static_cast<int>(std::min<uint64_t>({std::max(1u, std::thread::hardware_concurrency()), 8, pieces.size()})));
  pool.parallel_for(static_cast<int64_t>(pieces.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last && failed_errno.load() == 0; ++k) {
      const Piece& piece = pieces[static_cast<size_t>(k)];
      for (uint64_t done = 0; done < piece.size;) {
        const ssize_t n = ::pwrite(fd, piece.data + done, piece.size - done, static_cast<off_t>(piece.offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {  // 0: no progress (a full device reports ENOSPC on the next call, but do not spin on it)
          int none = 0;
          failed_errno.compare_exchange_strong(none, n < 0 ? errno : EIO);
          return;
        }
        done += static_cast<uint64_t>(n);
      }
    }
  });
  int err = failed_errno.load();
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    std::remove(temp.c_str());
    return error(ErrorCode::kIo, temp + ": write failed: " + errno_text(err));
  }
  if (std::rename(temp.c_str(), name.c_str()) != 0) {
    const int rename_err = errno;
    std::remove(temp.c_str());
    return error(ErrorCode::kIo, name + ": cannot rename from " + temp + ": " + errno_text(rename_err));
  }
  return Status::ok();
}

}  // namespace agentcompile::frontend
