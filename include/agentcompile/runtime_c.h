/* A C interface to agentcompile::FunctionRunner (agentcompile/function.h), for callers that are not C++:
 * python/agentcompile/runtime.py binds it with ctypes, so a captured module runs on tensors torch holds on
 * the GPU, on torch's stream, without copies through host memory.
 *
 * Every function returning int returns 0 on success; on failure it returns -1 and, when `error` is not
 * null, sets *error to a message to be released with ac_free_string. The runner never compiles: its
 * artifact must exist (agentcompile compile MODEL) and fit the model and GPU, else loading fails saying why.
 * Copies and calls are asynchronous on the stream given at load (the primary context's). */
#ifndef AGENTCOMPILE_RUNTIME_C_H
#define AGENTCOMPILE_RUNTIME_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_function_runner ac_function_runner;

/* `artifact` and `cache_dir` may be null or empty (the cached artifact, ~/.cache/agentcompile). */
ac_function_runner* ac_function_runner_load(const char* model, const char* function, const char* artifact,
                                            const char* cache_dir, void* stream, char** error);
void ac_function_runner_free(ac_function_runner* runner);
void ac_free_string(char* text);

/* Inputs (which = 0) and outputs (which = 1): count, and per tensor its name, dtype ("f32", "f16",
 * "bf16", "i32", "bool"), rank and dims. Strings live as long as the runner. */
int ac_function_runner_count(const ac_function_runner* runner, int which);
const char* ac_function_runner_name(const ac_function_runner* runner, int which, int index);
const char* ac_function_runner_dtype(const ac_function_runner* runner, int which, int index);
int ac_function_runner_rank(const ac_function_runner* runner, int which, int index);
int64_t ac_function_runner_dim(const ac_function_runner* runner, int which, int index, int axis);

int ac_function_runner_copy_input(ac_function_runner* runner, int index, uint64_t device_ptr, uint64_t bytes, char** error);
int ac_function_runner_prepare_graph(ac_function_runner* runner, char** error);
int ac_function_runner_enqueue(ac_function_runner* runner, char** error);
int ac_function_runner_copy_output(ac_function_runner* runner, int index, uint64_t device_ptr, uint64_t bytes, char** error);
int ac_function_runner_synchronize(ac_function_runner* runner, char** error);
/* The artifact directory the runner uses. */
const char* ac_function_runner_artifact(const ac_function_runner* runner);

#ifdef __cplusplus
}
#endif

#endif
