// Byte-level BPE tokenizers (Llama 3, Qwen2/3, GPT-2, SmolLM2), loaded from a Hugging Face tokenizer.json
// or from a GGUF file's tokenizer.ggml.* metadata, with the model's chat template.
//
// encode(): invalid UTF-8 is first repaired (utf8.h), then added tokens are cut out of the raw text, the
// rest is normalized (NFC where the tokenizer asks for it), pre-tokenized by regex and each piece is
// BPE-encoded (through a word cache); the post-processor's special tokens wrap the result when
// add_special_tokens is set. decode() joins the tokens' bytes and repairs invalid UTF-8 the same way.
// The results equal Hugging Face tokenizers' for the files we test (tests/unit/tokenizer_test.cpp).
//
// A Tokenizer is immutable and cheap to copy (the tables are shared); it may be used from several
// threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/status.h"
#include "tokenizer/chat_template.h"

namespace agentcompile::frontend {
struct GgufFile;
}

namespace agentcompile::tokenizer {

struct TokenizerData;
class WordCache;

class Tokenizer {
 public:
  // A directory holding tokenizer.json (and optionally tokenizer_config.json), a tokenizer.json file, or
  // a .gguf file; see locate_tokenizer().
  static Expected<Tokenizer> from_model_path(const std::filesystem::path& model);
  // `config`: tokenizer_config.json (chat template, bos/eos tokens, added tokens); empty to skip.
  static Expected<Tokenizer> from_tokenizer_json(const std::filesystem::path& file,
                                                 const std::filesystem::path& config = {});
  static Expected<Tokenizer> from_gguf(const std::filesystem::path& gguf);
  // From already parsed GGUF metadata; `source` names the file in messages.
  static Expected<Tokenizer> from_gguf_metadata(const frontend::GgufFile& gguf, const std::string& source);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Ids outside the vocabulary are skipped, as Hugging Face does.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  std::optional<int32_t> bos_id() const;
  // The tokens that end generation according to the tokenizer files (EOS, and a GGUF's EOT/EOM).
  std::vector<int32_t> eos_ids() const;
  // One past the largest token id (added tokens included).
  size_t vocab_size() const;
  const ChatTemplate& chat_template() const;

  // The raw bytes a token stands for (possibly part of a UTF-8 character); empty for unknown ids.
  std::string_view token_bytes(int32_t id) const;
  bool is_special(int32_t id) const;
  // The id of an added token or a vocabulary entry written as text ("<|im_end|>", "hello"), if any.
  std::optional<int32_t> token_id(std::string_view text) const;
  // Where the tokenizer came from, for messages.
  const std::string& source() const;

 private:
  Tokenizer(std::shared_ptr<const TokenizerData> data, std::shared_ptr<WordCache> cache);
  static Expected<Tokenizer> from_data(Expected<std::shared_ptr<const TokenizerData>> data);

  std::shared_ptr<const TokenizerData> data_;
  std::shared_ptr<WordCache> cache_;  // shared by copies; used by one encode() at a time
};

// Turns ids into text incrementally: push() returns only complete UTF-8 characters, holding back the
// start of a character whose remaining bytes may come with the next token; finish() flushes what is
// held (an incomplete character becomes U+FFFD). The concatenated output equals Tokenizer::decode()
// of all pushed ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  std::string finish();

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete character, at most 3
};

}  // namespace agentcompile::tokenizer
