// RoPE frequency fitting (analysis/recognize/rope_frequencies.h) on the inv_freq tables transformers
// 5.17 computes for the configs the builders take: the fit must give exactly the attributes the
// builders write (frontend/models/blocks.cpp, rope_attrs), accept torch's one-ulp differences from
// ir::kernels::rope_inv_freq, and keep any table it cannot reproduce entry for entry.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "analysis/recognize/rope_frequencies.h"
#include "ir/interpreter_ops.h"

namespace agentcompile {
namespace {

using analysis::recognize::fit_rope_frequencies;

// Qwen3-1.7B: theta 1e6, D = 128 (Qwen3RotaryEmbedding(config).inv_freq).
const std::vector<double> kQwen3Table = {
    1.0, 0.8058422207832336, 0.6493816375732422, 0.5232991576194763, 0.4216965138912201, 0.33982083201408386,
    0.2738419771194458, 0.22067339718341827, 0.17782793939113617, 0.14330126345157623, 0.11547820270061493,
    0.09305720031261444, 0.07498941570520401, 0.0604296438395977, 0.04869675263762474, 0.03924189880490303,
    0.03162277862429619, 0.025482967495918274, 0.02053525112569332, 0.016548171639442444, 0.01333521492779255,
    0.010746078565716743, 0.00865964312106371, 0.006978305988013744, 0.005623413249850273, 0.004531583748757839,
    0.003651741426438093, 0.002942727180197835, 0.0023713738191872835, 0.001910952851176262, 0.0015399265103042126,
    0.0012409378541633487, 0.0010000000474974513, 0.0008058422245085239, 0.0006493816617876291, 0.0005232990952208638,
    0.00042169648804701865, 0.0003398208355065435, 0.00027384195709601045, 0.00022067342069931328,
    0.00017782794020604342, 0.00014330126577988267, 0.00011547819303814322, 9.305720595875755e-05,
    7.498942431993783e-05, 6.042963650543243e-05, 4.869675467489287e-05, 3.92418987757992e-05, 3.162277425872162e-05,
    2.5482966520939954e-05, 2.0535249859676696e-05, 1.6548170606256463e-05, 1.333521413471317e-05,
    1.0746078260126524e-05, 8.659643754072022e-06, 6.978306373639498e-06, 5.62341347176698e-06, 4.531583726929966e-06,
    3.651741280918941e-06, 2.9427271783788456e-06, 2.3713737391517498e-06, 1.910952960315626e-06,
    1.5399265294036013e-06, 1.2409377632138785e-06};

// Llama-3.2-1B: theta 500000, llama3 scaling (factor 32, low 1, high 4, original 8192), D = 64.
const std::vector<double> kLlama32Table = {
    1.0, 0.663601279258728, 0.44036662578582764, 0.2922278344631195, 0.193922758102417, 0.12868738174438477,
    0.08539710193872452, 0.05666961893439293, 0.03760603070259094, 0.02495540864765644, 0.016560440883040428,
    0.010989529080688953, 0.00729266507551074, 0.00483942124992609, 0.0032114461064338684, 0.0012905480107292533,
    0.000429556705057621, 9.708286233944818e-05, 1.9461638657958247e-05, 1.291476746700937e-05, 8.570255886297673e-06,
    5.687232260243036e-06, 3.7740544485131977e-06, 2.504467147446121e-06, 1.6619674170215148e-06,
    1.1028836297555245e-06, 7.318749339901842e-07, 4.856731266045244e-07, 3.2229328894572973e-07,
    2.1387423032592778e-07, 1.4192720243499934e-07, 9.418306490260875e-08};

int ulps_apart(float a, float b) {
  int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return std::abs(ia - ib);
}

TEST(RopeFit, Qwen3ThetaDespiteTorchsOneUlp) {
  // The measured fact the tolerance exists for: torch's float pow and ours differ at one entry.
  ir::kernels::RopeParams params;
  params.theta = 1000000.0;
  const auto ours = ir::kernels::rope_inv_freq(params, 128);
  int differing = 0;
  for (size_t i = 0; i < kQwen3Table.size(); ++i) {
    const int apart = ulps_apart(ours[i], static_cast<float>(kQwen3Table[i]));
    EXPECT_LE(apart, 1) << "entry " << i;
    differing += apart != 0;
  }
  EXPECT_EQ(differing, 1);
  const ir::Attrs expected{{"theta", 1000000.0}, {"scaling", std::string("none")}};
  EXPECT_EQ(fit_rope_frequencies(kQwen3Table), expected);
}

TEST(RopeFit, Llama3Scaling) {
  const ir::Attrs expected{{"theta", 500000.0},
                           {"scaling", std::string("llama3")},
                           {"factor", 32.0},
                           {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0},
                           {"original_max_position", int64_t{8192}}};
  EXPECT_EQ(fit_rope_frequencies(kLlama32Table), expected);
}

// Tables computed by our own rope_inv_freq over a grid of parameters fit back to those parameters.
TEST(RopeFit, RoundTripsItsOwnTables) {
  for (double theta : {10000.0, 500000.0, 1000000.0, 50000.0}) {
    for (int64_t D : {int64_t{32}, int64_t{64}, int64_t{128}}) {
      ir::kernels::RopeParams params;
      params.theta = theta;
      const auto table = ir::kernels::rope_inv_freq(params, D);
      const ir::Attrs expected{{"theta", theta}, {"scaling", std::string("none")}};
      EXPECT_EQ(fit_rope_frequencies(std::vector<double>(table.begin(), table.end())), expected) << theta << " " << D;
    }
  }
  ir::kernels::RopeParams llama;
  llama.theta = 500000.0;
  llama.scaling = "llama3";
  llama.factor = 8.0;
  llama.original_max_position = 8192;
  const auto table = ir::kernels::rope_inv_freq(llama, 128);
  const ir::Attrs expected{{"theta", 500000.0},        {"scaling", std::string("llama3")},   {"factor", 8.0},
                           {"low_freq_factor", 1.0},   {"high_freq_factor", 4.0},            {"original_max_position", int64_t{8192}}};
  EXPECT_EQ(fit_rope_frequencies(std::vector<double>(table.begin(), table.end())), expected);
}

// A table two ulps off at one entry, or of no parametric form at all, is kept as it is.
TEST(RopeFit, KeepsWhatItCannotReproduce) {
  std::vector<double> off = kQwen3Table;
  float bumped = static_cast<float>(off[40]);
  for (int i = 0; i < 2; ++i) bumped = std::nextafter(bumped, 1.0f);
  off[40] = bumped;
  const ir::Attrs fitted = fit_rope_frequencies(off);
  ASSERT_EQ(fitted.size(), 1u);
  EXPECT_EQ(std::get<ir::FloatList>(fitted.at("inv_freq")), off);
  const std::vector<double> irregular = {1.0, 0.5, 0.3, 0.01};
  EXPECT_EQ(fit_rope_frequencies(irregular), (ir::Attrs{{"inv_freq", irregular}}));
}

}  // namespace
}  // namespace agentcompile
