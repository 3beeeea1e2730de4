// The on-disk advice cache (see cache.h).
#include "advisor/cache.h"

#include <unistd.h>

#include <fstream>

#include "support/sha256.h"

namespace agentcompile::advisor {

namespace fs = std::filesystem;
using json = nlohmann::json;

AdviceCache::AdviceCache(fs::path dir, const std::string& backend_identity)
    : dir_(dir.empty() ? dir : dir / support::sha256_hex(backend_identity).substr(0, 16)), identity_(backend_identity) {}

fs::path AdviceCache::path_of(const Request& request) const { return dir_ / (request.hash + ".json"); }

std::optional<std::string> AdviceCache::load(const Request& request) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(path_of(request));
  if (!in) return std::nullopt;
  const json entry = json::parse(in, nullptr, false);
  // An entry of any other shape (damaged, or not ours) is a miss: asked again and overwritten.
  const auto hash = entry.is_object() ? entry.find("request_hash") : entry.end();
  const auto reply = entry.is_object() ? entry.find("reply") : entry.end();
  if (!entry.is_object() || hash == entry.end() || !hash->is_string() || *hash != request.hash || reply == entry.end() || !reply->is_string())
    return std::nullopt;
  return reply->get<std::string>();
}

void AdviceCache::store(const Request& request, const Exchange& exchange) const {
  if (!enabled() || !exchange.ok) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const json entry = {{"format", "agentcompile-advice-cache/1"}, {"backend", identity_}, {"request_hash", request.hash},
                      {"kind", request.kind}, {"region", request.region}, {"request", request.body}, {"reply", exchange.reply}};
  const fs::path target = path_of(request);
  const fs::path temp = target.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary);
    out << entry.dump(1) << "\n";
    if (!out) return;
  }
  fs::rename(temp, target, ec);
  if (ec) fs::remove(temp, ec);
}

}  // namespace agentcompile::advisor
