// The artifact's identity, fixed before any analysis: its key (emit/artifact_key.h) from the IR, the
// target, the toolkit, the kernel templates, the compiler's own sources and the result-shaping options, and the records that go
// into metadata.json beside it ("model", "options"). A warm compile reuses the artifact of this key.
#include "agentcompile/compiler.h"
#include "advisor/advisor.h"
#include "codegen/embedded_kernels.h"
#include "codegen/nvrtc_compiler.h"
#include "pipeline/stages.h"
#include "emit/artifact_key.h"
#include "ir/decode_batch.h"
#include "support/sha256.h"
#include "support/utf8.h"

namespace agentcompile::pipeline {

// cmake/compiler_sources_hash.cmake: the sources a compile's result depends on, hashed at build time.
const char* compiler_sources_hash();

namespace {

using json = nlohmann::json;

// 2: decode buckets of context, attention prologue; 3: a decode bucket of up to 512 keys; 4: the layer
// chain searched by pairs of regions (picks change, so artifacts of 3 are compiled again); 5: timing
// stops early for candidates clearly behind, and admission may reuse the tuning database. The tuning
// database keys its entries by this too: a new version measures afresh.
constexpr const char* kCompilerVersion = "agentcompile-compiler/6";

// The kernel templates are part of what a compile depends on (the artifact and the tuning database).
std::string kernel_headers_hash() {
  support::Sha256 h;
  for (const auto& header : codegen::embedded_kernel_headers()) h.update(header.text);
  return h.hex();
}

// A captured module's run sizes as key text: the IR says T, the manifest what it runs at, and both
// pick the kernels.
std::string run_sizes(const frontend::ModelSource& source) {
  std::string text;
  if (source.capture)
    for (const auto& f : source.capture->functions)
      if (f.run_tokens > 0) text += f.name + ":T=" + std::to_string(f.run_tokens) + ";";
  return text;
}

// The options that change what a compile produces, for the artifact key (never a key or a URL).
json result_options(const CompileOptions& o, bool gpu) {
  json advisor = advisor::backend_fingerprint(o.advisor);
  if (advisor != "none") {
    advisor = {{"backend", advisor}, {"scope", o.advisor.scope}};
    if (o.advisor.backend == "openai" || o.advisor.backend == "anthropic") advisor["model"] = o.advisor.model;
  }
  json result = {{"max_candidates", o.max_candidates}, {"seeds", o.seeds}, {"repetitions", o.repetitions}, {"no_gpu", o.no_gpu || !gpu},
          {"advisor", advisor}, {"search_budget", o.search.budget}, {"unfused", o.unfused}, {"library_matmuls", o.library_matmuls}, {"batch_decode", o.batch_decode}, {"context_tuning", o.context_tuning},
          {"early_stop_margin", o.search.ablate_advisor ? 0.0 : o.early_stop_margin},
          {"dump_ir", o.dump_ir},  // the listings are files of the artifact
          {"ablate_advisor", o.search.ablate_advisor ? json{{"budgets", o.search.ablate_budgets}, {"seed", o.search.ablate_seed}} : json(false)}};
  if (o.no_tf32) result["no_tf32"] = true;  // only when set: artifacts compiled before the option keep their keys
  return result;
}

json model_record(const frontend::ModelSource& source, const CompileOptions& options) {
  const auto& c = source.config;
  return {{"model_type", c.model_type}, {"source", support::utf8::repaired(options.model.string())}, {"dtype", std::string(ir::dtype_name(c.dtype))},
          {"hidden_size", c.hidden_size}, {"intermediate_size", c.intermediate_size}, {"num_layers", c.num_layers},
          {"num_heads", c.num_heads}, {"num_kv_heads", c.num_kv_heads}, {"head_dim", c.head_dim},
          {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_position_embeddings},
          {"config_sha256", support::sha256_hex(c.raw.dump())}};
}

}  // namespace

ArtifactIdentity identify_artifact(const CapturedModel& model, const Target& target, const CompileOptions& options) {
  ArtifactIdentity identity;
  identity.nvrtc_version = codegen::nvrtc_version();
  identity.options = result_options(options, target.gpu);
  identity.model = model_record(model.source, options);
  bool collectives = false;
  for (const ir::Function& function : model.module.module.functions)
    for (const ir::Node& node : function.nodes) collectives |= node.op == ir::OpKind::kAllReduce;
  const ir::Module& module = model.module.module;
  identity.runtime_kernels = emit::runtime_kernels_for(module.find_function("decode") != nullptr, collectives,
                                                       module.find_function(ir::kDecodeBatchFunction) != nullptr);
  const std::string kernels_hash = kernel_headers_hash();
  identity.compiler = std::string(kCompilerVersion) + " " + kernels_hash;
  emit::ArtifactKeyParts parts;
  parts.compiler_version = kCompilerVersion;
  parts.ir_text = model.module.ir_text;
  parts.arch = target.profile.arch;
  parts.device_profile = options.device_profile;
  parts.nvrtc_version = identity.nvrtc_version;
  parts.options = identity.options;
  parts.gpu = target.gpu;
  parts.kernel_headers_hash = kernels_hash;
  parts.compiler_sources_hash = compiler_sources_hash();
  parts.run_sizes = run_sizes(model.source);
  for (const auto& k : identity.runtime_kernels) parts.runtime_kernels.push_back(k.kernel);
  identity.key = emit::artifact_key(parts);
  return identity;
}

}  // namespace agentcompile::pipeline
