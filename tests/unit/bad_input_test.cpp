// Bad input ends in a clear error or a correct result, never a crash, through the CLI: invalid UTF-8
// from the advisor or in a model path, advice files of the wrong shape, configuration sizes without
// bounds (layers, vocabulary, context), a negative norm epsilon, configuration keys that would be
// ignored or are of the wrong type, and token ids outside the vocabulary.
//
// Commands run under a memory limit, so a tool that tries to allocate what a broken configuration
// asks for fails fast instead of exhausting the machine.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "bad_input_fixtures.h"

namespace agentcompile {
namespace {

using namespace testing::bad_input;
using testing::CommandRun;

const fs::path kTinyQwen2 = kFixtures / "configs" / "tiny-qwen2.json";

// tiny-qwen2's config.json with `key` set to `value`, in a directory of its own.
fs::path config_with(const fs::path& work, const std::string& key, const json& value) {
  json config = read_json(kTinyQwen2);
  config[key] = value;
  const fs::path dir = work / key;
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir;
}

std::string compile_args(const fs::path& model, const fs::path& out, const fs::path& cache) {
  return "compile --no-gpu --device-profile h200 --max-candidates 2 " + model.string() + " -o " + out.string() + " --cache-dir " +
         cache.string();
}

TEST(BadInput, InvalidUtf8FromTheAdvisorIsRepairedNotAnAbort) {
  const fs::path work = work_dir("advisor-utf8");
  // The advisor answers every region with two bytes that are not UTF-8.
  const CommandRun run = testing::run_cli(compile_args(kTinyQwen2, work / "artifact", work / "cache") +
                                          " --advisor-scope all --advisor \"command:printf '\\377\\376'\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_FALSE(read_json(work / "artifact" / "metadata.json").is_discarded());
  const json advice = read_json(work / "artifact" / "advice.json");
  ASSERT_TRUE(advice.is_object());
  ASSERT_FALSE(advice["exchanges"].empty());
  for (const auto& [hash, exchange] : advice["exchanges"].items()) EXPECT_EQ(exchange["reply"], "\xEF\xBF\xBD\xEF\xBF\xBD") << hash;
}

// Advice cache entries and a replayed advice.json of the wrong shape: a cache miss, or a clear
// refusal of the file, never an abort.
TEST(BadInput, WrongShapedAdviceFilesNeverAbort) {
  const fs::path work = work_dir("advice-shapes");
  const std::string compile = compile_args(kTinyQwen2, work / "artifact", work / "cache") + " --force --advisor-scope all";
  CommandRun run = testing::run_cli(compile + " --advisor \"command:printf '{}'\"");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  size_t entries = 0;
  for (const auto& item : fs::recursive_directory_iterator(work / "cache" / "advice"))
    if (item.path().extension() == ".json") {
      std::ofstream(item.path()) << "[1, 2]";
      ++entries;
    }
  ASSERT_GT(entries, 0u);
  run = testing::run_cli(compile + " --advisor \"command:printf '{}'\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;

  json advice = read_json(work / "artifact" / "advice.json");
  ASSERT_TRUE(advice.is_object());
  for (auto& [hash, exchange] : advice["exchanges"].items()) exchange["ok"] = "yes";
  std::ofstream(work / "advice.json") << advice.dump();
  run = testing::run_cli(compile_args(kTinyQwen2, work / "replayed", work / "cache") + " --advisor-scope all --advisor replay:" +
                         (work / "advice.json").string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("is not a recorded exchange"), std::string::npos) << run.output;
}

TEST(BadInput, ANonUtf8ModelPathCompiles) {
  const fs::path work = work_dir("path-utf8");
  const fs::path model = work / "model-\xff\xfe";
  fs::create_directories(model);
  fs::copy_file(kTinyQwen2, model / "config.json");
  const CommandRun run = testing::run_cli(compile_args("'" + model.string() + "'", work / "artifact", work / "cache"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const json meta = read_json(work / "artifact" / "metadata.json");
  ASSERT_TRUE(meta.is_object());
  EXPECT_NE(meta["model"]["source"].get<std::string>().find("model-\xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos) << meta["model"]["source"];
}

// Sizes far past any model are refused at once by every tool that reads the configuration, with
// the key named; none allocates, hangs or wraps around.
TEST(BadInput, ConfigurationSizesAreBounded) {
  const fs::path work = work_dir("sizes");
  struct Case {
    std::string key;
    json value;
  };
  for (const Case& c : {Case{"num_hidden_layers", 1000000000}, Case{"vocab_size", int64_t{1} << 40}, Case{"vocab_size", int64_t{1} << 62},
                        Case{"max_position_embeddings", int64_t{1} << 50}, Case{"intermediate_size", int64_t{1} << 45},
                        Case{"rms_norm_eps", -1.0}, Case{"rms_norm_eps", 0.0}}) {
    SCOPED_TRACE(c.key + " = " + c.value.dump());
    const fs::path model = config_with(work, c.key, c.value);
    for (const std::string& args : {"inspect " + model.string() + " --no-ir",
                                    "init-random --config " + (model / "config.json").string() + " --out " + (work / "random").string(),
                                    compile_args(model, work / "artifact", work / "cache")}) {
      const CommandRun run = cli(args);
      EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
      EXPECT_NE(run.output.find(c.key), std::string::npos) << args << "\n" << run.output;
    }
  }
}

// Keys that change what the model computes, or of the wrong type, are refused by the tools with the
// key and the reason named (config_keys_test checks the parser case by case).
TEST(BadInput, ConfigurationKeysAreHonouredOrRefused) {
  const fs::path work = work_dir("keys");
  struct Case {
    std::string key;
    json value;
    std::string message;
  };
  for (const Case& c : {Case{"model_type", 5, "key 'model_type' must be a string, got 5"},
                        Case{"sliding_window", 64, "key 'use_sliding_window' is true with sliding_window 64, shorter than the context of 256"},
                        Case{"quantization_config", {{"quant_method", "gptq"}, {"bits", 4}}, "\"gptq\""},
                        Case{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}, "rope_scaling: key 'low_freq_factor' is missing"}}) {
    SCOPED_TRACE(c.key + " = " + c.value.dump());
    const fs::path model = config_with(work, c.key, c.value);
    if (c.key == "sliding_window") {  // Qwen2's window on every layer (no max_window_layers)
      json config = read_json(model / "config.json");
      config["use_sliding_window"] = true;
      write_text(model / "config.json", config.dump(2));
    }
    for (const std::string& args : {"inspect " + model.string() + " --no-ir", compile_args(model, work / "artifact", work / "cache")}) {
      const CommandRun run = cli(args);
      EXPECT_EQ(run.exit_code, 1) << args << "\n" << run.output;
      EXPECT_TRUE(contains(run.output, c.message)) << args << "\n" << run.output;
    }
  }
}

// A path that is neither a directory nor a file of a model format says what a model path may be.
TEST(BadInput, APathThatIsNoModelSaysWhatAModelIs) {
  for (const std::string& command : {"inspect", "reference"}) {
    const CommandRun run = cli(command + " /dev/null" + (command == "reference" ? " --tokens 1 -n 1" : ""));
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_TRUE(contains(run.output, "/dev/null: not a model: expected a directory, a config .json or a .gguf file")) << run.output;
  }
}

TEST(BadInput, TokenIdsOutsideTheVocabularyAreAnError) {
  const std::string tokenizer = std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3";
  const CommandRun run = cli("tokenize " + tokenizer + " --ids 1,999999,3");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("999999"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace agentcompile
