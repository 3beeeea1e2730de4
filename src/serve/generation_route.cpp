// POST /v1/chat/completions and /v1/completions: parse, tokenize, queue, then write the answer as the
// scheduler's events arrive, as server-sent events or as one JSON object (see http_server.h).
#include <memory>

#include "serve/http_server_impl.h"
#include "serve/make_job.h"
#include "serve/response.h"

namespace agentcompile::serve {

namespace {

// How often a waiting connection looks whether its client is still there; a slot is freed at most
// this long plus one step after its client left.
constexpr std::chrono::milliseconds kPoll{20};

// One answer being written: the scheduler's events in, chunks out.
struct Answer {
  Answer(Route route, const std::string& model, const tokenizer::Tokenizer& tokenizer, const ParsedRequest& request)
      : writer(route, model, tokenizer, request.sampling.logprobs, request.include_usage), streaming(request.stream) {}

  std::shared_ptr<GenerationStream> stream;
  ResponseWriter writer;
  bool streaming = false;
  bool started = false, finished = false;
  std::string text;                     // not streaming: the whole text so far
  std::vector<TokenLogprob> logprobs;   // not streaming: every entry so far
  std::string outcome;                  // for the log: tokens and finish reason, or the error
  std::string completion;               // for the log with --log-requests
};

// The chunks for `events`; marks the answer finished at its end.
std::string render(Answer& answer, std::vector<GenerationEvent>& events, bool log_text) {
  std::string out;
  for (GenerationEvent& event : events) {
    if (answer.finished) break;
    if (log_text) answer.completion += event.piece.text;
    switch (event.kind) {
      case GenerationEvent::Kind::kText:
        if (answer.streaming) {
          out += answer.writer.stream_piece(event.piece);
        } else {
          answer.text += event.piece.text;
          answer.logprobs.insert(answer.logprobs.end(), event.piece.logprobs.begin(), event.piece.logprobs.end());
        }
        break;
      case GenerationEvent::Kind::kDone:
        if (answer.streaming) {
          out += answer.writer.stream_end(event.piece, event.finish_reason, event.usage);
        } else {
          answer.text += event.piece.text;
          answer.logprobs.insert(answer.logprobs.end(), event.piece.logprobs.begin(), event.piece.logprobs.end());
          out = json_text(answer.writer.complete(answer.text, answer.logprobs, event.finish_reason, event.usage));
        }
        answer.outcome = std::to_string(event.usage.prompt_tokens) + " prompt + " + std::to_string(event.usage.completion_tokens) +
                         " completion tokens, " + event.finish_reason;
        answer.finished = true;
        break;
      case GenerationEvent::Kind::kError:
        out += answer.streaming ? answer.writer.stream_error(event.error) : json_text(event.error.to_json());
        answer.outcome = "error " + std::to_string(event.error.status) + ": " + event.error.message;
        answer.finished = true;
        break;
    }
  }
  return out;
}

}  // namespace

void HttpServer::Impl::generate(Route route, const httplib::Request& req, httplib::Response& res) {
  const uint64_t number = next_request++;
  if (options.log_requests) log("request " + std::to_string(number) + " body: " + req.body);
  ParsedRequest request;
  ParseOptions parse_options;
  parse_options.ignore_response_format = options.ignore_response_format;
  if (auto error = parse_request(route, req.body, parse_options, request)) return reply_error(res, *error);
  GenerationJob job;
  if (auto error = make_job(request, tokenizer, backend, options.max_tokens, job)) return reply_error(res, *error);
  // Counted in flight before it is queued, so a shutdown that starts meanwhile waits for it.
  {
    std::lock_guard lock(mutex);
    ++in_flight;
  }
  auto submitted = scheduler.submit(std::move(job));
  if (const ApiError* error = std::get_if<ApiError>(&submitted)) {
    std::lock_guard lock(mutex);
    --in_flight;
    idle.notify_all();
    return reply_error(res, *error);
  }
  auto answer = std::make_shared<Answer>(route, options.model_id, tokenizer, request);
  answer->stream = std::get<std::shared_ptr<GenerationStream>>(std::move(submitted));
  const bool log_text = options.log_requests;
  auto provide = [this, answer, log_text, number](size_t, httplib::DataSink& sink) {
    std::string out;
    if (answer->streaming && !answer->started) out = answer->writer.stream_start();
    answer->started = true;
    std::vector<GenerationEvent> events;
    answer->stream->wait(events, kPoll);
    out += render(*answer, events, log_text);
    // Looked at on every wake-up (a token or kPoll): a write into a socket whose peer has gone may
    // still succeed once, so writes alone would notice a step later.
    if (!sink.is_writable() || (!out.empty() && !sink.write(out.data(), out.size()))) {
      answer->stream->cancel();
      request_note.detail = "request " + std::to_string(number) + ": client went away";
      return false;
    }
    if (answer->finished) {
      request_note.detail = "request " + std::to_string(number) + ": " + answer->outcome;
      if (log_text) log("request " + std::to_string(number) + " completion: " + answer->completion);
      sink.done();
    }
    return true;
  };
  // Runs when the response is gone, written or not: a generation nobody will read is cancelled.
  auto release = [this, answer](bool) {
    if (!answer->finished) answer->stream->cancel();
    std::lock_guard lock(mutex);
    --in_flight;
    idle.notify_all();
  };
  if (request.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");  // proxies that buffer (nginx) pass events through at once
    res.set_chunked_content_provider("text/event-stream", std::move(provide), std::move(release));
  } else {
    res.set_chunked_content_provider("application/json", std::move(provide), std::move(release));
  }
}

}  // namespace agentcompile::serve
