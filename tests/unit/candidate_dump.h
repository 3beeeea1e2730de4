// Every candidate the planner makes for a corpus of models, written down whole: the record as the
// planner made it (id, family, name, template, fusion, form, score, fallback, params, match, launches,
// workspace, notes) and the rendered CUDA source. A refactor of the families or renderers that must
// not change what the compiler does is checked against it (tests/unit/candidate_golden_test.cpp).
//
// Corpus: configs/qwen3-1.7b.json, llama-3.2-1b.json (also with decode_batch) and qwen3-4b.json, every captured directory
// under tests/fixtures/captured/ (modules and tiny LMs: Gemma-3, Phi-3, OLMo-2, ...) and the
// KernelBench-style primitive modules (tests/unit/primitive_modules.h) in f32 and f16. Each is
// planned on an H200 and an A100 profile, fused (as `compile` does), unfused (--unfused) and with
// library matmuls (--cublas-matmuls), with the compile's cap of 8 candidates per region and with every
// enumerated choice.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/render.h"
#include "emit/model_module.h"
#include "frontend/model_source.h"
#include "ir/text.h"
#include "plan/planner.h"
#include "plan/sizes.h"
#include "primitive_modules.h"
#include "support/sha256.h"

namespace agentcompile::testing {

// One planned candidate: where it was planned, its record as JSON text and its source ("" for
// library calls only).
struct DumpedCandidate {
  std::string setting;  // DumpSetting::name()
  std::string region;   // "decode r3"
  std::string id;       // "c0", or "unplanned" for a region no family implements
  std::string family;
  std::string record;   // JSON (or the unplanned reason)
  std::string source;   // "" for library calls only
};

struct DumpSetting {
  std::string device;     // a named profile: h200, a100
  bool unfused = false;   // --unfused
  bool library_matmuls = false;  // --cublas-matmuls
  int max_candidates = 8; // the compile's default cap, or a large one for every enumerated choice
  std::string name() const {
    return device + (unfused ? "-unfused" : "") + (library_matmuls ? "-cublas" : "") + (max_candidates == 8 ? "" : "-all");
  }
};

inline std::vector<DumpSetting> dump_settings() {
  return {{"h200", false, false, 8},  {"a100", false, false, 8},      {"h200", true, false, 8},
          {"h200", false, true, 8},   {"h200", false, false, 100000}, {"a100", false, false, 100000}};
}

inline nlohmann::json dump_record(const plan::Candidate& c) {
  auto extent = [](const plan::Extent& e) { return nlohmann::json{e.per_token, e.fixed, e.divisor}; };
  nlohmann::json launches = nlohmann::json::array();
  for (const auto& l : c.launches)
    launches.push_back({{"kernel", l.kernel}, {"grid", {extent(l.grid_x), extent(l.grid_y), extent(l.grid_z)}}, {"block", l.block_x},
                        {"shared_bytes", l.shared_bytes}, {"library", l.library}, {"library_args", l.library_args}});
  std::ostringstream score;
  score << std::setprecision(17) << c.score;
  return {{"id", c.id}, {"family", c.family}, {"name", c.name()}, {"template", c.template_file}, {"fusion", c.fusion},
          {"form", c.form}, {"score", score.str()}, {"fallback", c.fallback}, {"source_class", c.source_class},
          {"params", c.params}, {"variant", c.match.variant}, {"roles", c.match.roles}, {"facts", c.match.facts},
          {"dtype", ir::dtype_name(c.match.dtype)}, {"out_dtype", ir::dtype_name(c.match.out_dtype)}, {"launches", launches},
          {"workspace", {c.workspace_bytes_per_token, c.workspace_bytes_fixed}}, {"notes", c.notes}};
}

// Plans every function of `module` (but @init, which the compile does not plan) as `compile` does.
inline void dump_module(const ir::Module& module, const std::function<int64_t(const std::string&)>& run_tokens,
                        const DumpSetting& setting, std::vector<DumpedCandidate>& out) {
  auto profile = plan::named_device_profile(setting.device);
  ASSERT_TRUE(profile.has_value());
  for (const ir::Function& function : module.functions) {
    if (function.name == "init") continue;
    const bool fused = !setting.unfused;
    auto partition = analysis::form_regions(module, function, analysis::RegionOptions{.norm_prologue = fused,
                                                                                     .residual_norm_prologue = fused,
                                                                                     .matmul_fusion = fused,
                                                                                     .attention_prologue = fused});
    auto unique = analysis::unique_regions(module, function, partition, plan::summary_bindings(function.name, run_tokens(function.name)));
    plan::PlannerOptions options;
    options.max_candidates = setting.max_candidates;
    options.library_matmuls = setting.library_matmuls;
    for (const auto& plan : plan::plan_function(module, function, partition, unique, *profile, options)) {
      const std::string region = function.name + " r" + std::to_string(plan.unique_id);
      if (plan.candidates.empty()) out.push_back({setting.name(), region, "unplanned", "", plan.unplanned_reason, ""});
      for (const auto& c : plan.candidates) {
        std::string source;
        if (codegen::has_generated_launch(c)) {
          auto rendered = codegen::render_source(c);
          ASSERT_TRUE(rendered.has_value()) << setting.name() << " " << region << " " << c.id << ": " << rendered.status().to_string();
          source = *rendered;
        }
        out.push_back({setting.name(), region, c.id, c.family, dump_record(c).dump(), source});
      }
    }
  }
}

struct DumpedModel {
  std::string name;  // "qwen3-1.7b", "captured-tiny-gemma3", "primitive-softmax_f16"
  std::vector<DumpedCandidate> candidates;
};

// `quantize`: the model compiled with --quantize (its linear weights in a row format, ir/quant.h);
// `batch_decode`: with decode_batch too (compile --batch-decode).
inline void dump_source(const std::filesystem::path& path, const std::string& name, std::vector<DumpedModel>& out,
                        const std::string& quantize = "", const emit::ModuleShard& shard = {}, bool batch_decode = false) {
  auto formats = frontend::weight_format_options(quantize, false, /*gpu=*/true);
  ASSERT_TRUE(formats.has_value()) << name << ": " << formats.status().to_string();
  auto source = frontend::open_model(path, /*with_weights=*/false, *formats);
  ASSERT_TRUE(source.has_value()) << name << ": " << source.status().to_string();
  auto prepared = emit::model_module(*source, batch_decode, shard);
  ASSERT_TRUE(prepared.has_value()) << name << ": " << prepared.status().to_string();
  DumpedModel model{name, {}};
  for (const DumpSetting& setting : dump_settings())
    dump_module(prepared->module, [&](const std::string& f) { return source->run_tokens(f); }, setting, model.candidates);
  out.push_back(std::move(model));
}

inline std::vector<DumpedModel> dump_corpus() {
  namespace fs = std::filesystem;
  const fs::path root = AC_SOURCE_DIR;
  std::vector<DumpedModel> out;
  for (const char* config : {"qwen3-1.7b", "llama-3.2-1b", "qwen3-4b"})
    dump_source(root / "configs" / (std::string(config) + ".json"), config, out);
  // Quantized weights (qgemv): int4 groups as the issue measures them, int8 per channel, and int4 with
  // zero points and bf16 scales.
  dump_source(root / "configs" / "qwen3-1.7b.json", "qwen3-1.7b-int4-g128", out, "int4:g128");
  dump_source(root / "configs" / "llama-3.2-1b.json", "llama-3.2-1b-int8", out, "int8");
  dump_source(root / "configs" / "llama-3.2-1b.json", "llama-3.2-1b-int4-g32-zp-bf16", out, "int4:g32:zp:bf16");
  // With f16 activations (the quantized decode bench's init-random checkpoints), int4 groups also plan
  // the tensor-core kernel (qgemv_mma.cuh): groups of 128 as measured, and groups of 32 with zero
  // points and bf16 scales.
  dump_source(root / "tests/fixtures/configs/qwen3-1.7b-f16.json", "qwen3-1.7b-f16-int4-g128", out, "int4:g128");
  dump_source(root / "tests/fixtures/configs/qwen3-1.7b-f16.json", "qwen3-1.7b-f16-int4-g32-zp-bf16", out, "int4:g32:zp:bf16");
  // Batched decode (serve --max-concurrency): decode_batch's regions, its matmuls in the gemv_batch family.
  dump_source(root / "configs" / "llama-3.2-1b.json", "llama-3.2-1b-batch", out, "", {}, /*batch_decode=*/true);
  // Tensor parallelism: a rank's module (per-rank GEMV shapes, the collective family's NCCL calls).
  dump_source(root / "configs" / "qwen3-8b.json", "qwen3-8b-tp2-rank1", out, "", {2, 1});
  std::vector<fs::path> captured;
  for (const auto& entry : fs::directory_iterator(root / "tests/fixtures/captured"))
    if (entry.is_directory()) captured.push_back(entry.path());
  std::sort(captured.begin(), captured.end());
  for (const auto& dir : captured) dump_source(dir, "captured-" + dir.filename().string(), out);
  for (const auto& m : primitive_modules())
    for (ir::DType dtype : m.dtypes) {
      const std::string name = "primitive-" + m.name + "_" + std::string(ir::dtype_name(dtype));
      auto module = ir::parse_module(with_dtype(m.text, dtype), m.name);
      EXPECT_TRUE(module.has_value()) << name << ": " << module.status().to_string();
      if (!module) continue;
      DumpedModel model{name, {}};
      for (const DumpSetting& setting : dump_settings())
        dump_module(*module, [](const std::string&) { return int64_t{64}; }, setting, model.candidates);
      out.push_back(std::move(model));
    }
  return out;
}

inline std::string short_hash(const std::string& text, size_t digits) { return support::sha256_hex(text).substr(0, digits); }

// The pins of a model: for the compile's setting (h200, capped) one line per candidate with its
// family, name and hashes of its record and source (a change to one shows which); for the other
// settings one line per region with its candidate count and hashes over all their records and
// sources.
inline std::string hash_lines(const DumpedModel& model) {
  std::string text;
  for (size_t i = 0; i < model.candidates.size();) {
    const DumpedCandidate& first = model.candidates[i];
    if (first.setting == dump_settings().front().name()) {
      const auto record = nlohmann::json::parse(first.record, nullptr, false);
      const std::string name = record.is_object() ? record.value("name", "") : first.record;
      text += first.setting + " " + first.region + " " + first.id + " " + first.family + " " + name + " record=" +
              short_hash(first.record, 8) + " source=" + (first.source.empty() ? "-" : short_hash(first.source, 8)) + "\n";
      ++i;
      continue;
    }
    std::string records, sources;
    size_t count = 0;
    for (; i < model.candidates.size() && model.candidates[i].setting == first.setting && model.candidates[i].region == first.region; ++i, ++count) {
      records += model.candidates[i].record + "\n";
      sources += model.candidates[i].source + "\n";
    }
    text += first.setting + " " + first.region + " " + (first.id == "unplanned" ? "unplanned" : std::to_string(count) + " candidates") +
            " records=" + short_hash(records, 16) + " sources=" + short_hash(sources, 16) + "\n";
  }
  return text;
}

// Everything, readable: the record's JSON and the source after it.
inline std::string full_text(const DumpedModel& model) {
  std::string text;
  for (const auto& c : model.candidates) {
    text += "==== " + c.setting + " " + c.region + " " + c.id + "\n" + c.record + "\n";
    if (!c.source.empty()) text += c.source + (c.source.ends_with("\n") ? "" : "\n");
  }
  return text;
}

}  // namespace agentcompile::testing
