// The CLI's own inputs (issue 23): an unknown subcommand names the valid ones; an empty prompt says
// so; prompts come from a file (--prompt-file) or stdin (-p -) for every subcommand that takes one,
// past the 128 KiB a single argument may have; run, reference and tokenize --chat treat the chat
// template alike: applied when the model has one, an error pointing at --raw when it has none; a
// prompt longer than the context and token ids outside the vocabulary are refused up front.
#include <gtest/gtest.h>

#include "bad_input_fixtures.h"

namespace agentcompile {
namespace {

using namespace testing::bad_input;
using testing::CommandRun;

// tiny-qwen3's checkpoint with the tiny byte-level tokenizer (ids below its vocabulary of 512).
fs::path model_with_tokenizer(const fs::path& dir, bool chat_template) {
  checkpoint_copy("tiny-qwen3", dir);
  write_tiny_tokenizer(dir, chat_template);
  return dir;
}

TEST(CliInput, AnUnknownSubcommandListsTheValidOnes) {
  const CommandRun run = cli("frobnicate");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_TRUE(contains(run.output, "unknown subcommand 'frobnicate'")) << run.output;
  for (const char* valid : {"inspect", "init-random", "reference", "compile", "run", "bench", "tokenize", "run-function", "capture"})
    EXPECT_TRUE(contains(run.output, valid)) << valid << "\n" << run.output;
}

TEST(CliInput, AnEmptyPromptSaysSo) {
  const fs::path model = model_with_tokenizer(work_dir("empty-prompt") / "model", true);
  const fs::path empty = model.parent_path() / "empty.txt";
  write_text(empty, "");
  for (const std::string& args : {"reference " + model.string() + " -p \"\"", "run " + model.string() + " -p \"\"",
                                  "tokenize " + model.string() + " -p \"\"", "reference " + model.string() + " --prompt-file " + empty.string()}) {
    const CommandRun run = cli(args);
    EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "the prompt is empty")) << args << "\n" << run.output;
  }
}

TEST(CliInput, PromptsComeFromAFileOrStdin) {
  const fs::path work = work_dir("prompt-file");
  const fs::path model = model_with_tokenizer(work / "model", true);
  // 200 KiB: more than one argument may hold (MAX_ARG_STRLEN, 128 KiB).
  const std::string long_prompt(200 * 1024, 'a');
  write_text(work / "long.txt", long_prompt);
  CommandRun run = cli("tokenize " + model.string() + " --prompt-file " + (work / "long.txt").string());
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 2000);
  EXPECT_TRUE(contains(run.output, "204800 tokens:")) << run.output.substr(0, 2000);

  run = testing::run_command("printf 'hi' | " + std::string(AC_CLI) + " tokenize " + model.string() + " -p - --raw");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "104,105\n");

  write_text(work / "short.txt", "hi");
  const CommandRun from_file = cli("reference " + model.string() + " --prompt-file " + (work / "short.txt").string() + " -n 3");
  const CommandRun from_stdin =
      testing::run_command("printf 'hi' | " + std::string(AC_CLI) + " reference " + model.string() + " -p - -n 3");
  const CommandRun from_argv = cli("reference " + model.string() + " -p hi -n 3");
  EXPECT_EQ(from_argv.exit_code, 0) << from_argv.output;
  EXPECT_EQ(from_file.exit_code, 0) << from_file.output;
  EXPECT_EQ(from_stdin.exit_code, 0) << from_stdin.output;
  const std::string first_line = from_argv.output.substr(0, from_argv.output.find('\n'));
  EXPECT_EQ(from_file.output.substr(0, from_file.output.find('\n')), first_line);
  EXPECT_EQ(from_stdin.output.substr(0, from_stdin.output.find('\n')), first_line);

  const CommandRun both = cli("tokenize " + model.string() + " -p hi --prompt-file " + (work / "short.txt").string());
  EXPECT_GT(both.exit_code, 0) << both.output;
  EXPECT_TRUE(contains(both.output, "--prompt excludes --prompt-file")) << both.output;
  const CommandRun missing = cli("tokenize " + model.string() + " --prompt-file " + (work / "absent.txt").string());
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_TRUE(contains(missing.output, "absent.txt")) << missing.output;
}

TEST(CliInput, TheChatTemplateIsAppliedAlikeEverywhere) {
  const fs::path work = work_dir("chat-template");
  // With a template: reference renders the same prompt tokenize --chat shows.
  const fs::path chat = model_with_tokenizer(work / "chat", true);
  const CommandRun tokens = cli("tokenize " + chat.string() + " -p hi --chat --raw");
  ASSERT_EQ(tokens.exit_code, 0) << tokens.output;
  const size_t count = static_cast<size_t>(std::count(tokens.output.begin(), tokens.output.end(), ',')) + 1;
  EXPECT_EQ(count, 21u) << tokens.output;  // <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n
  const CommandRun reference = cli("reference " + chat.string() + " -p hi -n 2");
  EXPECT_EQ(reference.exit_code, 0) << reference.output;
  EXPECT_TRUE(contains(reference.output, std::to_string(count) + " prompt + 2 new tokens")) << reference.output;

  // Without one: every subcommand that would apply it says so, and how to send the text as is.
  const fs::path plain = model_with_tokenizer(work / "plain", false);
  for (const auto& [args, hint] : {std::pair{"reference " + plain.string() + " -p hi -n 2", "--raw"}, {"run " + plain.string() + " -p hi", "--raw"},
                                   {"tokenize " + plain.string() + " -p hi --chat", "without --chat"}}) {
    const CommandRun run = cli(args);
    EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "has no chat template")) << args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, hint)) << args << "\n" << run.output;
  }
  const CommandRun raw = cli("reference " + plain.string() + " -p hi -n 2 --raw");
  EXPECT_EQ(raw.exit_code, 0) << raw.output;
  EXPECT_TRUE(contains(raw.output, "2 prompt + 2 new tokens")) << raw.output;
}

// A prompt the model cannot hold is refused with the sizes named, by reference and by run before it
// loads an engine (so also where no GPU is present); a prompt read from a file alike.
TEST(CliInput, PromptsLongerThanTheContextAreRefused) {
  const fs::path work = work_dir("long-prompt");
  const fs::path model = model_with_tokenizer(work / "model", true);
  std::string ids = "1";
  for (int i = 0; i < 300; ++i) ids += ",5";
  write_text(work / "long.txt", std::string(300, 'a'));  // 300 byte tokens, more in the template
  for (const auto& [args, message] :
       {std::pair{"run " + model.string() + " --tokens " + ids, "the prompt has 301 tokens, longer than the model's context of 256"},
        {"run " + model.string() + " --prompt-file " + (work / "long.txt").string(), "longer than the model's context of 256"},
        {"reference " + model.string() + " --prompt-file " + (work / "long.txt").string() + " -n 2", "exceeds the model's context of 256"},
        {"run " + model.string() + " --tokens 1,2,3,4,5,6,7,8 -n 4 --max-context 10",
         "8 prompt tokens + 4 new tokens need 11 cache rows, more than --max-context 10"}}) {
    const CommandRun run = cli(args);
    EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, message)) << args << "\n" << run.output;
  }
}

// Token ids are checked against the model's vocabulary before anything runs, and an empty --tokens
// says it is empty.
TEST(CliInput, TokenIdsAreCheckedWhereTheyAreGiven) {
  const fs::path model = kFixtures / "models" / "tiny-llama";
  CommandRun run = cli("reference " + model.string() + " --tokens 1,999999,3 -n 2");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "--tokens: 999999 is not a token id of this vocabulary (ids 0..511)")) << run.output;
  run = cli("run " + model.string() + " --tokens 1,999999,3 -n 2");  // before the engine, so also without a GPU
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "token id 999999 of the prompt is outside the model's vocabulary (ids 0..511)")) << run.output;
  for (const std::string& command : {"reference", "run"}) {
    run = cli(command + " " + model.string() + " --tokens \"\"");
    EXPECT_EQ(run.exit_code, 1) << command << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "--tokens: no token ids given")) << command << "\n" << run.output;
  }
}

// Sampling settings are finite numbers in range (CLI11's ranges let NaN through; a NaN temperature
// sampled garbage), refused before anything loads.
TEST(CliInput, SamplingSettingsAreFiniteNumbersInRange) {
  const fs::path model = kFixtures / "models" / "tiny-llama";
  for (const auto& [flag, message] : {std::pair{"--temperature nan", "--temperature: 'nan' is not a number >= 0"},
                                      {"--temperature -0.5", "--temperature: '-0.5' is not a number >= 0"},
                                      {"--top-p 0", "--top-p: '0' is not a number in (0, 1]"},
                                      {"--repetition-penalty nan", "--repetition-penalty: 'nan' is not a number > 0"}}) {
    const CommandRun run = cli("run " + model.string() + " --tokens 1,2 " + flag);
    EXPECT_NE(run.exit_code, 0) << flag << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, message)) << flag << "\n" << run.output;
  }
}

}  // namespace
}  // namespace agentcompile
