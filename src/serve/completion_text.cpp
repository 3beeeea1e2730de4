// Decoding, stop strings and log-probability alignment of one completion (see completion_text.h).
#include "serve/completion_text.h"

namespace agentcompile::serve {

CompletionText::CompletionText(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops)
    : decoder_(tokenizer, /*skip_special=*/true), filter_(std::move(stops)) {}

TextPiece CompletionText::push(int32_t token, std::optional<TokenLogprob> logprob) {
  TextPiece piece;
  if (filter_.stopped()) return piece;
  const std::string text = decoder_.push(token);
  if (logprob) pending_.push_back(Pending{std::move(*logprob), decoded_, decoded_ + text.size()});
  decoded_ += text.size();
  piece.text = filter_.push(text);
  released_ += piece.text.size();
  release_logprobs(piece, filter_.stopped());
  return piece;
}

TextPiece CompletionText::finish() {
  TextPiece piece;
  if (!filter_.stopped()) {
    const std::string tail = decoder_.finish();
    if (!pending_.empty() && pending_.back().end == decoded_) pending_.back().end += tail.size();
    decoded_ += tail.size();
    piece.text = filter_.push(tail);
    piece.text += filter_.flush();
    released_ += piece.text.size();
  }
  release_logprobs(piece, true);
  pending_.clear();
  return piece;
}

void CompletionText::release_logprobs(TextPiece& piece, bool stopped_now) {
  // Once the text has ended (a stop string, or the finish), a token counts if any of its text was
  // sent, or if it had no text and came before the cut.
  while (!pending_.empty()) {
    const Pending& next = pending_.front();
    const bool sent = stopped_now ? next.begin < released_ || (next.begin == next.end && next.begin <= released_)
                                  : next.end <= released_;
    if (!sent) break;
    piece.logprobs.push_back(next.logprob);
    pending_.pop_front();
  }
  if (stopped_now) pending_.clear();
}

}  // namespace agentcompile::serve
