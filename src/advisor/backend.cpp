// Choosing a backend from the options, and its identity in artifact keys.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "advisor/backend.h"
#include "support/sha256.h"

namespace agentcompile::advisor {

namespace {

std::string default_key_env(const std::string& kind) { return kind == "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"; }

}  // namespace

Expected<std::unique_ptr<Backend>> make_backend(const AdvisorOptions& options) {
  const std::string& spec = options.backend;
  if (spec.empty() || spec == "none") return std::unique_ptr<Backend>();
  if (spec == "openai" || spec == "anthropic") {
    if (options.model.empty())
      return error(ErrorCode::kInvalidArgument, "--advisor " + spec + " needs a model name (--advisor-model)");
    // A variable named on purpose must hold the key: sending no auth header instead would fail every
    // request with a 401 that says nothing about the variable. The default variables may be unset
    // (local servers take no key).
    if (!options.key_env.empty()) {
      const char* value = std::getenv(options.key_env.c_str());
      if (!value || !*value)
        return error(ErrorCode::kInvalidArgument, "--advisor-key-env " + options.key_env + ": the environment variable " + options.key_env +
                                                      (value ? " is empty" : " is not set"));
    }
    const Secret backend_key = Secret::from_env({options.key_env.empty() ? default_key_env(spec) : options.key_env});
    return spec == "openai" ? make_openai_backend(options, backend_key) : make_anthropic_backend(options, backend_key);
  }
  if (spec.rfind("command:", 0) == 0 && spec.size() > 8) return make_command_backend(options, spec.substr(8));
  if (spec.rfind("replay:", 0) == 0 && spec.size() > 7) return make_replay_backend(spec.substr(7));
  return error(ErrorCode::kInvalidArgument,
               "unknown advisor backend '" + spec + "' (none, openai, anthropic, command:PROG, replay:FILE)");
}

Secret known_keys(const AdvisorOptions& options) {
  return Secret::from_env({options.key_env, "OPENAI_API_KEY", "ANTHROPIC_API_KEY"});
}

std::string backend_fingerprint(const AdvisorOptions& options) {
  const std::string& spec = options.backend;
  if (spec.rfind("replay:", 0) == 0) {
    std::filesystem::path file = spec.substr(7);
    if (std::filesystem::is_directory(file)) file /= "advice.json";
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return "replay:" + support::sha256_hex(text.str()).substr(0, 16);
  }
  return spec.empty() ? "none" : spec;
}

}  // namespace agentcompile::advisor
