// The advisor's settings and its replies as bad input (issue 23): a key variable that is not set,
// seconds that overflow a deadline, a URL with a query string, a server that stalls, one that refuses
// connections, invalid UTF-8 over HTTP, replies of 50 MB, risk notes and replies that are long or cut
// inside a UTF-8 character. Each ends in a clear error or a bounded record, and a compile that goes on
// with the heuristic order; none crashes or hangs.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "advisor/validate.h"
#include "bad_input_fixtures.h"
#include "scripted_http_server.h"
#include "support/utf8.h"

namespace agentcompile {
namespace {

using namespace testing::bad_input;
using testing::CommandRun;
using testing::HttpRequest;
using testing::ScriptedHttpServer;

const fs::path kConfig = kFixtures / "configs" / "small-qwen3.json";

class AdvisorBadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* proxy : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) unsetenv(proxy);
  }

  // A --no-gpu compile of small-qwen3 into work/artifact, every region asked.
  CommandRun compile(const fs::path& work, const std::string& advisor_flags) {
    return testing::run_command(std::string(AC_CLI) + " compile " + kConfig.string() + " -o " + (work / "artifact").string() +
                                " --no-gpu --force --max-candidates 2 --cache-dir " + (work / "cache").string() + " --advisor-cache " +
                                (work / "advice-cache").string() + " --advisor-scope all " + advisor_flags);
  }

  // An executable script answering every request with `body`'s stdout.
  std::string script(const fs::path& work, const std::string& body) {
    const fs::path path = work / "advise.sh";
    write_text(path, "#!/bin/sh\ncat >/dev/null\n" + body + "\n");
    fs::permissions(path, fs::perms::owner_all);
    return "command:" + path.string();
  }
};

TEST_F(AdvisorBadInput, AKeyVariableThatIsNotSetIsAnError) {
  const fs::path work = work_dir("advisor-key-env");
  unsetenv("AC_TEST_UNSET_ADVISOR_KEY");
  const CommandRun run =
      compile(work, "--advisor openai --advisor-model m --advisor-url http://127.0.0.1:9/v1 --advisor-key-env AC_TEST_UNSET_ADVISOR_KEY");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "AC_TEST_UNSET_ADVISOR_KEY")) << run.output;
  EXPECT_TRUE(contains(run.output, "not set")) << run.output;
}

// Seconds become deadlines and curl timeouts: values that would overflow them are refused by name.
TEST_F(AdvisorBadInput, SecondsThatCannotBeDeadlinesAreRefused) {
  const fs::path work = work_dir("advisor-seconds");
  for (const auto& [flags, flag] : {std::pair{"--advisor-budget 1e300", "--advisor-budget"}, {"--advisor-timeout nan", "--advisor-timeout"},
                                    {"--advisor-connect-timeout 1e12", "--advisor-connect-timeout"}}) {
    const CommandRun run = compile(work, std::string("--advisor 'command:echo {}' ") + flags);
    EXPECT_EQ(run.exit_code, 1) << flags << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, std::string(flag) + " must be")) << flags << "\n" << run.output;
  }
}

TEST_F(AdvisorBadInput, AQueryStringStaysAfterThePath) {
  for (const std::string backend : {"openai", "anthropic"}) {
    const fs::path work = work_dir("advisor-query-" + backend);
    ScriptedHttpServer server(testing::scripted({testing::reply(400, "{}")}));
    const CommandRun run = compile(work, "--advisor " + backend + " --advisor-model m --advisor-url '" + server.url() +
                                             "/v1/?api-version=2024-06-01' --advisor-retries 0");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const auto requests = server.requests();
    ASSERT_FALSE(requests.empty());
    const std::string path = backend == "openai" ? "/v1/chat/completions" : "/v1/messages";
    for (const HttpRequest& request : requests) EXPECT_EQ(request.path, path + "?api-version=2024-06-01");
  }
}

TEST_F(AdvisorBadInput, AStalledAdvisorShowsProgressAndKeepsToTheBudget) {
  const fs::path work = work_dir("advisor-stall");
  ScriptedHttpServer server(testing::scripted({testing::hang_reply()}));
  const CommandRun run =
      compile(work, "--advisor openai --advisor-model m --advisor-url " + server.url() + "/v1 --advisor-timeout 3 --advisor-retries 5 --advisor-budget 4");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "advisor: still waiting")) << run.output;
  EXPECT_LT(run.seconds, 25) << run.output;
  const json meta = read_json(work / "artifact" / "metadata.json");
  size_t answered = 0;
  for (const auto& region : meta["regions"]) answered += region["advice"]["asked"].get<bool>() && region["advice"]["exchange"]["ok"].get<bool>();
  EXPECT_EQ(answered, 0u);
}

TEST_F(AdvisorBadInput, ARefusedConnectionFailsTheBackendOnce) {
  const fs::path work = work_dir("advisor-refused");
  // A port nothing listens on: bound, then closed.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/v1";

  const CommandRun run = compile(work, "--advisor openai --advisor-model m --advisor-url " + url);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "unreachable")) << run.output;
  EXPECT_TRUE(contains(run.output, "heuristic order")) << run.output;
  const json meta = read_json(work / "artifact" / "metadata.json");
  size_t asked = 0, unreachable = 0;
  for (const auto& region : meta["regions"]) {
    const json& advice = region["advice"];
    if (advice["asked"].get<bool>()) {
      ++asked;
      EXPECT_EQ(advice["exchange"]["attempts"], 1) << advice;
    } else {
      unreachable += contains(advice["why"].get<std::string>(), "unreachable");
    }
  }
  EXPECT_EQ(asked, 1u);
  EXPECT_GT(unreachable, 0u);
}

// Invalid UTF-8 over HTTP: an OpenAI-style envelope whose advice text carries bytes that are not
// UTF-8 (no JSON parser takes it), and an error body of such bytes. The compile goes on and every
// record of the exchange is valid UTF-8.
TEST_F(AdvisorBadInput, InvalidUtf8OverHttpIsRecordedRepaired) {
  for (const auto& [name, answer] : {std::pair{"envelope", testing::reply(200, "{\"choices\": [{\"message\": {\"content\": \"\xFF\xFE{}\"}}]}")},
                                     {"error", testing::reply(400, "bad \xC3 request \xFF")}}) {
    const fs::path work = work_dir(std::string("advisor-http-utf8-") + name);
    ScriptedHttpServer server(testing::scripted({answer}));
    const CommandRun run = compile(work, "--advisor openai --advisor-model m --advisor-url " + server.url() + "/v1 --advisor-retries 0");
    EXPECT_EQ(run.exit_code, 0) << name << "\n" << run.output;
    const json meta = read_json(work / "artifact" / "metadata.json");
    ASSERT_TRUE(meta.is_object()) << name;
    const json advice = read_json(work / "artifact" / "advice.json");
    ASSERT_TRUE(advice.is_object()) << name;
    size_t repaired = 0;
    for (const auto& [hash, exchange] : advice["exchanges"].items()) {
      const std::string text = exchange["reply"].get<std::string>() + exchange["error"].get<std::string>();
      EXPECT_TRUE(support::utf8::is_valid(text)) << name;
      repaired += contains(text, "\xEF\xBF\xBD");  // U+FFFD where the bad bytes were
    }
    EXPECT_GT(repaired, 0u) << name << "\n" << advice.dump(1);
  }
}

TEST_F(AdvisorBadInput, HugeRepliesSayTheyExceedTheLimit) {
  {
    const fs::path work = work_dir("advisor-huge-http");
    const std::string huge(50 << 20, 'a');
    ScriptedHttpServer server(testing::scripted({testing::reply(200, huge)}));
    const CommandRun run = compile(work, "--advisor openai --advisor-model m --advisor-url " + server.url() + "/v1 --advisor-retries 0");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const json meta = read_json(work / "artifact" / "metadata.json");
    for (const auto& region : meta["regions"]) {
      const json& advice = region["advice"];
      if (!advice["asked"].get<bool>()) continue;
      EXPECT_TRUE(contains(advice["exchange"]["error"].get<std::string>(), "exceeds the limit")) << advice["exchange"]["error"];
    }
  }
  const fs::path work = work_dir("advisor-huge-command");
  const CommandRun run = compile(work, "--advisor '" + script(work, "head -c 50000000 /dev/zero | tr '\\\\0' a") + "'");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const json meta = read_json(work / "artifact" / "metadata.json");
  size_t asked = 0;
  for (const auto& region : meta["regions"]) {
    const json& advice = region["advice"];
    if (!advice["asked"].get<bool>()) continue;
    ++asked;
    EXPECT_FALSE(advice["exchange"]["ok"].get<bool>());
    EXPECT_TRUE(contains(advice["exchange"]["error"].get<std::string>(), "exceeds the limit")) << advice["exchange"]["error"];
  }
  EXPECT_GT(asked, 0u);
  EXPECT_LT(fs::file_size(work / "artifact" / "advice.json"), size_t{1} << 20);
}

// Replies near the recorded lengths, cut inside a two-byte character: every record stays UTF-8 and
// a compile writes them (metadata.json's 2000-character excerpt of a reply, a 300-character note).
TEST_F(AdvisorBadInput, LongRepliesAreCutBetweenCharacters) {
  const fs::path work = work_dir("advisor-cut");
  std::string reply = "{\"note\": \"x";
  for (int i = 0; i < 3000; ++i) reply += "\xC3\xA9";  // é
  reply += "\"}";
  write_text(work / "reply.json", reply);
  const CommandRun run = compile(work, "--advisor '" + script(work, "cat " + (work / "reply.json").string()) + "'");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(read_json(work / "artifact" / "metadata.json").is_object());
}

TEST(AdvisorNotes, RiskNotesKeepAtMost300Characters) {
  advisor::Request request;
  request.region = "decode.r1";
  request.body = {{"allowed", {{"labels", {"gemv"}}, {"candidates", {"c0", "c1"}}, {"hints", json::object()}, {"risk_kinds", {"numerics"}}}}};
  std::string note = "x";
  for (int i = 0; i < 1000000; ++i) note += "\xC3\xA9";
  const json reply = {{"region", "decode.r1"}, {"risks", {{{"candidate", "c0"}, {"kind", "numerics"}, {"note", note}}}}};
  const advisor::Verdict verdict = advisor::validate_advice(request, reply.dump());
  ASSERT_EQ(verdict.risks.size(), 1u);
  const std::string& kept = verdict.risks[0].note;
  EXPECT_TRUE(support::utf8::is_valid(kept));
  size_t characters = 0;
  for (unsigned char c : kept) characters += (c & 0xC0) != 0x80;
  EXPECT_LE(characters, 300u);
  EXPECT_GE(characters, 290u);
}

}  // namespace
}  // namespace agentcompile
