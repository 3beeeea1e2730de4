// Writing a compile's artifact: every file rendered in memory, each one's size and SHA-256 recorded in
// metadata.json, the record checked by the one reader, then published atomically (emit/artifact_store.h).
//
// kernels/<kernel>.cu holds a selected candidate's source plus an extern "C" host launcher (compiled
// only by nvcc, not NVRTC) that computes the grid from T exactly as the runtime does; include/ holds
// the templates those sources include and agentcompile_kernels.h with every launcher's signature;
// advice.json and ablation.json sit beside metadata.json when the compile had an advisor or an ablation.
#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "codegen/embedded_kernels.h"
#include "codegen/render.h"
#include "emit/artifact.h"
#include "support/sha256.h"

namespace agentcompile::emit {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string extent_expr(const plan::Extent& e) {
  return "static_cast<unsigned>((" + std::to_string(e.per_token) + "ll * a->T + " + std::to_string(e.fixed) + "ll + " +
         std::to_string(e.divisor - 1) + "ll) / " + std::to_string(e.divisor) + "ll)";
}

std::string host_launcher(const plan::Candidate& c) {
  std::ostringstream src;
  src << "\n#ifndef __CUDACC_RTC__\n#include <cuda_runtime.h>\n\n"
      << "// Runs " << c.name() << " (" << c.launches.size() << " launch" << (c.launches.size() > 1 ? "es" : "")
      << ") on `stream`; `args` points to an ac::RegionArgs.\n"
      << "extern \"C\" cudaError_t " << c.name() << "_launch(const void* args, cudaStream_t stream) {\n"
      << "  const ac::RegionArgs* a = static_cast<const ac::RegionArgs*>(args);\n";
  for (const auto& launch : c.launches) {
    src << "  {\n    const dim3 grid(" << extent_expr(launch.grid_x) << ", " << extent_expr(launch.grid_y) << ", "
        << extent_expr(launch.grid_z) << ");\n";
    if (launch.shared_bytes > 0)  // the default 48 KB bounds static + dynamic together; opt in once per process
      src << "    static const cudaError_t shared_opt_in = cudaFuncSetAttribute(" << launch.kernel
          << ", cudaFuncAttributeMaxDynamicSharedMemorySize, " << launch.shared_bytes << ");\n"
          << "    if (shared_opt_in != cudaSuccess) return shared_opt_in;\n";
    src << "    if (grid.x && grid.y && grid.z) " << launch.kernel << "<<<grid, " << launch.block_x << ", " << launch.shared_bytes
        << ", stream>>>(*a);\n    const cudaError_t status = cudaGetLastError();\n    if (status != cudaSuccess) return status;\n  }\n";
  }
  src << "  return cudaSuccess;\n}\n#endif\n";
  return src.str();
}

std::string gencode_flag(const std::string& arch) {
  const std::string digits = arch.substr(arch.find('_') + 1);  // "90a"
  return "-gencode=arch=compute_" + digits + ",code=sm_" + digits;
}

}  // namespace

Expected<ArtifactFiles> render_artifact_files(const Artifact& artifact) {
  ArtifactFiles files;
  for (const auto& header : codegen::embedded_kernel_headers()) files["include/" + header.name] = header.text;

  std::ostringstream declarations;
  declarations << "// Launch signatures of the kernels agentcompile selected for this model. Generated; do not edit.\n"
               << "#pragma once\n\n#include <cuda_runtime_api.h>\n\nnamespace agentcompile_kernels {\n"
               << "// Host mirror of ac::RegionArgs (include/common.cuh): pass a pointer to one of these as `args`.\n"
               << "struct RegionArgs {\n  const void* in[8];\n  void* out[8];\n  const void* w[8];\n  void* state[4];\n"
               << "  void* workspace;\n  int T;\n  int L;\n};\n}  // namespace agentcompile_kernels\n\nextern \"C\" {\n";
  std::map<std::string, std::string> written;  // kernel file name -> its source
  for (const auto& region : artifact.regions) {
    for (const auto& selection : region.selections) {
      if (selection.candidate < 0) continue;
      const size_t index = static_cast<size_t>(selection.candidate);
      const plan::Candidate& c = region.plan.candidates[index];
      if (!codegen::has_generated_launch(c)) continue;  // a library call with an epilogue kernel has a cubin too
      AC_ASSIGN_OR_RETURN(std::string source, codegen::render_source(c));
      // Files are named by the candidate: two selections of one name must be one kernel.
      if (auto [it, fresh] = written.emplace(c.name(), source); !fresh) {
        if (it->second != source)
          return error(ErrorCode::kInternal, region.id + ": two selected candidates are named " + c.name() + " but differ in source");
        continue;
      }
      const bool calls_library = std::any_of(c.launches.begin(), c.launches.end(), [](const plan::Launch& l) { return l.library; });
      files["kernels/" + c.name() + ".cu"] =
          source + (calls_library ? "\n// This candidate also makes a library (cuBLAS) call, recorded in metadata.json; the\n"
                                    "// agentcompile runtime issues it, so no standalone host launcher is emitted.\n"
                                  : host_launcher(c));
      if (index < region.compiled.size() && region.compiled[index].ok) {
        const auto& cubin = region.compiled[index].cubin;
        files["cubin/" + c.name() + ".cubin"] = std::string(cubin.begin(), cubin.end());
      }
      if (calls_library) continue;
      declarations << "// " << region.id << " (" << analysis::category_name(region.plan.summary.category) << "), bucket "
                   << selection.bucket << "\ncudaError_t " << c.name() << "_launch(const void* args, cudaStream_t stream);\n";
    }
  }
  declarations << "}\n";
  for (const RuntimeKernel& k : artifact.runtime_kernels) {
    if (!k.compiled.ok || k.compiled.cubin.empty())
      return error(ErrorCode::kInternal, std::string("the runtime's ") + k.spec.role + " kernel (" + k.spec.kernel + ") did not compile: " + k.compiled.log);
    files[k.cubin_path()] = std::string(k.compiled.cubin.begin(), k.compiled.cubin.end());
  }
  files["include/agentcompile_kernels.h"] = declarations.str();

  const std::string arch = artifact.device.value("arch", std::string("sm_90a"));
  std::ostringstream cmake;
  cmake << "# Builds the kernels agentcompile selected into a static library. Generated; do not edit.\n"
        << "cmake_minimum_required(VERSION 3.24)\nproject(agentcompile_kernels LANGUAGES CXX CUDA)\n\n"
        << "set(CMAKE_CUDA_ARCHITECTURES OFF)  # the arch the kernels were tuned for is set explicitly below\n"
        << "file(GLOB kernel_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cu)\n"
        << "add_library(agentcompile_kernels STATIC ${kernel_sources})\n"
        << "target_include_directories(agentcompile_kernels PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)\n"
        << "set_target_properties(agentcompile_kernels PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)\n"
        << "target_compile_options(agentcompile_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:" << gencode_flag(arch)
        << " --use_fast_math>)\n";
  files["CMakeLists.txt"] = cmake.str();
  files["ir/module.ir"] = artifact.module_ir;
  for (const auto& [name, text] : artifact.ir_dumps) files["ir/" + name] = text;
  files["report.md"] = artifact_report(artifact);
  // advice.json: every advisor exchange by request hash (--advisor replay:FILE reads it); no keys.
  if (!artifact.advice_record.is_null()) files["advice.json"] = artifact.advice_record.dump(1) + "\n";
  if (!artifact.ablation.is_null()) files["ablation.json"] = artifact.ablation.dump(1) + "\n";
  return files;
}

Expected<WrittenArtifact> write_artifact(const Artifact& artifact, const fs::path& dir) {
  const auto start = std::chrono::steady_clock::now();
  AC_ASSIGN_OR_RETURN(ArtifactFiles files, render_artifact_files(artifact));
  json meta = artifact_metadata(artifact);
  json listed = json::array();
  for (const auto& [rel, bytes] : files) listed.push_back({{"path", rel}, {"bytes", bytes.size()}, {"sha256", support::sha256_hex(bytes)}});
  meta["files"] = std::move(listed);
  WrittenArtifact written;
  written.emit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  meta["compile_seconds"]["emit"] = written.emit_seconds;
  meta["compile_seconds"]["total"] = artifact.times.total_s + written.emit_seconds;
  // The writer is checked against the one reader before anything reaches the disk.
  AC_ASSIGN_OR_RETURN(written.record, parse_artifact_record(meta, "the metadata.json written to " + dir.string()));
  written.record.ablation_table = artifact.ablation_table;
  AC_TRY(publish_artifact(files, meta.dump(1) + "\n", dir, Destination::kOutputDir));
  return written;
}

}  // namespace agentcompile::emit
