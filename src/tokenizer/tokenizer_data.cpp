// TokenizerSpec -> TokenizerData: checks ids, compiles the regexes, builds the merge table and the
// per-id decode bytes.
#include "tokenizer/tokenizer_data.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer {

namespace {

// Ids index dense tables; a vocabulary this large would be a corrupt file, not a model.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

// What the ByteLevel decoder makes of a token's text: the bytes it spells, or its own bytes.
std::string decoded_bytes(const std::string& text) {
  if (!utf8::is_valid(text)) return text;
  auto bytes = byte_level::token_bytes(text);
  return bytes ? *bytes : text;
}

}  // namespace

Expected<std::shared_ptr<const TokenizerData>> build_tokenizer_data(TokenizerSpec spec) {
  auto data = std::make_shared<TokenizerData>();
  data->source = spec.source;
  const std::string& source = spec.source;

  int64_t max_id = -1;
  for (const auto& [bytes, id] : spec.vocab) max_id = std::max<int64_t>(max_id, id);
  for (const AddedToken& token : spec.added_tokens) max_id = std::max<int64_t>(max_id, token.id);
  if (max_id < 0) return error(ErrorCode::kParse, source + ": the vocabulary is empty");
  if (max_id > kMaxTokenId)
    return error(ErrorCode::kUnsupported, source + ": token id " + std::to_string(max_id) + " is implausibly large");
  const size_t size = static_cast<size_t>(max_id) + 1;

  std::vector<std::string> bytes_by_id(size);
  data->token_flags.assign(size, 0);
  for (const auto& [bytes, id] : spec.vocab) {
    if (data->token_flags[id]) continue;  // two spellings of one id: the first one decodes
    bytes_by_id[id] = bytes;
    data->token_flags[id] = TokenizerData::kKnownToken;
  }
  for (const AddedToken& token : spec.added_tokens) {
    // Hugging Face decodes an added token from its content, even where the vocabulary also has the id.
    bytes_by_id[token.id] = decoded_bytes(token.content);
    data->token_flags[token.id] = TokenizerData::kKnownToken | (token.special ? TokenizerData::kSpecialToken : 0);
    data->added_by_content.emplace(token.content, token.id);
  }
  data->token_offsets.reserve(size + 1);
  data->token_offsets.push_back(0);
  for (const std::string& bytes : bytes_by_id) {
    data->token_bytes += bytes;
    data->token_offsets.push_back(static_cast<uint32_t>(data->token_bytes.size()));
  }

  const auto check_id = [&](int32_t id, const char* what) -> Status {
    if (id < 0 || static_cast<size_t>(id) >= size || !data->token_flags[id])
      return error(ErrorCode::kParse, source + ": " + what + " id " + std::to_string(id) + " is not a token");
    return Status::ok();
  };
  for (int32_t id : spec.prefix_ids) AC_TRY(check_id(id, "post-processor"));
  for (int32_t id : spec.suffix_ids) AC_TRY(check_id(id, "post-processor"));
  for (int32_t id : spec.eos_ids) AC_TRY(check_id(id, "eos"));
  if (spec.bos_id) AC_TRY(check_id(*spec.bos_id, "bos"));

  if (spec.nfc) {
    for (AddedToken& token : spec.added_tokens)
      if (token.normalized && utf8::is_valid(token.content)) token.content = to_nfc(token.content);
  }
  data->raw_added = AddedTokenMatcher(spec.added_tokens, false);
  data->normalized_added = AddedTokenMatcher(spec.added_tokens, true);
  data->nfc = spec.nfc;
  data->prefix_ids = std::move(spec.prefix_ids);
  data->suffix_ids = std::move(spec.suffix_ids);
  data->bos_id = spec.bos_id;
  data->eos_ids = std::move(spec.eos_ids);

  auto pre_tokenizer = PreTokenizer::create(std::move(spec.pre_tokenizer));
  if (!pre_tokenizer) return pre_tokenizer.status().with_context(source + ": ");
  data->pre_tokenizer = std::move(*pre_tokenizer);
  AC_ASSIGN_OR_RETURN(data->bpe, BpeModel::create(std::move(spec.vocab), spec.merges, spec.ignore_merges, source));
  if (!spec.chat_template.empty())
    data->chat_template = ChatTemplate::from_template_text(std::move(spec.chat_template), std::move(spec.bos_token));
  return std::shared_ptr<const TokenizerData>(std::move(data));
}

}  // namespace agentcompile::tokenizer
