// `agentcompile run-function MODEL --inputs in.safetensors`: runs one function of a captured module
// (`agentcompile capture module`) on the GPU with the compiled kernels (compiling on first use), or
// with the CPU reference interpreter (--cpu); writes its outputs (--outputs), checks them against
// expected ones (--check, allclose with --atol/--rtol as KernelBench does; ints and bools exactly),
// and times the call (--time: CUDA events over a replayed CUDA graph, warm-up then repetitions,
// median). Inputs and outputs are safetensors files whose tensors are named as the function's
// arguments and results; an int64 input is narrowed to the i32 the IR takes (refused if a value does
// not fit), and a result the capture narrowed from int64 is written back as int64.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "agentcompile/first_use.h"
#include "agentcompile/function.h"
#include "commands.h"
#include "engine_flags.h"
#include "frontend/model_source.h"
#include "frontend/safetensors.h"
#include "ir/dtype.h"

namespace agentcompile::tools {

namespace {

struct RunFunctionFlags {
  EngineFlags engine;
  std::string function, inputs, outputs, check;
  double atol = 1e-2, rtol = 1e-2;
  bool cpu = false, time = false, no_cuda_graph_timing = false, json = false;
  int warmup = 10, repetitions = 100, threads = 0;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The tensors of a safetensors file, by name.
std::map<std::string, Tensor> read_tensors(const std::string& path) {
  auto file = frontend::SafetensorsFile::open(path);
  if (!file) fail(file.status().to_string());
  std::map<std::string, Tensor> tensors;
  for (const auto& entry : (*file)->header().tensors) {
    Tensor t;
    t.name = entry.name;
    t.dtype = std::string(ir::dtype_name(entry.dtype));
    t.shape = entry.shape;
    const uint8_t* bytes = (*file)->bytes(entry);
    t.data.assign(bytes, bytes + (entry.end - entry.begin));
    tensors.emplace(entry.name, std::move(t));
  }
  return tensors;
}

// `t` in the dtype of `spec`: int64 -> i32 (each value must fit), else the dtypes must agree.
Tensor conform(Tensor t, const TensorSpec& spec, const std::string& file) {
  if (t.dtype == "i64" && spec.dtype == "i32") {
    const size_t n = t.data.size() / 8;
    std::vector<uint8_t> narrowed(n * 4);
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, t.data.data() + 8 * i, 8);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        fail(file + ": " + t.name + "[" + std::to_string(i) + "] = " + std::to_string(v) + " does not fit the i32 the function takes");
      const auto w = static_cast<int32_t>(v);
      std::memcpy(narrowed.data() + 4 * i, &w, 4);
    }
    t.data = std::move(narrowed);
    t.dtype = "i32";
  }
  if (t.dtype != spec.dtype || t.shape != spec.shape)
    fail(file + ": " + t.name + " is " + t.dtype + shape_text(t.shape) + ", the function takes " + spec.dtype + shape_text(spec.shape));
  return t;
}

std::vector<Tensor> load_inputs(const std::string& path, const std::vector<TensorSpec>& specs) {
  std::map<std::string, Tensor> tensors = read_tensors(path);
  std::vector<Tensor> inputs;
  for (const TensorSpec& spec : specs) {
    auto it = tensors.find(spec.name);
    if (it == tensors.end()) fail(path + ": no tensor named '" + spec.name + "' (an input of the function)");
    inputs.push_back(conform(std::move(it->second), spec, path));
  }
  return inputs;
}

// The outputs' values as doubles (for comparison); bools and ints exactly.
std::vector<double> values_of(const Tensor& t) {
  const auto dtype = *ir::parse_dtype(t.dtype);
  const size_t n = t.data.size() / ir::dtype_size(dtype);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = t.data.data() + i * ir::dtype_size(dtype);
    switch (dtype) {
      case ir::DType::kF32: { float v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case ir::DType::kF16: { uint16_t b; std::memcpy(&b, p, 2); out[i] = ir::half_to_float(b); break; }
      case ir::DType::kBF16: { uint16_t b; std::memcpy(&b, p, 2); out[i] = ir::bf16_to_float(b); break; }
      case ir::DType::kI32: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case ir::DType::kI64: { int64_t v; std::memcpy(&v, p, 8); out[i] = static_cast<double>(v); break; }
      case ir::DType::kBool: out[i] = *p != 0; break;
      default: out[i] = std::nan("");
    }
  }
  return out;
}

struct Comparison {
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  size_t mismatches = 0, first_bad = 0;
};

// torch.allclose: |a - e| <= atol + rtol * |e|, NaN equal to NaN only where both are NaN.
Comparison compare(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  Comparison c;
  const std::vector<double> a = values_of(actual), e = values_of(expected);
  if (a.size() != e.size()) return {false, INFINITY, INFINITY, a.size() + e.size(), 0};
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    const double diff = std::fabs(a[i] - e[i]);
    const bool close = both_nan || diff <= atol + rtol * std::fabs(e[i]);
    if (!both_nan) {
      c.max_abs = std::max(c.max_abs, std::isnan(diff) ? INFINITY : diff);
      if (e[i] != 0) c.max_rel = std::max(c.max_rel, std::isnan(diff) ? INFINITY : diff / std::fabs(e[i]));
    }
    if (!close) {
      if (c.mismatches++ == 0) c.first_bad = i;
      c.ok = false;
    }
  }
  return c;
}

// An output as it is written: widened back to int64 where the capture narrowed it.
frontend::TensorToWrite to_write(const Tensor& t, const std::string& torch_dtype, std::vector<std::vector<uint8_t>>& keep) {
  frontend::TensorToWrite w{t.name, *ir::parse_dtype(t.dtype), t.shape, t.data.data()};
  if (t.dtype == "i32" && torch_dtype == "int64") {
    const size_t n = t.data.size() / 4;
    std::vector<uint8_t> wide(n * 8);
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, t.data.data() + 4 * i, 4);
      const int64_t x = v;
      std::memcpy(wide.data() + 8 * i, &x, 8);
    }
    keep.push_back(std::move(wide));
    w.dtype = ir::DType::kI64;
    w.data = keep.back().data();
  }
  return w;
}

void run_function(RunFunctionFlags flags) {
  const std::string model = flags.engine.model;
  auto source = frontend::open_model(model, /*with_weights=*/false);
  if (!source) fail(source.status().to_string());
  if (flags.function.empty()) {
    if (!source->capture || source->capture->functions.size() != 1)
      fail(model + ": give --function NAME (the model has " +
           (source->capture ? std::to_string(source->capture->functions.size()) + " functions" : std::string("no captured function")) + ")");
    flags.function = source->capture->functions.front().name;
  }
  auto signature = function_signature(model, flags.function);
  if (!signature) fail(signature.status().to_string());
  const std::vector<Tensor> inputs = load_inputs(flags.inputs, signature->first);

  nlohmann::json report = {{"model", model}, {"function", flags.function}, {"device", flags.cpu ? "cpu (reference interpreter)" : "gpu"}};
  std::vector<Tensor> outputs;
  std::unique_ptr<FunctionRunner> runner;
  if (flags.cpu) {
    auto result = run_function_reference(model, flags.function, inputs, flags.threads);
    if (!result) fail(result.status().to_string());
    outputs = std::move(*result);
  } else {
    auto loaded = load_function_runner(engine_options(flags.engine), flags.function, [&](const std::string& line) {
      if (!flags.json) std::fprintf(stderr, "%s\n", line.c_str());
    });
    if (!loaded) fail(loaded.status().to_string());
    runner = std::move(*loaded);
    report["artifact"] = runner->artifact();
    auto result = runner->run(inputs);
    if (!result) fail(result.status().to_string());
    outputs = std::move(*result);
  }

  const frontend::CapturedFunction* captured = source->capture ? source->capture->function(flags.function) : nullptr;
  if (!flags.outputs.empty()) {
    std::vector<frontend::TensorToWrite> writes;
    std::vector<std::vector<uint8_t>> keep;
    keep.reserve(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      writes.push_back(to_write(outputs[i], captured && i < captured->outputs.size() ? captured->outputs[i].torch_dtype : "", keep));
    if (Status s = frontend::write_safetensors(flags.outputs, writes, {{"function", flags.function}}); !s) fail(s.to_string());
  }

  bool all_ok = true;
  if (!flags.check.empty()) {
    std::map<std::string, Tensor> expected = read_tensors(flags.check);
    nlohmann::json checks = nlohmann::json::array();
    for (const Tensor& out : outputs) {
      auto it = expected.find(out.name);
      if (it == expected.end()) fail(flags.check + ": no tensor named '" + out.name + "' (an output of the function)");
      const Comparison c = compare(out, it->second, flags.atol, flags.rtol);
      all_ok &= c.ok;
      checks.push_back({{"output", out.name}, {"ok", c.ok}, {"max_abs_error", c.max_abs}, {"max_rel_error", c.max_rel},
                        {"mismatches", c.mismatches}});
      if (!flags.json)
        std::printf("%s %s: max abs error %.3g, max rel error %.3g%s\n", c.ok ? "ok  " : "FAIL", out.name.c_str(), c.max_abs, c.max_rel,
                    c.ok ? "" : (", " + std::to_string(c.mismatches) + " elements outside atol " + std::to_string(flags.atol) + " + rtol " +
                                 std::to_string(flags.rtol) + ", first at flat index " + std::to_string(c.first_bad)).c_str());
    }
    report["check"] = checks;
  }

  if (flags.time) {
    if (!runner) fail("--time needs the GPU (drop --cpu)");
    auto timing = runner->time(inputs, flags.warmup, flags.repetitions, !flags.no_cuda_graph_timing);
    if (!timing) fail(timing.status().to_string());
    report["timing"] = {{"median_ms", timing->median_ms}, {"repetitions", flags.repetitions}, {"warmup", flags.warmup},
                        {"cuda_graph", timing->cuda_graph}, {"launches", timing->launches}, {"ms", timing->ms}};
    if (!flags.json)
      std::printf("time: %.4f ms median over %d calls (%s, %zu launches per call)\n", timing->median_ms, flags.repetitions,
                  timing->cuda_graph ? "CUDA graph" : "kernel by kernel", timing->launches);
  }
  if (flags.json) std::printf("%s\n", report.dump().c_str());
  if (!all_ok) throw CLI::RuntimeError(1);
}

}  // namespace

void add_run_function_command(CLI::App& app) {
  auto flags = std::make_shared<RunFunctionFlags>();
  CLI::App* cmd = app.add_subcommand("run-function", "Run one function of a captured module on inputs from a safetensors file");
  add_engine_flags(*cmd, flags->engine);
  cmd->add_option("--function", flags->function, "Function to run (default: the capture's only function)");
  cmd->add_option("--inputs", flags->inputs, "safetensors file with one tensor per argument, named as the arguments")->required();
  cmd->add_option("--outputs", flags->outputs, "Write the results to this safetensors file");
  cmd->add_option("--check", flags->check, "safetensors file of expected results: exit 1 unless allclose");
  cmd->add_option("--atol", flags->atol, "Absolute tolerance of --check (default 1e-2)");
  cmd->add_option("--rtol", flags->rtol, "Relative tolerance of --check (default 1e-2)");
  cmd->add_flag("--cpu", flags->cpu, "Run on the CPU reference interpreter instead of the GPU");
  cmd->add_option("--threads", flags->threads, "Threads of the CPU reference (default: all cores)");
  cmd->add_flag("--time", flags->time, "Time the call on the GPU (CUDA events)");
  cmd->add_option("--warmup", flags->warmup, "Calls before timing (default 10)");
  cmd->add_option("--repetitions", flags->repetitions, "Timed calls (default 100)");
  cmd->add_flag("--no-cuda-graph-timing", flags->no_cuda_graph_timing, "Time kernel-by-kernel launches instead of a graph replay");
  cmd->add_flag("--json", flags->json, "Print one JSON object (checks, timing)");
  cmd->callback([flags] { run_function(*flags); });
}

}  // namespace agentcompile::tools
