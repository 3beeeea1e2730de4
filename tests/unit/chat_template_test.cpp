// Chat templates against transformers' apply_chat_template(..., tokenize=False) for Qwen3 (thinking on
// and off), Llama 3 and SmolLM2 (tests/fixtures/tokenizer/chat.json), template recognition, and
// generation_config.json / model-path discovery.
#include <unistd.h>

#include <filesystem>

#include "tokenizer/generation_config.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer_fixtures.h"

namespace agentcompile::tokenizer {
namespace {

using testing::ids_text;
using testing::read_fixture_json;
using testing::reference_tokenizer;

std::vector<ChatMessage> to_messages(const nlohmann::json& conversation) {
  std::vector<ChatMessage> messages;
  for (const auto& message : conversation)
    messages.push_back({message["role"].get<std::string>(), message["content"].get<std::string>()});
  return messages;
}

TEST(ChatTemplate, RendersLikeTransformers) {
  const auto fixture = read_fixture_json("chat.json");
  std::map<std::string, size_t> checked;
  for (const auto& c : fixture["cases"]) {
    const std::string name = c["tokenizer"].get<std::string>();
    std::string why;
    const Tokenizer* tokenizer = reference_tokenizer(name, &why);
    if (!tokenizer) {
      if (name == "smollm2" && why == testing::kSmolLM2Missing) continue;
      FAIL() << name << ": " << why;
    }
    const auto messages = to_messages(fixture["conversations"][c["conversation"].get<size_t>()]);
    ChatOptions options;
    options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    options.enable_thinking = c["enable_thinking"].is_null() || c["enable_thinking"].get<bool>();
    auto rendered = tokenizer->chat_template().render(messages, options);
    ASSERT_TRUE(rendered.has_value()) << rendered.status().to_string();
    const std::string want = c["text"].get<std::string>();
    EXPECT_EQ(*rendered, want) << name << " conversation " << c["conversation"] << " add_generation_prompt "
                               << options.add_generation_prompt << " enable_thinking " << c["enable_thinking"];
    const auto want_ids = c["ids"].get<std::vector<int32_t>>();
    const auto ids = tokenizer->encode(want, false);
    EXPECT_EQ(ids, want_ids) << name << ": " << ids_text(ids) << " vs " << ids_text(want_ids);
    ++checked[name];
  }
  for (const auto& [name, count] : checked) std::printf("%s: %zu renderings equal transformers'\n", name.c_str(), count);
  EXPECT_GE(checked["qwen3"], 40u);
  EXPECT_GE(checked["llama3"], 40u);
}

TEST(ChatTemplate, SmolLM2UsesItsDefaultSystemPrompt) {
  std::string why;
  const Tokenizer* tokenizer = reference_tokenizer("smollm2", &why);
  if (!tokenizer) GTEST_SKIP() << why;
  EXPECT_EQ(tokenizer->chat_template().default_system_prompt(),
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
}

TEST(ChatTemplate, RecognizesFamiliesAndRefusesTheRest) {
  EXPECT_EQ(ChatTemplate().render(std::vector<ChatMessage>{{"user", "hi"}}).status().code(), ErrorCode::kNotFound);
  const auto unknown = ChatTemplate::from_template_text("{% for m in messages %}[INST] {{ m.content }}{% endfor %}", "");
  EXPECT_EQ(unknown.family(), ChatFamily::kUnrecognized);
  auto refused = unknown.render(std::vector<ChatMessage>{{"user", "hi"}});
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("[INST]"), std::string::npos) << refused.status().message();
  const auto llama31 = ChatTemplate::from_template_text(
      "{{- bos_token }}{{- \"Cutting Knowledge Date: December 2023\\n\" }}<|start_header_id|>", "<|begin_of_text|>");
  EXPECT_EQ(llama31.family(), ChatFamily::kUnrecognized);
  const auto chatml = ChatTemplate::from_template_text(
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
      "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      "");
  EXPECT_EQ(chatml.family(), ChatFamily::kChatML);
  EXPECT_EQ(chatml.default_system_prompt(), "");
  auto plain = chatml.render(std::vector<ChatMessage>{{"user", "hi"}});
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(*plain, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chatml.render(std::vector<ChatMessage>{}).status().code(), ErrorCode::kInvalidArgument);
}

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("ac_chat_test_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ / name) << text; }

 private:
  std::filesystem::path path_;
};

TEST(GenerationConfig, ReadsSamplingDefaultsAndJoinsEosIds) {
  TempDir dir;
  dir.write("generation_config.json",
            R"({"bos_token_id": 151643, "eos_token_id": [151645, 151643], "do_sample": true, "temperature": 0.6,
                "top_k": 20, "top_p": 0.95, "repetition_penalty": 1.1, "max_new_tokens": 512})");
  dir.write("config.json", R"({"eos_token_id": 151645, "bos_token_id": 1, "model_type": "qwen3"})");
  auto config = read_generation_config(dir.path());
  ASSERT_TRUE(config.has_value()) << config.status().to_string();
  EXPECT_EQ(config->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(config->bos_token_id, 151643);
  EXPECT_TRUE(config->do_sample);
  EXPECT_DOUBLE_EQ(config->temperature, 0.6);
  EXPECT_EQ(config->top_k, 20);
  EXPECT_DOUBLE_EQ(config->top_p, 0.95);
  EXPECT_DOUBLE_EQ(config->repetition_penalty, 1.1);
  EXPECT_EQ(config->max_new_tokens, 512);
  EXPECT_FALSE(config->max_length.has_value());
}

TEST(GenerationConfig, MissingFileGivesDefaultsAndConfigEos) {
  TempDir dir;
  auto empty = read_generation_config(dir.path());
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->eos_token_ids.empty());
  EXPECT_FALSE(empty->do_sample);
  EXPECT_DOUBLE_EQ(empty->temperature, 1.0);
  EXPECT_EQ(empty->top_k, 50);
  dir.write("config.json", R"({"eos_token_id": [128001, 128008, 128009], "bos_token_id": 128000})");
  auto from_config = read_generation_config(dir.path());
  ASSERT_TRUE(from_config.has_value());
  EXPECT_EQ(from_config->eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_EQ(from_config->bos_token_id, 128000);
  std::string why;
  if (const Tokenizer* llama = reference_tokenizer("llama3", &why)) {
    EXPECT_EQ(stop_token_ids(*from_config, *llama), (std::vector<int32_t>{128001, 128008, 128009}));
    EXPECT_EQ(stop_token_ids(*empty, *llama), (std::vector<int32_t>{128001}));
  }
}

TEST(GenerationConfig, MalformedValuesNameFileAndKey) {
  TempDir dir;
  dir.write("generation_config.json", R"({"temperature": "hot"})");
  auto bad_type = read_generation_config(dir.path());
  ASSERT_FALSE(bad_type.has_value());
  EXPECT_NE(bad_type.status().message().find("temperature"), std::string::npos) << bad_type.status().message();
  EXPECT_NE(bad_type.status().message().find("generation_config.json"), std::string::npos);
  dir.write("generation_config.json", R"({"eos_token_id": [1, "two"]})");
  EXPECT_EQ(read_generation_config(dir.path()).status().code(), ErrorCode::kInvalidArgument);
  dir.write("generation_config.json", "{not json");
  EXPECT_EQ(read_generation_config(dir.path()).status().code(), ErrorCode::kParse);
}

TEST(TokenizerFiles, FindsTokenizerJsonOrGguf) {
  TempDir dir;
  EXPECT_EQ(locate_tokenizer(dir.path()).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(locate_tokenizer(dir.path() / "missing").status().code(), ErrorCode::kNotFound);
  dir.write("model.gguf", "GGUF");
  auto gguf = locate_tokenizer(dir.path());
  ASSERT_TRUE(gguf.has_value());
  EXPECT_EQ(gguf->kind, TokenizerFiles::Kind::kGguf);
  dir.write("other.gguf", "GGUF");
  EXPECT_EQ(locate_tokenizer(dir.path()).status().code(), ErrorCode::kInvalidArgument);
  dir.write("tokenizer.json", "{}");
  auto json = locate_tokenizer(dir.path());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(json->kind, TokenizerFiles::Kind::kTokenizerJson);
  EXPECT_TRUE(json->config.empty());
  dir.write("tokenizer_config.json", "{}");
  EXPECT_EQ(locate_tokenizer(dir.path())->config, dir.path() / "tokenizer_config.json");
  EXPECT_EQ(locate_tokenizer(dir.path() / "model.gguf")->kind, TokenizerFiles::Kind::kGguf);
}

}  // namespace
}  // namespace agentcompile::tokenizer
