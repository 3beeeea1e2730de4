// GGUF parsing (header, metadata, tensor directory) and the read-only mmap of a file.
//
// The parser walks the file once with a bounds-checked cursor. Before any allocation it checks that the
// bytes left could hold what a count or length promises (at least one byte per u8, eight per string
// length, twelve per nested array header...), so a corrupted count fails fast instead of allocating.
#include "frontend/gguf.h"

#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>
#include <unordered_set>

#include "frontend/tensor_ranges.h"

namespace agentcompile::frontend {

static_assert(std::endian::native == std::endian::little, "GGUF is read with plain little-endian loads");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxArrayDepth = 8;        // no writer nests deeper than 2; bounds recursion on hostile input
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS

struct TypeInfo {
  std::string_view name;
  size_t size;  // bytes of a scalar; for strings and arrays the least bytes one element takes
};

std::optional<TypeInfo> type_info(GgufType type) {
  switch (type) {
    case GgufType::kU8: return TypeInfo{"u8", 1};
    case GgufType::kI8: return TypeInfo{"i8", 1};
    case GgufType::kU16: return TypeInfo{"u16", 2};
    case GgufType::kI16: return TypeInfo{"i16", 2};
    case GgufType::kU32: return TypeInfo{"u32", 4};
    case GgufType::kI32: return TypeInfo{"i32", 4};
    case GgufType::kF32: return TypeInfo{"f32", 4};
    case GgufType::kBool: return TypeInfo{"bool", 1};
    case GgufType::kString: return TypeInfo{"string", 8};
    case GgufType::kArray: return TypeInfo{"array", 12};
    case GgufType::kU64: return TypeInfo{"u64", 8};
    case GgufType::kI64: return TypeInfo{"i64", 8};
    case GgufType::kF64: return TypeInfo{"f64", 8};
  }
  return std::nullopt;
}

// Decodes one stored scalar of a numeric or bool type into a value.
GgufValue decode_scalar(GgufType type, const uint8_t* p) {
  auto load = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  GgufValue value;
  value.type = type;
  switch (type) {
    case GgufType::kU8: value.data = uint64_t{load(uint8_t{})}; break;
    case GgufType::kU16: value.data = uint64_t{load(uint16_t{})}; break;
    case GgufType::kU32: value.data = uint64_t{load(uint32_t{})}; break;
    case GgufType::kU64: value.data = uint64_t{load(uint64_t{})}; break;
    case GgufType::kI8: value.data = int64_t{load(int8_t{})}; break;
    case GgufType::kI16: value.data = int64_t{load(int16_t{})}; break;
    case GgufType::kI32: value.data = int64_t{load(int32_t{})}; break;
    case GgufType::kI64: value.data = int64_t{load(int64_t{})}; break;
    case GgufType::kF32: value.data = double{load(float{})}; break;
    case GgufType::kF64: value.data = double{load(double{})}; break;
    case GgufType::kBool: value.data = load(uint8_t{}) != 0; break;
    case GgufType::kString:
    case GgufType::kArray: break;  // not scalars
  }
  return value;
}

// A bounds-checked cursor over the file. Failures name `source`, what was being read and where.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& source) : data_(data), size_(size), source_(source) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }
  const std::string& source() const { return source_; }

  Status fail(const std::string& context, const std::string& what, size_t at) const {
    return error(ErrorCode::kParse, source_ + ": " + context + " at byte " + std::to_string(at) + ": " + what);
  }
  Status need(size_t bytes, const std::string& context, const char* what) const {
    if (bytes <= remaining()) return Status::ok();
    return fail(context, std::string(what) + " needs " + std::to_string(bytes) + " bytes but the file ends after " +
                             std::to_string(remaining()) + " (size " + std::to_string(size_) + ")",
                pos_);
  }
  template <typename T>
  Status read(T& out, const std::string& context, const char* what) {
    AC_TRY(need(sizeof(T), context, what));
    std::memcpy(&out, here(), sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }
  Status read_string(std::string& out, const std::string& context, const char* what) {
    const size_t at = pos_;
    uint64_t length = 0;
    AC_TRY(read(length, context, what));
    if (length > remaining())
      return fail(context, std::string(what) + " length " + std::to_string(length) + " runs past end of file (" +
                               std::to_string(remaining()) + " bytes remain)",
                  at);
    out.assign(reinterpret_cast<const char*>(here()), static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return Status::ok();
  }
  void skip(size_t bytes) { pos_ += bytes; }  // callers have checked need(bytes)

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& source_;
};

Status read_array(Cursor& in, GgufArray& array, const std::string& context, int depth);

Status read_value(Cursor& in, GgufType type, GgufValue& value, const std::string& context, int depth) {
  const size_t at = in.pos();
  const auto info = type_info(type);
  if (!info) return in.fail(context, "unknown value type " + std::to_string(static_cast<uint32_t>(type)), at);
  value.type = type;
  if (type == GgufType::kString) {
    std::string text;
    AC_TRY(in.read_string(text, context, "string"));
    value.data = std::move(text);
  } else if (type == GgufType::kArray) {
    if (depth >= kMaxArrayDepth)
      return in.fail(context, "arrays nested deeper than " + std::to_string(kMaxArrayDepth), at);
    auto array = std::make_shared<GgufArray>();
    AC_TRY(read_array(in, *array, context, depth + 1));
    value.data = std::shared_ptr<const GgufArray>(std::move(array));
  } else {
    AC_TRY(in.need(info->size, context, "value"));
    value = decode_scalar(type, in.here());
    in.skip(info->size);
  }
  return Status::ok();
}

Status read_array(Cursor& in, GgufArray& array, const std::string& context, int depth) {
  const size_t at = in.pos();
  uint32_t raw_type = 0;
  AC_TRY(in.read(raw_type, context, "array element type"));
  const auto type = static_cast<GgufType>(raw_type);
  const auto info = type_info(type);
  if (!info) return in.fail(context, "unknown array element type " + std::to_string(raw_type), at);
  AC_TRY(in.read(array.size, context, "array length"));
  array.element_type = type;
  // Every element takes at least info->size bytes, so this bounds the allocation by the file's size.
  if (array.size > in.remaining() / info->size)
    return in.fail(context, "array of " + std::to_string(array.size) + " " + std::string(info->name) +
                                " elements needs at least " + std::to_string(info->size) + " bytes each but only " +
                                std::to_string(in.remaining()) + " bytes remain",
                   at);
  const auto count = static_cast<size_t>(array.size);
  if (type == GgufType::kString) {
    array.strings.resize(count);
    for (size_t i = 0; i < count; ++i)
      AC_TRY(in.read_string(array.strings[i], context, ("string element " + std::to_string(i)).c_str()));
  } else if (type == GgufType::kArray) {
    array.arrays.resize(count);
    for (size_t i = 0; i < count; ++i)
      AC_TRY(read_value(in, GgufType::kArray, array.arrays[i], context + " element " + std::to_string(i), depth));
  } else {
    const size_t bytes = count * info->size;
    array.raw.assign(in.here(), in.here() + bytes);
    in.skip(bytes);
  }
  return Status::ok();
}

// Checked x * y for non-negative values; false on overflow past INT64_MAX.
bool mul_fits(int64_t x, int64_t y, int64_t& out) { return !__builtin_mul_overflow(x, y, &out); }

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string describe_type(uint32_t ggml_type) {
  const std::string_view name = ggml_type_name(ggml_type);
  return std::to_string(ggml_type) + (name.empty() ? "" : " (" + std::string(name) + ")");
}

Status read_tensor_info(Cursor& in, size_t index, GgufTensorInfo& tensor) {
  const size_t at = in.pos();
  const std::string entry = "tensor info #" + std::to_string(index);
  AC_TRY(in.read_string(tensor.name, entry, "name"));
  const std::string context = "tensor '" + tensor.name + "'";
  uint32_t n_dims = 0;
  AC_TRY(in.read(n_dims, context, "n_dims"));
  // ggml writes at least one dim (a scalar is [1]); 0 means the directory is corrupt, and reading on
  // would take the dims' bytes for the type.
  if (n_dims < 1 || n_dims > kMaxDims)
    return in.fail(context, "n_dims is " + std::to_string(n_dims) + "; it must be 1 to " + std::to_string(kMaxDims), at);
  int64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t dim = 0;
    AC_TRY(in.read(dim, context, "dim"));
    if (dim > static_cast<uint64_t>(INT64_MAX) || !mul_fits(elements, static_cast<int64_t>(dim), elements))
      return in.fail(context, "element count overflows (dim " + std::to_string(d) + " = " + std::to_string(dim) + ")", at);
    tensor.dims.push_back(static_cast<int64_t>(dim));
  }
  tensor.elements = elements;
  AC_TRY(in.read(tensor.ggml_type, context, "type"));
  const auto dtype = ggml_type_dtype(tensor.ggml_type);
  if (!dtype)
    return error(ErrorCode::kUnsupported, in.source() + ": " + (ggml_type_name(tensor.ggml_type).empty() ? "unknown" : "unsupported") +
                                              " GGUF quant type " + describe_type(tensor.ggml_type) + " for tensor " + tensor.name +
                                              " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)");
  tensor.dtype = *dtype;
  AC_TRY(in.read(tensor.offset, context, "offset"));
  const int64_t block = static_cast<int64_t>(ir::block_elements(tensor.dtype));
  const int64_t row = tensor.dims.empty() ? 1 : tensor.dims[0];
  if (row % block != 0)
    return in.fail(context, "row length " + std::to_string(row) + " (dims " + dims_text(tensor.dims) +
                                ") is not a multiple of the " + std::string(ggml_type_name(tensor.ggml_type)) +
                                " block size " + std::to_string(block),
                   at);
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements / block), uint64_t{ir::dtype_size(tensor.dtype)},
                             &tensor.bytes))
    return in.fail(context, "byte size overflows (dims " + dims_text(tensor.dims) + ")", at);
  return Status::ok();
}

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  const auto info = type_info(type);
  return info ? info->name : "?";
}

std::optional<int64_t> GgufValue::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
  if (const auto* f = std::get_if<double>(&data)) return *f;
  if (const auto* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
  return std::nullopt;
}

const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&data); }

const GgufArray* GgufValue::as_array() const {
  const auto* array = std::get_if<std::shared_ptr<const GgufArray>>(&data);
  return array ? array->get() : nullptr;
}

std::string GgufValue::to_string() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) return std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
  if (const auto* f = std::get_if<double>(&data)) {
    char buffer[32];
    // f32 values print in their shortest float form (1e-05, not 9.99999974738e-06).
    auto result = type == GgufType::kF32 ? std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(*f))
                                         : std::to_chars(buffer, buffer + sizeof(buffer), *f);
    return std::string(buffer, result.ptr);
  }
  if (const auto* s = std::get_if<std::string>(&data))
    return "\"" + (s->size() > 60 ? s->substr(0, 57) + "..." : *s) + "\"";
  if (const GgufArray* array = as_array())
    return "[" + std::string(gguf_type_name(array->element_type)) + " × " + std::to_string(array->size) + "]";
  return "?";
}

std::optional<int64_t> GgufArray::int_at(size_t i) const {
  const auto info = type_info(element_type);
  if (!info || i >= size || element_type == GgufType::kString || element_type == GgufType::kArray) return std::nullopt;
  return decode_scalar(element_type, raw.data() + i * info->size).as_int();
}

std::optional<double> GgufArray::float_at(size_t i) const {
  const auto info = type_info(element_type);
  if (!info || i >= size || element_type == GgufType::kString || element_type == GgufType::kArray) return std::nullopt;
  return decode_scalar(element_type, raw.data() + i * info->size).as_float();
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& kv : metadata)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& tensor : tensors)
    if (tensor.name == name) return &tensor;
  return nullptr;
}

std::optional<ir::DType> ggml_type_dtype(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0: return ir::DType::kF32;
    case 1: return ir::DType::kF16;
    case 2: return ir::DType::kQ4_0;
    case 3: return ir::DType::kQ4_1;
    case 8: return ir::DType::kQ8_0;
    case 12: return ir::DType::kQ4_K;
    case 13: return ir::DType::kQ5_K;
    case 14: return ir::DType::kQ6_K;
    case 30: return ir::DType::kBF16;
    default: return std::nullopt;
  }
}

std::string_view ggml_type_name(uint32_t ggml_type) {
  // ggml's enum ggml_type; ids 4, 5 and 31-33, 36-38 were retired and are never written.
  static constexpr std::string_view kNames[] = {
      "F32",    "F16",     "Q4_0",    "Q4_1",    "",       "",        "Q5_0",  "Q5_1",  "Q8_0",   "Q8_1",
      "Q2_K",   "Q3_K",    "Q4_K",    "Q5_K",    "Q6_K",   "Q8_K",    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
      "IQ4_NL", "IQ3_S",   "IQ2_S",   "IQ4_XS",  "I8",     "I16",     "I32",   "I64",   "F64",    "IQ1_M",
      "BF16",   "",        "",        "",        "TQ1_0",  "TQ2_0",   "",      "",      "",       "MXFP4",
      "NVFP4",  "Q1_0"};
  return ggml_type < std::size(kNames) ? kNames[ggml_type] : std::string_view();
}

Expected<GgufFile> parse_gguf(const uint8_t* data, size_t size, const std::string& source) {
  static const uint8_t kEmpty = 0;
  Cursor in(data ? data : &kEmpty, data ? size : 0, source);
  GgufFile file;
  uint32_t magic = 0;
  AC_TRY(in.read(magic, "header", "magic"));
  if (magic != kMagic) {
    char shown[5] = {};
    std::memcpy(shown, &magic, 4);
    for (char& c : shown)
      if (c && (c < 0x20 || c > 0x7e)) c = '?';
    return error(ErrorCode::kParse, source + ": not a GGUF file (magic '" + shown + "', expected 'GGUF')");
  }
  AC_TRY(in.read(file.version, "header", "version"));
  if (file.version != 2 && file.version != 3) {
    std::string hint = (file.version & 0xffff) == 0 && file.version != 0 ? " (a big-endian file?)" : "";
    return error(ErrorCode::kUnsupported, source + ": unsupported GGUF version " + std::to_string(file.version) +
                                              hint + " (supported: 2, 3)");
  }
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  AC_TRY(in.read(tensor_count, "header", "tensor_count"));
  AC_TRY(in.read(kv_count, "header", "kv_count"));
  // A KV takes at least 13 bytes (key length, type, one-byte value); a tensor info at least 24.
  const size_t rest = in.remaining();
  if (kv_count > rest / 13 || tensor_count > rest / 24 || kv_count * 13 + tensor_count * 24 > rest)
    return in.fail("header", std::to_string(kv_count) + " metadata entries and " + std::to_string(tensor_count) +
                                 " tensor infos cannot fit in the " + std::to_string(rest) +
                                 " bytes that remain (truncated or corrupt file)",
                   8);

  file.metadata.reserve(static_cast<size_t>(kv_count));
  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < kv_count; ++i) {
    GgufKeyValue kv;
    const size_t at = in.pos();
    AC_TRY(in.read_string(kv.key, "metadata entry #" + std::to_string(i), "key"));
    const std::string context = "metadata key '" + kv.key + "'";
    if (!keys.insert(kv.key).second) return in.fail(context, "duplicate key", at);
    const size_t type_at = in.pos();
    uint32_t type = 0;
    AC_TRY(in.read(type, context, "value type"));
    if (!type_info(static_cast<GgufType>(type))) return in.fail(context, "unknown value type " + std::to_string(type), type_at);
    AC_TRY(read_value(in, static_cast<GgufType>(type), kv.value, context, 0));
    file.metadata.push_back(std::move(kv));
  }

  if (const GgufValue* alignment = file.find("general.alignment")) {
    const auto value = alignment->as_int();
    if (!value || *value <= 0 || !std::has_single_bit(static_cast<uint64_t>(*value)))
      return error(ErrorCode::kParse, source + ": metadata key 'general.alignment' must be a power of two, got " +
                                          alignment->to_string());
    file.alignment = static_cast<uint64_t>(*value);
  }

  file.tensors.reserve(static_cast<size_t>(tensor_count));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const size_t at = in.pos();
    GgufTensorInfo tensor;
    AC_TRY(read_tensor_info(in, static_cast<size_t>(i), tensor));
    if (!names.insert(tensor.name).second) return in.fail("tensor '" + tensor.name + "'", "duplicate tensor name", at);
    file.tensors.push_back(std::move(tensor));
  }

  // The data section starts at the next multiple of the alignment; a file without tensor bytes may end
  // before it.
  const uint64_t end_of_infos = in.pos();
  const uint64_t padding = (file.alignment - end_of_infos % file.alignment) % file.alignment;
  file.data_offset = end_of_infos + padding;  // both terms are below 2^64 / 2: no wrap
  const uint64_t available = file.data_offset < size ? size - file.data_offset : 0;
  for (const auto& tensor : file.tensors) {
    const std::string where = source + ": tensor '" + tensor.name + "'";
    if (tensor.offset % file.alignment != 0)
      return error(ErrorCode::kParse, where + ": data offset " + std::to_string(tensor.offset) +
                                          " is not a multiple of the alignment " + std::to_string(file.alignment));
    if (tensor.offset > available || tensor.bytes > available - tensor.offset)
      return error(ErrorCode::kParse, where + ": data [" + std::to_string(tensor.offset) + ", +" +
                                          std::to_string(tensor.bytes) + ") runs past the end of the data section (" +
                                          std::to_string(available) + " bytes, from file offset " +
                                          std::to_string(file.data_offset) + ")");
  }
  std::vector<TensorRange> ranges;
  for (const auto& tensor : file.tensors) ranges.push_back({&tensor.name, tensor.offset, tensor.offset + tensor.bytes});
  AC_TRY(check_disjoint(source, std::move(ranges)));
  return file;
}

Expected<std::unique_ptr<GgufModelFile>> GgufModelFile::open(const std::filesystem::path& path) {
  std::unique_ptr<GgufModelFile> file(new GgufModelFile());
  AC_ASSIGN_OR_RETURN(file->mapped_, support::MappedFile::open(path));
  AC_ASSIGN_OR_RETURN(file->gguf_, parse_gguf(file->mapped_.data(), file->mapped_.size(), path.string()));
  return file;
}

}  // namespace agentcompile::frontend
