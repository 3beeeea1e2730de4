// The runtime's kernels (the sampler, the peer all-reduce, the batched step's row argmax) compile under NVRTC exactly as the engine compiles them (no host
// headers: what nvcc tolerates, NVRTC may not), for every architecture the compiler targets.
#include <gtest/gtest.h>

#include "codegen/nvrtc_compiler.h"
#include "emit/artifact_record.h"

namespace agentcompile {
namespace {

TEST(SamplingKernels, CompileUnderNvrtc) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    codegen::NvrtcOptions options;
    options.arch = arch;
    options.threads = 1;
    auto compiled = codegen::compile_all({{"ac_sample", "#include \"sampling.cuh\"\n"}}, options);
    ASSERT_TRUE(compiled) << compiled.status().to_string();
    ASSERT_EQ(compiled->size(), 1u);
    EXPECT_TRUE((*compiled)[0].ok) << arch << ":\n" << (*compiled)[0].log;
    EXPECT_FALSE((*compiled)[0].cubin.empty());
  }
}

TEST(SamplingKernels, PeerAllReduceCompilesUnderNvrtc) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    codegen::NvrtcOptions options;
    options.arch = arch;
    options.threads = 1;
    auto compiled = codegen::compile_all({{emit::kPeerAllReduceKernel.kernel, emit::kPeerAllReduceKernel.source}}, options);
    ASSERT_TRUE(compiled) << compiled.status().to_string();
    ASSERT_EQ(compiled->size(), 1u);
    EXPECT_TRUE((*compiled)[0].ok) << arch << ":\n" << (*compiled)[0].log;
    EXPECT_FALSE((*compiled)[0].cubin.empty());
  }
}

TEST(SamplingKernels, RowArgmaxCompilesUnderNvrtc) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    codegen::NvrtcOptions options;
    options.arch = arch;
    options.threads = 1;
    auto compiled = codegen::compile_all({{emit::kRowArgmaxKernel.kernel, emit::kRowArgmaxKernel.source}}, options);
    ASSERT_TRUE(compiled) << compiled.status().to_string();
    ASSERT_EQ(compiled->size(), 1u);
    EXPECT_TRUE((*compiled)[0].ok) << arch << ":\n" << (*compiled)[0].log;
    EXPECT_FALSE((*compiled)[0].cubin.empty());
  }
  // Shipped where the module has decode_batch, beside the sampler.
  const auto kernels = emit::runtime_kernels_for(true, false, true);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_STREQ(kernels[1].role, "row_argmax");
}

}  // namespace
}  // namespace agentcompile
