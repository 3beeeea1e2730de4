// The C interface over FunctionRunner (include/agentcompile/runtime_c.h).
#include "agentcompile/runtime_c.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "agentcompile/function.h"

struct ac_function_runner {
  std::unique_ptr<agentcompile::FunctionRunner> runner;
};

namespace {

using agentcompile::Status;
using agentcompile::TensorSpec;

void set_error(char** error, const std::string& message) {
  if (!error) return;
  *error = static_cast<char*>(std::malloc(message.size() + 1));
  if (*error) std::memcpy(*error, message.c_str(), message.size() + 1);
}

int report(const Status& status, char** error) {
  if (status.is_ok()) return 0;
  set_error(error, status.to_string());
  return -1;
}

const TensorSpec* spec(const ac_function_runner* r, int which, int index) {
  if (!r || index < 0) return nullptr;
  const auto& specs = which == 0 ? r->runner->inputs() : r->runner->outputs();
  return static_cast<size_t>(index) < specs.size() ? &specs[static_cast<size_t>(index)] : nullptr;
}

}  // namespace

extern "C" {

ac_function_runner* ac_function_runner_load(const char* model, const char* function, const char* artifact, const char* cache_dir,
                                            void* stream, char** error) {
  if (!model || !function) {
    set_error(error, "ac_function_runner_load: model and function are required");
    return nullptr;
  }
  agentcompile::EngineOptions options;
  options.model = model;
  if (artifact && *artifact) options.artifact = artifact;
  if (cache_dir && *cache_dir) options.cache_dir = cache_dir;
  agentcompile::FunctionRunnerOptions runner_options;
  runner_options.stream = stream;
  auto loaded = agentcompile::FunctionRunner::load(options, function, runner_options);
  if (!loaded) {
    set_error(error, loaded.status().to_string());
    return nullptr;
  }
  return new ac_function_runner{std::move(*loaded)};
}

void ac_function_runner_free(ac_function_runner* runner) { delete runner; }
void ac_free_string(char* text) { std::free(text); }

int ac_function_runner_count(const ac_function_runner* r, int which) {
  if (!r) return 0;
  return static_cast<int>(which == 0 ? r->runner->inputs().size() : r->runner->outputs().size());
}
const char* ac_function_runner_name(const ac_function_runner* r, int which, int index) {
  const TensorSpec* s = spec(r, which, index);
  return s ? s->name.c_str() : nullptr;
}
const char* ac_function_runner_dtype(const ac_function_runner* r, int which, int index) {
  const TensorSpec* s = spec(r, which, index);
  return s ? s->dtype.c_str() : nullptr;
}
int ac_function_runner_rank(const ac_function_runner* r, int which, int index) {
  const TensorSpec* s = spec(r, which, index);
  return s ? static_cast<int>(s->shape.size()) : -1;
}
int64_t ac_function_runner_dim(const ac_function_runner* r, int which, int index, int axis) {
  const TensorSpec* s = spec(r, which, index);
  return s && axis >= 0 && static_cast<size_t>(axis) < s->shape.size() ? s->shape[static_cast<size_t>(axis)] : -1;
}

int ac_function_runner_copy_input(ac_function_runner* r, int index, uint64_t device_ptr, uint64_t bytes, char** error) {
  if (!r || index < 0) return report(agentcompile::error(agentcompile::ErrorCode::kInvalidArgument, "no runner or negative index"), error);
  return report(r->runner->copy_input_from_device(static_cast<size_t>(index), device_ptr, bytes), error);
}
int ac_function_runner_prepare_graph(ac_function_runner* r, char** error) {
  if (!r) return report(agentcompile::error(agentcompile::ErrorCode::kInvalidArgument, "no runner"), error);
  return report(r->runner->prepare_graph(), error);
}
int ac_function_runner_enqueue(ac_function_runner* r, char** error) {
  if (!r) return report(agentcompile::error(agentcompile::ErrorCode::kInvalidArgument, "no runner"), error);
  return report(r->runner->enqueue(), error);
}
int ac_function_runner_copy_output(ac_function_runner* r, int index, uint64_t device_ptr, uint64_t bytes, char** error) {
  if (!r || index < 0) return report(agentcompile::error(agentcompile::ErrorCode::kInvalidArgument, "no runner or negative index"), error);
  return report(r->runner->copy_output_to_device(static_cast<size_t>(index), device_ptr, bytes), error);
}
int ac_function_runner_synchronize(ac_function_runner* r, char** error) {
  if (!r) return report(agentcompile::error(agentcompile::ErrorCode::kInvalidArgument, "no runner"), error);
  return report(r->runner->synchronize(), error);
}
const char* ac_function_runner_artifact(const ac_function_runner* r) { return r ? r->runner->artifact().c_str() : nullptr; }

}  // extern "C"
