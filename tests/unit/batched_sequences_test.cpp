// The rows of a batched backend's steps (serve/batched_sequences.h), with a scripted row runner: decode
// rows come first, prompt chunks fill what the step's row limit leaves, a sequence yields a token only
// when its prompt ends or it decodes, each row carries its sequence's position and slot, freed slots are
// reused, and limits are errors.
#include "serve/batched_sequences.h"

#include <gtest/gtest.h>

namespace agentcompile::serve {
namespace {

constexpr int64_t kVocab = 50;

struct Call {
  std::vector<int32_t> tokens, positions, slots;
  std::vector<RowNeed> needs;
};

// Logits whose argmax is (token + position + slot) % vocab, so every token depends on the row's fields.
RowRunner scripted(std::vector<Call>& calls) {
  return [&calls](const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions, const std::vector<int32_t>& slots,
                  const std::vector<RowNeed>& needs) {
    calls.push_back({tokens, positions, slots, needs});
    std::vector<float> logits(tokens.size() * kVocab, 0.f);
    for (size_t r = 0; r < tokens.size(); ++r) logits[r * kVocab + (tokens[r] + positions[r] + slots[r]) % kVocab] = 1.f;
    return Expected<DecodedRows>(rows_from_logits(std::move(logits), kVocab, needs));
  };
}

SequenceStart greedy(std::vector<int32_t> prompt, int64_t tokens) {
  SamplingParams sampling;
  sampling.temperature = 0;
  return SequenceStart{std::move(prompt), sampling, tokens};
}

TEST(BatchedSequences, DecodeRowsFirstThenPromptChunksWithinTheRowLimit) {
  BatchedSequences sequences(BatchLimits{3, 64, 4, 5, kVocab});
  std::vector<Call> calls;
  ASSERT_TRUE(sequences.add(1, greedy({1, 2}, 4)));
  auto first = sequences.step(scripted(calls));  // the 2-token prompt in one chunk: yields
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].token, (2 + 1 + 0) % kVocab);  // last prompt token 2 at position 1 in slot 0
  ASSERT_TRUE(sequences.add(2, greedy({5, 6, 7, 8, 9, 10, 11}, 2)));
  auto second = sequences.step(scripted(calls));
  ASSERT_TRUE(second);
  // One decode row for sequence 1, then 4 prompt rows of sequence 2 (its chunk; the limit of 5 allows 4).
  EXPECT_EQ(calls.back().tokens, (std::vector<int32_t>{3, 5, 6, 7, 8}));
  EXPECT_EQ(calls.back().positions, (std::vector<int32_t>{2, 0, 1, 2, 3}));
  EXPECT_EQ(calls.back().slots, (std::vector<int32_t>{0, 1, 1, 1, 1}));
  ASSERT_EQ(second->size(), 1u) << "sequence 2 is still reading its prompt";
  ASSERT_TRUE(sequences.add(3, greedy({20, 21, 22, 23, 24, 25}, 2)));
  auto third = sequences.step(scripted(calls));
  ASSERT_TRUE(third);
  // Decode row of 1, the last 3 prompt tokens of 2, then 1 row left for 3's prompt.
  EXPECT_EQ(calls.back().tokens.size(), 5u);
  EXPECT_EQ(calls.back().slots, (std::vector<int32_t>{0, 1, 1, 1, 2}));
  EXPECT_EQ(calls.back().positions, (std::vector<int32_t>{3, 4, 5, 6, 0}));
  EXPECT_EQ(third->size(), 2u) << "1 decodes, 2 ends its prompt";
  sequences.drop(1);
  ASSERT_TRUE(sequences.add(4, greedy({30}, 1)));
  auto fourth = sequences.step(scripted(calls));
  ASSERT_TRUE(fourth);
  // 2 decodes, 3 reads 4 more of its prompt: no row left for 4, which waits a step.
  EXPECT_EQ(calls.back().slots, (std::vector<int32_t>{1, 2, 2, 2, 2}));
  auto fifth = sequences.step(scripted(calls));
  ASSERT_TRUE(fifth);
  EXPECT_EQ(calls.back().slots, (std::vector<int32_t>{1, 2, 0})) << "the freed slot 0 serves the new sequence";
  EXPECT_EQ(fifth->size(), 3u);
}

// With prompts apart (the GPU engine's mode), the decode rows are one call and each prompt chunk a call
// of its own, the chunks of a step within prefill_chunk rows in all; tokens are the same as one call
// per step would give, since every row's logits depend on its own fields only.
TEST(BatchedSequences, PromptsApartRunEachChunkAsACallOfItsOwn) {
  BatchLimits limits{3, 64, 4, 16, kVocab};
  limits.prompts_apart = true;
  BatchedSequences sequences(limits);
  std::vector<Call> calls;
  ASSERT_TRUE(sequences.add(1, greedy({1, 2}, 3)));
  ASSERT_TRUE(sequences.add(2, greedy({5, 6, 7}, 2)));
  auto first = sequences.step(scripted(calls));
  ASSERT_TRUE(first);
  // No decode rows yet: 1's whole prompt (2 rows), then 2 of 2's 3 (the step's 4 prompt rows).
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(calls[0].slots, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(calls[0].needs, (std::vector<RowNeed>{RowNeed::kNothing, RowNeed::kArgmax}));
  EXPECT_EQ(calls[1].tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(calls[1].slots, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(calls[1].needs, (std::vector<RowNeed>{RowNeed::kNothing, RowNeed::kNothing}));
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].token, (2 + 1 + 0) % kVocab);
  ASSERT_TRUE(sequences.add(3, greedy({9, 9, 9, 9, 9, 9}, 2)));
  auto second = sequences.step(scripted(calls));
  ASSERT_TRUE(second);
  // 1 decodes alone in a call; 2 ends its prompt (1 row); 3 gets the 3 prompt rows left.
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[2].tokens, (std::vector<int32_t>{3}));
  EXPECT_EQ(calls[2].positions, (std::vector<int32_t>{2}));
  EXPECT_EQ(calls[3].tokens, (std::vector<int32_t>{7}));
  EXPECT_EQ(calls[3].positions, (std::vector<int32_t>{2}));
  EXPECT_EQ(calls[4].tokens, (std::vector<int32_t>{9, 9, 9}));
  EXPECT_EQ(calls[4].slots, (std::vector<int32_t>{2, 2, 2}));
  ASSERT_EQ(second->size(), 2u) << "1 decodes, 2 ends its prompt";
  EXPECT_EQ((*second)[1].token, (7 + 2 + 1) % kVocab);
  auto third = sequences.step(scripted(calls));
  ASSERT_TRUE(third);
  // 1 and 2 decode together in one call; 3 reads its last 3 prompt rows in another.
  ASSERT_EQ(calls.size(), 7u);
  EXPECT_EQ(calls[5].slots, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(calls[6].positions, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(third->size(), 3u);
}

// A step asks of each row only what its sequence samples from: nothing of a prompt row before its
// chunk's last, the greedy token of a greedy sequence, the logits row of one that samples (or wants
// log-probabilities); each gets its token from what came back.
TEST(BatchedSequences, EachRowAsksForWhatItsSamplerNeeds) {
  BatchedSequences sequences(BatchLimits{3, 64, 4, 0, kVocab});
  std::vector<Call> calls;
  ASSERT_TRUE(sequences.add(1, greedy({1, 2, 3}, 3)));
  SamplingParams sampled;
  sampled.temperature = 0.7f;
  sampled.top_k = 1;  // a draw from the one most likely token: the argmax, through the sampling path
  sampled.seed = 5;
  ASSERT_TRUE(sequences.add(2, SequenceStart{{4, 5}, sampled, 3}));
  SamplingParams logprobs;
  logprobs.temperature = 0;
  logprobs.logprobs = true;
  ASSERT_TRUE(sequences.add(3, SequenceStart{{6}, logprobs, 3}));
  auto first = sequences.step(scripted(calls));
  ASSERT_TRUE(first);
  EXPECT_EQ(calls.back().needs, (std::vector<RowNeed>{RowNeed::kNothing, RowNeed::kNothing, RowNeed::kArgmax, RowNeed::kNothing,
                                                      RowNeed::kLogits, RowNeed::kLogits}));
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0].token, (3 + 2 + 0) % kVocab);
  EXPECT_EQ((*first)[1].token, (5 + 1 + 1) % kVocab);
  EXPECT_EQ((*first)[2].token, (6 + 0 + 2) % kVocab);
  auto second = sequences.step(scripted(calls));
  ASSERT_TRUE(second);
  EXPECT_EQ(calls.back().needs, (std::vector<RowNeed>{RowNeed::kArgmax, RowNeed::kLogits, RowNeed::kLogits}));
  // A runner that returns the wrong shape is an error, not a wrong token.
  auto broken = sequences.step([](const std::vector<int32_t>& tokens, const std::vector<int32_t>&, const std::vector<int32_t>&,
                                  const std::vector<RowNeed>&) { return Expected<DecodedRows>(DecodedRows{std::vector<int32_t>(tokens.size(), -1), {}}); });
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.status().message().find("with logits) returned 0 logits"), std::string::npos) << broken.status().message();
}

TEST(BatchedSequences, LimitsAreErrors) {
  BatchedSequences sequences(BatchLimits{1, 8, 4, 0, kVocab});
  EXPECT_EQ(sequences.add(1, greedy({}, 1)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(sequences.add(1, greedy({1, 2, 3}, 7)).code(), ErrorCode::kResourceExhausted) << "3 + 7 - 1 rows > 8";
  EXPECT_EQ(sequences.add(1, greedy({kVocab}, 1)).code(), ErrorCode::kInvalidArgument) << "id past the vocabulary";
  ASSERT_TRUE(sequences.add(1, greedy({1}, 1)));
  EXPECT_EQ(sequences.add(2, greedy({1}, 1)).code(), ErrorCode::kResourceExhausted) << "one slot";
  auto wrong = sequences.step([](const std::vector<int32_t>&, const std::vector<int32_t>&, const std::vector<int32_t>&, const std::vector<RowNeed>&) {
    return Expected<DecodedRows>(DecodedRows{{3}, std::vector<float>(3)});
  });
  EXPECT_FALSE(wrong) << "logits of the wrong size";
}

}  // namespace
}  // namespace agentcompile::serve
