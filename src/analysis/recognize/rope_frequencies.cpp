// RoPE frequency fitting (see rope_frequencies.h).
#include "analysis/recognize/rope_frequencies.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "ir/interpreter_ops.h"

namespace agentcompile::analysis::recognize {

namespace {

using ir::kernels::RopeParams;

// Within one float32 ulp: adjacent or equal bit patterns of the same sign.
bool within_one_ulp(float a, float b) {
  if (a == b) return true;
  if (!std::isfinite(a) || !std::isfinite(b) || std::signbit(a) != std::signbit(b)) return false;
  int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return std::abs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib)) <= 1;
}

bool reproduces(const RopeParams& params, const std::vector<double>& table) {
  const auto D = static_cast<int64_t>(table.size() * 2);
  const std::vector<float> ours = ir::kernels::rope_inv_freq(params, D);
  for (size_t i = 0; i < table.size(); ++i)
    if (!within_one_ulp(ours[i], static_cast<float>(table[i]))) return false;
  return true;
}

// `value` rounded to 1, 2, ... 17 significant digits: the simplest numbers near it first.
std::vector<double> round_candidates(double value) {
  std::vector<double> out;
  std::set<double> seen;
  if (!(value > 0) || !std::isfinite(value)) return out;
  char buffer[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    const double candidate = std::strtod(buffer, nullptr);
    if (seen.insert(candidate).second) out.push_back(candidate);
  }
  return out;
}

// theta estimates: from single entries (inv_freq[i] = theta^(-2i/D) where scaling left them alone)
// and from ratios of neighbours (inv_freq[i] / inv_freq[i+1] = theta^(2/D) inside one band, which
// also holds in llama3's low band, where every entry is divided by the same factor).
std::vector<double> theta_estimates(const std::vector<double>& table) {
  const double D = static_cast<double>(table.size() * 2);
  const size_t last = table.size() - 1;
  std::vector<double> out;
  for (size_t i : {size_t{1}, size_t{2}, table.size() / 2, last})
    if (i > 0 && i < table.size() && table[i] > 0) out.push_back(std::pow(table[i], -D / (2.0 * static_cast<double>(i))));
  for (size_t i : {last - 1, size_t{1}, table.size() / 2})
    if (i + 1 < table.size() && table[i] > 0 && table[i + 1] > 0) out.push_back(std::pow(table[i] / table[i + 1], D / 2.0));
  return out;
}

ir::Attrs none_attrs(double theta) { return {{"theta", theta}, {"scaling", std::string("none")}}; }

ir::Attrs llama3_attrs(const RopeParams& p) {
  return {{"theta", p.theta},
          {"scaling", std::string("llama3")},
          {"factor", p.factor},
          {"low_freq_factor", p.low_freq_factor},
          {"high_freq_factor", p.high_freq_factor},
          {"original_max_position", static_cast<int64_t>(p.original_max_position)}};
}

// original_max_position candidates: what the middle band implies (one estimate per smoothed entry),
// then the powers of two configs use.
std::vector<double> context_candidates(const std::vector<double>& table, const std::vector<float>& base, double factor,
                                       double low, double high) {
  std::vector<double> out;
  for (size_t i = 0; i < table.size(); ++i) {
    const double ratio = table[i] / base[i];
    if (std::abs(ratio - 1.0) < 1e-6 || std::abs(ratio * factor - 1.0) < 1e-6) continue;  // not in the middle band
    const double smooth = (ratio - 1.0 / factor) / (1.0 - 1.0 / factor);
    const double wavelen = 2.0 * M_PI / base[i];
    out.push_back(std::round(wavelen * (smooth * (high - low) + low)));
  }
  for (int k = 4; k <= 20; ++k) out.push_back(std::ldexp(1.0, k));
  return out;
}

}  // namespace

ir::Attrs fit_rope_frequencies(const std::vector<double>& table) {
  const auto D = static_cast<int64_t>(table.size() * 2);
  if (table.size() >= 2 && table[0] == 1.0) {
    std::vector<double> thetas;
    for (double estimate : theta_estimates(table))
      for (double candidate : round_candidates(estimate)) thetas.push_back(candidate);
    for (double theta : thetas) {
      RopeParams p;
      p.theta = theta;
      if (reproduces(p, table)) return none_attrs(theta);
    }
    for (double theta : thetas) {
      const std::vector<float> base = ir::kernels::rope_inv_freq(RopeParams{theta}, D);
      // The factor: the simplest value that turns the lowest base frequency into the table's.
      double factor = 0;
      for (double candidate : round_candidates(base.back() / table.back())) {
        if (candidate > 1 && within_one_ulp(base.back() / static_cast<float>(candidate), static_cast<float>(table.back()))) {
          factor = candidate;
          break;
        }
      }
      if (factor == 0) continue;
      RopeParams p;
      p.theta = theta;
      p.scaling = "llama3";
      p.factor = factor;
      for (double low : {1.0, 0.5, 2.0}) {
        for (double high : {4.0, 2.0, 8.0}) {
          if (high <= low) continue;
          p.low_freq_factor = low;
          p.high_freq_factor = high;
          for (double context : context_candidates(table, base, factor, low, high)) {
            if (!(context > 0)) continue;
            p.original_max_position = context;
            if (reproduces(p, table)) return llama3_attrs(p);
          }
        }
      }
    }
  }
  return {{"inv_freq", ir::FloatList(table.begin(), table.end())}};
}

}  // namespace agentcompile::analysis::recognize
