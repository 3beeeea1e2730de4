// The advisor's pure parts: requests and schemas generated from a candidate space, the validator
// (every part accepted, rejected with a reason, or ignored), the advised measuring order, the scope
// rule, key redaction, the command runner (crash, hang, early exit), the replay file and the cache.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "advisor/advisor.h"
#include "advisor/backend.h"
#include "advisor/cache.h"
#include "advisor/request.h"
#include "advisor/secret.h"
#include "advisor/validate.h"
#include "support/sha256.h"

namespace agentcompile::advisor {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

plan::Candidate candidate(const std::string& id, const std::string& family, plan::ParamSet params, bool fallback = false) {
  plan::Candidate c;
  c.id = id;
  c.family = family;
  c.params = std::move(params);
  c.fallback = fallback;
  c.source_class = family == "cublas" ? "library" : "generated";
  c.fusion = "full";
  c.notes = {"note of " + id};
  return c;
}

// A decode gate/up GEMV + SiLU·mul region with four candidates of three families.
plan::RegionPlan gate_up_plan() {
  plan::RegionPlan p;
  p.function = "decode";
  p.unique_id = 6;
  p.sites = {3, 9};
  p.summary.category = analysis::Category::kGemvEpilogue;
  p.summary.op_sequence = {"linear", "linear", "silu", "mul"};
  p.summary.reduction_axes = {"linear:K=2048", "linear:K=2048"};
  p.summary.access_pattern = "weight-streaming";
  p.summary.flops = 5e7;
  p.summary.bytes = 5e7;
  p.candidates = {candidate("c0", "gemv", {{"rows", 1}, {"split", 1}, {"threads", 128}}),
                  candidate("c1", "gemv", {{"rows", 2}, {"split", 2}, {"threads", 256}}),
                  candidate("c2", "gemm", {{"bm", 32}, {"bn", 64}}),
                  candidate("c3", "cublas", {{"fallback", 1}}, true)};
  return p;
}

const json kDevice = {{"name", "h200"}, {"arch", "sm_90a"}};

Request request() { return advice_request("decode.r6", gate_up_plan(), kDevice); }

TEST(AdvisorRequest, IsCanonicalAndEnumeratesTheSpace) {
  const Request a = request(), b = request();
  EXPECT_EQ(a.canonical, b.canonical);
  EXPECT_EQ(a.hash, support::sha256_hex(a.canonical));
  EXPECT_EQ(a.body["allowed"]["candidates"], json({"c0", "c1", "c2", "c3"}));
  EXPECT_EQ(a.body["allowed"]["hints"]["rows"], json({1, 2}));
  EXPECT_EQ(a.body["allowed"]["hints"]["threads"], json({128, 256}));
  EXPECT_FALSE(a.body["allowed"]["hints"].contains("fallback"));
  EXPECT_EQ(a.body["region"]["category"], "gemv_epilogue");
  EXPECT_EQ(a.body["region"]["sites"], 2);
  EXPECT_EQ(a.body["candidates"][3]["fallback"], true);

  const json& props = a.schema["properties"];
  EXPECT_EQ(a.schema["additionalProperties"], false);
  EXPECT_EQ(props["region"]["enum"], json({"decode.r6"}));
  EXPECT_EQ(props["priority"]["items"]["enum"], json({"c0", "c1", "c2", "c3"}));
  EXPECT_EQ(props["hints"]["properties"]["split"]["enum"], json({1, 2, nullptr}));
  EXPECT_EQ(props["risks"]["items"]["properties"]["kind"]["enum"], json(risk_kinds()));
  EXPECT_NE(std::find(props["label"]["enum"].begin(), props["label"]["enum"].end(), "gemv_epilogue"), props["label"]["enum"].end());

  // Anything that changes the space changes the hash.
  plan::RegionPlan changed = gate_up_plan();
  changed.candidates[1].params["threads"] = 512;
  EXPECT_NE(advice_request("decode.r6", changed, kDevice).hash, a.hash);
  EXPECT_NE(advice_request("decode.r6", gate_up_plan(), json{{"name", "a100"}}).hash, a.hash);
  EXPECT_NE(prompt_text(a).find(a.canonical), std::string::npos);
}

TEST(AdvisorValidate, ValidAdviceIsAcceptedWhole) {
  const Verdict v = validate_advice(request(), R"({"region": "decode.r6", "label": "gemv_epilogue", "priority": ["c1", "c0"],
      "hints": {"rows": 2, "split": 2, "threads": null, "bm": null, "bn": null},
      "risks": [{"candidate": "c2", "kind": "performance", "note": "M=1 wastes tensor-core tiles"}]})");
  EXPECT_EQ(v.label, "gemv_epilogue");
  EXPECT_EQ(v.priority, (std::vector<std::string>{"c1", "c0"}));
  EXPECT_EQ(v.hints, (std::map<std::string, int64_t>{{"rows", 2}, {"split", 2}}));
  ASSERT_EQ(v.risks.size(), 1u);
  EXPECT_EQ(v.risks[0].candidate, "c2");
  EXPECT_EQ(v.accepted_count(), 6u);
  EXPECT_TRUE(v.rejected.empty());
  EXPECT_TRUE(v.ignored.empty());
}

TEST(AdvisorValidate, PartialAdviceKeepsItsValidParts) {
  const Verdict v = validate_advice(request(), R"({"region": "decode.r6", "label": "gemv_gate_up_silu",
      "priority": ["c3", "c9", "c1", "c3", 7], "hints": {"rows": 8, "vec": 4, "split": "2", "threads": 256},
      "risks": [{"candidate": "c7", "kind": "numerics"}, {"candidate": "c0", "kind": "vibes"}, "x"],
      "confidence": 0.9})");
  EXPECT_EQ(v.label, "");
  EXPECT_EQ(v.priority, (std::vector<std::string>{"c3", "c1"}));
  EXPECT_EQ(v.hints, (std::map<std::string, int64_t>{{"threads", 256}}));
  EXPECT_TRUE(v.risks.empty());
  std::map<std::string, int> kinds;
  for (const auto& r : v.rejected) {
    ++kinds[r.kind];
    EXPECT_FALSE(r.reason.empty()) << r.part;
  }
  EXPECT_EQ(kinds["unknown_label"], 1);
  EXPECT_EQ(kinds["unknown_candidate"], 3);  // c9, 7, risks[0].candidate
  EXPECT_EQ(kinds["value_outside_space"], 2);  // rows=8, split="2"
  EXPECT_EQ(kinds["unknown_parameter"], 1);  // vec
  EXPECT_EQ(kinds["unknown_risk_kind"], 1);
  EXPECT_EQ(kinds["malformed"], 1);  // risks[2]
  ASSERT_EQ(v.ignored.size(), 2u);  // the duplicate c3 and "confidence"
  EXPECT_EQ(v.ignored[0].part, "confidence");
  EXPECT_EQ(v.ignored[1].part, "priority[3]");
  for (const auto& r : v.rejected) {
    if (r.part == "hints.rows") {
      EXPECT_NE(r.reason.find("values: 1, 2"), std::string::npos) << r.reason;
    }
  }
}

TEST(AdvisorValidate, UnreadableOrForeignRepliesAreRejectedWhole) {
  for (const auto& [reply, kind] : std::vector<std::pair<std::string, std::string>>{
           {"{\"region\": \"decode.r6\", \"priority\": [\"c1\"", "not_json"},
           {"I think c1 is fastest", "not_json"},
           {"[\"c1\"]", "not_object"},
           {R"({"region": "decode.r2", "priority": ["c1"]})", "wrong_region"}}) {
    const Verdict v = validate_advice(request(), reply);
    ASSERT_EQ(v.rejected.size(), 1u) << reply;
    EXPECT_EQ(v.rejected[0].kind, kind) << reply;
    EXPECT_EQ(v.accepted_count(), 0u) << reply;
  }
  const Verdict fenced = validate_advice(request(), "```json\n{\"priority\": [\"c2\"]}\n```");
  EXPECT_EQ(fenced.priority, std::vector<std::string>{"c2"});
}

TEST(AdvisorValidate, DiagnosesAreRecordedNeverUsed) {
  const plan::RegionPlan p = gate_up_plan();
  const Request r = diagnosis_request("decode.r6", p, p.candidates[1], "error: identifier \"foo\" is undefined", kDevice);
  EXPECT_EQ(r.schema["properties"]["candidate"]["enum"], json({"c1"}));
  EXPECT_EQ(r.body["nvrtc_log"], "error: identifier \"foo\" is undefined");
  std::string text;
  const Verdict v = judge_diagnosis(r, R"({"diagnosis": "split=2 needs a workspace", "suspect_parameters": ["split"]})", &text);
  EXPECT_EQ(v.accepted_count(), 0u);
  ASSERT_EQ(v.ignored.size(), 1u);
  EXPECT_NE(text.find("split=2 needs a workspace"), std::string::npos);
}

TEST(AdvisorOrder, PriorityFirstThenHintsThenHeuristic) {
  const auto candidates = gate_up_plan().candidates;
  EXPECT_EQ(advised_order(candidates, {}), (std::vector<int>{0, 1, 2, 3}));
  Verdict v;
  v.priority = {"c2"};
  v.hints = {{"rows", 2}, {"split", 2}};
  EXPECT_EQ(advised_order(candidates, v), (std::vector<int>{2, 1, 0, 3}));
  v.priority = {"c3", "c0"};
  v.hints.clear();
  EXPECT_EQ(advised_order(candidates, v), (std::vector<int>{3, 0, 1, 2}));
}

TEST(AdvisorScope, AutoAsksWhereSemanticsHelp) {
  plan::RegionPlan p = gate_up_plan();
  EXPECT_TRUE(scope_decision(p, "auto").ask);  // silu, mul epilogue
  p.summary.op_sequence = {"linear", "add"};
  EXPECT_FALSE(scope_decision(p, "auto").ask);  // a residual add alone
  EXPECT_TRUE(scope_decision(p, "all").ask);
  p.summary.category = analysis::Category::kRmsNorm;
  p.summary.op_sequence = {"rmsnorm"};
  EXPECT_FALSE(scope_decision(p, "auto").ask);
  p.summary.op_sequence = {"add", "rmsnorm"};
  EXPECT_TRUE(scope_decision(p, "auto").ask);
  EXPECT_NE(scope_decision(p, "auto").why.find("mixed"), std::string::npos);
  p.summary.category = analysis::Category::kReductionPointwise;
  p.summary.op_sequence = {"reduce_max"};
  EXPECT_TRUE(scope_decision(p, "auto").ask);
  p.summary.category = analysis::Category::kGather;
  EXPECT_FALSE(scope_decision(p, "auto").ask);
  p.candidates.resize(1);
  p.summary.category = analysis::Category::kReductionPointwise;
  EXPECT_FALSE(scope_decision(p, "auto").ask);  // nothing to order
  EXPECT_TRUE(scope_decision(p, "all").ask);
  p.candidates.clear();
  EXPECT_FALSE(scope_decision(p, "all").ask);
}

TEST(AdvisorSecret, RedactsKeysAndFragmentsOfThem) {
  Secret s("sk-test-0123456789abcdefXYZ");
  s.add("ant-key-99999999");
  EXPECT_EQ(s.redact("Bearer sk-test-0123456789abcdefXYZ."), "Bearer [REDACTED].");
  EXPECT_EQ(s.redact("Incorrect API key provided: sk-test-01****defXYZ"), "Incorrect API key provided: [REDACTED]****defXYZ");
  EXPECT_EQ(s.redact("key 0123456789abcdef here"), "key [REDACTED] here");
  EXPECT_EQ(s.redact("x-api-key=ant-key-99999999"), "x-api-key=[REDACTED]");
  EXPECT_EQ(s.redact("sk-test is a prefix only"), "sk-test is a prefix only");
  EXPECT_EQ(Secret().redact("nothing to hide"), "nothing to hide");
}

TEST(AdvisorRunCommand, AnswersCrashesHangsAndEarlyExits) {
  CommandResult echo = run_command("cat", "{\"a\": 1}", 5);
  EXPECT_TRUE(echo.ok) << echo.error;
  EXPECT_EQ(echo.out, "{\"a\": 1}");

  CommandResult crash = run_command("echo partial; kill -SEGV $$", "prompt", 5);
  EXPECT_FALSE(crash.ok);
  EXPECT_NE(crash.error.find("signal 11"), std::string::npos) << crash.error;

  CommandResult status = run_command("echo oops >&2; exit 3", "prompt", 5);
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.error.find("status 3: oops"), std::string::npos) << status.error;

  const auto start = std::chrono::steady_clock::now();
  CommandResult hang = run_command("sleep 30; echo late", "prompt", 0.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(hang.ok);
  EXPECT_NE(hang.error.find("no answer within 0.5 s"), std::string::npos) << hang.error;
  EXPECT_LT(took, 5.0);

  // A program that answers without reading a large prompt must not kill us with SIGPIPE.
  CommandResult early = run_command("echo '{}'", std::string(1 << 22, 'x'), 5);
  EXPECT_TRUE(early.ok) << early.error;
  EXPECT_EQ(early.out, "{}\n");
}

TEST(AdvisorReplay, AnswersFromTheRecordedExchanges) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "advisor-validate-test" / "replay";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Request r = request();
  std::ofstream(dir / "advice.json") << json{{"format", "agentcompile-advice/1"},
                                             {"exchanges", {{r.hash, {{"ok", true}, {"reply", "{\"priority\": [\"c1\"]}"}, {"attempts", 2}}}}}}
                                            .dump();
  AdvisorOptions options;
  options.backend = "replay:" + dir.string();  // the artifact directory works as well as the file
  auto backend = make_backend(options);
  ASSERT_TRUE(backend.has_value()) << backend.status().to_string();
  const Reply hit = (*backend)->ask(r, std::chrono::steady_clock::now());
  EXPECT_TRUE(hit.ok);
  EXPECT_EQ(hit.text, "{\"priority\": [\"c1\"]}");
  plan::RegionPlan other = gate_up_plan();
  other.candidates.pop_back();
  const Reply miss = (*backend)->ask(advice_request("decode.r6", other, kDevice), std::chrono::steady_clock::now());
  EXPECT_FALSE(miss.ok);
  EXPECT_NE(miss.error.find("no recorded exchange"), std::string::npos);

  options.backend = "replay:" + (dir / "missing.json").string();
  EXPECT_FALSE(make_backend(options).has_value());
  options.backend = "openai";
  EXPECT_FALSE(make_backend(options).has_value());  // no --advisor-model
  options.backend = "telepathy";
  EXPECT_FALSE(make_backend(options).has_value());
}

TEST(AdvisorCache, StoresByRequestHashPerBackend) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "advisor-validate-test" / "cache";
  fs::remove_all(dir);
  AdviceCache cache(dir, "openai:m@http://x"), other(dir, "openai:other@http://x");
  const Request r = request();
  EXPECT_FALSE(cache.load(r));
  Exchange e;
  e.ok = true;
  e.reply = "{\"priority\": [\"c0\"]}";
  cache.store(r, e);
  ASSERT_TRUE(cache.load(r));
  EXPECT_EQ(*cache.load(r), e.reply);
  EXPECT_FALSE(other.load(r));
  EXPECT_EQ(cache.path_of(r).filename().string(), r.hash + ".json");
  Exchange failed;
  failed.error = "HTTP 500";
  other.store(r, failed);  // failures are not cached
  EXPECT_FALSE(other.load(r));
}

TEST(Advisor, AsksInScopeRecordsEveryExchangeAndCountsDiagnosesAsIgnored) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "advisor-validate-test" / "advisor";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Answers advice with a priority and a diagnosis with a text, whichever it is asked for.
  std::ofstream(dir / "answer.sh") << "#!/bin/sh\nif grep -q nvrtc_log; then echo '{\"diagnosis\": \"bad split\"}'; "
                                      "else echo '{\"priority\": [\"c2\"], \"mood\": 1}'; fi\n";
  fs::permissions(dir / "answer.sh", fs::perms::owner_all);
  AdvisorOptions options;
  options.backend = "command:" + (dir / "answer.sh").string();
  options.cache_dir = dir / "cache";
  std::vector<std::string> log;
  auto advisor = Advisor::create(options, dir / "unused", kDevice, [&](const std::string& line) { log.push_back(line); });
  ASSERT_TRUE(advisor.has_value()) << advisor.status().to_string();
  const plan::RegionPlan plan = gate_up_plan();

  RegionAdvice advice = (*advisor)->advise("decode.r6", plan);
  EXPECT_TRUE(advice.asked);
  ASSERT_TRUE(advice.exchange.has_value());
  EXPECT_TRUE(advice.exchange->ok);
  EXPECT_EQ(advice.exchange->source, "backend");
  EXPECT_EQ(advice.verdict.priority, std::vector<std::string>{"c2"});
  ASSERT_EQ(advice.verdict.ignored.size(), 1u);
  advice.diagnoses.push_back((*advisor)->diagnose("decode.r6", plan, plan.candidates[1], "error: split"));
  EXPECT_NE(advice.diagnoses[0].text.find("bad split"), std::string::npos);

  plan::RegionPlan residual = gate_up_plan();
  residual.summary.op_sequence = {"linear", "add"};
  const RegionAdvice skipped = (*advisor)->advise("decode.r5", residual);
  EXPECT_FALSE(skipped.asked);
  EXPECT_NE(skipped.why.find("simple epilogue"), std::string::npos);

  const AdviceCounts counts = count_advice({&advice, &skipped});
  EXPECT_EQ(counts.asked, 1u);
  EXPECT_EQ(counts.not_asked, 1u);
  EXPECT_EQ(counts.accepted, 1u);
  EXPECT_EQ(counts.ignored, 2u);  // "mood" and the diagnosis
  EXPECT_EQ(counts.diagnoses, 1u);
  EXPECT_NE(counts_line("x", counts).find("1 diagnoses recorded"), std::string::npos);

  const json record = (*advisor)->record();
  EXPECT_EQ(record["exchanges"].size(), 2u);
  EXPECT_EQ(record["exchanges"][advice.exchange->request_hash]["kind"], "advice");
  EXPECT_EQ(record["exchanges"][advice.diagnoses[0].exchange.request_hash]["kind"], "diagnosis");
  EXPECT_EQ(log.size(), 2u);

  // A second advisor on the same cache answers from it.
  auto again = Advisor::create(options, dir / "unused", kDevice);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ((*again)->advise("decode.r6", plan).exchange->source, "cache");
  AdvisorOptions bad_scope;
  bad_scope.scope = "sometimes";
  EXPECT_FALSE(Advisor::create(bad_scope, dir, kDevice).has_value());
}

}  // namespace
}  // namespace agentcompile::advisor
