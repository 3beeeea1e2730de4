// The host half of admission, timed without a GPU: for every unique region of a model (prefill and
// decode, as a compile forms them), the region's cases (weights, inputs and states drawn as the
// worker draws them), the reference, the timing data at every timing size, and the check of
// `--candidates` candidates' outputs against the reference (decode and compare per case and output,
// the inputs and weights compared with what was uploaded). A candidate's read-back outputs are the
// reference rounded to the output dtype, so every check runs to the end, as for a correct kernel.
// What the GPU does (uploads, launches, downloads) is not here; the read-backs' host buffers are.
//
//   build/tests/case_data_bench [config.json | capture directory] [--candidates N] [--threads N] [--only SUBSTRING]
// A capture directory (agentcompile capture, e.g. a KernelBench problem) is raised as compile raises it
// and every function of it is timed; its timing data is drawn as admission draws it (periodic past 16M).
// prints one line per region and the totals per stage: wall seconds (as the admission's stages count
// them) and CPU seconds of all threads (the work, whatever else the machine runs).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "analysis/extract.h"
#include "analysis/recognize/recognize.h"
#include "frontend/captured_model.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "plan/sizes.h"
#include "frontend/model_builder.h"
#include "tune/admission_steps.h"
#include "tune/region_cases.h"

using namespace agentcompile;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// CPU seconds of the process, every thread: the work done, whatever else the machine runs.
double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Totals {
  double case_data = 0, reference = 0, timing_data = 0, check = 0;         // wall
  double cases_cpu = 0, timing_cpu = 0, check_cpu = 0;                     // CPU, all threads
};

// The bytes a correct candidate hands back for `t` (the reference rounded to its dtype).
std::vector<uint8_t> read_back_of(const tune::TestTensor& t) { return tune::tensor_from_values(t.dtype, t.shape, t.values).bytes; }

// device_holds (device_sets.h) with a host copy standing for each piece's download.
bool holds(const std::vector<uint8_t>& device, const std::vector<uint8_t>& expected, std::vector<uint8_t>& staging) {
  constexpr size_t kPiece = size_t{64} << 20;
  staging.resize(std::max(staging.size(), std::min(expected.size(), kPiece)));
  for (size_t offset = 0; offset < expected.size(); offset += kPiece) {
    const size_t bytes = std::min(kPiece, expected.size() - offset);
    std::memcpy(staging.data(), device.data() + offset, bytes);
    if (std::memcmp(staging.data(), expected.data() + offset, bytes) != 0) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = std::string(AC_SOURCE_DIR) + "/configs/qwen3-1.7b.json";
  int candidates = 8;
  unsigned threads = 0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--candidates" && i + 1 < argc) candidates = std::stoi(argv[++i]);
    else if (arg == "--threads" && i + 1 < argc) threads = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (arg == "--only" && i + 1 < argc) only = argv[++i];
    else config_path = arg;
  }
  const tune::ScopedHostThreads pinned(threads);
  Expected<ir::Module> module = error(ErrorCode::kNotFound, "no model");
  int64_t max_positions = 4096;
  std::vector<std::string> functions = {"prefill", "decode"};
  if (frontend::is_capture_dir(config_path)) {
    auto manifest = frontend::read_capture_manifest(config_path);
    if (!manifest) return std::fprintf(stderr, "%s\n", manifest.status().to_string().c_str()), 1;
    auto captured = frontend::read_captured_module(config_path, *manifest);
    if (!captured) return std::fprintf(stderr, "%s\n", captured.status().to_string().c_str()), 1;
    module = analysis::recognize_module(*captured);
    if (module) {
      functions.clear();
      for (const ir::Function& f : module->functions) functions.push_back(f.name);
    }
  } else {
    auto config = frontend::read_hf_config(config_path);
    if (!config) return std::fprintf(stderr, "%s\n", config.status().to_string().c_str()), 1;
    max_positions = config->max_position_embeddings;
    module = frontend::build_module(*config);
  }
  if (!module) return std::fprintf(stderr, "%s\n", module.status().to_string().c_str()), 1;
  const std::vector<tune::Distribution> distributions = {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed};
  const int seeds = 3;

  tune::WeightCache cache;  // the worker's, for the whole compile
  std::vector<uint8_t> staging;
  Totals total;
  std::printf("%-12s %-18s %9s %9s %9s %9s | %9s %9s %9s\n", "region", "category", "case_data", "reference", "timing", "check",
              "cpu:cases", "timing", "check");
  for (const std::string& name : functions) {
    const ir::Function& function = *module->find_function(name);
    const auto partition = analysis::form_regions(*module, function, analysis::RegionOptions{});
    const auto unique = analysis::unique_regions(*module, function, partition, plan::summary_bindings(name, 1));
    const auto buckets = plan::buckets_for(function, max_positions);
    for (const auto& u : unique) {
      const tune::RegionBindings bindings = plan::validation_bindings(name, u.summary, 1);
      const std::string id = name + ".r" + std::to_string(u.id);
      if (!only.empty() && id.find(only) == std::string::npos) continue;
      auto region_module = analysis::extract_region(*module, function, partition.regions[static_cast<size_t>(u.sites.front())]);
      if (!region_module) return std::fprintf(stderr, "%s\n", region_module.status().to_string().c_str()), 1;
      auto layout = tune::region_layout(*region_module, bindings);
      if (!layout) return std::fprintf(stderr, "%s\n", layout.status().to_string().c_str()), 1;

      // The cases, as prepare_region builds them.
      tune::AdmissionTimes times;
      double cpu = cpu_now();
      auto cases = tune::build_region_cases(*region_module, bindings, seeds, distributions, &times, &cache);
      if (!cases) return std::fprintf(stderr, "%s\n", cases.status().to_string().c_str()), 1;
      const tune::RegionWeights weights = cases->front().params;
      const double cases_cpu = cpu_now() - cpu;

      // Timing data at every timing size (one case each, no reference), as upload_timing_sets draws it.
      auto start = Clock::now();
      cpu = cpu_now();
      for (const auto& size : plan::timing_sizes(name, u.summary, buckets)) {
        auto timing_layout = tune::region_layout(*region_module, size);
        if (!timing_layout) return std::fprintf(stderr, "%s\n", timing_layout.status().to_string().c_str()), 1;
        const tune::RegionCase data =
            tune::random_case(*region_module, *timing_layout, size, weights, 1, tune::Distribution::kNormal, tune::kTimingPeriodElements);
      }
      const double timing_s = since(start);
      const double timing_cpu = cpu_now() - cpu;

      // A correct candidate's read-backs, made once (the GPU's part), then checked per candidate as
      // admit_candidate checks them: inputs unchanged, outputs and states per case, weights unchanged.
      std::vector<std::vector<std::vector<uint8_t>>> outputs(cases->size()), states(cases->size());
      for (size_t k = 0; k < cases->size(); ++k) {
        const auto& c = (*cases)[k];
        outputs[k].resize(layout->outputs.size());
        for (size_t o = 0; o < layout->outputs.size(); ++o)
          if (layout->output_state[o] < 0) outputs[k][o] = read_back_of(c.expected_outputs[o]);
        for (const auto& s : c.expected_states) states[k].push_back(read_back_of(s));
      }
      start = Clock::now();
      cpu = cpu_now();
      for (int candidate = 0; candidate < candidates; ++candidate) {
        double max_abs = 0, max_rel = 0;
        for (size_t k = 0; k < cases->size(); ++k) {
          const auto& c = (*cases)[k];
          for (const auto& input : c.inputs)
            if (!holds(input.bytes, input.bytes, staging)) return 1;
          const std::string why = tune::check_case_outputs(*layout, c, outputs[k], states[k], max_abs, max_rel);
          if (!why.empty()) return std::fprintf(stderr, "%s: %s\n", id.c_str(), why.c_str()), 1;
        }
        for (const auto& w : weights)
          if (!holds(w->bytes, w->bytes, staging)) return 1;
      }
      const double check_s = since(start);
      const double check_cpu = cpu_now() - cpu;
      std::printf("%-12s %-18s %9.2f %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f\n", id.c_str(), analysis::category_name(u.summary.category),
                  times.case_data_s, times.reference_s, timing_s, check_s, cases_cpu, timing_cpu, check_cpu);
      std::fflush(stdout);
      total.case_data += times.case_data_s;
      total.reference += times.reference_s;
      total.timing_data += timing_s;
      total.check += check_s;
      total.cases_cpu += cases_cpu;
      total.timing_cpu += timing_cpu;
      total.check_cpu += check_cpu;
    }
  }
  std::printf("wall: case_data %.2f s, reference %.2f s, timing_data %.2f s, validation_check %.2f s\n"
              "cpu:  case_data + reference %.2f s, timing_data %.2f s, validation_check %.2f s\n"
              "(%d candidates per region, %u threads, %zu weights drawn)\n",
              total.case_data, total.reference, total.timing_data, total.check, total.cases_cpu, total.timing_cpu, total.check_cpu,
              candidates, threads ? threads : std::thread::hardware_concurrency(), cache.draws());
  return 0;
}
