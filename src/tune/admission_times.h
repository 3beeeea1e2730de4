// Where admission's time goes, stage by stage. The worker measures what it does (random data, the
// reference, the context, uploads, launches, read-backs, timing) and the compiler's process the
// tuning database; the compile adds them up per region and in all and reports them (metadata.json
// "compile_seconds.admission", report.md), so one GPU run shows what a cold compile spends where.
// Every number is a measured wall-clock time, never an estimate.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentcompile::tune {

struct AdmissionTimes {
  // The compiler's process.
  double database_s = 0;           // the tuning database read and written (tune/tuning_db.h)
  // Host work in the worker.
  double case_data_s = 0;          // random inputs, weights and cache contents of the validation cases
  double reference_s = 0;          // the interpreter's outputs for every case
  double timing_data_s = 0;        // random inputs and cache contents at the timing sizes
  // The worker.
  double worker_start_s = 0;       // fork, CUDA context and cuBLAS handle, until the worker answers
  double weights_upload_s = 0;     // a region's weights to the device (once per region and worker)
  double module_load_s = 0;        // candidates' cubins loaded
  double validation_upload_s = 0;  // per case: buffers allocated, inputs and states copied, outputs poisoned
  double validation_run_s = 0;     // per case: the launches and the wait for them
  double validation_check_s = 0;   // per case: outputs read back and compared; inputs and weights checked unchanged
  double timing_buffers_s = 0;     // rotating buffer sets allocated and filled
  double timing_run_s = 0;         // warm-up, the batch probe and the timed repetitions
  double chain_s = 0;              // the decode layer timed as a chain (tune/layer_chain.h)
  int workers = 0;                 // worker processes started (one, plus one after each fault)
  int candidates = 0, validated = 0, timings = 0, stopped_early = 0;

  AdmissionTimes& operator+=(const AdmissionTimes& other);
  double stages_s() const;  // the sum of every stage above
};

nlohmann::json to_json(const AdmissionTimes& times);
AdmissionTimes admission_times_from_json(const nlohmann::json& j);

// The stages as (name, seconds) in report order, for tables.
std::vector<std::pair<std::string, double>> admission_stages(const AdmissionTimes& times);

}  // namespace agentcompile::tune
