// Tokenizer: loading, encode, decode; StreamDecoder.
#include "tokenizer/tokenizer.h"

#include "frontend/gguf.h"
#include "tokenizer/nfc.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

namespace agentcompile::tokenizer {

namespace {

// Pre-tokenizes normalized text and BPE-encodes each piece, through the cache when we hold it.
void encode_pieces(const TokenizerData& data, std::string_view text, std::vector<int32_t>& out, WordCache* cache) {
  BpeModel::Scratch scratch;
  const auto encode_word = [&](std::string_view word) {
    if (cache && cache->find(word, out)) return;
    const size_t start = out.size();
    data.bpe.encode_word(word, out, scratch);
    if (cache) cache->insert(word, std::span<const int32_t>(out).subspan(start));
  };
  if (data.pre_tokenizer.empty()) {
    if (!text.empty()) encode_word(text);
    return;
  }
  data.pre_tokenizer.split(text, encode_word);
}

// Text between raw added tokens: normalize, cut out the normalized added tokens, encode the rest.
void encode_segment(const TokenizerData& data, std::string_view text, std::vector<int32_t>& out, WordCache* cache) {
  std::string normalized;
  if (data.nfc && !is_nfc_quick(text)) {
    normalized = to_nfc(text);
    text = normalized;
  }
  if (data.normalized_added.empty()) {
    encode_pieces(data, text, out, cache);
    return;
  }
  std::vector<AddedTokenMatcher::Segment> segments;
  data.normalized_added.split(text, segments);
  for (const auto& segment : segments) {
    if (segment.id >= 0) {
      out.push_back(segment.id);
    } else {
      encode_pieces(data, text.substr(segment.begin, segment.end - segment.begin), out, cache);
    }
  }
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerData> data, std::shared_ptr<WordCache> cache)
    : data_(std::move(data)), cache_(std::move(cache)) {}

Expected<Tokenizer> Tokenizer::from_data(Expected<std::shared_ptr<const TokenizerData>> data) {
  if (!data) return data.status();
  return Tokenizer(std::move(*data), std::make_shared<WordCache>());
}

Expected<Tokenizer> Tokenizer::from_tokenizer_json(const std::filesystem::path& file,
                                                   const std::filesystem::path& config) {
  AC_ASSIGN_OR_RETURN(TokenizerSpec spec, read_tokenizer_json(file, config));
  return from_data(build_tokenizer_data(std::move(spec)));
}

Expected<Tokenizer> Tokenizer::from_gguf_metadata(const frontend::GgufFile& gguf, const std::string& source) {
  AC_ASSIGN_OR_RETURN(TokenizerSpec spec, read_gguf_tokenizer(gguf, source));
  return from_data(build_tokenizer_data(std::move(spec)));
}

Expected<Tokenizer> Tokenizer::from_gguf(const std::filesystem::path& gguf) {
  AC_ASSIGN_OR_RETURN(auto file, frontend::GgufModelFile::open(gguf));
  return from_gguf_metadata(file->gguf(), gguf.string());
}

Expected<Tokenizer> Tokenizer::from_model_path(const std::filesystem::path& model) {
  AC_ASSIGN_OR_RETURN(TokenizerFiles files, locate_tokenizer(model));
  if (files.kind == TokenizerFiles::Kind::kGguf) return from_gguf(files.file);
  return from_tokenizer_json(files.file, files.config);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const TokenizerData& data = *data_;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + data.prefix_ids.size() + data.suffix_ids.size() + 1);
  if (add_special_tokens) ids = data.prefix_ids;

  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::repaired(text);
    text = repaired;
  }
  std::unique_lock<std::mutex> lock(cache_->mutex, std::try_to_lock);
  WordCache* cache = lock.owns_lock() ? cache_.get() : nullptr;
  if (data.raw_added.empty()) {
    encode_segment(data, text, ids, cache);
  } else {
    std::vector<AddedTokenMatcher::Segment> segments;
    data.raw_added.split(text, segments);
    for (const auto& segment : segments) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
      } else {
        encode_segment(data, text.substr(segment.begin, segment.end - segment.begin), ids, cache);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), data.suffix_ids.begin(), data.suffix_ids.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    bytes += token_bytes(id);
  }
  if (utf8::is_valid(bytes)) return bytes;
  return utf8::repaired(bytes);
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  const TokenizerData& data = *data_;
  if (id < 0 || static_cast<size_t>(id) >= data.token_flags.size()) return {};
  return std::string_view(data.token_bytes).substr(data.token_offsets[id], data.token_offsets[id + 1] - data.token_offsets[id]);
}

bool Tokenizer::is_special(int32_t id) const {
  const TokenizerData& data = *data_;
  return id >= 0 && static_cast<size_t>(id) < data.token_flags.size() &&
         (data.token_flags[id] & TokenizerData::kSpecialToken);
}

std::optional<int32_t> Tokenizer::token_id(std::string_view text) const {
  if (auto it = data_->added_by_content.find(text); it != data_->added_by_content.end()) return it->second;
  if (auto it = data_->bpe.vocab().find(text); it != data_->bpe.vocab().end()) return it->second;
  return std::nullopt;
}

std::optional<int32_t> Tokenizer::bos_id() const { return data_->bos_id; }
std::vector<int32_t> Tokenizer::eos_ids() const { return data_->eos_ids; }
size_t Tokenizer::vocab_size() const { return data_->token_flags.size(); }
const ChatTemplate& Tokenizer::chat_template() const { return data_->chat_template; }
const std::string& Tokenizer::source() const { return data_->source; }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
  std::string out;
  if (skip_special_ && tokenizer_.is_special(id)) return out;
  pending_ += tokenizer_.token_bytes(id);
  const size_t consumed = utf8::append_repaired(out, pending_, false);
  pending_.erase(0, consumed);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  utf8::append_repaired(out, pending_, true);
  pending_.clear();
  return out;
}

}  // namespace agentcompile::tokenizer
