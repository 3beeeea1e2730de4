// Loading tokenizers: GGUF metadata built from the Qwen3 and Llama 3 tokenizer.json files must encode
// exactly as those files do (the pre-tokenizer names qwen2 / llama-bpe), and malformed tokenizer.json or
// GGUF tokenizers fail with errors that name the file and key. Also the building blocks: UTF-8 repair
// (Python's errors='replace'), NFC against Python's unicodedata, the \s rewrite for PCRE2.
#include <unistd.h>

#include <filesystem>

#include "frontend/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer_fixtures.h"

namespace agentcompile::tokenizer {
namespace {

using testing::corpus;
using testing::ids_text;
using testing::read_fixture_json;
using testing::shown;

// Writes GGUF v3 bytes with metadata only (no tensors).
class GgufBuilder {
 public:
  void add_string(const std::string& key, const std::string& value) {
    key_header(key, 8);
    string(value);
  }
  void add_u32(const std::string& key, uint32_t value) {
    key_header(key, 4);
    scalar(value);
  }
  void add_bool(const std::string& key, bool value) {
    key_header(key, 7);
    body_.push_back(value ? 1 : 0);
  }
  void add_strings(const std::string& key, const std::vector<std::string>& values) {
    key_header(key, 9);
    scalar(uint32_t{8});
    scalar(uint64_t{values.size()});
    for (const auto& value : values) string(value);
  }
  void add_i32s(const std::string& key, const std::vector<int32_t>& values) {
    key_header(key, 9);
    scalar(uint32_t{5});
    scalar(uint64_t{values.size()});
    for (int32_t value : values) scalar(value);
  }
  Expected<frontend::GgufFile> parse() const {
    std::string bytes = "GGUF";
    append(bytes, uint32_t{3});
    append(bytes, uint64_t{0});
    append(bytes, uint64_t{count_});
    bytes += body_;
    while (bytes.size() % 32) bytes.push_back('\0');
    return frontend::parse_gguf(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "test.gguf");
  }

 private:
  template <typename T>
  static void append(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  template <typename T>
  void scalar(T value) {
    append(body_, value);
  }
  void string(const std::string& value) {
    scalar(uint64_t{value.size()});
    body_ += value;
  }
  void key_header(const std::string& key, uint32_t type) {
    ++count_;
    string(key);
    scalar(type);
  }
  std::string body_;
  uint64_t count_ = 0;
};

// The GGUF llama.cpp's converter would write for a tokenizer.json: tokens by id, merges as "a b", token
// types (3 for special added tokens, 4 for other added tokens), the pre-tokenizer's name.
GgufBuilder gguf_from_tokenizer_json(const std::string& name, const std::string& pre, bool add_bos) {
  std::ifstream in(testing::kTokenizerFixtures + "/" + name + "/tokenizer.json", std::ios::binary);
  const auto json = nlohmann::json::parse(in);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  const auto put = [&](size_t id, const std::string& text, int32_t type) {
    if (tokens.size() <= id) {
      tokens.resize(id + 1);
      types.resize(id + 1, 1);
    }
    tokens[id] = text;
    types[id] = type;
  };
  for (const auto& [text, id] : json["model"]["vocab"].items()) put(id.get<size_t>(), text, 1);
  for (const auto& token : json["added_tokens"])
    put(token["id"].get<size_t>(), token["content"].get<std::string>(), token["special"].get<bool>() ? 3 : 4);
  std::vector<std::string> merges;
  for (const auto& merge : json["model"]["merges"])
    merges.push_back(merge.is_string() ? merge.get<std::string>()
                                       : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
  GgufBuilder gguf;
  gguf.add_string("general.architecture", "llama");
  gguf.add_string("tokenizer.ggml.model", "gpt2");
  gguf.add_string("tokenizer.ggml.pre", pre);
  gguf.add_strings("tokenizer.ggml.tokens", tokens);
  gguf.add_i32s("tokenizer.ggml.token_type", types);
  gguf.add_strings("tokenizer.ggml.merges", merges);
  if (name == "llama3") gguf.add_u32("tokenizer.ggml.bos_token_id", 128000);
  gguf.add_u32("tokenizer.ggml.eos_token_id", name == "llama3" ? 128001 : 151645);
  gguf.add_bool("tokenizer.ggml.add_bos_token", add_bos);
  return gguf;
}

class GgufFromTokenizerJson : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(GgufFromTokenizerJson, EncodesLikeTheTokenizerJson) {
  const auto& [name, pre] = GetParam();
  auto metadata = gguf_from_tokenizer_json(name, pre, false).parse();
  ASSERT_TRUE(metadata.has_value()) << metadata.status().to_string();
  auto tokenizer = Tokenizer::from_gguf_metadata(*metadata, name + ".gguf");
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.status().to_string();
  const auto expected = read_fixture_json("expected_" + name + ".json");
  size_t mismatches = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    const auto want = expected["encode"][i].get<std::vector<int32_t>>();
    const auto got = tokenizer->encode(corpus()[i].bytes, false);
    if (got != want && ++mismatches <= 5)
      ADD_FAILURE() << name << " case " << i << " " << shown(corpus()[i].bytes) << "\n  got  " << ids_text(got)
                    << "\n  want " << ids_text(want);
    if (tokenizer->decode(got) != expected["decode"][i].get<std::string>() && ++mismatches <= 5)
      ADD_FAILURE() << name << " case " << i << " decodes differently";
  }
  EXPECT_EQ(mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufFromTokenizerJson,
                         ::testing::Values(std::make_pair(std::string("qwen3"), std::string("qwen2")),
                                           std::make_pair(std::string("llama3"), std::string("llama-bpe"))),
                         [](const auto& info) { return info.param.first; });

TEST(GgufTokenizer, AddBosTokenPrependsBos) {
  auto metadata = gguf_from_tokenizer_json("llama3", "llama-bpe", true).parse();
  ASSERT_TRUE(metadata.has_value()) << metadata.status().to_string();
  auto tokenizer = Tokenizer::from_gguf_metadata(*metadata, "llama3.gguf");
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.status().to_string();
  const auto plain = tokenizer->encode("Hello world", false);
  auto with_bos = plain;
  with_bos.insert(with_bos.begin(), 128000);
  EXPECT_EQ(tokenizer->encode("Hello world", true), with_bos);
  EXPECT_EQ(tokenizer->bos_id(), 128000);
}

// A GGUF tokenizer of the 256 bytes and two merges ("h e", "he y"), to break one piece at a time.
GgufBuilder tiny_gguf(const std::string& skip_key = "") {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_level::spell(std::string(1, static_cast<char>(b))));
  tokens.push_back("he");
  tokens.push_back("hey");
  GgufBuilder gguf;
  if (skip_key != "tokenizer.ggml.model") gguf.add_string("tokenizer.ggml.model", "gpt2");
  if (skip_key != "tokenizer.ggml.tokens") gguf.add_strings("tokenizer.ggml.tokens", tokens);
  if (skip_key != "tokenizer.ggml.merges") gguf.add_strings("tokenizer.ggml.merges", {"h e", "he y"});
  if (skip_key != "tokenizer.ggml.pre") gguf.add_string("tokenizer.ggml.pre", "gpt-2");
  return gguf;
}

Status load_gguf(const GgufBuilder& builder) {
  auto metadata = builder.parse();
  if (!metadata) return metadata.status();
  auto tokenizer = Tokenizer::from_gguf_metadata(*metadata, "test.gguf");
  return tokenizer ? Status::ok() : tokenizer.status();
}

void expect_error(const Status& status, ErrorCode code, const std::vector<std::string>& mentions) {
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), code) << status.to_string();
  for (const auto& mention : mentions)
    EXPECT_NE(status.message().find(mention), std::string::npos) << "'" << mention << "' not in: " << status.message();
}

TEST(GgufTokenizer, TinyVocabularyEncodes) {
  auto metadata = tiny_gguf().parse();
  ASSERT_TRUE(metadata.has_value());
  auto tokenizer = Tokenizer::from_gguf_metadata(*metadata, "tiny.gguf");
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.status().to_string();
  EXPECT_EQ(tokenizer->encode("hey he h"), (std::vector<int32_t>{257, 32, 256, 32, 104}));
}

TEST(GgufTokenizer, MalformedMetadataIsNamed) {
  expect_error(load_gguf(tiny_gguf("tokenizer.ggml.model")), ErrorCode::kNotFound, {"test.gguf", "tokenizer.ggml.model"});
  expect_error(load_gguf(tiny_gguf("tokenizer.ggml.merges")), ErrorCode::kNotFound, {"tokenizer.ggml.merges"});
  {
    GgufBuilder gguf = tiny_gguf();
    gguf.add_string("tokenizer.ggml.model", "llama");  // a second, conflicting key is a parse error in GGUF
    EXPECT_FALSE(load_gguf(gguf).is_ok());
  }
  {
    GgufBuilder gguf = tiny_gguf("tokenizer.ggml.model");
    gguf.add_string("tokenizer.ggml.model", "llama");
    expect_error(load_gguf(gguf), ErrorCode::kUnsupported, {"'llama'", "gpt2"});
  }
  {
    GgufBuilder gguf = tiny_gguf("tokenizer.ggml.tokens");
    gguf.add_i32s("tokenizer.ggml.tokens", {1, 2, 3});
    expect_error(load_gguf(gguf), ErrorCode::kParse, {"tokenizer.ggml.tokens", "array of strings"});
  }
  {
    GgufBuilder gguf = tiny_gguf("tokenizer.ggml.merges");
    gguf.add_strings("tokenizer.ggml.merges", {"h e", "x yz"});
    expect_error(load_gguf(gguf), ErrorCode::kParse, {"merge 1", "'x yz'", "not in the vocabulary"});
  }
  {
    GgufBuilder gguf = tiny_gguf("tokenizer.ggml.merges");
    gguf.add_strings("tokenizer.ggml.merges", {"he"});
    expect_error(load_gguf(gguf), ErrorCode::kParse, {"tokenizer.ggml.merges", "entry 0"});
  }
  {
    GgufBuilder gguf = tiny_gguf("tokenizer.ggml.pre");
    gguf.add_string("tokenizer.ggml.pre", "tekken");
    expect_error(load_gguf(gguf), ErrorCode::kUnsupported, {"'tekken'", "llama-bpe"});
  }
  {
    GgufBuilder gguf = tiny_gguf();
    gguf.add_i32s("tokenizer.ggml.token_type", {1, 1});
    expect_error(load_gguf(gguf), ErrorCode::kParse, {"tokenizer.ggml.token_type", "258"});
  }
  {
    GgufBuilder gguf = tiny_gguf();
    gguf.add_u32("tokenizer.ggml.bos_token_id", 9999);
    expect_error(load_gguf(gguf), ErrorCode::kParse, {"tokenizer.ggml.bos_token_id", "9999"});
  }
  {
    std::vector<std::string> tokens;
    for (int b = 0; b < 120; ++b) tokens.push_back(byte_level::spell(std::string(1, static_cast<char>(b))));
    GgufBuilder gguf = tiny_gguf("tokenizer.ggml.tokens");
    gguf.add_strings("tokenizer.ggml.tokens", tokens);
    expect_error(load_gguf(gguf), ErrorCode::kParse, {"only 120 of the 256 bytes"});
  }
  expect_error(Tokenizer::from_gguf("/nonexistent/model.gguf").status(), ErrorCode::kNotFound, {"/nonexistent/model.gguf"});
}

// tokenizer.json files written to a temporary directory.
class TokenizerJsonFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ac_tokenizer_json_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nlohmann::json tiny() {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byte_level::spell(std::string(1, static_cast<char>(b)))] = b;
    vocab["he"] = 256;
    vocab["hey"] = 257;
    return {{"version", "1.0"},
            {"added_tokens", nlohmann::json::array({{{"id", 258}, {"content", "<eos>"}, {"special", true}}})},
            {"normalizer", nullptr},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "he y"}}}}};
  }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  Status load(const nlohmann::json& json) const {
    auto tokenizer = Tokenizer::from_tokenizer_json(write("tokenizer.json", json.dump()));
    return tokenizer ? Status::ok() : tokenizer.status();
  }

  std::filesystem::path dir_;
};

TEST_F(TokenizerJsonFiles, TinyTokenizerEncodes) {
  auto tokenizer = Tokenizer::from_tokenizer_json(write("tokenizer.json", tiny().dump()));
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.status().to_string();
  EXPECT_EQ(tokenizer->encode("hey<eos> he"), (std::vector<int32_t>{257, 258, 32, 256}));
  EXPECT_EQ(tokenizer->decode(std::vector<int32_t>{257, 258, 32, 256}, true), "hey he");
}

// Hugging Face drops a byte the vocabulary has no token for (there is no unk token to stand for it).
TEST_F(TokenizerJsonFiles, BytesWithoutTokensAreDropped) {
  auto json = tiny();
  json["model"]["vocab"].erase(byte_level::spell("\x7f"));
  auto tokenizer = Tokenizer::from_tokenizer_json(write("tokenizer.json", json.dump()));
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.status().to_string();
  EXPECT_EQ(tokenizer->encode("h\x7f" "ey"), (std::vector<int32_t>{104, 101, 121}));
  EXPECT_EQ(tokenizer->encode("\x7f"), (std::vector<int32_t>{}));
}

TEST_F(TokenizerJsonFiles, MalformedFilesAreNamed) {
  expect_error(Tokenizer::from_tokenizer_json(write("broken.json", "{\"model\": ")).status(), ErrorCode::kParse,
               {"broken.json", "not valid JSON"});
  expect_error(Tokenizer::from_tokenizer_json(dir_ / "absent.json").status(), ErrorCode::kNotFound, {"absent.json"});
  auto json = tiny();
  json["model"]["type"] = "WordPiece";
  expect_error(load(json), ErrorCode::kUnsupported, {"tokenizer.json", "model.type", "WordPiece"});
  json = tiny();
  json["model"]["merges"] = {"h e", "q zz"};
  expect_error(load(json), ErrorCode::kParse, {"merge 1", "'zz'"});
  json = tiny();
  json["model"]["merges"] = {"h e", "hey"};
  expect_error(load(json), ErrorCode::kParse, {"model.merges[1]"});
  json = tiny();
  json["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error(load(json), ErrorCode::kInvalidArgument, {"(unclosed", "does not compile"});
  json = tiny();
  json["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_error(load(json), ErrorCode::kUnsupported, {"pre_tokenizer", "Metaspace"});
  json = tiny();
  json["normalizer"] = {{"type", "Lowercase"}};
  expect_error(load(json), ErrorCode::kUnsupported, {"normalizer", "Lowercase"});
  json = tiny();
  json["decoder"] = nullptr;
  expect_error(load(json), ErrorCode::kParse, {"decoder"});
  json = tiny();
  json["added_tokens"][0]["id"] = "258";
  expect_error(load(json), ErrorCode::kParse, {"added_tokens[0].id"});
  json = tiny();
  json["model"]["vocab"]["he"] = -3;
  expect_error(load(json), ErrorCode::kParse, {"model.vocab['he']"});
}

TEST_F(TokenizerJsonFiles, ConfigTokensMustExist) {
  const auto file = write("tokenizer.json", tiny().dump());
  const auto config = write("tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": "<eos>"})");
  expect_error(Tokenizer::from_tokenizer_json(file, config).status(), ErrorCode::kParse, {"bos_token", "'<s>'"});
  write("tokenizer_config.json", R"({"eos_token": {"content": "<eos>"}, "chat_template": 42})");
  expect_error(Tokenizer::from_tokenizer_json(file, config).status(), ErrorCode::kParse, {"chat_template"});
  write("tokenizer_config.json", R"({"eos_token": {"content": "<eos>"}})");
  auto tokenizer = Tokenizer::from_tokenizer_json(file, config);
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.status().to_string();
  EXPECT_EQ(tokenizer->eos_ids(), std::vector<int32_t>{258});
}

TEST_F(TokenizerJsonFiles, ChatTemplateJinjaFileWins) {
  const auto file = write("tokenizer.json", tiny().dump());
  const auto config = write("tokenizer_config.json", R"({"chat_template": "{{ '<|start_header_id|>' }}"})");
  auto from_config = Tokenizer::from_tokenizer_json(file, config);
  ASSERT_TRUE(from_config.has_value()) << from_config.status().to_string();
  EXPECT_EQ(from_config->chat_template().family(), ChatFamily::kLlama3);
  write("chat_template.jinja", "{% for m in messages %}{{ '<|im_start|>' + m.role }}{% endfor %}");
  auto from_jinja = Tokenizer::from_tokenizer_json(file, config);
  ASSERT_TRUE(from_jinja.has_value()) << from_jinja.status().to_string();
  EXPECT_EQ(from_jinja->chat_template().family(), ChatFamily::kChatML);
}

TEST(Utf8Repair, FollowsPythonReplaceRule) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"abc", "abc"},
      {"\x80", "\xEF\xBF\xBD"},
      {"\xE0\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // overlong: each byte alone
      {"\xF0\x9F\x98", "\xEF\xBF\xBD"},                          // truncated: one replacement
      {"\xF0\x9F\x98" "A", "\xEF\xBF\xBD" "A"},
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // surrogate
      {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"\xC3\xA9\xC3", "\xC3\xA9\xEF\xBF\xBD"},
      {"\xE4\xB8\xE4\xB8\xAD", "\xEF\xBF\xBD\xE4\xB8\xAD"},
  };
  for (const auto& [input, want] : cases) EXPECT_EQ(utf8::repaired(input), want) << shown(input);
  std::string out;
  EXPECT_EQ(utf8::append_repaired(out, "ab\xE4\xB8", false), 2u);  // the partial character is held back
  EXPECT_EQ(out, "ab");
}

TEST(Nfc, MatchesPythonUnicodedata) {
  const auto fixture = read_fixture_json("nfc.json");
  size_t mismatches = 0;
  for (const auto& entry : fixture["cases"]) {
    const std::string input = entry[0].get<std::string>();
    const std::string want = entry[1].get<std::string>();
    if (to_nfc(input) != want && ++mismatches <= 10) ADD_FAILURE() << shown(input) << " -> " << shown(to_nfc(input));
    if (is_nfc_quick(input) && input != want && ++mismatches <= 10) ADD_FAILURE() << "quick check passed " << shown(input);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << fixture["cases"].size();
  EXPECT_GT(fixture["cases"].size(), 1000u);
}

TEST(PreTokenizer, WhiteSpaceRewriteKeepsTheRestOfThePattern) {
  const std::string rewritten = with_oniguruma_white_space(R"(\s+(?!\S)|[^\s\p{L}]|\\s|[\]\s])");
  EXPECT_EQ(rewritten.find(R"(\s)"), rewritten.find(R"(\\s)") + 1);  // only the escaped backslash's remains
  EXPECT_NE(rewritten.find(R"([^\t\n)"), std::string::npos);
  EXPECT_NE(rewritten.find(R"((?![^\t\n)"), std::string::npos);
  EXPECT_NE(rewritten.find(R"(\p{L}])"), std::string::npos);
  EXPECT_NE(rewritten.find(R"([\]\t\n)"), std::string::npos);
}

}  // namespace
}  // namespace agentcompile::tokenizer
