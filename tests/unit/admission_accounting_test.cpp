// Admission's accounting without a GPU: stage times add up, survive the worker's JSON and say which
// stage is which; the progress estimate of the time left follows the pace of measured candidates.
#include <gtest/gtest.h>

#include "pipeline/admission_session.h"
#include "tune/admission_times.h"

namespace agentcompile {
namespace {

TEST(AdmissionTimes, SumRoundTripAndNameEveryStage) {
  tune::AdmissionTimes a;
  a.reference_s = 1.5;
  a.timing_run_s = 2.0;
  a.workers = 1;
  a.candidates = 8;
  a.stopped_early = 3;
  tune::AdmissionTimes b;
  b.reference_s = 0.5;
  b.database_s = 0.25;
  b.chain_s = 4.0;
  b.candidates = 2;
  a += b;
  EXPECT_DOUBLE_EQ(a.reference_s, 2.0);
  EXPECT_DOUBLE_EQ(a.stages_s(), 2.0 + 2.0 + 0.25 + 4.0);
  EXPECT_EQ(a.candidates, 10);

  const nlohmann::json j = tune::to_json(a);
  EXPECT_DOUBLE_EQ(j.at("reference_s").get<double>(), 2.0);
  EXPECT_EQ(j.at("stopped_early").get<int>(), 3);
  const tune::AdmissionTimes back = tune::admission_times_from_json(j);
  EXPECT_DOUBLE_EQ(back.stages_s(), a.stages_s());
  EXPECT_EQ(back.workers, 1);

  double listed = 0;
  for (const auto& [name, seconds] : tune::admission_stages(a)) {
    EXPECT_TRUE(j.contains(name + "_s")) << name;
    listed += seconds;
  }
  EXPECT_DOUBLE_EQ(listed, a.stages_s()) << "every stage is listed once";
  EXPECT_DOUBLE_EQ(tune::admission_times_from_json(nlohmann::json("garbage")).stages_s(), 0.0);
}

TEST(AdmissionProgress, TimeLeftFollowsThePaceOfMeasuredCandidates) {
  EXPECT_LT(pipeline::admission_eta_s(0, 0, 100, 0.0), 0) << "nothing measured: unknown";
  EXPECT_LT(pipeline::admission_eta_s(40, 40, 100, 0.2), 0) << "only database hits so far: unknown";
  EXPECT_DOUBLE_EQ(pipeline::admission_eta_s(10, 0, 100, 20.0), 180.0);  // 2 s a candidate, 90 left
  EXPECT_DOUBLE_EQ(pipeline::admission_eta_s(20, 10, 100, 20.0), 160.0) << "database hits cost nothing";
  EXPECT_DOUBLE_EQ(pipeline::admission_eta_s(100, 0, 100, 50.0), 0.0);
  EXPECT_DOUBLE_EQ(pipeline::admission_eta_s(120, 0, 100, 50.0), 0.0) << "past the total (a region went on past its budget)";
}

}  // namespace
}  // namespace agentcompile
