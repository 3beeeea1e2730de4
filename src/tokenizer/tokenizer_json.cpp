// tokenizer.json + tokenizer_config.json -> TokenizerSpec.
//
// Accepted (what byte-level BPE files use): model BPE (merges as "a b" strings or [a, b] pairs,
// ignore_merges); normalizer null, NFC or a Sequence of NFC; pre-tokenizers Split (Regex or String
// pattern, Isolated or Removed), ByteLevel, Digits and Sequence; post-processors ByteLevel,
// TemplateProcessing and Sequence; decoder ByteLevel. The chat template comes from chat_template.jinja
// beside tokenizer.json when there is one, else from tokenizer_config.json. Anything else is refused with kUnsupported
// naming it, rather than tokenizing differently from Hugging Face.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer {

namespace {

using nlohmann::json;

Status bad(const std::string& source, const std::string& where, const std::string& what) {
  return error(ErrorCode::kParse, source + ": " + where + ": " + what);
}

Status unsupported(const std::string& source, const std::string& where, const std::string& what) {
  return error(ErrorCode::kUnsupported, source + ": " + where + ": " + what);
}

Expected<json> read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(ErrorCode::kNotFound, path.string() + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, path.string() + ": not valid JSON: " + e.what());
  }
}

bool flag(const json& object, const char* key, bool fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string type_of(const json& object) {
  auto it = object.find("type");
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A byte-level spelling as raw bytes; text outside the alphabet stands for its own UTF-8 bytes.
std::string bytes_of(const std::string& spelled) {
  if (!utf8::is_valid(spelled)) return spelled;
  auto bytes = byte_level::token_bytes(spelled);
  return bytes ? *bytes : spelled;
}

Status read_model(const json& root, const std::string& source, TokenizerSpec& spec) {
  auto model_it = root.find("model");
  if (model_it == root.end() || !model_it->is_object()) return bad(source, "model", "missing or not an object");
  const json& model = *model_it;
  const std::string type = type_of(model);
  if (!type.empty() && type != "BPE")
    return unsupported(source, "model.type", "'" + type + "' (only byte-level BPE is supported)");
  if (flag(model, "byte_fallback", false))
    return unsupported(source, "model.byte_fallback", "true (SentencePiece-style BPE is not supported)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && it->is_string() && !it->get<std::string>().empty())
      return unsupported(source, std::string("model.") + key, "'" + it->get<std::string>() + "' is not supported");
  }
  if (auto it = model.find("dropout"); it != model.end() && it->is_number() && it->get<double>() > 0)
    return unsupported(source, "model.dropout", "BPE dropout is not supported");
  spec.ignore_merges = flag(model, "ignore_merges", false);

  auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object())
    return bad(source, "model.vocab", "missing or not an object of token -> id");
  spec.vocab.reserve(vocab_it->size());
  for (auto it = vocab_it->begin(); it != vocab_it->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
      return bad(source, "model.vocab['" + it.key() + "']", "id must be a non-negative integer, got " + it.value().dump());
    spec.vocab.emplace(bytes_of(it.key()), static_cast<int32_t>(it.value().get<int64_t>()));
  }

  auto merges_it = model.find("merges");
  if (merges_it == model.end() || !merges_it->is_array()) return bad(source, "model.merges", "missing or not an array");
  spec.merges.reserve(merges_it->size());
  for (size_t i = 0; i < merges_it->size(); ++i) {
    const json& merge = (*merges_it)[i];
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    if (merge.is_string()) {  // "left right"
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
          text.find(' ', space + 1) != std::string::npos)
        return bad(source, where, "'" + text + "' is not two tokens separated by one space");
      spec.merges.emplace_back(bytes_of(text.substr(0, space)), bytes_of(text.substr(space + 1)));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      spec.merges.emplace_back(bytes_of(merge[0].get<std::string>()), bytes_of(merge[1].get<std::string>()));
    } else {
      return bad(source, where, "expected \"left right\" or [left, right], got " + merge.dump());
    }
  }
  return Status::ok();
}

Status read_normalizer(const json& normalizer, const std::string& source, const std::string& where,
                       TokenizerSpec& spec) {
  if (normalizer.is_null()) return Status::ok();
  const std::string type = type_of(normalizer);
  if (type == "NFC") {
    spec.nfc = true;
    return Status::ok();
  }
  if (type == "Sequence") {
    auto it = normalizer.find("normalizers");
    if (it == normalizer.end() || !it->is_array()) return bad(source, where + ".normalizers", "missing or not an array");
    for (size_t i = 0; i < it->size(); ++i)
      AC_TRY(read_normalizer((*it)[i], source, where + ".normalizers[" + std::to_string(i) + "]", spec));
    return Status::ok();
  }
  return unsupported(source, where, "normalizer '" + type + "' is not supported (supported: NFC, Sequence)");
}

std::string escaped_literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       static_cast<unsigned char>(c) >= 0x80 || c == ' ';
    if (!plain) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Status read_pre_tokenizer(const json& pre, const std::string& source, const std::string& where,
                          std::vector<PreTokenizerStep>& steps) {
  if (pre.is_null()) return Status::ok();
  const std::string type = type_of(pre);
  if (type == "Sequence") {
    auto it = pre.find("pretokenizers");
    if (it == pre.end() || !it->is_array()) return bad(source, where + ".pretokenizers", "missing or not an array");
    for (size_t i = 0; i < it->size(); ++i)
      AC_TRY(read_pre_tokenizer((*it)[i], source, where + ".pretokenizers[" + std::to_string(i) + "]", steps));
    return Status::ok();
  }
  if (type == "ByteLevel") {
    PreTokenizerStep step;
    step.add_prefix_space = flag(pre, "add_prefix_space", false);
    if (flag(pre, "use_regex", true)) step.pattern = std::string(kGpt2SplitPattern);
    steps.push_back(std::move(step));
    return Status::ok();
  }
  if (type == "Digits") {
    steps.push_back({flag(pre, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", SplitBehavior::kIsolated, false});
    return Status::ok();
  }
  if (type == "Split") {
    PreTokenizerStep step;
    auto pattern = pre.find("pattern");
    if (pattern == pre.end() || !pattern->is_object()) return bad(source, where + ".pattern", "missing or not an object");
    if (auto regex = pattern->find("Regex"); regex != pattern->end() && regex->is_string()) {
      step.pattern = regex->get<std::string>();
    } else if (auto literal = pattern->find("String"); literal != pattern->end() && literal->is_string()) {
      step.pattern = escaped_literal(literal->get<std::string>());
    } else {
      return bad(source, where + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}, got " + pattern->dump());
    }
    if (step.pattern.empty()) return bad(source, where + ".pattern", "is empty");
    const std::string behavior = pre.value("behavior", std::string("Isolated"));
    if (behavior == "Isolated") {
      step.behavior = SplitBehavior::kIsolated;
    } else if (behavior == "Removed") {
      step.behavior = SplitBehavior::kRemoved;
    } else {
      return unsupported(source, where + ".behavior", "'" + behavior + "' (supported: Isolated, Removed)");
    }
    if (flag(pre, "invert", false)) return unsupported(source, where + ".invert", "true is not supported");
    steps.push_back(std::move(step));
    return Status::ok();
  }
  return unsupported(source, where,
                     "pre-tokenizer '" + type + "' is not supported (supported: Split, ByteLevel, Digits, Sequence)");
}

// The id of a token written as text: an added token, or a vocabulary entry in byte-level spelling.
std::optional<int32_t> id_of(const TokenizerSpec& spec, const std::string& text) {
  for (const AddedToken& token : spec.added_tokens)
    if (token.content == text) return token.id;
  auto it = spec.vocab.find(bytes_of(text));
  if (it != spec.vocab.end()) return it->second;
  return std::nullopt;
}

Status read_post_processor(const json& post, const std::string& source, const std::string& where,
                           TokenizerSpec& spec) {
  if (post.is_null()) return Status::ok();
  const std::string type = type_of(post);
  if (type == "ByteLevel") return Status::ok();  // only adjusts offsets
  if (type == "Sequence") {
    auto it = post.find("processors");
    if (it == post.end() || !it->is_array()) return bad(source, where + ".processors", "missing or not an array");
    for (size_t i = 0; i < it->size(); ++i)
      AC_TRY(read_post_processor((*it)[i], source, where + ".processors[" + std::to_string(i) + "]", spec));
    return Status::ok();
  }
  if (type != "TemplateProcessing")
    return unsupported(source, where,
                       "post-processor '" + type + "' is not supported (supported: TemplateProcessing, ByteLevel)");
  auto single = post.find("single");
  if (single == post.end() || !single->is_array()) return bad(source, where + ".single", "missing or not an array");
  const json specials = post.value("special_tokens", json::object());
  bool after_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const json& item = (*single)[i];
    const std::string item_where = where + ".single[" + std::to_string(i) + "]";
    if (item.contains("Sequence")) {
      after_sequence = true;
      continue;
    }
    auto special = item.find("SpecialToken");
    if (special == item.end() || !special->is_object() || !special->contains("id") || !(*special)["id"].is_string())
      return bad(source, item_where, "expected {\"Sequence\": ...} or {\"SpecialToken\": {\"id\": ...}}");
    const std::string name = (*special)["id"].get<std::string>();
    std::vector<int32_t> ids;
    if (auto entry = specials.find(name); entry != specials.end() && entry->contains("ids") && (*entry)["ids"].is_array()) {
      for (const json& id : (*entry)["ids"]) {
        if (!id.is_number_integer()) return bad(source, where + ".special_tokens['" + name + "'].ids", "not integers");
        ids.push_back(id.get<int32_t>());
      }
    } else if (auto id = id_of(spec, name)) {
      ids.push_back(*id);
    } else {
      return bad(source, item_where, "special token '" + name + "' is neither in special_tokens nor a known token");
    }
    auto& target = after_sequence ? spec.suffix_ids : spec.prefix_ids;
    target.insert(target.end(), ids.begin(), ids.end());
  }
  return Status::ok();
}

Status check_decoder(const json& decoder, const std::string& source) {
  if (decoder.is_null()) return bad(source, "decoder", "missing (a byte-level BPE needs the ByteLevel decoder)");
  const std::string type = type_of(decoder);
  if (type == "ByteLevel") return Status::ok();
  if (type == "Sequence") {
    auto it = decoder.find("decoders");
    if (it != decoder.end() && it->is_array() && it->size() == 1) return check_decoder((*it)[0], source);
  }
  return unsupported(source, "decoder", "'" + type + "' is not supported (only ByteLevel: byte-level BPE tokenizers)");
}

Expected<AddedToken> read_added_token(const json& entry, const std::string& source, const std::string& where,
                                      std::optional<int32_t> id) {
  if (!entry.is_object()) return bad(source, where, "expected an object, got " + entry.dump());
  AddedToken token;
  if (!id) {
    auto it = entry.find("id");
    if (it == entry.end() || !it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      return bad(source, where + ".id", "missing or not a non-negative integer");
    id = it->get<int32_t>();
  }
  token.id = *id;
  auto content = entry.find("content");
  if (content == entry.end() || !content->is_string() || content->get<std::string>().empty())
    return bad(source, where + ".content", "missing, empty or not a string");
  token.content = content->get<std::string>();
  token.special = flag(entry, "special", false);
  token.lstrip = flag(entry, "lstrip", false);
  token.rstrip = flag(entry, "rstrip", false);
  token.single_word = flag(entry, "single_word", false);
  token.normalized = flag(entry, "normalized", !token.special);
  return token;
}

// Hugging Face does not take added-token ids from the file: loading adds the tokens in file order, each
// getting its vocabulary id when its text is a vocabulary entry and otherwise the next id past both the
// vocabulary and the added tokens so far (a differing id in the file only draws a warning). Files saved
// by Hugging Face agree with this; hand-edited ones may not, and we do what it does. A repeated text
// keeps its first entry.
void assign_added_token_ids(TokenizerSpec& spec, size_t model_vocab_entries) {
  std::vector<AddedToken> assigned;
  int64_t max_id = -1;
  for (AddedToken& token : spec.added_tokens) {
    bool duplicate = false;
    for (const AddedToken& earlier : assigned) duplicate |= earlier.content == token.content;
    if (duplicate) continue;
    std::optional<int32_t> id;
    if (utf8::is_valid(token.content)) {
      if (auto bytes = byte_level::token_bytes(token.content)) {
        if (auto it = spec.vocab.find(*bytes); it != spec.vocab.end()) id = it->second;
      }
    }
    if (!id) {
      const int64_t base = static_cast<int64_t>(model_vocab_entries);
      id = static_cast<int32_t>(max_id >= base ? max_id + 1 : base);
    }
    token.id = *id;
    max_id = std::max<int64_t>(max_id, *id);
    assigned.push_back(std::move(token));
  }
  spec.added_tokens = std::move(assigned);
}

// "bos_token": "<s>" or {"content": "<s>", ...} or null.
std::optional<std::string> token_text(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

Status read_config(const std::filesystem::path& path, TokenizerSpec& spec, std::string* eos_token) {
  AC_ASSIGN_OR_RETURN(json config, read_json(path));
  const std::string source = path.string();
  if (!config.is_object()) return bad(source, "top level", "expected an object");
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && it->is_object()) {
    for (auto entry = it->begin(); entry != it->end(); ++entry) {
      int64_t id = -1;
      try {
        id = std::stoll(entry.key());
      } catch (...) {
      }
      if (id < 0 || id > INT32_MAX) return bad(source, "added_tokens_decoder", "key '" + entry.key() + "' is not an id");
      AC_ASSIGN_OR_RETURN(AddedToken token, read_added_token(entry.value(), source,
                                                             "added_tokens_decoder['" + entry.key() + "']",
                                                             static_cast<int32_t>(id)));
      bool known = false;
      for (const AddedToken& existing : spec.added_tokens) known |= existing.id == id || existing.content == token.content;
      if (!known) spec.added_tokens.push_back(std::move(token));
    }
  }
  if (auto bos = token_text(config, "bos_token")) spec.bos_token = *bos;
  if (auto eos = token_text(config, "eos_token")) *eos_token = *eos;
  if (auto it = config.find("chat_template"); it != config.end()) {
    if (it->is_string()) {
      spec.chat_template = it->get<std::string>();
    } else if (it->is_array()) {  // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
      for (const json& named : *it)
        if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
            named["template"].is_string())
          spec.chat_template = named["template"].get<std::string>();
    } else if (!it->is_null()) {
      return bad(source, "chat_template", "expected a string or a list of named templates");
    }
  }
  return Status::ok();
}

}  // namespace

Expected<TokenizerSpec> read_tokenizer_json(const std::filesystem::path& file, const std::filesystem::path& config) {
  AC_ASSIGN_OR_RETURN(json root, read_json(file));
  TokenizerSpec spec;
  const std::string source = file.string();
  spec.source = source;
  if (!root.is_object()) return bad(source, "top level", "expected an object");
  AC_TRY(read_model(root, source, spec));
  if (auto it = root.find("added_tokens"); it != root.end() && !it->is_null()) {
    if (!it->is_array()) return bad(source, "added_tokens", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      AC_ASSIGN_OR_RETURN(AddedToken token,
                          read_added_token((*it)[i], source, "added_tokens[" + std::to_string(i) + "]", std::nullopt));
      spec.added_tokens.push_back(std::move(token));
    }
  }
  AC_TRY(read_normalizer(root.value("normalizer", json()), source, "normalizer", spec));
  AC_TRY(read_pre_tokenizer(root.value("pre_tokenizer", json()), source, "pre_tokenizer", spec.pre_tokenizer));
  AC_TRY(read_post_processor(root.value("post_processor", json()), source, "post_processor", spec));
  AC_TRY(check_decoder(root.value("decoder", json()), source));
  const size_t model_vocab_entries = root["model"]["vocab"].size();
  std::string eos_token;
  if (!config.empty()) {
    AC_TRY(read_config(config, spec, &eos_token));
    spec.source += " + " + config.filename().string();
  }
  assign_added_token_ids(spec, model_vocab_entries);
  // transformers 5 saves the template as chat_template.jinja beside tokenizer.json, and prefers it.
  const std::filesystem::path jinja = file.parent_path() / "chat_template.jinja";
  std::error_code ec;
  if (std::filesystem::is_regular_file(jinja, ec)) {
    std::ifstream in(jinja, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return error(ErrorCode::kIo, jinja.string() + ": cannot read");
    spec.chat_template = text.str();
  }
  if (!spec.bos_token.empty()) {
    spec.bos_id = id_of(spec, spec.bos_token);
    if (!spec.bos_id) return bad(config.string(), "bos_token", "'" + spec.bos_token + "' is not a token of the tokenizer");
  }
  if (!eos_token.empty()) {
    auto id = id_of(spec, eos_token);
    if (!id) return bad(config.string(), "eos_token", "'" + eos_token + "' is not a token of the tokenizer");
    spec.eos_ids.push_back(*id);
  }
  return spec;
}

}  // namespace agentcompile::tokenizer
