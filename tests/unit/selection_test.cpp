// Selection (tune/selection.h): the fastest validated candidate at the bucket's timing wins and its
// reason names the best fallback's time; the fallback is selected when nothing beats it; nothing is
// selected when nothing validated, with the rejections as the reason; without measurements the first
// compiled candidate stands in, unmeasured.
#include <gtest/gtest.h>

#include "tune/selection.h"

namespace agentcompile::tune {
namespace {

plan::Candidate candidate(const std::string& id, const std::string& family, bool fallback) {
  plan::Candidate c;
  c.id = id;
  c.family = family;
  c.fallback = fallback;
  return c;
}

// A validated result timed at each of `us` (one per timing size).
CandidateResult timed(const std::vector<double>& us) {
  CandidateResult r;
  r.validated = true;
  for (double t : us) {
    Timing timing;
    timing.median_us = t;
    r.timings.push_back(timing);
  }
  return r;
}

CandidateResult rejected(const std::string& why) {
  CandidateResult r;
  r.rejection = why;
  return r;
}

const std::vector<plan::Candidate> kCandidates = {candidate("c0", "gemv", false), candidate("c1", "gemv", false),
                                                  candidate("c2", "cublas_gemm", true)};

TEST(Selection, FastestValidatedWinsAtTheBucketsTiming) {
  const std::vector<CandidateResult> results = {timed({3.0, 30.0}), timed({4.0, 20.0}), timed({5.0, 25.0})};
  const Selection first = select_measured(kCandidates, results, 0, "t1-64");
  EXPECT_EQ(first.bucket, "t1-64");
  EXPECT_EQ(first.candidate, 0);
  EXPECT_TRUE(first.measured);
  EXPECT_EQ(first.reason, "fastest validated: 3.00 us vs fallback cublas_gemm 5.00 us");
  const Selection second = select_measured(kCandidates, results, 1, "t65-512");
  EXPECT_EQ(second.candidate, 1) << "the second timing is the second bucket's";
}

TEST(Selection, TheFallbackWhenNothingBeatsIt) {
  const std::vector<CandidateResult> results = {timed({6.0}), rejected("wrong numbers"), timed({5.0})};
  const Selection s = select_measured(kCandidates, results, 0, "decode");
  EXPECT_EQ(s.candidate, 2);
  EXPECT_EQ(s.reason, "fallback: no validated candidate beat it (5.00 us)");
}

TEST(Selection, NoneWhenNothingValidatedWithTheRejections) {
  const std::vector<CandidateResult> results = {rejected("NaN in out0"), rejected("fault: illegal address"), CandidateResult{}};
  const Selection s = select_measured(kCandidates, results, 0, "decode");
  EXPECT_EQ(s.candidate, -1);
  EXPECT_FALSE(s.measured);
  EXPECT_EQ(s.reason, "no candidate validated; c0: NaN in out0; c1: fault: illegal address");
  // A candidate validated at other sizes but not timed at this one does not count here either.
  EXPECT_EQ(select_measured(kCandidates, {timed({1.0}), CandidateResult{}, CandidateResult{}}, 1, "t65-512").candidate, -1);
}

TEST(Selection, UnmeasuredTakesTheFirstCompiledCandidate) {
  std::vector<codegen::CompileResult> compiled(3);
  compiled[1].ok = true;
  compiled[2].ok = true;
  const Selection s = select_unmeasured(compiled, "decode");
  EXPECT_EQ(s.candidate, 1);
  EXPECT_FALSE(s.measured);
  EXPECT_EQ(s.reason, "unmeasured: no GPU, heuristic order");
  EXPECT_EQ(select_unmeasured(std::vector<codegen::CompileResult>(2), "decode").reason, "no candidate compiled");
  EXPECT_EQ(select_unmeasured({}, "decode").candidate, -1);
}

}  // namespace
}  // namespace agentcompile::tune
