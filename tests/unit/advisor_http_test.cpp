// The openai and anthropic advisor backends end to end: `agentcompile compile --no-gpu` of the small
// Qwen3 fixture against a scripted HTTP server on 127.0.0.1 that returns valid advice, unknown
// candidates, out-of-space hints, wrong labels, malformed JSON, truncated bodies, 429 and 500
// responses (then success, or for ever) and hangs. Every compile must succeed with every candidate
// compiled and the same selections as without an advisor, and the advice outcomes in metadata.json
// must count what the server said. A replayed compile (server gone) must reproduce the outcomes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "scripted_http_server.h"
#include "command_runner.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::HttpReply;
using testing::HttpRequest;
using testing::ScriptedHttpServer;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "advisor-http-test";
const std::string kConfig = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/small-qwen3.json";
const std::string kKey = "sk-advisor-http-test-key-0123456789";

using CliRun = testing::CommandRun;
CliRun run(const std::string& command) { return testing::run_command(command); }

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// A --no-gpu compile into kWork/name; NVRTC results are shared through one cache directory.
CliRun compile(const std::string& name, const std::string& advisor_flags) {
  fs::remove_all(kWork / name);
  return run(std::string(AC_CLI) + " compile " + kConfig + " -o " + (kWork / name / "artifact").string() + " --no-gpu --force --cache-dir " +
             (kWork / "cache").string() + " --advisor-cache " + (kWork / name / "advice-cache").string() + " " + advisor_flags);
}

json metadata(const std::string& name) { return read_json(kWork / name / "artifact" / "metadata.json"); }

// ctest runs every test in a process of its own, in parallel: each has its own baseline.
std::string baseline_name() { return "baseline-" + std::to_string(getpid()); }

// The advice request inside an API request (the user message).
json inner_request(const HttpRequest& request) {
  const json body = json::parse(request.body);
  return json::parse(body["messages"].back()["content"].get<std::string>());
}

// The API envelope around an advice text: a chat completion, or a message with a tool_use block.
HttpReply envelope(const HttpRequest& request, const std::string& advice_text) {
  if (request.path.find("/messages") != std::string::npos) {
    json input = json::parse(advice_text, nullptr, false);
    if (input.is_discarded()) input = advice_text;
    return testing::reply(200, json{{"type", "message"}, {"stop_reason", "tool_use"},
                                    {"content", {{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "record_advice"}, {"input", input}}}}}
                                   .dump());
  }
  return testing::reply(200, json{{"object", "chat.completion"},
                                  {"choices", {{{"index", 0}, {"finish_reason", "stop"}, {"message", {{"role", "assistant"}, {"content", advice_text}}}}}}}
                                 .dump());
}

// Valid advice: the compiler's own label, candidates in reverse, the first value of every hint, one risk.
json valid_advice(const json& request) {
  json advice = {{"region", request["region"]["id"]}, {"label", request["region"]["category"]}, {"priority", json::array()},
                 {"hints", json::object()}, {"risks", json::array()}};
  const json& ids = request["allowed"]["candidates"];
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) advice["priority"].push_back(*it);
  for (const auto& [name, values] : request["allowed"]["hints"].items()) advice["hints"][name] = values[0];
  advice["risks"].push_back({{"candidate", ids[0]}, {"kind", "numerics"}, {"note", "scripted"}});
  return advice;
}

HttpReply valid_reply(const HttpRequest& request, size_t) { return envelope(request, valid_advice(inner_request(request)).dump()); }

struct Totals {
  size_t asked = 0, answered = 0, failed = 0, accepted = 0, rejected = 0, ignored = 0;
  std::map<std::string, size_t> kinds;
};

// Sums the per-region advice sections and checks them against the compile's own counts.
Totals totals(const json& meta) {
  Totals t;
  for (const auto& region : meta["regions"]) {
    const json& a = region["advice"];
    if (!a["asked"].get<bool>()) continue;
    ++t.asked;
    (a["exchange"]["ok"].get<bool>() ? t.answered : t.failed) += 1;
    t.accepted += a["counts"]["accepted"].get<size_t>();
    t.rejected += a["counts"]["rejected"].get<size_t>();
    t.ignored += a["counts"]["ignored"].get<size_t>();
    EXPECT_EQ(a["counts"]["rejected"].get<size_t>(), a["rejected"].size());
    for (const auto& r : a["rejected"]) {
      ++t.kinds[r["kind"].get<std::string>()];
      EXPECT_FALSE(r["reason"].get<std::string>().empty());
    }
  }
  const json& c = meta["advisor"]["counts"];
  EXPECT_EQ(c["asked"].get<size_t>(), t.asked);
  EXPECT_EQ(c["answered"].get<size_t>(), t.answered);
  EXPECT_EQ(c["failed"].get<size_t>(), t.failed);
  EXPECT_EQ(c["accepted"].get<size_t>(), t.accepted);
  EXPECT_EQ(c["rejected"].get<size_t>(), t.rejected);
  EXPECT_EQ(c["ignored"].get<size_t>(), t.ignored);
  EXPECT_EQ(c["asked"].get<size_t>() + c["not_asked"].get<size_t>(), meta["regions"].size());
  return t;
}

// No measured (here: compiled and selected) work lost: the same candidates compiled and the same
// selections as the compile without an advisor.
void expect_no_work_lost(const json& meta) {
  const json baseline = metadata(baseline_name());
  ASSERT_EQ(meta["regions"].size(), baseline["regions"].size());
  for (size_t r = 0; r < meta["regions"].size(); ++r) {
    const json &a = meta["regions"][r], &b = baseline["regions"][r];
    ASSERT_EQ(a["id"], b["id"]);
    ASSERT_EQ(a["candidates"].size(), b["candidates"].size());
    for (size_t i = 0; i < a["candidates"].size(); ++i)
      EXPECT_EQ(a["candidates"][i].value("compile", json()).value("ok", false), b["candidates"][i].value("compile", json()).value("ok", false));
    EXPECT_EQ(a["selection"], b["selection"]) << a["id"];
  }
}

class AdvisorHttp : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { fs::remove_all(kWork / baseline_name()); }

  static void SetUpTestSuite() {
    for (const char* proxy : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) unsetenv(proxy);
    setenv("OPENAI_API_KEY", kKey.c_str(), 1);
    setenv("ANTHROPIC_API_KEY", kKey.c_str(), 1);
    const CliRun baseline = compile(baseline_name(), "");
    ASSERT_EQ(baseline.status, 0) << baseline.output;
  }

  std::string flags(const ScriptedHttpServer& server, const std::string& scope, const std::string& extra = "", int retries = 2) const {
    return "--advisor " + GetParam() + " --advisor-url " + server.url() + "/v1 --advisor-model scripted --advisor-scope " + scope +
           " --advisor-timeout 5 --advisor-retries " + std::to_string(retries) + " " + extra;
  }
  std::string name(const std::string& test) const { return GetParam() + "-" + test; }
};

TEST_P(AdvisorHttp, ValidAdviceIsAcceptedAndOrdersTheSearch) {
  ScriptedHttpServer server(valid_reply);
  const CliRun r = compile(name("valid"), flags(server, "all", "--search-budget 2"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json meta = metadata(name("valid"));
  Totals t = totals(meta);
  size_t with_candidates = 0, expected_accepted = 0;
  for (const auto& region : meta["regions"]) {
    if (region["candidates"].empty()) continue;
    ++with_candidates;
    std::set<std::string> params;
    for (const auto& c : region["candidates"])
      for (const auto& [p, v] : c["params"].items())
        if (p != "fallback") params.insert(p);
    expected_accepted += 1 + region["candidates"].size() + params.size() + 1;
    // The advisor's priority (reverse) is the measuring order.
    json reversed = json::array();
    for (auto it = region["candidates"].rbegin(); it != region["candidates"].rend(); ++it) reversed.push_back((*it)["id"]);
    EXPECT_EQ(region["search"]["order"], reversed) << region["id"];
    EXPECT_EQ(region["search"]["order_source"], "advisor");
    EXPECT_EQ(region["search"]["budget"], 2);
    EXPECT_EQ(region["advice"]["accepted"]["label"], region["label"]);
    EXPECT_TRUE(region["advice"]["label_agrees"].get<bool>());
  }
  EXPECT_EQ(t.asked, with_candidates);
  EXPECT_EQ(t.answered, with_candidates);
  EXPECT_EQ(t.accepted, expected_accepted);
  EXPECT_EQ(t.rejected, 0u);
  EXPECT_EQ(t.ignored, 0u);
  expect_no_work_lost(meta);

  // What went over the wire: one request per region, the schema enumerating its candidates, the key.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), with_candidates);
  for (const auto& request : requests) {
    const json body = json::parse(request.body);
    const json inner = inner_request(request);
    EXPECT_EQ(body["model"], "scripted");
    json schema;
    if (GetParam() == "openai") {
      EXPECT_EQ(request.path, "/v1/chat/completions");
      EXPECT_EQ(request.headers.at("authorization"), "Bearer " + kKey);
      EXPECT_EQ(body["response_format"]["type"], "json_schema");
      schema = body["response_format"]["json_schema"]["schema"];
    } else {
      EXPECT_EQ(request.path, "/v1/messages");
      EXPECT_EQ(request.headers.at("x-api-key"), kKey);
      EXPECT_EQ(request.headers.count("anthropic-version"), 1u);
      EXPECT_EQ(body["tool_choice"], (json{{"type", "tool"}, {"name", "record_advice"}}));
      EXPECT_EQ(body["tools"][0]["name"], "record_advice");
      schema = body["tools"][0]["input_schema"];
    }
    EXPECT_EQ(schema["properties"]["priority"]["items"]["enum"], inner["allowed"]["candidates"]);
    EXPECT_EQ(schema["properties"]["region"]["enum"][0], inner["region"]["id"]);
  }

  // advice.json holds every exchange by request hash; a second compile answers from the cache.
  const json record = read_json(kWork / name("valid") / "artifact" / "advice.json");
  EXPECT_EQ(record["exchanges"].size(), with_candidates);
  for (const auto& region : meta["regions"]) {
    if (region["advice"]["asked"].get<bool>()) {
      EXPECT_TRUE(record["exchanges"].contains(region["advice"]["request_hash"].get<std::string>()));
    }
  }
  const CliRun again = run(std::string(AC_CLI) + " compile " + kConfig + " -o " + (kWork / name("valid") / "again").string() +
                        " --no-gpu --force --cache-dir " + (kWork / "cache").string() + " --advisor-cache " +
                        (kWork / name("valid") / "advice-cache").string() + " " + flags(server, "all", "--search-budget 2"));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(server.requests().size(), with_candidates);  // nothing asked twice
  const json cached = read_json(kWork / name("valid") / "again" / "metadata.json");
  EXPECT_EQ(cached["advisor"]["counts"]["from_cache"], with_candidates);
  EXPECT_EQ(cached["advisor"]["counts"]["accepted"], expected_accepted);
}

TEST_P(AdvisorHttp, UnknownCandidatesAreRejectedTheRestKept) {
  ScriptedHttpServer server([](const HttpRequest& request, size_t) {
    json advice = valid_advice(inner_request(request));
    advice["priority"] = {advice["priority"][0], "c99", "gemv_v8"};
    advice["risks"] = {{{"candidate", "c42"}, {"kind", "numerics"}, {"note", "?"}}};
    return envelope(request, advice.dump());
  });
  ASSERT_EQ(compile(name("unknown"), flags(server, "auto")).status, 0);
  const json meta = metadata(name("unknown"));
  Totals t = totals(meta);
  ASSERT_GT(t.asked, 0u);
  EXPECT_EQ(t.answered, t.asked);
  EXPECT_EQ(t.kinds["unknown_candidate"], 3 * t.asked);
  EXPECT_EQ(t.rejected, 3 * t.asked);
  for (const auto& region : meta["regions"]) {
    if (!region["advice"]["asked"].get<bool>()) continue;
    EXPECT_EQ(region["advice"]["accepted"]["priority"].size(), 1u);
    EXPECT_EQ(region["search"]["order"][0], region["candidates"].back()["id"]);
  }
  expect_no_work_lost(meta);
}

TEST_P(AdvisorHttp, OutOfSpaceHintsAreRejected) {
  ScriptedHttpServer server([](const HttpRequest& request, size_t) {
    const json inner = inner_request(request);
    json advice = valid_advice(inner);
    for (const auto& [name, values] : inner["allowed"]["hints"].items()) advice["hints"][name] = 999983;
    advice["hints"]["warp_specialize"] = 1;
    return envelope(request, advice.dump());
  });
  ASSERT_EQ(compile(name("hints"), flags(server, "auto")).status, 0);
  const json meta = metadata(name("hints"));
  Totals t = totals(meta);
  ASSERT_GT(t.asked, 0u);
  size_t params = 0;
  for (const auto& region : meta["regions"]) {
    if (!region["advice"]["asked"].get<bool>()) continue;
    EXPECT_TRUE(region["advice"]["accepted"]["hints"].empty());
    std::set<std::string> names;
    for (const auto& c : region["candidates"])
      for (const auto& [p, v] : c["params"].items())
        if (p != "fallback") names.insert(p);
    params += names.size();
  }
  EXPECT_EQ(t.kinds["value_outside_space"], params);
  EXPECT_EQ(t.kinds["unknown_parameter"], t.asked);
  expect_no_work_lost(meta);
}

TEST_P(AdvisorHttp, WrongLabelsAreRejected) {
  ScriptedHttpServer server([](const HttpRequest& request, size_t) {
    json advice = valid_advice(inner_request(request));
    advice["label"] = "gemv_gate_up_silu";
    return envelope(request, advice.dump());
  });
  ASSERT_EQ(compile(name("label"), flags(server, "auto")).status, 0);
  const json meta = metadata(name("label"));
  Totals t = totals(meta);
  ASSERT_GT(t.asked, 0u);
  EXPECT_EQ(t.kinds["unknown_label"], t.asked);
  EXPECT_EQ(t.rejected, t.asked);
  for (const auto& region : meta["regions"]) {
    if (region["advice"]["asked"].get<bool>()) {
      EXPECT_TRUE(region["advice"]["accepted"]["label"].is_null());
    }
  }
  expect_no_work_lost(meta);
}

TEST_P(AdvisorHttp, MalformedJsonIsRejectedOrAFailedExchange) {
  {  // the model's text is not JSON: rejected whole, counted
    ScriptedHttpServer server([](const HttpRequest& request, size_t) { return envelope(request, "{\"region\": \"decode.r6\", \"priority\": [\"c1\""); });
    ASSERT_EQ(compile(name("malformed-advice"), flags(server, "auto")).status, 0);
    const json meta = metadata(name("malformed-advice"));
    Totals t = totals(meta);
    ASSERT_GT(t.asked, 0u);
    EXPECT_EQ(t.answered, t.asked);
    EXPECT_EQ(t.kinds[GetParam() == "openai" ? "not_json" : "not_object"], t.asked);
    EXPECT_EQ(t.accepted, 0u);
    expect_no_work_lost(meta);
  }
  {  // the API response itself is not JSON: the exchange failed
    ScriptedHttpServer server(testing::scripted({testing::reply(200, "{\"choices\": [{\"message\": ")}));
    ASSERT_EQ(compile(name("malformed-body"), flags(server, "auto")).status, 0);
    const json meta = metadata(name("malformed-body"));
    Totals t = totals(meta);
    ASSERT_GT(t.asked, 0u);
    EXPECT_EQ(t.failed, t.asked);
    for (const auto& region : meta["regions"]) {
      if (!region["advice"]["asked"].get<bool>()) continue;
      EXPECT_NE(region["advice"]["exchange"]["error"].get<std::string>().find("not a JSON object"), std::string::npos);
      EXPECT_EQ(region["search"]["order_source"], "heuristic");
    }
    expect_no_work_lost(meta);
  }
}

TEST_P(AdvisorHttp, TruncatedBodiesAreRetriedThenFail) {
  const HttpReply truncated = testing::truncated_reply("{\"choices\": [", 4096);
  {  // truncated once, then fine: the first region needs two attempts
    ScriptedHttpServer server([&](const HttpRequest& request, size_t index) { return index == 0 ? truncated : valid_reply(request, index); });
    ASSERT_EQ(compile(name("truncated-once"), flags(server, "auto")).status, 0);
    const json meta = metadata(name("truncated-once"));
    Totals t = totals(meta);
    ASSERT_GT(t.asked, 0u);
    EXPECT_EQ(t.answered, t.asked);
    EXPECT_EQ(server.requests().size(), t.asked + 1);
    int two_attempts = 0;
    for (const auto& region : meta["regions"]) {
      if (region["advice"]["asked"].get<bool>()) two_attempts += region["advice"]["exchange"]["attempts"] == 2;
    }
    EXPECT_EQ(two_attempts, 1);
    expect_no_work_lost(meta);
  }
  {  // always truncated: every exchange fails after 1 + 2 attempts
    ScriptedHttpServer server(testing::scripted({truncated}));
    ASSERT_EQ(compile(name("truncated"), flags(server, "auto")).status, 0);
    const json meta = metadata(name("truncated"));
    Totals t = totals(meta);
    ASSERT_GT(t.asked, 0u);
    EXPECT_EQ(t.failed, t.asked);
    EXPECT_EQ(server.requests().size(), 3 * t.asked);
    for (const auto& region : meta["regions"]) {
      if (!region["advice"]["asked"].get<bool>()) continue;
      EXPECT_EQ(region["advice"]["exchange"]["attempts"], 3);
      EXPECT_NE(region["advice"]["exchange"]["error"].get<std::string>().find("Transferred a partial file"), std::string::npos)
          << region["advice"]["exchange"]["error"];
    }
    expect_no_work_lost(meta);
  }
}

TEST_P(AdvisorHttp, RateLimitsAndServerErrorsAreRetried) {
  const HttpReply rate_limited = testing::reply(429, "{\"error\": \"slow down\"}", {{"Retry-After", "0"}});
  const HttpReply server_error = testing::reply(500, "{\"error\": \"oops\"}");
  {  // 429, then 500, then success for the first region; the rest succeed at once
    ScriptedHttpServer server([&](const HttpRequest& request, size_t index) {
      return index == 0 ? rate_limited : index == 1 ? server_error : valid_reply(request, index);
    });
    ASSERT_EQ(compile(name("retry"), flags(server, "auto")).status, 0);
    const json meta = metadata(name("retry"));
    Totals t = totals(meta);
    ASSERT_GT(t.asked, 0u);
    EXPECT_EQ(t.answered, t.asked);
    EXPECT_EQ(server.requests().size(), t.asked + 2);
    expect_no_work_lost(meta);
  }
  {  // Retry-After is honoured
    ScriptedHttpServer server([&](const HttpRequest& request, size_t index) {
      return index == 0 ? testing::reply(429, "{}", {{"Retry-After", "1"}}) : valid_reply(request, index);
    });
    ASSERT_EQ(compile(name("retry-after"), flags(server, "auto")).status, 0);
    const auto requests = server.requests();
    ASSERT_GE(requests.size(), 2u);
    EXPECT_GE(requests[1].arrival_s - requests[0].arrival_s, 0.9);
    EXPECT_EQ(totals(metadata(name("retry-after"))).failed, 0u);
  }
  {  // 500 for ever: failed exchanges, the compile goes on with the heuristic order
    ScriptedHttpServer server(testing::scripted({server_error}));
    ASSERT_EQ(compile(name("always-500"), flags(server, "auto")).status, 0);
    const json meta = metadata(name("always-500"));
    Totals t = totals(meta);
    ASSERT_GT(t.asked, 0u);
    EXPECT_EQ(t.failed, t.asked);
    EXPECT_EQ(server.requests().size(), 3 * t.asked);
    for (const auto& region : meta["regions"]) {
      if (region["advice"]["asked"].get<bool>()) {
        EXPECT_NE(region["advice"]["exchange"]["error"].get<std::string>().find("HTTP 500"), std::string::npos);
      }
    }
    expect_no_work_lost(meta);
  }
}

TEST_P(AdvisorHttp, HangsTimeOutAndTheBudgetStopsAsking) {
  ScriptedHttpServer server(testing::scripted({testing::hang_reply()}));
  const CliRun r = compile(name("hang"), "--advisor " + GetParam() + " --advisor-url " + server.url() +
                                          "/v1 --advisor-model scripted --advisor-scope all --advisor-timeout 1 --advisor-retries 0 --advisor-budget 2.5");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_LT(r.seconds, 30);
  const json meta = metadata(name("hang"));
  Totals t = totals(meta);
  EXPECT_GE(t.failed, 2u);
  EXPECT_EQ(t.answered, 0u);
  size_t budget_spent = 0;
  for (const auto& region : meta["regions"]) {
    const json& a = region["advice"];
    if (a["asked"].get<bool>()) {
      EXPECT_NE(a["exchange"]["error"].get<std::string>().find("imeout"), std::string::npos) << a["exchange"]["error"];
    }
    budget_spent += a["why"].get<std::string>().find("budget") != std::string::npos;
  }
  EXPECT_GT(budget_spent, 0u);
  expect_no_work_lost(meta);
}

TEST_P(AdvisorHttp, ReplayReproducesOutcomesWithoutTheNetwork) {
  {
    // Mixed advice: valid, invalid parts, and a region whose exchange fails for ever.
    ScriptedHttpServer server([](const HttpRequest& request, size_t) {
      const json inner = inner_request(request);
      const std::string region = inner["region"]["id"];
      if (region == "decode.r6") return testing::reply(500, "{}");
      json advice = valid_advice(inner);
      if (region.find("prefill") != std::string::npos) advice["priority"].push_back("c77");
      return envelope(request, advice.dump());
    });
    ASSERT_EQ(compile(name("recorded"), flags(server, "all", "", 0)).status, 0);
  }  // the server is gone
  const fs::path advice_file = kWork / name("recorded") / "artifact" / "advice.json";
  const CliRun replay = compile(name("replayed"), "--advisor replay:" + advice_file.string() + " --advisor-scope all");
  ASSERT_EQ(replay.status, 0) << replay.output;
  const json a = metadata(name("recorded")), b = metadata(name("replayed"));
  const Totals ta = totals(a), tb = totals(b);
  EXPECT_GT(ta.failed, 0u);
  EXPECT_GT(ta.rejected, 0u);
  EXPECT_EQ(ta.accepted, tb.accepted);
  ASSERT_EQ(a["regions"].size(), b["regions"].size());
  for (size_t r = 0; r < a["regions"].size(); ++r) {
    const json &ra = a["regions"][r], &rb = b["regions"][r];
    for (const char* part : {"asked", "why", "request_hash", "accepted", "rejected", "ignored", "counts"})
      EXPECT_EQ(ra["advice"].value(part, json()), rb["advice"].value(part, json())) << ra["id"] << " " << part;
    if (ra["advice"].contains("exchange")) {
      EXPECT_EQ(ra["advice"]["exchange"]["ok"], rb["advice"]["exchange"]["ok"]);
      EXPECT_EQ(ra["advice"]["exchange"]["reply"], rb["advice"]["exchange"]["reply"]);
      EXPECT_EQ(rb["advice"]["exchange"]["source"], "replay");
    }
    EXPECT_EQ(ra["search"], rb["search"]) << ra["id"];
    EXPECT_EQ(ra["selection"], rb["selection"]) << ra["id"];
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AdvisorHttp, ::testing::Values("openai", "anthropic"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace agentcompile
