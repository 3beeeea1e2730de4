// Batched decode on the GPU (Engine::decode_rows, serve/engine_batch_backend.h), on a small random Qwen3
// in f16 compiled on first use with --batch-decode: six sequences decoded together in one decode_batch call
// per step, their prompts read through it in chunks, each in its own KV slot at its own position, give the
// logits each gets alone from prefill and the single-sequence decode step (teacher forced), within f16
// rounding, and so does a row of one sequence alone (the decode step on its slot); the serving backend
// runs six requests (two joining late) over the same engine, prompts through prefill on their slots,
// every served token the best under teacher forcing or within rounding of it. One test, so the model is
// compiled once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "agentcompile/first_use.h"
#include "frontend/init_random.h"
#include "frontend/model_builder.h"
#include "gpu_test_support.h"
#include "serve/engine_batch_backend.h"

namespace agentcompile::serve {
namespace {

namespace fs = std::filesystem;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "engine-batch-test";

TEST(EngineBatch, RowsOfManySequencesEqualEachAlone) {
  AC_REQUIRE_GPU();
  ASSERT_TRUE(testing::write_small_qwen3(kWork / "model", 7));
  EngineOptions options;
  options.model = kWork / "model";
  options.cache_dir = kWork / "cache";
  options.max_context = 256;
  options.batch_slots = 6;
  options.compile.batch_decode = true;
  options.compile.max_candidates = 3;
  options.compile.repetitions = 5;
  auto engine = load_engine(options, [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); });
  ASSERT_TRUE(engine) << engine.status().to_string();
  ASSERT_EQ((*engine)->info().batch_slots, 6);

  const int tokens = 12;
  const int64_t V = (*engine)->info().vocab_size;
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < 6; ++s) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 3 + 7 * s; ++i) prompt.push_back(static_cast<int32_t>((17 * s + 5 * i + 1) % 500));  // 3 .. 38 tokens
    prompts.push_back(prompt);
  }
  auto argmax = [&](const float* row) { return static_cast<int32_t>(std::max_element(row, row + V) - row); };

  // Batched: each prompt read through decode_rows in chunks of up to kMaxBatchRows rows in its own slot,
  // then every step one call over the six sequences at their different positions.
  std::vector<std::vector<std::vector<float>>> seen(prompts.size());  // per sequence, per step: logits [V]
  std::vector<std::vector<int32_t>> generated(prompts.size());
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto n = static_cast<int32_t>(prompts[s].size());
    for (int32_t start = 0; start < n; start += static_cast<int32_t>(kMaxBatchRows)) {
      const int32_t rows = std::min<int32_t>(static_cast<int32_t>(kMaxBatchRows), n - start);
      std::vector<int32_t> ids(prompts[s].begin() + start, prompts[s].begin() + start + rows), positions, slots(rows, static_cast<int32_t>(s));
      for (int32_t i = 0; i < rows; ++i) positions.push_back(start + i);
      auto logits = (*engine)->decode_rows(ids, positions, slots);
      ASSERT_TRUE(logits) << logits.status().to_string();
      if (start + rows == n) {
        seen[s].emplace_back(logits->end() - V, logits->end());
        generated[s].push_back(argmax(seen[s].back().data()));
      }
    }
  }
  for (int step = 1; step < tokens; ++step) {
    std::vector<int32_t> ids, positions, slots;
    for (size_t s = 0; s < prompts.size(); ++s) {
      ids.push_back(generated[s].back());
      positions.push_back(static_cast<int32_t>(prompts[s].size()) + step - 1);
      slots.push_back(static_cast<int32_t>(s));
    }
    auto logits = (*engine)->decode_rows(ids, positions, slots);
    ASSERT_TRUE(logits) << logits.status().to_string();
    for (size_t s = 0; s < prompts.size(); ++s) {
      seen[s].emplace_back(logits->begin() + static_cast<int64_t>(s) * V, logits->begin() + static_cast<int64_t>(s + 1) * V);
      generated[s].push_back(argmax(seen[s].back().data()));
    }
    // The same step again (it rewrites the same cache rows with the same values), asking each row for
    // something else: the device's greedy token is a maximum of the row the first call returned, and
    // the rows asked for come back whole, in order (equal to the first call's up to the kernels' own
    // run-to-run rounding, which a near tie between random weights' logits could otherwise turn).
    std::vector<RowNeed> needs;
    for (size_t s = 0; s < prompts.size(); ++s) needs.push_back(s % 3 == 0 ? RowNeed::kArgmax : s % 3 == 1 ? RowNeed::kLogits : RowNeed::kNothing);
    auto rows = (*engine)->decode_rows(ids, positions, slots, needs);
    ASSERT_TRUE(rows) << rows.status().to_string();
    ASSERT_EQ(rows->argmax.size(), prompts.size());
    ASSERT_EQ(rows->logits.size(), 2 * static_cast<size_t>(V));
    size_t full = 0;
    for (size_t s = 0; s < prompts.size(); ++s) {
      const std::vector<float>& first = seen[s].back();
      float scale = 1.f;
      for (float v : first) scale = std::max(scale, std::abs(v));
      if (needs[s] == RowNeed::kArgmax) {
        ASSERT_GE(rows->argmax[s], 0) << "step " << step << ", row " << s;
        ASSERT_LT(rows->argmax[s], V);
        EXPECT_GE(first[static_cast<size_t>(rows->argmax[s])], first[static_cast<size_t>(generated[s].back())] - 1e-3f * scale)
            << "step " << step << ", row " << s;
      } else {
        EXPECT_EQ(rows->argmax[s], -1);
      }
      if (needs[s] != RowNeed::kLogits) continue;
      float diff = 0.f;
      for (int64_t v = 0; v < V; ++v) diff = std::max(diff, std::abs(first[static_cast<size_t>(v)] - rows->logits[full * V + v]));
      ++full;
      EXPECT_LE(diff, 1e-3f * scale) << "step " << step << ", row " << s;
    }
    // One sequence's row alone runs the decode step on its slot (other kernels than decode_batch's):
    // the same logits within f16 rounding.
    const size_t alone = static_cast<size_t>(step) % prompts.size();
    auto single = (*engine)->decode_rows(std::span<const int32_t>(&ids[alone], 1), std::span<const int32_t>(&positions[alone], 1),
                                         std::span<const int32_t>(&slots[alone], 1));
    ASSERT_TRUE(single) << single.status().to_string();
    ASSERT_EQ(single->size(), static_cast<size_t>(V));
    float scale = 1.f, diff = 0.f;
    for (int64_t v = 0; v < V; ++v) {
      scale = std::max(scale, std::abs(seen[alone].back()[static_cast<size_t>(v)]));
      diff = std::max(diff, std::abs(seen[alone].back()[static_cast<size_t>(v)] - (*single)[static_cast<size_t>(v)]));
    }
    EXPECT_LE(diff, 0.03f * scale) << "step " << step << ", row " << alone << " alone on its slot";
  }

  // Each sequence alone through prefill and the decode step (teacher forced on the batched tokens): the same
  // logits within f16 rounding (other kernels at other row counts), and each batched token the best or within
  // that rounding of it. A row of another slot or position would be far off.
  for (size_t s = 0; s < prompts.size(); ++s) {
    std::vector<int32_t> ids = prompts[s];
    ids.insert(ids.end(), generated[s].begin(), generated[s].end() - 1);
    const auto n = static_cast<int64_t>(prompts[s].size());
    auto reference = (*engine)->teacher_forced_logits(ids, n);
    ASSERT_TRUE(reference) << reference.status().to_string();
    for (int step = 0; step < tokens; ++step) {
      const float* ref = reference->data() + (n - 1 + step) * V;
      const float best = *std::max_element(ref, ref + V);
      float scale = 1.f, diff = 0.f;
      for (int64_t v = 0; v < V; ++v) {
        scale = std::max(scale, std::abs(ref[v]));
        diff = std::max(diff, std::abs(ref[v] - seen[s][static_cast<size_t>(step)][static_cast<size_t>(v)]));
      }
      EXPECT_LE(diff, 0.03f * scale) << "sequence " << s << ", step " << step;
      EXPECT_GE(ref[generated[s][static_cast<size_t>(step)]], best - 0.03f * scale) << "sequence " << s << ", step " << step;
    }
  }

  // The serving backend over the same engine: six requests, two joining late, each runs to its length.
  EngineBatchBackend backend(std::move(*engine));
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<std::vector<int32_t>> served(prompts.size());
  for (size_t s = 0; s < 4; ++s) ASSERT_TRUE(backend.add(s, SequenceStart{prompts[s], greedy, tokens}));
  for (int step = 0; step < 200 && backend.size() > 0; ++step) {
    if (step == 3) {
      for (size_t s = 4; s < 6; ++s) ASSERT_TRUE(backend.add(s, SequenceStart{prompts[s], greedy, tokens}));
    }
    auto outputs = backend.step();
    ASSERT_TRUE(outputs) << outputs.status().to_string();
    for (const StepOutput& output : *outputs) {
      ASSERT_TRUE(output.status) << output.status.to_string();
      served[output.id].push_back(output.token);
      if (static_cast<int>(served[output.id].size()) == tokens) backend.drop(output.id);
    }
  }
  // Every served token (prompts read through prefill on their slots, decode rows through decode_batch
  // or, for a sequence decoding alone, the decode step on its slot) is the best of the logits each
  // sequence gets alone, teacher forced on what was served, or within rounding of it.
  for (size_t s = 0; s < prompts.size(); ++s) {
    ASSERT_EQ(served[s].size(), static_cast<size_t>(tokens)) << "sequence " << s;
    std::vector<int32_t> ids = prompts[s];
    ids.insert(ids.end(), served[s].begin(), served[s].end() - 1);
    const auto n = static_cast<int64_t>(prompts[s].size());
    auto reference = backend.engine().teacher_forced_logits(ids, n);
    ASSERT_TRUE(reference) << reference.status().to_string();
    for (int step = 0; step < tokens; ++step) {
      const float* ref = reference->data() + (n - 1 + step) * V;
      float scale = 1.f;
      for (int64_t v = 0; v < V; ++v) scale = std::max(scale, std::abs(ref[v]));
      EXPECT_GE(ref[served[s][static_cast<size_t>(step)]], *std::max_element(ref, ref + V) - 0.03f * scale)
          << "sequence " << s << ", served token " << step;
    }
  }
}

}  // namespace
}  // namespace agentcompile::serve
