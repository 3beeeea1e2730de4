// Bad inputs for the tests of issue 23, made from the committed fixtures: a scratch directory per
// test, the CLI under a memory and time limit, a config.json with one key changed, a checkpoint
// copied with its config edited, a GGUF file with one field or its tensor directory rewritten, and a
// tiny byte-level tokenizer (ids below the tiny models' vocabulary of 512) with or without a chat
// template.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "scratch_files.h"
#include "frontend/gguf.h"

namespace agentcompile::testing {

namespace bad_input {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline const fs::path kFixtures = fs::path(AC_SOURCE_DIR) / "tests/fixtures";

inline fs::path work_dir(const std::string& name) { return scratch_dir("bad-input-test", name); }

inline CommandRun cli(const std::string& args) {
  return run_command("bash -c 'ulimit -v 4194304; exec timeout 120 " + std::string(AC_CLI) + " " + args + "'");
}

inline json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

inline void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

inline std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The committed checkpoint tests/fixtures/models/<name> copied to `dir`, its config.json edited.
inline fs::path checkpoint_copy(const std::string& name, const fs::path& dir, const json& config_changes = json::object()) {
  fs::create_directories(dir);
  const fs::path source = kFixtures / "models" / name;
  for (const char* file : {"config.json", "generation_config.json", "model.safetensors"}) fs::copy_file(source / file, dir / file);
  json config = read_json(dir / "config.json");
  for (const auto& [key, value] : config_changes.items()) {
    if (value.is_null())
      config.erase(key);
    else
      config[key] = value;
  }
  write_text(dir / "config.json", config.dump(2));
  return dir;
}

// GPT-2's byte-level alphabet: the character that stands for each byte in tokenizer.json.
inline std::string byte_level_char(int byte) {
  const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
  int code = byte;
  if (!printable) {
    int n = 0;
    for (int b = 0; b < byte; ++b) n += !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF));
    code = 256 + n;
  }
  std::string out;
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else {
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
  return out;
}

// A byte-level BPE tokenizer with one token per byte (ids 0-255, no merges) and ChatML's two special
// tokens (256, 257), written into `dir`; with `chat_template` a tokenizer_config.json with ChatML's
// template beside it.
inline void write_tiny_tokenizer(const fs::path& dir, bool chat_template) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(b)] = b;
  auto special = [](int id, const char* text) {
    return json{{"id", id}, {"content", text}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  const json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", {special(256, "<|im_start|>"), special(257, "<|im_end|>")}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", json::array()}}}};
  write_text(dir / "tokenizer.json", tokenizer.dump());
  if (chat_template)
    write_text(dir / "tokenizer_config.json",
               json{{"eos_token", "<|im_end|>"},
                    {"chat_template",
                     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
                     "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"}}
                   .dump());
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

// The offset of a GGUF string (u64 length + bytes) in `bytes`, or npos.
inline size_t find_gguf_string(const std::vector<uint8_t>& bytes, const std::string& text) {
  std::vector<uint8_t> needle;
  put<uint64_t>(needle, text.size());
  needle.insert(needle.end(), text.begin(), text.end());
  auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
  return it == bytes.end() ? std::string::npos : static_cast<size_t>(it - bytes.begin());
}

// A GGUF file taken apart: its header and metadata bytes kept as they are, its tensor directory and
// data section editable, and written back whole.
struct GgufEdit {
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type = 0;
    uint64_t offset = 0;
  };
  std::vector<uint8_t> head;  // magic, version, counts and every metadata entry
  std::vector<Tensor> tensors;
  std::vector<uint8_t> data;
  uint64_t alignment = 32;

  static GgufEdit read(const fs::path& path) {
    const std::vector<uint8_t> bytes = read_bytes(path);
    auto parsed = frontend::parse_gguf(bytes.data(), bytes.size(), path.string());
    EXPECT_TRUE(parsed) << parsed.status().to_string();
    GgufEdit edit;
    edit.alignment = parsed->alignment;
    const size_t directory = find_gguf_string(bytes, parsed->tensors.at(0).name);
    edit.head.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(directory));
    for (const auto& t : parsed->tensors)
      edit.tensors.push_back({t.name, std::vector<uint64_t>(t.dims.begin(), t.dims.end()), t.ggml_type, t.offset});
    edit.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(parsed->data_offset), bytes.end());
    return edit;
  }

  Tensor& tensor(const std::string& name) {
    for (auto& t : tensors)
      if (t.name == name) return t;
    ADD_FAILURE() << "no tensor " << name;
    return tensors.front();
  }

  // Sets a u32 metadata value in place.
  void set_u32(const std::string& key, uint32_t value) {
    const size_t at = find_gguf_string(head, key);
    ASSERT_NE(at, std::string::npos) << key;
    std::memcpy(&head[at + 8 + key.size() + 4], &value, 4);
  }

  // Appends an F32 tensor of zeros at the end of the data section.
  void add_f32(const std::string& name, std::vector<uint64_t> dims) {
    uint64_t elements = 1;
    for (uint64_t d : dims) elements *= d;
    data.resize((data.size() + alignment - 1) / alignment * alignment, 0);
    tensors.push_back({name, std::move(dims), 0, data.size()});
    data.resize(data.size() + elements * 4, 0);
  }

  void write(const fs::path& path) const {
    std::vector<uint8_t> out = head;
    const uint64_t count = tensors.size();
    std::memcpy(&out[8], &count, 8);
    for (const auto& t : tensors) {
      put<uint64_t>(out, t.name.size());
      out.insert(out.end(), t.name.begin(), t.name.end());
      put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) put<uint64_t>(out, d);
      put<uint32_t>(out, t.type);
      put<uint64_t>(out, t.offset);
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
    out.insert(out.end(), data.begin(), data.end());
    write_bytes(path, out);
  }
};

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace bad_input

}  // namespace agentcompile::testing
