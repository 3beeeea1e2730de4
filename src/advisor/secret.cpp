// Reading and redacting API keys.
#include "advisor/secret.h"

#include <algorithm>
#include <cstdlib>

namespace agentcompile::advisor {

namespace {

constexpr size_t kMinFragment = 8;

// Length of the run of `text` at `i` that is a fragment of `key` (0 if shorter than the minimum).
size_t fragment_at(const std::string& text, size_t i, const std::string& key) {
  if (key.size() < kMinFragment) return text.compare(i, key.size(), key) == 0 ? key.size() : 0;
  if (i + kMinFragment > text.size() || key.find(text.data() + i, 0, kMinFragment) == std::string::npos) return 0;
  size_t length = kMinFragment;
  while (i + length < text.size() && key.find(text.data() + i, 0, length + 1) != std::string::npos) ++length;
  return length;
}

}  // namespace

Secret Secret::from_env(const std::vector<std::string>& names) {
  Secret secret;
  for (const auto& name : names)
    if (const char* value = name.empty() ? nullptr : std::getenv(name.c_str()); value && *value) secret.add(value);
  return secret;
}

void Secret::add(std::string value) {
  if (!value.empty()) values_.push_back(std::move(value));
}

std::string Secret::redact(const std::string& text) const {
  if (values_.empty()) return text;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t length = 0;
    for (const auto& key : values_) length = std::max(length, fragment_at(text, i, key));
    if (length > 0) {
      out += "[REDACTED]";
      i += length;
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace agentcompile::advisor
