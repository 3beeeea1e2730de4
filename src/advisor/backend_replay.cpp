// The replay backend: answers from the exchanges an earlier compile recorded in advice.json, by
// request hash, so a compile reproduces with no network. A request the file does not hold is a
// failed exchange; a recorded failure replays as the same failure.
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "advisor/backend.h"

namespace agentcompile::advisor {

using json = nlohmann::json;

namespace {

class ReplayBackend final : public Backend {
 public:
  ReplayBackend(std::string file, std::map<std::string, json> exchanges) : file_(std::move(file)), exchanges_(std::move(exchanges)) {}
  std::string kind() const override { return "replay"; }
  std::string identity() const override { return "replay:" + file_; }

  Reply ask(const Request& request, std::chrono::steady_clock::time_point) override {
    Reply reply;
    auto it = exchanges_.find(request.hash);
    if (it == exchanges_.end()) {
      reply.error = "no recorded exchange for request " + request.hash.substr(0, 16) + " (" + request.kind + " " + request.region +
                    ") in " + file_;
      return reply;
    }
    const json& e = it->second;
    reply.ok = e.value("ok", false);
    reply.text = e.value("reply", "");
    reply.error = e.value("error", "");
    reply.attempts = e.value("attempts", 0);
    reply.unreachable = e.value("unreachable", false);
    return reply;
  }

 private:
  std::string file_;
  std::map<std::string, json> exchanges_;
};

}  // namespace

Expected<std::unique_ptr<Backend>> make_replay_backend(const std::string& path) {
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(file)) file /= "advice.json";
  std::ifstream in(file);
  if (!in) return error(ErrorCode::kNotFound, file.string() + ": cannot open the advice file to replay");
  const json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("exchanges") || !doc["exchanges"].is_object())
    return error(ErrorCode::kParse, file.string() + ": not an agentcompile advice file (expected an object with \"exchanges\")");
  std::map<std::string, json> exchanges;
  for (const auto& [hash, exchange] : doc["exchanges"].items()) {
    // The members a replay reads, with their types, so a damaged file is refused here, named.
    const bool shaped = exchange.is_object() && exchange.contains("ok") && exchange["ok"].is_boolean() &&
                        (!exchange.contains("reply") || exchange["reply"].is_string()) &&
                        (!exchange.contains("error") || exchange["error"].is_string()) &&
                        (!exchange.contains("attempts") || exchange["attempts"].is_number_integer()) &&
                        (!exchange.contains("unreachable") || exchange["unreachable"].is_boolean());
    if (!shaped)
      return error(ErrorCode::kParse, file.string() + ": exchange " + hash +
                                          " is not a recorded exchange (an object with ok: bool, reply and error: strings, attempts: integer)");
    exchanges[hash] = exchange;
  }
  return std::unique_ptr<Backend>(std::make_unique<ReplayBackend>(file.string(), std::move(exchanges)));
}

}  // namespace agentcompile::advisor
