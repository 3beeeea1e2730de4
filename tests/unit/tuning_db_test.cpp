// The tuning database (tune/tuning_db.h) without a GPU: what its keys depend on, a result stored by
// one compile and found by the next, misses when anything in the key changes, damaged files and
// entries ignored with a warning (never an error), concurrent stores merged, --retune reading
// nothing, and stored early-stopped timings standing only while still clearly behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/durable_files.h"
#include "tune/tuning_db.h"

namespace agentcompile::tune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "tuning-db-test" / name;
  fs::remove_all(dir);
  return dir;
}

plan::Candidate candidate(const std::string& id, int block) {
  plan::Candidate c;
  c.id = id;
  c.family = "gemv";
  c.spelled_name = "gemv_f16_t" + std::to_string(block);
  c.params = {{"threads", block}};
  plan::Launch launch;
  launch.kernel = c.spelled_name;
  launch.block_x = block;
  launch.grid_x = {0, 2048, 8};
  c.launches.push_back(launch);
  return c;
}

codegen::CompileResult compiled(const std::string& key) {
  codegen::CompileResult r;
  r.ok = true;
  r.key = key;
  return r;
}

RegionTuningKey region_key(const std::string& signature = "fusion{rms_norm(in0,p0:f16[2048],)->f16[1,2048] }") {
  RegionTuningKey key;
  key.context = {{"format", kTuningDbFormat}, {"device", {{"name", "NVIDIA H100 80GB HBM3"}, {"arch", "sm_90a"}}},
                 {"toolkit", "12.8"}, {"compiler", "agentcompile-compiler/5 abc"}, {"region", signature}};
  key.validation = {1, 512, 77};
  key.seeds = 3;
  key.distributions = {Distribution::kNormal, Distribution::kHeavyTailed};
  return key;
}

Timing timing_at(RegionBindings at, double median, bool stopped = false, double fastest = 0, double bar = 0) {
  Timing t;
  t.bindings = at;
  t.median_us = median;
  t.p10_us = median * 0.98;
  t.p90_us = median * 1.03;
  t.repetitions = stopped ? 5 : 30;
  t.launches_per_sample = 4;
  t.buffer_sets = 3;
  t.stopped_early = stopped;
  t.fastest_us = fastest > 0 ? fastest : median * 0.97;
  t.stop_bar_us = bar;
  return t;
}

CandidateResult validated(const plan::Candidate& c, std::vector<Timing> timings) {
  CandidateResult r;
  r.id = c.id;
  r.name = c.name();
  r.compiled = r.validated = r.measured = true;
  r.max_abs_error = 1.5e-3;
  r.max_rel_error = 2.5e-4;
  r.cases = 6;
  r.timings = std::move(timings);
  r.median_us = r.timings.front().median_us;
  return r;
}

const std::vector<RegionBindings> kSizes = {{1, 512, 77}, {1, 3072, 2047}};

TEST(TuningDb, FingerprintFollowsEverythingThatShapesTheKernel) {
  const std::string base = candidate_fingerprint(candidate("c0", 256), compiled("k1"));
  EXPECT_EQ(base, candidate_fingerprint(candidate("c0", 256), compiled("k1")));
  EXPECT_EQ(base, candidate_fingerprint(candidate("c7", 256), compiled("k1"))) << "the id is only a position in this compile's list";
  EXPECT_NE(base, candidate_fingerprint(candidate("c0", 256), compiled("k2"))) << "another source";
  plan::Candidate wider = candidate("c0", 256);
  wider.launches[0].grid_x.fixed = 4096;
  EXPECT_NE(base, candidate_fingerprint(wider, compiled("k1"))) << "another grid";
  plan::Candidate workspace = candidate("c0", 256);
  workspace.workspace_bytes_fixed = 64;
  EXPECT_NE(base, candidate_fingerprint(workspace, compiled("k1")));
  plan::Candidate roles = candidate("c0", 256);
  roles.match.roles["x"] = "in1";
  EXPECT_NE(base, candidate_fingerprint(roles, compiled("k1"))) << "bound to other slots";
}

TEST(TuningDb, OneCompileStoresTheNextFindsAndFlagsItReused) {
  const fs::path dir = fresh_dir("roundtrip");
  const TuningDb db(dir);
  const RegionTuningKey key = region_key();
  const plan::Candidate fast = candidate("c0", 256), slow = candidate("c1", 128), wrong = candidate("c2", 64);
  const std::string f_fast = candidate_fingerprint(fast, compiled("k-fast"));
  const std::string f_slow = candidate_fingerprint(slow, compiled("k-slow"));
  const std::string f_wrong = candidate_fingerprint(wrong, compiled("k-wrong"));
  {
    std::vector<std::string> warnings;
    TuningFile file = db.load(key.context, warnings);
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(file.size(), 0u);
    EXPECT_FALSE(find_result(file, key, fast, f_fast, kSizes).has_value());
    put_result(file, key, f_fast, validated(fast, {timing_at(kSizes[0], 10.0), timing_at(kSizes[1], 30.0)}));
    put_result(file, key, f_slow, validated(slow, {timing_at(kSizes[0], 40.0, true, 39.0, 10.0), timing_at(kSizes[1], 31.0)}));
    CandidateResult rejected;
    rejected.id = wrong.id;
    rejected.name = wrong.name();
    rejected.compiled = true;
    rejected.rejection = "output 0 (seed 2, heavy-tailed): max error 0.4 > tolerance 0.01";
    rejected.max_abs_error = 0.4;
    put_result(file, key, f_wrong, rejected);
    CandidateResult faulted = rejected;
    faulted.faulted = true;
    faulted.rejection = "fault: no answer within 60 s (killed)";
    put_result(file, key, candidate_fingerprint(candidate("c3", 32), compiled("k3")), faulted);
    ASSERT_TRUE(db.store(file).is_ok());
  }
  // Written once, atomically: the file and the lock, no temporaries left beside them.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == ".lock" || entry.path().extension() == ".json") << name;
    files += entry.path().extension() == ".json";
  }
  EXPECT_EQ(files, 1u);

  std::vector<std::string> warnings;
  const TuningFile file = db.load(key.context, warnings);
  EXPECT_TRUE(warnings.empty());
  const auto found = find_result(file, key, fast, f_fast, kSizes);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->reused);
  EXPECT_TRUE(found->validated);
  EXPECT_TRUE(found->measured);
  EXPECT_EQ(found->id, "c0");
  EXPECT_EQ(found->cases, 6);
  EXPECT_DOUBLE_EQ(found->max_rel_error, 2.5e-4);
  ASSERT_EQ(found->timings.size(), 2u);
  EXPECT_DOUBLE_EQ(found->timings[0].median_us, 10.0);
  EXPECT_DOUBLE_EQ(found->timings[1].median_us, 30.0);
  EXPECT_EQ(found->timings[1].bindings.L, 3072);
  EXPECT_DOUBLE_EQ(found->median_us, 10.0);

  const auto stopped = find_result(file, key, slow, f_slow, kSizes);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_TRUE(stopped->timings[0].stopped_early);
  EXPECT_DOUBLE_EQ(stopped->timings[0].stop_bar_us, 10.0);

  const auto rejected = find_result(file, key, wrong, f_wrong, kSizes);
  ASSERT_TRUE(rejected.has_value()) << "a rejection is reused too: the same kernel on the same data fails the same way";
  EXPECT_FALSE(rejected->validated);
  EXPECT_NE(rejected->rejection.find("seed 2"), std::string::npos);
  EXPECT_FALSE(find_result(file, key, candidate("c3", 32), candidate_fingerprint(candidate("c3", 32), compiled("k3")), kSizes).has_value())
      << "faults are not kept";

  // A reused result is not written back as if measured again.
  TuningFile again = db.load(key.context, warnings);
  put_result(again, key, f_fast, *found);
  EXPECT_FALSE(again.changed());
}

TEST(TuningDb, AnythingElseInTheKeyIsAMiss) {
  const fs::path dir = fresh_dir("misses");
  const TuningDb db(dir);
  const RegionTuningKey key = region_key();
  const plan::Candidate c = candidate("c0", 256);
  const std::string f = candidate_fingerprint(c, compiled("k"));
  std::vector<std::string> warnings;
  TuningFile file = db.load(key.context, warnings);
  put_result(file, key, f, validated(c, {timing_at(kSizes[0], 10.0), timing_at(kSizes[1], 30.0)}));
  ASSERT_TRUE(db.store(file).is_ok());
  const TuningFile back = db.load(key.context, warnings);
  ASSERT_TRUE(find_result(back, key, c, f, kSizes).has_value());

  EXPECT_FALSE(find_result(back, key, c, candidate_fingerprint(c, compiled("other source")), kSizes).has_value());
  EXPECT_FALSE(find_result(back, key, c, f, {kSizes[0], {1, 9216, 8191}}).has_value()) << "a bucket never timed";
  EXPECT_TRUE(find_result(back, key, c, f, {kSizes[1]}).has_value()) << "a subset of the timed buckets is enough";
  RegionTuningKey more_seeds = key;
  more_seeds.seeds = 4;
  EXPECT_FALSE(find_result(back, more_seeds, c, f, kSizes).has_value());
  RegionTuningKey uniform = key;
  uniform.distributions = {Distribution::kUniform};
  EXPECT_FALSE(find_result(back, uniform, c, f, kSizes).has_value());
  RegionTuningKey reps = key;
  reps.repetitions = 50;
  EXPECT_FALSE(find_result(back, reps, c, f, kSizes).has_value()) << "timed with other repetitions";

  // Another device, toolkit, compiler or region is another file, and the file says whose it is.
  for (const char* field : {"device", "toolkit", "compiler", "region"}) {
    RegionTuningKey other = key;
    other.context[field] = "something else";
    EXPECT_NE(db.path_of(other.context), db.path_of(key.context)) << field;
    const TuningFile none = db.load(other.context, warnings);
    EXPECT_EQ(none.size(), 0u) << field;
  }
  EXPECT_TRUE(warnings.empty());
}

TEST(TuningDb, DamagedFilesAndEntriesAreIgnoredWithAWarning) {
  const fs::path dir = fresh_dir("damaged");
  const TuningDb db(dir);
  const RegionTuningKey key = region_key();
  const plan::Candidate c = candidate("c0", 256), d = candidate("c1", 128);
  const std::string fc = candidate_fingerprint(c, compiled("kc")), fd = candidate_fingerprint(d, compiled("kd"));
  fs::create_directories(dir);

  // Not JSON at all (a torn write of some other tool, a full disk): ignored, and the next store rewrites it.
  ASSERT_TRUE(support::replace_file_atomically(db.path_of(key.context), "{\"format\": \"agentcompile-tun").is_ok());
  std::vector<std::string> warnings;
  TuningFile file = db.load(key.context, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(db.path_of(key.context).string()), std::string::npos) << warnings[0];
  EXPECT_EQ(file.size(), 0u);
  put_result(file, key, fc, validated(c, {timing_at(kSizes[0], 10.0)}));
  put_result(file, key, fd, validated(d, {timing_at(kSizes[0], 12.0)}));
  ASSERT_TRUE(db.store(file).is_ok());
  warnings.clear();
  ASSERT_EQ(db.load(key.context, warnings).size(), 4u);  // a validation and a timing each for c and d
  EXPECT_TRUE(warnings.empty());

  // Entries of the wrong shape, or under a name their key does not hash to: each ignored on its own.
  auto bytes = support::read_file_bytes(db.path_of(key.context));
  ASSERT_TRUE(bytes.has_value());
  json doc = json::parse(*bytes);
  size_t broken = 0;
  for (auto& [hash, entry] : doc["entries"].items()) {
    if (entry["key"]["kind"] == "validation" && entry["key"]["candidate"] == fd) {
      entry["value"]["validated"] = "yes";  // a string where a flag belongs
      ++broken;
    }
  }
  ASSERT_EQ(broken, 1u);
  doc["entries"]["0000000000000000000000000000000000000000000000000000000000000000"] = {{"key", {{"kind", "timing"}}}, {"value", 1}};
  doc["entries"]["not-even-an-object"] = 42;
  ASSERT_TRUE(support::replace_file_atomically(db.path_of(key.context), doc.dump()).is_ok());
  warnings.clear();
  const TuningFile damaged = db.load(key.context, warnings);
  EXPECT_EQ(warnings.size(), 3u);
  EXPECT_TRUE(find_result(damaged, key, c, fc, {kSizes[0]}).has_value()) << "the sound entries are still used";
  EXPECT_FALSE(find_result(damaged, key, d, fd, {kSizes[0]}).has_value());

  // A file that belongs to another context (copied by hand, a hash collision) is not used.
  RegionTuningKey other = region_key("another region");
  fs::copy_file(db.path_of(key.context), db.path_of(other.context));
  warnings.clear();
  EXPECT_EQ(db.load(other.context, warnings).size(), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("another region context"), std::string::npos) << warnings[0];

  // The right format and context, but entries that are not an object.
  ASSERT_TRUE(support::replace_file_atomically(db.path_of(key.context),
                                               json{{"format", kTuningDbFormat}, {"context", key.context}, {"entries", json::array()}}.dump())
                  .is_ok());
  warnings.clear();
  EXPECT_EQ(db.load(key.context, warnings).size(), 0u);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(TuningDb, StoresOfTwoCompilesMerge) {
  const fs::path dir = fresh_dir("merge");
  const TuningDb db(dir);
  const RegionTuningKey key = region_key();
  const plan::Candidate a = candidate("c0", 256), b = candidate("c1", 128);
  const std::string fa = candidate_fingerprint(a, compiled("ka")), fb = candidate_fingerprint(b, compiled("kb"));
  std::vector<std::string> warnings;
  // Both read the empty database, then store one after the other: neither loses the other's entries.
  TuningFile first = db.load(key.context, warnings), second = db.load(key.context, warnings);
  put_result(first, key, fa, validated(a, {timing_at(kSizes[0], 10.0)}));
  put_result(second, key, fb, validated(b, {timing_at(kSizes[0], 11.0)}));
  ASSERT_TRUE(db.store(first).is_ok());
  ASSERT_TRUE(db.store(second).is_ok());
  const TuningFile merged = db.load(key.context, warnings);
  EXPECT_TRUE(find_result(merged, key, a, fa, {kSizes[0]}).has_value());
  EXPECT_TRUE(find_result(merged, key, b, fb, {kSizes[0]}).has_value());
  EXPECT_TRUE(warnings.empty());
}

TEST(TuningDb, StoredResultsRespectRetuneAndTheEarlyStopBar) {
  const RegionTuningKey key = region_key();
  const std::vector<plan::Candidate> candidates = {candidate("c0", 256), candidate("c1", 128), candidate("c2", 64)};
  std::vector<std::string> fingerprints;
  for (const auto& c : candidates) fingerprints.push_back(candidate_fingerprint(c, compiled(c.id)));
  TuningFile file(key.context);
  const std::vector<RegionBindings> one = {kSizes[0]};
  // c0 ran in full at 10 us; c1 stopped early (fastest 14 us against a bar of 10 us); c2 is unknown.
  put_result(file, key, fingerprints[0], validated(candidates[0], {timing_at(kSizes[0], 10.0)}));
  put_result(file, key, fingerprints[1], validated(candidates[1], {timing_at(kSizes[0], 15.0, true, 14.0, 10.0)}));

  auto got = stored_results(file, key, candidates, fingerprints, {0, 1, 2}, one, {}, 0.25, false);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].has_value());
  EXPECT_TRUE(got[1].has_value()) << "14 us is still more than 1.25 x 10 us behind the best";
  EXPECT_FALSE(got[2].has_value());

  EXPECT_FALSE(stored_results(file, key, candidates, fingerprints, {0, 1}, one, {}, 0.25, true)[0].has_value()) << "--retune reads nothing";

  // Asked for c1 alone: nothing this compile knows is a full timing, so its early stop cannot stand.
  got = stored_results(file, key, candidates, fingerprints, {1}, one, {}, 0.25, false);
  EXPECT_FALSE(got[0].has_value());
  // With a larger margin (or none: the ablation) it is measured again as well.
  EXPECT_FALSE(stored_results(file, key, candidates, fingerprints, {0, 1}, one, {}, 0.5, false)[1].has_value());
  EXPECT_FALSE(stored_results(file, key, candidates, fingerprints, {0, 1}, one, {}, 0.0, false)[1].has_value());
  // Against a best this compile measured itself (an earlier batch of the region).
  CandidateResult earlier = validated(candidates[2], {timing_at(kSizes[0], 9.0)});
  got = stored_results(file, key, candidates, fingerprints, {1}, one, {earlier}, 0.25, false);
  EXPECT_TRUE(got[0].has_value());
  earlier.timings[0].median_us = 12.0;  // 14 us is not clearly behind 12 us: measure it
  got = stored_results(file, key, candidates, fingerprints, {1}, one, {earlier}, 0.25, false);
  EXPECT_FALSE(got[0].has_value());
}

}  // namespace
}  // namespace agentcompile::tune
