// GGUF (versions 2 and 3): the container llama.cpp writes. Parsing of the header, every metadata value
// and the tensor directory, and a read-only mmap of one file.
//
// Layout (all little-endian): "GGUF" | u32 version | u64 tensor_count | u64 kv_count |
// kv_count × (string key, u32 value type, value) | tensor_count × (string name, u32 n_dims,
// n_dims × u64 dims, u32 ggml type, u64 offset) | padding to general.alignment (default 32) | data.
// A string is a u64 length and that many bytes; an array is a u32 element type, a u64 count and the
// elements (arrays may nest). Tensor dims are listed innermost first: dims[0] is the row length.
//
// Every byte is untrusted: each length and count is bounded by the bytes that remain before anything is
// allocated, and every tensor's byte range is checked to lie in the file and to share no byte with
// another tensor's (tensor_ranges.h), as safetensors' are. The parser is fuzzed
// (tests/fuzz/fuzz_gguf_header.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agentcompile/status.h"
#include "ir/dtype.h"
#include "support/mapped_file.h"

namespace agentcompile::frontend {

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "u8", "i32", "f32", "bool", "string", "array", ...; "?" for a number outside the enum.
std::string_view gguf_type_name(GgufType type);

struct GgufArray;

// One metadata value. Integers are widened to 64 bits (signed or unsigned as stored), floats to double.
struct GgufValue {
  GgufType type = GgufType::kU8;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<const GgufArray>> data;

  // Any integer type whose value fits in int64_t; nullopt otherwise.
  std::optional<int64_t> as_int() const;
  // f32/f64, or any integer type.
  std::optional<double> as_float() const;
  const std::string* as_string() const;
  const GgufArray* as_array() const;
  // A short rendering for messages and `inspect`: 42, 1e-05, "llama", [string × 49152].
  std::string to_string() const;
};

struct GgufArray {
  GgufType element_type = GgufType::kU8;
  uint64_t size = 0;
  std::vector<uint8_t> raw;          // numeric and bool elements exactly as stored (little-endian)
  std::vector<std::string> strings;  // element_type == kString
  std::vector<GgufValue> arrays;     // element_type == kArray (each of type kArray)

  // Element i of a numeric array, like GgufValue::as_int / as_float; nullopt out of range or mistyped.
  std::optional<int64_t> int_at(size_t i) const;
  std::optional<double> float_at(size_t i) const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;            // GGUF name, e.g. "blk.0.attn_q.weight"
  uint32_t ggml_type = 0;      // as stored
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> dims;   // ggml order: innermost first (dims[0] is contiguous)
  uint64_t offset = 0;         // from GgufFile::data_offset; a multiple of the alignment
  int64_t elements = 0;
  uint64_t bytes = 0;
};

struct GgufFile {
  uint32_t version = 0;
  uint64_t alignment = 32;    // general.alignment
  uint64_t data_offset = 0;   // file offset of the tensor data section
  std::vector<GgufKeyValue> metadata;    // in file order, keys unique
  std::vector<GgufTensorInfo> tensors;   // in file order, names unique

  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;
};

// Parses a whole file held in memory. Errors: kParse for malformed bytes (naming the metadata key, or
// the KV's index when the key itself is unreadable, and the byte offset), kUnsupported for a version
// other than 2 or 3 and for tensor types we do not dequantize. Never throws, never reads outside
// [data, data + size).
Expected<GgufFile> parse_gguf(const uint8_t* data, size_t size, const std::string& source);

// ggml type ids: the dtype we read it as (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K), and the
// ggml name of any known id ("Q5_0" for 6; empty for ids ggml never assigned).
std::optional<ir::DType> ggml_type_dtype(uint32_t ggml_type);
std::string_view ggml_type_name(uint32_t ggml_type);

// One GGUF file mapped read-only for its whole lifetime.
class GgufModelFile {
 public:
  static Expected<std::unique_ptr<GgufModelFile>> open(const std::filesystem::path& path);
  GgufModelFile(const GgufModelFile&) = delete;
  GgufModelFile& operator=(const GgufModelFile&) = delete;

  const std::filesystem::path& path() const { return mapped_.path(); }
  const GgufFile& gguf() const { return gguf_; }
  // The tensor's stored bytes (tensor.bytes of them); the parser checked they lie within the file.
  const uint8_t* bytes(const GgufTensorInfo& tensor) const { return mapped_.data() + gguf_.data_offset + tensor.offset; }

 private:
  GgufModelFile() = default;
  support::MappedFile mapped_;
  GgufFile gguf_;
};

}  // namespace agentcompile::frontend
