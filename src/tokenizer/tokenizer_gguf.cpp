// GGUF tokenizer.ggml.* metadata -> TokenizerSpec, for byte-level BPE files (tokenizer.ggml.model "gpt2").
//
// A GGUF keeps no pre-tokenizer, only its name (tokenizer.ggml.pre, as llama.cpp's converter chose it
// from the original tokenizer.json). We map each name to the pipeline of the tokenizer.json it stands for:
//   llama-bpe & co.  Llama 3's split regex, and ignore_merges (a word in the vocabulary is one token;
//                    Llama 3's tokenizer.json says so and llama.cpp does it; a GGUF has no key for it)
//   qwen2 & co.      Qwen2's split regex, and NFC (Qwen's tokenizer.json normalizes; llama.cpp does not)
//   smollm & co.     every digit alone, then GPT-2's regex (SmolLM's tokenizer.json: Digits + ByteLevel;
//                    llama.cpp agrees; transformers 5.23's GGUF loader falls back to GPT-2's regex alone,
//                    which differs where white space precedes a digit)
//   gpt-2, default   GPT-2's regex
// Tokens typed CONTROL (3) become special added tokens and USER_DEFINED (4) plain added tokens, both
// matched whole in the text, as transformers does; CONTROL tokens outside the byte-level alphabet are
// left out, as transformers does (they are llama.cpp mislabels). tokenizer.ggml.add_bos_token /
// add_eos_token decide what add_special_tokens adds.
#include <algorithm>
#include <string_view>

#include "frontend/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer {

namespace {

using frontend::GgufArray;
using frontend::GgufFile;
using frontend::GgufType;
using frontend::GgufValue;

constexpr int64_t kTokenTypeControl = 3;
constexpr int64_t kTokenTypeUserDefined = 4;

struct PreTokenizerFamily {
  std::string_view name;
  std::vector<PreTokenizerStep> steps;
  bool nfc = false;
  bool ignore_merges = false;
};

std::vector<PreTokenizerStep> split_then_bytes(std::string_view pattern) {
  return {PreTokenizerStep{std::string(pattern), SplitBehavior::kIsolated, false}};
}

std::optional<PreTokenizerFamily> pre_tokenizer_family(std::string_view pre) {
  for (std::string_view name : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "dbrx", "smaug-bpe"})
    if (pre == name) return PreTokenizerFamily{name, split_then_bytes(kLlama3SplitPattern), false, true};
  for (std::string_view name : {"qwen2", "deepseek-r1-qwen", "megrez"})
    if (pre == name) return PreTokenizerFamily{name, split_then_bytes(kQwen2SplitPattern), true};
  for (std::string_view name : {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone"}) {
    if (pre == name) {
      std::vector<PreTokenizerStep> steps = {{R"(\p{N})", SplitBehavior::kIsolated, false},
                                             {std::string(kGpt2SplitPattern), SplitBehavior::kIsolated, false}};
      return PreTokenizerFamily{name, std::move(steps), false};
    }
  }
  for (std::string_view name : {"gpt-2", "gpt2", "default", "mpt", "olmo", "jais"})
    if (pre == name) return PreTokenizerFamily{name, split_then_bytes(kGpt2SplitPattern), false};
  return std::nullopt;
}

Status bad(const std::string& source, const std::string& key, const std::string& what) {
  return error(ErrorCode::kParse, source + ": metadata '" + key + "' " + what);
}

Expected<const GgufArray*> string_array(const GgufFile& gguf, const std::string& source, const std::string& key,
                                        bool required) {
  const GgufValue* value = gguf.find(key);
  if (!value) {
    if (required) return error(ErrorCode::kNotFound, source + ": metadata '" + key + "' is missing");
    return static_cast<const GgufArray*>(nullptr);
  }
  const GgufArray* array = value->as_array();
  if (!array || array->element_type != GgufType::kString)
    return bad(source, key, "must be an array of strings, got " + value->to_string());
  return array;
}

Expected<std::optional<int32_t>> token_id(const GgufFile& gguf, const std::string& source, const std::string& key,
                                          size_t vocab_size) {
  const GgufValue* value = gguf.find(key);
  if (!value) return std::optional<int32_t>();
  const auto id = value->as_int();
  if (!id) return bad(source, key, "must be an integer, got " + value->to_string());
  if (*id < 0 || static_cast<uint64_t>(*id) >= vocab_size)
    return bad(source, key, "is " + std::to_string(*id) + ", outside the vocabulary of " + std::to_string(vocab_size));
  return std::optional<int32_t>(static_cast<int32_t>(*id));
}

bool bool_value(const GgufFile& gguf, const std::string& key, bool fallback) {
  const GgufValue* value = gguf.find(key);
  if (!value) return fallback;
  if (const bool* b = std::get_if<bool>(&value->data)) return *b;
  if (auto i = value->as_int()) return *i != 0;
  return fallback;
}

// A token as raw bytes: its byte-level spelling decoded, or its own bytes when not spelled that way.
std::string bytes_of(const std::string& token, bool* in_alphabet) {
  std::optional<std::string> bytes;
  if (utf8::is_valid(token)) bytes = byte_level::token_bytes(token);
  *in_alphabet = bytes.has_value();
  return bytes ? *bytes : token;
}

}  // namespace

Expected<TokenizerSpec> read_gguf_tokenizer(const GgufFile& gguf, const std::string& source) {
  const GgufValue* model = gguf.find("tokenizer.ggml.model");
  if (!model) return error(ErrorCode::kNotFound, source + ": metadata 'tokenizer.ggml.model' is missing (no tokenizer)");
  const std::string* model_name = model->as_string();
  if (!model_name) return bad(source, "tokenizer.ggml.model", "must be a string, got " + model->to_string());
  if (*model_name != "gpt2")
    return error(ErrorCode::kUnsupported, source + ": tokenizer.ggml.model '" + *model_name +
                                              "' is not supported (only 'gpt2', byte-level BPE)");

  TokenizerSpec spec;
  spec.source = source;
  AC_ASSIGN_OR_RETURN(const GgufArray* tokens, string_array(gguf, source, "tokenizer.ggml.tokens", true));
  AC_ASSIGN_OR_RETURN(const GgufArray* merges, string_array(gguf, source, "tokenizer.ggml.merges", true));
  if (tokens->strings.empty()) return bad(source, "tokenizer.ggml.tokens", "is empty");
  if (tokens->strings.size() > INT32_MAX) return bad(source, "tokenizer.ggml.tokens", "has too many entries");
  const size_t vocab_size = tokens->strings.size();

  const GgufArray* types = nullptr;
  if (const GgufValue* value = gguf.find("tokenizer.ggml.token_type")) {
    types = value->as_array();
    if (!types || types->size != vocab_size || types->element_type == GgufType::kString ||
        types->element_type == GgufType::kArray)
      return bad(source, "tokenizer.ggml.token_type",
                 "must be an integer array as long as tokenizer.ggml.tokens (" + std::to_string(vocab_size) +
                     "), got " + value->to_string());
  }

  std::string pre_name = "default";
  if (const GgufValue* value = gguf.find("tokenizer.ggml.pre")) {
    if (!value->as_string()) return bad(source, "tokenizer.ggml.pre", "must be a string, got " + value->to_string());
    pre_name = *value->as_string();
  }
  auto family = pre_tokenizer_family(pre_name);
  if (!family)
    return error(ErrorCode::kUnsupported,
                 source + ": tokenizer.ggml.pre '" + pre_name +
                     "' is not a pre-tokenizer we know (known: llama-bpe, qwen2, smollm, gpt-2 and their aliases)");
  spec.pre_tokenizer = std::move(family->steps);
  spec.nfc = family->nfc;
  spec.ignore_merges = family->ignore_merges;

  spec.vocab.reserve(vocab_size);
  for (size_t id = 0; id < vocab_size; ++id) {
    const std::string& token = tokens->strings[id];
    bool in_alphabet = false;
    spec.vocab.emplace(bytes_of(token, &in_alphabet), static_cast<int32_t>(id));
    const int64_t type = types ? types->int_at(id).value_or(1) : 1;
    if (type == kTokenTypeControl && in_alphabet && !token.empty()) {
      spec.added_tokens.push_back({token, static_cast<int32_t>(id), true, false, false, false, false});
    } else if (type == kTokenTypeUserDefined && in_alphabet && !token.empty()) {
      spec.added_tokens.push_back({token, static_cast<int32_t>(id), false, false, false, false, false});
    }
  }

  spec.merges.reserve(merges->strings.size());
  for (size_t i = 0; i < merges->strings.size(); ++i) {
    const std::string& text = merges->strings[i];
    const size_t space = text.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
        text.find(' ', space + 1) != std::string::npos)
      return bad(source, "tokenizer.ggml.merges",
                 "entry " + std::to_string(i) + " '" + text + "' is not two tokens separated by one space");
    bool ignored = false;
    spec.merges.emplace_back(bytes_of(text.substr(0, space), &ignored), bytes_of(text.substr(space + 1), &ignored));
  }

  AC_ASSIGN_OR_RETURN(spec.bos_id, token_id(gguf, source, "tokenizer.ggml.bos_token_id", vocab_size));
  if (spec.bos_id) spec.bos_token = tokens->strings[*spec.bos_id];
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    AC_ASSIGN_OR_RETURN(std::optional<int32_t> id, token_id(gguf, source, key, vocab_size));
    if (id && std::find(spec.eos_ids.begin(), spec.eos_ids.end(), *id) == spec.eos_ids.end()) spec.eos_ids.push_back(*id);
  }
  if (bool_value(gguf, "tokenizer.ggml.add_bos_token", false)) {
    if (!spec.bos_id) return bad(source, "tokenizer.ggml.add_bos_token", "is true but there is no bos_token_id");
    spec.prefix_ids.push_back(*spec.bos_id);
  }
  if (bool_value(gguf, "tokenizer.ggml.add_eos_token", false)) {
    if (spec.eos_ids.empty()) return bad(source, "tokenizer.ggml.add_eos_token", "is true but there is no eos_token_id");
    spec.suffix_ids.push_back(spec.eos_ids.front());
  }
  if (const GgufValue* value = gguf.find("tokenizer.chat_template")) {
    if (!value->as_string()) return bad(source, "tokenizer.chat_template", "must be a string, got " + value->to_string());
    spec.chat_template = *value->as_string();
  }
  return spec;
}

}  // namespace agentcompile::tokenizer
