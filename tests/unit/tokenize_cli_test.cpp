// `agentcompile tokenize`: encode, decode, chat rendering and the error paths, through the built CLI.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include "command_runner.h"

namespace {

using CliRun = agentcompile::testing::CommandRun;
using agentcompile::testing::run_cli;

const std::string kQwen3 = std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3";
const std::string kLlama3 = std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/llama3";

TEST(TokenizeCli, EncodesAndDecodes) {
  CliRun encode = run_cli("tokenize " + kQwen3 + " -p 'Hello, world!' --raw");
  EXPECT_EQ(encode.exit_code, 0) << encode.output;
  EXPECT_EQ(encode.output, "9707,11,1879,0\n");
  CliRun listed = run_cli("tokenize " + kQwen3 + " -p 'Hello, world!'");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("4 tokens: 9707,11,1879,0"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("' world'"), std::string::npos) << listed.output;
  CliRun decode = run_cli("tokenize " + kQwen3 + " --ids 9707,11,1879,0,151645 --raw");
  EXPECT_EQ(decode.exit_code, 0) << decode.output;
  EXPECT_EQ(decode.output, "Hello, world!<|im_end|>");
}

TEST(TokenizeCli, RendersChatTemplates) {
  CliRun qwen = run_cli("tokenize " + kQwen3 + " -p Hi --chat --no-think --raw");
  EXPECT_EQ(qwen.exit_code, 0) << qwen.output;
  // <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n
  EXPECT_EQ(qwen.output, "151644,872,198,13048,151645,198,151644,77091,198,151667,271,151668,271\n");
  CliRun llama = run_cli("tokenize " + kLlama3 + " -p 'Hi there' --chat");
  EXPECT_EQ(llama.exit_code, 0) << llama.output;
  EXPECT_NE(llama.output.find("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"),
            std::string::npos)
      << llama.output;
}

TEST(TokenizeCli, ReportsBadInput) {
  CliRun bad_ids = run_cli("tokenize " + kQwen3 + " --ids 1,x");
  EXPECT_EQ(bad_ids.exit_code, 1);
  EXPECT_NE(bad_ids.output.find("'x' is not a token id"), std::string::npos) << bad_ids.output;
  CliRun nothing = run_cli("tokenize " + kQwen3);
  EXPECT_NE(nothing.exit_code, 0);
  EXPECT_NE(nothing.output.find("-p TEXT"), std::string::npos) << nothing.output;
  CliRun missing = run_cli("tokenize /nonexistent/model -p hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/model"), std::string::npos) << missing.output;
  CliRun both = run_cli("tokenize " + kQwen3 + " -p hi --ids 1");
  EXPECT_NE(both.exit_code, 0);
}

}  // namespace
