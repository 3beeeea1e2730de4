// No API key reaches a file: sentinel keys in the environment, compiles with every backend (with
// verbose logging), servers and programs that echo the key back (in advice, in error bodies, on
// stderr), then every file the compiles wrote (artifacts, advice caches, the artifact cache,
// captured stdout and stderr) is searched for the sentinels and for fragments of them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "scripted_http_server.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::HttpReply;
using testing::HttpRequest;
using testing::ScriptedHttpServer;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "advisor-keys-test";
const std::string kConfig = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/small-qwen3.json";
const std::vector<std::string> kSentinels = {"sk-SENTINEL-openai-7f3a9c2e41d8b6a0", "sk-ant-SENTINEL-5b2e8d1c9a7f03e4",
                                             "SENTINEL-custom-4c8e2a6f1b9d77c1"};

// Runs a compile with stdout and stderr captured into files beside its artifact.
int compile(const std::string& name, const std::string& advisor_flags) {
  fs::remove_all(kWork / name);
  fs::create_directories(kWork / name);
  const std::string command = std::string(AC_CLI) + " compile " + kConfig + " -o " + (kWork / name / "artifact").string() +
                              " --no-gpu --force -v --cache-dir " + (kWork / "cache").string() + " --advisor-cache " +
                              (kWork / name / "advice-cache").string() + " " + advisor_flags + " > " + (kWork / name / "stdout.txt").string() +
                              " 2> " + (kWork / name / "stderr.txt").string();
  return std::system(command.c_str());
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json inner_request(const HttpRequest& request) {
  return json::parse(json::parse(request.body)["messages"].back()["content"].get<std::string>());
}

// Valid advice whose risk note repeats the key the request carried.
std::string echoing_advice(const HttpRequest& request) {
  const json inner = inner_request(request);
  std::string key = request.headers.count("authorization") ? request.headers.at("authorization") : "";
  if (request.headers.count("x-api-key")) key = request.headers.at("x-api-key");
  return json{{"region", inner["region"]["id"]}, {"label", inner["region"]["category"]}, {"priority", {inner["allowed"]["candidates"][0]}},
              {"hints", json::object()}, {"risks", {{{"candidate", inner["allowed"]["candidates"][0]}, {"kind", "numerics"}, {"note", "your key is " + key}}}},
              {"debug", key}}
      .dump();
}

TEST(AdvisorKeys, NoKeyReachesAnyFileACompileWrites) {
  for (const char* proxy : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) unsetenv(proxy);
  setenv("OPENAI_API_KEY", kSentinels[0].c_str(), 1);
  setenv("ANTHROPIC_API_KEY", kSentinels[1].c_str(), 1);
  setenv("AC_TEST_ADVISOR_KEY", kSentinels[2].c_str(), 1);
  fs::remove_all(kWork);
  std::vector<std::string> seen_keys;  // what the servers received: the test is not vacuous

  {  // openai: the key comes back inside the advice
    ScriptedHttpServer server([&](const HttpRequest& request, size_t) {
      return testing::reply(200, json{{"choices", {{{"message", {{"role", "assistant"}, {"content", echoing_advice(request)}}}}}}}.dump());
    });
    ASSERT_EQ(compile("openai-echo", "--advisor openai --advisor-model m --advisor-scope all --advisor-url " + server.url() + "/v1"), 0)
        << slurp(kWork / "openai-echo" / "stderr.txt");
    seen_keys.push_back(server.requests().at(0).headers.at("authorization"));
  }
  {  // openai with --advisor-key-env: a 401 whose error body quotes the key, masked and whole
    ScriptedHttpServer server([&](const HttpRequest& request, size_t) {
      const std::string key = request.headers.count("authorization") ? request.headers.at("authorization").substr(7) : "";
      return testing::reply(401, json{{"error", {{"message", "Incorrect API key provided: " + key + " (" + key.substr(0, 12) + "****" +
                                                              key.substr(key.size() - 4) + ")"}}}}.dump());
    });
    ASSERT_EQ(compile("openai-401", "--advisor openai --advisor-model m --advisor-key-env AC_TEST_ADVISOR_KEY --advisor-url " + server.url() + "/v1"), 0);
    seen_keys.push_back(server.requests().at(0).headers.at("authorization"));
  }
  {  // anthropic: 500s that echo the key (retried, then failed), then advice that echoes it
    ScriptedHttpServer server([&](const HttpRequest& request, size_t index) {
      if (index < 3) return testing::reply(500, "{\"error\": \"upstream rejected x-api-key " + request.headers.at("x-api-key") + "\"}");
      json input = json::parse(echoing_advice(request));
      return testing::reply(200, json{{"content", {{{"type", "tool_use"}, {"name", "record_advice"}, {"input", input}}}}}.dump());
    });
    ASSERT_EQ(compile("anthropic", "--advisor anthropic --advisor-model m --advisor-scope all --advisor-retries 1 --advisor-url " +
                                       server.url() + "/v1"),
              0);
    seen_keys.push_back(server.requests().at(0).headers.at("x-api-key"));
  }
  {  // command: a program that prints every key it inherited, in its answer and on stderr before failing
    fs::create_directories(kWork / "scripts");
    std::ofstream(kWork / "scripts" / "leak.sh") << "#!/bin/sh\ncat >/dev/null\n"
                                                    "echo \"keys: $OPENAI_API_KEY $ANTHROPIC_API_KEY $AC_TEST_ADVISOR_KEY\" >&2\n"
                                                    "printf '{\"note\": \"%s %s\"}' \"$OPENAI_API_KEY\" \"$AC_TEST_ADVISOR_KEY\"\n";
    std::ofstream(kWork / "scripts" / "leak-fail.sh") << "#!/bin/sh\ncat >/dev/null\n"
                                                         "echo \"auth failed for $ANTHROPIC_API_KEY / $OPENAI_API_KEY\" >&2\nexit 1\n";
    fs::permissions(kWork / "scripts" / "leak.sh", fs::perms::owner_all);
    fs::permissions(kWork / "scripts" / "leak-fail.sh", fs::perms::owner_all);
    ASSERT_EQ(compile("command", "--advisor command:" + (kWork / "scripts" / "leak.sh").string() + " --advisor-key-env AC_TEST_ADVISOR_KEY"), 0);
    ASSERT_EQ(compile("command-fail", "--advisor command:" + (kWork / "scripts" / "leak-fail.sh").string()), 0);
  }
  // replay of the first compile
  ASSERT_EQ(compile("replay", "--advisor replay:" + (kWork / "openai-echo" / "artifact").string() + " --advisor-scope all"), 0);

  for (size_t i = 0; i < seen_keys.size(); ++i) EXPECT_NE(seen_keys[i].find("SENTINEL"), std::string::npos) << "request " << i;

  // Every file under the work directory: artifacts, advice caches, the artifact cache, stdout/stderr.
  size_t files = 0, redactions = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kWork)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".sh") continue;
    ++files;
    const std::string text = slurp(entry.path());
    redactions += text.find("[REDACTED]") != std::string::npos;
    for (const auto& sentinel : kSentinels) {
      EXPECT_EQ(text.find(sentinel), std::string::npos) << entry.path() << " contains the key " << sentinel;
      EXPECT_EQ(text.find(sentinel.substr(3, 12)), std::string::npos) << entry.path() << " contains a fragment of " << sentinel;
    }
  }
  EXPECT_GT(files, 20u);
  EXPECT_GT(redactions, 5u);  // the echoes were there, and were scrubbed
  // The verbose logs printed the (redacted) exchanges.
  EXPECT_NE(slurp(kWork / "openai-echo" / "stderr.txt").find("your key is Bearer [REDACTED]"), std::string::npos);
  EXPECT_NE(slurp(kWork / "command-fail" / "stderr.txt").find("auth failed for [REDACTED]"), std::string::npos)
      << slurp(kWork / "command-fail" / "stderr.txt");
}

}  // namespace
}  // namespace agentcompile
