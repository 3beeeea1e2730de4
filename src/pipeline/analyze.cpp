// Analyze (DESIGN.md, "analyze"): each function's regions (analysis/regions.h) and its unique regions
// (one per structural signature, tuned once for every site), each with its cost summary at the
// function's summary sizes (plan/sizes.h). The ablation --unfused forms regions without prologues,
// epilogues or horizontal fusion. The weights-only "init" function is run once at load by the
// interpreter (runtime/derived_weights.h) and never compiled.
#include <chrono>
#include <cstdio>

#include "pipeline/stages.h"

namespace agentcompile::pipeline {

namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace

Analysis analyze_regions(const CapturedModel& model, const CompileOptions& options, const ProgressFn& say) {
  const auto start = std::chrono::steady_clock::now();
  const ir::Module& module = model.module.module;
  const analysis::RegionOptions fusion{.norm_prologue = !options.unfused,
                                       .residual_norm_prologue = !options.unfused,
                                       .matmul_fusion = !options.unfused,
                                       .attention_prologue = !options.unfused};
  Analysis out;
  for (const auto& function : module.functions) {
    if (function.name == "init") continue;
    AnalyzedFunction f;
    f.function = &function;
    f.partition = analysis::form_regions(module, function, fusion);
    f.run_tokens = model.source.run_tokens(function.name);
    f.unique = analysis::unique_regions(module, function, f.partition, plan::summary_bindings(function.name, f.run_tokens));
    out.nodes += function.nodes.size();
    out.regions += f.partition.regions.size();
    out.unique += f.unique.size();
    out.functions.push_back(std::move(f));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  say("[1/5] analyze: " + std::to_string(module.functions.size()) + " functions, " + std::to_string(out.nodes) + " IR nodes, " +
      std::to_string(out.regions) + " regions, " + std::to_string(out.unique) + " unique (" + fixed(out.seconds, 2) + " s)");
  return out;
}

}  // namespace agentcompile::pipeline
