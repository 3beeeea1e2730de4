// Admission stage times: sums and their JSON form (see admission_times.h).
#include "tune/admission_times.h"

namespace agentcompile::tune {

namespace {

// Every stage once, in report order: the sums, the JSON and the tables all walk this list.
constexpr std::pair<const char*, double AdmissionTimes::*> kStages[] = {
    {"database", &AdmissionTimes::database_s},
    {"case_data", &AdmissionTimes::case_data_s},
    {"reference", &AdmissionTimes::reference_s},
    {"worker_start", &AdmissionTimes::worker_start_s},
    {"weights_upload", &AdmissionTimes::weights_upload_s},
    {"module_load", &AdmissionTimes::module_load_s},
    {"validation_upload", &AdmissionTimes::validation_upload_s},
    {"validation_run", &AdmissionTimes::validation_run_s},
    {"validation_check", &AdmissionTimes::validation_check_s},
    {"timing_data", &AdmissionTimes::timing_data_s},
    {"timing_buffers", &AdmissionTimes::timing_buffers_s},
    {"timing_run", &AdmissionTimes::timing_run_s},
    {"chain", &AdmissionTimes::chain_s},
};

constexpr std::pair<const char*, int AdmissionTimes::*> kCounts[] = {
    {"workers", &AdmissionTimes::workers},
    {"candidates", &AdmissionTimes::candidates},
    {"validated", &AdmissionTimes::validated},
    {"timings", &AdmissionTimes::timings},
    {"stopped_early", &AdmissionTimes::stopped_early},
};

}  // namespace

AdmissionTimes& AdmissionTimes::operator+=(const AdmissionTimes& other) {
  for (const auto& [name, member] : kStages) this->*member += other.*member;
  for (const auto& [name, member] : kCounts) this->*member += other.*member;
  return *this;
}

double AdmissionTimes::stages_s() const {
  double sum = 0;
  for (const auto& [name, member] : kStages) sum += this->*member;
  return sum;
}

nlohmann::json to_json(const AdmissionTimes& times) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, member] : kStages) j[std::string(name) + "_s"] = times.*member;
  for (const auto& [name, member] : kCounts) j[name] = times.*member;
  return j;
}

AdmissionTimes admission_times_from_json(const nlohmann::json& j) {
  AdmissionTimes times;
  if (!j.is_object()) return times;
  for (const auto& [name, member] : kStages) times.*member = j.value(std::string(name) + "_s", 0.0);
  for (const auto& [name, member] : kCounts) times.*member = j.value(name, 0);
  return times;
}

std::vector<std::pair<std::string, double>> admission_stages(const AdmissionTimes& times) {
  std::vector<std::pair<std::string, double>> stages;
  for (const auto& [name, member] : kStages) stages.emplace_back(name, times.*member);
  return stages;
}

}  // namespace agentcompile::tune
