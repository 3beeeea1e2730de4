// `agentcompile serve MODEL [--cpu] [--host H] [--port P] [--max-concurrency N] [--api-key-env VAR] ...`:
// an OpenAI-compatible HTTP server (src/serve/): /v1/chat/completions, /v1/completions, /v1/models,
// /health, /metrics and a chat page at /.
//
// On the GPU it runs the compiled engine (compiled on first use, like `run`), which today decodes ONE
// sequence at a time: concurrent requests queue and are answered one after another (batched decode is
// the next step of issue 25). --cpu serves from the reference interpreter instead (fp32, several
// sequences interleaved step by step): slow, but it needs no GPU, which is how the server is tested.
//
// SIGTERM or SIGINT: new requests get a 503, the ones in flight finish (or, after --drain-timeout,
// end with an error event), then the process exits 0.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "commands.h"
#include "engine_flags.h"
#include "tensor_parallel_run.h"
#include "agentcompile/first_use.h"
#include "frontend/model_source.h"
#include "serve/cpu_backend.h"
#include "serve/engine_backend.h"
#include "serve/engine_batch_backend.h"
#include "serve/http_server.h"
#include "serve/scheduler.h"
#include "tokenizer/generation_config.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::tools {

namespace {

struct ServeFlags {
  EngineFlags engine;
  bool cpu = false;
  std::string host = "127.0.0.1";
  int port = 8080;
  int64_t max_concurrency = 0;  // 0: 4 on the CPU, 1 on the GPU
  int64_t max_queue = 64;
  int64_t max_tokens = 0;
  std::string api_key_env, model_id;
  bool log_requests = false, ignore_response_format = false;
  int threads = 0;
  int connections = 256;
  int drain_timeout = 30;
};

void log_line(const std::string& line) {
  std::fprintf(stderr, "serve: %s\n", line.c_str());
  std::fflush(stderr);
}

std::string default_model_id(const std::string& model) {
  std::filesystem::path path(model);
  while (path.has_parent_path() && path.filename().empty()) path = path.parent_path();  // "dir/" -> "dir"
  return path.extension() == ".gguf" ? path.stem().string() : path.filename().string();
}

std::unique_ptr<serve::Backend> open_backend(const ServeFlags& flags) {
  if (flags.cpu) {
    if (flags.engine.tensor_parallel > 1)
      fail("--tensor-parallel " + std::to_string(flags.engine.tensor_parallel) + " splits the model over GPUs; --cpu serves it whole");
    auto source = frontend::open_model(flags.engine.model, /*with_weights=*/false);
    if (!source) fail(source.status().to_string());
    serve::CpuBackendOptions options;
    options.model = flags.engine.model;
    options.max_context = flags.engine.max_context > 0 ? flags.engine.max_context
                                                       : std::min<int64_t>(2048, source->config.max_position_embeddings);
    options.max_sequences = flags.max_concurrency > 0 ? flags.max_concurrency : 4;
    if (flags.engine.prefill_chunk > 0) options.prefill_chunk = flags.engine.prefill_chunk;
    options.threads = flags.threads;
    log_line("loading " + flags.engine.model + " on the CPU (reference interpreter, fp32)");
    auto backend = serve::CpuBackend::open(options);
    if (!backend) fail(backend.status().to_string());
    return std::move(*backend);
  }
  if (flags.engine.tensor_parallel > 1) {
    // One sequence at a time over the ranks (batched decode is planned for one GPU so far).
    if (flags.max_concurrency > 1)
      fail("--tensor-parallel " + std::to_string(flags.engine.tensor_parallel) + " serves one sequence at a time so far: --max-concurrency 1");
    std::shared_ptr<RankEngines> ranks = RankEngines::load_or_fail(flags.engine, /*quiet=*/false);
    serve::SequenceEngine engine;
    engine.info = ranks->info();
    engine.info.gpu = ranks->gpu();
    engine.generate = [raw = ranks.get()](std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token) {
      return raw->generate(prompt, options, on_token);
    };
    engine.owner = std::move(ranks);
    return std::make_unique<serve::EngineBackend>(std::move(engine));
  }
  if (flags.max_concurrency > 1) {
    // Batched decode: decode_batch compiled (on first use) beside prefill and decode, a KV slot per sequence.
    if (flags.max_concurrency > kMaxBatchRows)
      fail("--max-concurrency " + std::to_string(flags.max_concurrency) + ": the GPU engine batches at most " + std::to_string(kMaxBatchRows) +
           " sequences; more requests queue (--max-queue)");
    EngineOptions options = engine_options(flags.engine);
    options.batch_slots = flags.max_concurrency;
    options.compile.batch_decode = true;
    auto engine = load_engine(options, [](const std::string& line) { log_line(line); });
    if (!engine) fail(engine.status().to_string());
    return std::make_unique<serve::EngineBatchBackend>(std::move(*engine));
  }
  return std::make_unique<serve::EngineBackend>(load_engine_or_fail(flags.engine));
}

void run_serve(const ServeFlags& flags) {
  // Signals are taken by one thread with sigwait: blocked here, before any thread exists, so every
  // thread (the interpreter's pool, the scheduler, connections) inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not the end of the process

  serve::ServerOptions options;
  options.host = flags.host;
  options.port = flags.port;
  options.model_id = flags.model_id.empty() ? default_model_id(flags.engine.model) : flags.model_id;
  options.log_requests = flags.log_requests;
  options.ignore_response_format = flags.ignore_response_format;
  options.max_tokens = flags.max_tokens;
  options.connection_threads = flags.connections;
  options.drain_timeout = std::chrono::seconds(flags.drain_timeout);
  options.log = log_line;
  if (!flags.api_key_env.empty()) {
    const char* key = std::getenv(flags.api_key_env.c_str());
    if (!key || !*key) fail("--api-key-env " + flags.api_key_env + ": the variable is not set or empty");
    options.api_key = key;
  }

  auto text = tokenizer::Tokenizer::from_model_path(flags.engine.model);
  if (!text) fail(text.status().to_string());
  auto generation_config = tokenizer::read_generation_config(flags.engine.model);
  if (!generation_config) fail(generation_config.status().to_string());
  std::vector<int32_t> eos = tokenizer::stop_token_ids(*generation_config, *text);
  if (eos.empty()) fail(flags.engine.model + ": the model names no end-of-sequence token; a server could not tell where an answer ends");

  std::unique_ptr<serve::Backend> backend = open_backend(flags);
  serve::Metrics metrics;
  serve::SchedulerOptions scheduler_options;
  scheduler_options.max_running = backend->info().max_sequences;
  scheduler_options.max_queue = flags.max_queue;
  serve::Scheduler scheduler(*backend, *text, eos, scheduler_options, metrics);
  serve::HttpServer server(options, scheduler, backend->info(), *text, metrics);
  if (Status status = server.bind(); !status) fail(status.to_string());

  std::atomic<bool> served{false};
  std::thread signal_thread([&] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (served) return;  // woken by the main thread after the listener failed
    log_line(std::string("received ") + (signal_number == SIGTERM ? "SIGTERM" : "SIGINT"));
    server.shutdown();
  });
  log_line("serving " + options.model_id + " on http://" + flags.host + ":" + std::to_string(server.port()) + " (backend: " +
           backend->info().name + ", " + std::to_string(backend->info().max_sequences) + " sequences at once, queue " +
           std::to_string(flags.max_queue) + ", context " + std::to_string(backend->info().max_context) + ")");
  log_line("listening on http://" + flags.host + ":" + std::to_string(server.port()));
  Status served_status = server.serve();
  served = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);  // a no-op wake-up when the signal thread already returned
  signal_thread.join();
  if (!served_status) fail(served_status.to_string());
  log_line("stopped");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, /v1/models, /health, /metrics, "
      "a chat page at /). On the GPU the engine decodes one sequence at a time today: concurrent requests queue. --cpu serves "
      "from the reference interpreter (fp32, for tests; context 2048 unless --max-context)");
  auto flags = std::make_shared<ServeFlags>();
  add_engine_flags(*cmd, flags->engine);
  auto* cpu = cmd->add_flag("--cpu", flags->cpu, "Serve from the CPU reference interpreter (no GPU; every request field honoured)");
  cmd->add_option("--host", flags->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", flags->port, "Port to listen on; 0 picks a free one (default 8080)")->check(CLI::Range(0, 65535));
  cmd->add_option("--max-concurrency", flags->max_concurrency,
                  "Sequences generated at once (default 4 with --cpu, 1 on the GPU; 2..16 on the GPU batch them through decode_batch)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  cmd->add_option("--max-queue", flags->max_queue, "Requests that may wait for a free sequence; more get a 429 (default 64)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--max-tokens", flags->max_tokens,
                  "Most tokens one request may generate: the default for requests without max_tokens, a 400 for those asking more "
                  "(default: up to the end of the context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--api-key-env", flags->api_key_env, "Environment variable holding the API key clients must send as a bearer token");
  cmd->add_option("--model-id", flags->model_id, "Model name in /v1/models and in answers (default: the model's file or directory name)");
  cmd->add_flag("--log-requests", flags->log_requests, "Also log request bodies (prompts) and completions; never the API key");
  cmd->add_flag("--ignore-response-format", flags->ignore_response_format,
                "Accept response_format json_object/json_schema without enforcing it (this server has no constrained decoding)");
  cmd->add_option("--threads", flags->threads, "CPU threads with --cpu (default: every core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--connections", flags->connections, "Connections served at once, idle ones included (default 256)")
      ->check(CLI::Range(4, 65536));
  cmd->add_option("--drain-timeout", flags->drain_timeout,
                  "Seconds a SIGTERM waits for generations in flight before ending them with an error (default 30)")
      ->check(CLI::Range(0, 86400));
  for (const char* gpu_only : {"--artifact", "--cache-dir", "--no-cuda-graph", "--no-pdl", "--unfused", "--cublas-matmuls", "--no-tf32", "--max-candidates",
                               "--quantize", "--dequantize"})
    cpu->excludes(cmd->get_option(gpu_only));
  cmd->callback([flags] { run_serve(*flags); });
}

}  // namespace agentcompile::tools
