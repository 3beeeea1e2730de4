// The planner: for each unique region, a bounded, ranked, diverse list of candidates.
//
// Order of authority (tinygrad's): an explicit plan would come first, then measured search over
// this list, then these heuristics, which only order it. Every candidate names a template family
// that exists and matched the region's interface, with parameters its hardware filter accepted.
// The space is capped per region; a diversity filter keeps the best of each family before filling
// up by score, and the fallback (library call or conservative kernel) is always kept.
#pragma once

#include <string>
#include <vector>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "ir/graph.h"
#include "plan/candidate.h"
#include "plan/device_profile.h"

namespace agentcompile::plan {

struct PlannerOptions {
  int max_candidates = 8;  // per region, fallback included
  bool library_matmuls = false;  // matmul regions: only the cuBLAS fallback family (an ablation)
  bool split_tf32 = true;        // fp32 matmuls may get the 3xTF32 candidate (cublas.h); off: fp32 arithmetic only
};

struct RegionPlan {
  std::string function;
  int unique_id = 0;              // r<id> within the function
  std::vector<int> sites;         // region indices in the function's partition
  analysis::RegionSummary summary;
  std::vector<Candidate> candidates;  // heuristic order; ids c0.. follow it
  std::vector<std::string> families_matched;
  int enumerated = 0;             // choices before the cap
  std::string unplanned_reason;   // set when no family matched (the compile reports it)
};

std::vector<RegionPlan> plan_function(const ir::Module& module, const ir::Function& function,
                                      const analysis::RegionPartition& partition,
                                      const std::vector<analysis::UniqueRegion>& unique, const DeviceProfile& device,
                                      const PlannerOptions& options);

}  // namespace agentcompile::plan
