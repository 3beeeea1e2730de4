// SHA-256 (FIPS 180-4), for content-addressed caches: NVRTC builds, advisor exchanges, artifacts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace agentcompile::support {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view text) { return update(text.data(), text.size()); }
  std::string hex();  // finishes the hash; the object must not be updated afterwards

 private:
  void block(const uint8_t* chunk);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

inline std::string sha256_hex(std::string_view text) { return Sha256().update(text).hex(); }

}  // namespace agentcompile::support
