// One completion's text as it is generated: tokens through the stream decoder (whole UTF-8 characters
// only, special tokens skipped), then through the stop-string filter, with each token's log-probability
// released together with its text.
//
// A token's log-probability goes out with the piece that releases the end of its text, so an entry
// never precedes its token's text. When a stop string cuts the text, the tokens whose text begins
// before the cut are reported and the rest are not (their text is never sent).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "serve/sampling.h"
#include "serve/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::serve {

struct TextPiece {
  std::string text;
  std::vector<TokenLogprob> logprobs;

  bool empty() const { return text.empty() && logprobs.empty(); }
};

class CompletionText {
 public:
  CompletionText(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops);

  // Appends a generated token (never an end-of-sequence one); returns what may be sent now.
  TextPiece push(int32_t token, std::optional<TokenLogprob> logprob = std::nullopt);
  // Whether a stop string has ended the text (the caller stops generating).
  bool stopped() const { return filter_.stopped(); }
  // At the end of generation: what the decoder and the filter held back.
  TextPiece finish();

 private:
  struct Pending {
    TokenLogprob logprob;
    size_t begin = 0, end = 0;  // the token's text in the decoded stream
  };
  // Moves entries whose text ends at or before `released_` into `piece`.
  void release_logprobs(TextPiece& piece, bool stopped_now);

  tokenizer::StreamDecoder decoder_;
  StopStringFilter filter_;
  size_t decoded_ = 0;   // bytes out of the decoder so far
  size_t released_ = 0;  // bytes of those released by the filter
  std::deque<Pending> pending_;
};

}  // namespace agentcompile::serve
