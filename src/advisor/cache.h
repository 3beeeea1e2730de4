// The advice cache: every successful exchange stored under the SHA-256 of its canonical request,
// in a directory per backend identity (model and server), so a repeated compile asks nothing twice.
// Failed exchanges are not cached: the next compile asks again. Entries hold the request and the
// (redacted) reply, never a key.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "advisor/advice.h"
#include "advisor/request.h"

namespace agentcompile::advisor {

class AdviceCache {
 public:
  AdviceCache() = default;  // disabled
  AdviceCache(std::filesystem::path dir, const std::string& backend_identity);

  bool enabled() const { return !dir_.empty(); }
  std::filesystem::path path_of(const Request& request) const;
  // The cached reply text for this request, if any.
  std::optional<std::string> load(const Request& request) const;
  // Best effort (a cache, not a result): written to a temporary file and renamed into place.
  void store(const Request& request, const Exchange& exchange) const;

 private:
  std::filesystem::path dir_;
  std::string identity_;
};

}  // namespace agentcompile::advisor
