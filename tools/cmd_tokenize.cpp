// `agentcompile tokenize MODEL (-p TEXT | -p - | --prompt-file FILE | --ids 1,2,3) [--chat] [--no-think] [--raw]`:
// encode text or decode ids with a model's tokenizer (an HF checkpoint directory with tokenizer.json, or a .gguf file).
// --chat renders TEXT as one user message through the model's chat template first. By default each token
// is listed with the text it stands for; --raw prints only the ids (comma-separated) or the decoded text.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "prompt.h"
#include "token_list.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace agentcompile::tools {

namespace {

struct TokenizeOptions {
  std::string model;
  PromptFlags prompt;
  std::string ids;
  bool chat = false;
  bool no_think = false;
  bool raw = false;
};

// A token's text for listing: its bytes with control characters and partial UTF-8 escaped.
std::string shown_token(const tokenizer::Tokenizer& tok, int32_t id) {
  const std::string_view bytes = tok.token_bytes(id);
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    const bool whole_character = length > 1 && i + length <= bytes.size() &&
                                 tokenizer::utf8::is_valid(bytes.substr(i, length));
    if (whole_character) {
      out.append(bytes.substr(i, length));
      i += length - 1;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", c);
      out += hex;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

void run_tokenize(const TokenizeOptions& options) {
  const std::string prompt = options.ids.empty() ? read_prompt(options.prompt) : std::string();
  auto tok = tokenizer::Tokenizer::from_model_path(options.model);
  if (!tok) fail(tok.status().to_string());

  if (!options.ids.empty()) {
    const std::string text = tok->decode(parse_token_list(options.ids, "--ids", tok->vocab_size()));
    if (options.raw) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::printf("%s\n", text.c_str());
    }
    return;
  }

  std::string text = prompt;
  bool add_special_tokens = true;
  if (options.chat) {
    tokenizer::ChatOptions chat;
    chat.enable_thinking = !options.no_think;
    text = render_chat(*tok, {{"user", prompt}}, chat, "encode the text without --chat to send it as is");
    add_special_tokens = false;  // the template writes them, as apply_chat_template(tokenize=True) assumes
  }
  const std::vector<int32_t> ids = tok->encode(text, add_special_tokens);
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) joined += (i ? "," : "") + std::to_string(ids[i]);
  if (options.raw) {
    std::printf("%s\n", joined.c_str());
    return;
  }
  if (options.chat) std::printf("prompt (%s template):\n%s\n", std::string(tokenizer::chat_family_name(tok->chat_template().family())).c_str(), text.c_str());
  std::printf("%zu tokens: %s\n", ids.size(), joined.c_str());
  for (int32_t id : ids)
    std::printf("  %8d  '%s'%s\n", id, shown_token(*tok, id).c_str(), tok->is_special(id) ? "  (special)" : "");
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Encode text or decode token ids with a model's tokenizer");
  auto options = std::make_shared<TokenizeOptions>();
  cmd->add_option("model", options->model, "HF checkpoint directory (tokenizer.json) or .gguf file")->required();
  add_prompt_flags(*cmd, options->prompt, "Text to encode");
  auto* ids = cmd->add_option("--ids", options->ids, "Comma-separated token ids to decode");
  ids->excludes(options->prompt.text_option)->excludes(options->prompt.file_option);
  auto* chat = cmd->add_flag("--chat", options->chat,
                             "Render the text as one user message through the chat template first");
  chat->excludes(ids);
  cmd->add_flag("--no-think", options->no_think, "With --chat: thinking off (Qwen3's empty think block)")->needs(chat);
  cmd->add_flag("--raw", options->raw, "Print only the ids, or only the decoded text");
  cmd->callback([options, ids] {
    if (!options->prompt.given() && ids->count() == 0) fail("tokenize: give -p TEXT or --prompt-file FILE to encode, or --ids 1,2,3 to decode");
    run_tokenize(*options);
  });
}

}  // namespace agentcompile::tools
