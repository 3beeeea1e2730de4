// On the GPU: timing data of a huge tensor is drawn as one period (tune/region_cases.h) and repeated
// on the device by the upload (DeviceBuffer::repeat_prefix): every byte of the device tensor is the
// period's byte at its offset modulo the period, also where the size is not a multiple of it.
#include <gtest/gtest.h>

#include "gpu/cuda_driver.h"
#include "gpu_test_support.h"
#include "tune/device_sets.h"

namespace agentcompile {
namespace {

TEST(DeviceSets, PeriodicTimingDataIsRepeatedOnTheDevice) {
  AC_REQUIRE_GPU();
  auto context = gpu::CudaContext::create();
  ASSERT_TRUE(context) << context.status().to_string();
  tune::TestTensor x;
  x.dtype = ir::DType::kF16;
  x.shape = {3, 1000003};  // not a multiple of the period
  x.periodic = true;
  for (int i = 0; i < 4097 * 2; ++i) x.bytes.push_back(static_cast<uint8_t>((i * 7 + i / 256) & 0xff));
  tune::RegionCase c;
  c.inputs.push_back(x);
  tune::RegionLayout layout;
  layout.inputs = {ir::TensorType{ir::DType::kF16, {ir::Dim::of(3), ir::Dim::of(1000003)}}};
  layout.symbols = ir::SymbolBindings{1, 1};
  plan::Candidate candidate;
  auto set = tune::upload_set(layout, c, candidate, tune::RegionBindings{1, 1, 0}, nullptr);
  ASSERT_TRUE(set) << set.status().to_string();
  const size_t bytes = static_cast<size_t>(x.elements()) * 2;
  ASSERT_EQ(set->inputs[0].bytes(), bytes);
  std::vector<uint8_t> back(bytes);
  ASSERT_TRUE(set->inputs[0].download(back.data(), bytes));
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += back[i] != x.bytes[i % x.bytes.size()];
  EXPECT_EQ(wrong, 0u) << "of " << bytes << " bytes";
}

}  // namespace
}  // namespace agentcompile
