// API keys: read from the environment only, and scrubbed from every string that leaves the advisor
// (replies, error messages, logs), so no key reaches a log, a cache or an artifact.
#pragma once

#include <string>
#include <vector>

namespace agentcompile::advisor {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) { add(std::move(value)); }
  // The values of the environment variables `names` that are set (the first one is the key).
  static Secret from_env(const std::vector<std::string>& names);

  void add(std::string value);
  bool empty() const { return values_.empty(); }
  const std::string& reveal() const { return values_.front(); }  // for request headers only

  // `text` with every key, and any run of 8 or more characters of one (a partly masked echo such as
  // "sk-abc***xyz123" in an error body), replaced by "[REDACTED]".
  std::string redact(const std::string& text) const;

 private:
  std::vector<std::string> values_;
};

}  // namespace agentcompile::advisor
