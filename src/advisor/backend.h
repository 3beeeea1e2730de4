// Advisor backends: one request in, the advice text out (or why there is none).
//
//   openai       Chat Completions (OpenAI, or any compatible server: vLLM, llama.cpp, Ollama) with
//                response_format json_schema = the request's schema
//   anthropic    Messages API with one tool whose input_schema is the request's schema, forced by
//                tool_choice {type: tool}
//   command:PROG a local program (run by /bin/sh -c): the prompt on stdin, the JSON on stdout; killed
//                (its whole process group) when it outlives the timeout; a crash is a failed exchange
//   replay:FILE  the exchanges recorded in an artifact's advice.json (FILE or DIR/advice.json)
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "advisor/request.h"
#include "advisor/secret.h"
#include "agentcompile/compiler.h"
#include "agentcompile/status.h"

namespace agentcompile::advisor {

struct Reply {
  bool ok = false;
  std::string text;   // the advice JSON the model wrote (not the API envelope)
  std::string error;  // why there is no reply; may contain server text: redact before recording
  int attempts = 0;
  bool unreachable = false;  // the backend cannot be reached at all (connection refused, no such program): asking again is pointless
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string kind() const = 0;      // "openai", "anthropic", "command", "replay"
  // Names whose answers these are: the cache's namespace and advice.json's "backend" (no secrets).
  virtual std::string identity() const = 0;
  virtual Reply ask(const Request& request, std::chrono::steady_clock::time_point deadline) = 0;
};

// The backend an options struct names; nullptr for "none". HTTP backends read their key from the
// environment (options.key_env, or OPENAI_API_KEY / ANTHROPIC_API_KEY).
Expected<std::unique_ptr<Backend>> make_backend(const AdvisorOptions& options);

// Every key a compile could come across (OPENAI_API_KEY, ANTHROPIC_API_KEY, options.key_env), for
// redaction: a command backend's program inherits the environment and might print one.
Secret known_keys(const AdvisorOptions& options);

// The artifact-key identity of a backend spec: its kind, the program of a command, the content hash
// of a replay file. Never a key or a URL.
std::string backend_fingerprint(const AdvisorOptions& options);

// Implementations (backend_http.cpp, backend_command.cpp, backend_replay.cpp).
std::unique_ptr<Backend> make_openai_backend(const AdvisorOptions& options, Secret key);
std::unique_ptr<Backend> make_anthropic_backend(const AdvisorOptions& options, Secret key);
std::unique_ptr<Backend> make_command_backend(const AdvisorOptions& options, const std::string& program);
Expected<std::unique_ptr<Backend>> make_replay_backend(const std::string& file);

// Runs `program` with /bin/sh -c, writes `input` to its stdin and collects stdout; kills its process
// group after `timeout_s`.
struct CommandResult {
  bool ok = false;         // exited with status 0 in time
  std::string out;         // stdout (at most kMaxCommandOutput bytes: a program that writes more is killed)
  std::string error;       // "exited with status 3: <stderr tail>", "killed by signal 11", "no answer within 2 s"
  bool not_found = false;  // the shell could not run the program (status 127); last, so {ok, out, error} still initializes
};
inline constexpr size_t kMaxCommandOutput = size_t{4} << 20;
CommandResult run_command(const std::string& program, const std::string& input, double timeout_s);

}  // namespace agentcompile::advisor
