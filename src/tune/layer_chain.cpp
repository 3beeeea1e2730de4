// The decode layer chain's alternatives and links (see layer_chain.h).
#include "tune/layer_chain.h"

#include <algorithm>

#include "analysis/views.h"

namespace agentcompile::tune {

bool has_library_launch(const plan::Candidate& c) {
  return std::any_of(c.launches.begin(), c.launches.end(), [](const plan::Launch& l) { return l.library; });
}

std::vector<int> chain_alternatives(const std::vector<plan::Candidate>& candidates, const std::vector<CandidateResult>& results,
                                    size_t timing, int current) {
  std::vector<std::pair<double, int>> timed;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.validated || r.timings.size() <= timing || has_library_launch(candidates[i])) continue;
    timed.emplace_back(r.timings[timing].median_us, static_cast<int>(i));
  }
  std::sort(timed.begin(), timed.end());
  std::vector<int> out;
  if (timed.empty()) return out;
  const double bar = timed.front().first * (1.0 + kAlternativeSlack);
  for (const auto& [us, i] : timed)
    if ((us <= bar && out.size() < kMaxAlternatives) || i == current) out.push_back(i);
  return out;
}

std::vector<std::vector<SequenceLink>> layer_links(const ir::Function& function, const std::vector<const analysis::Region*>& previous_layer,
                                                   const std::vector<const analysis::Region*>& layer, const ir::SymbolBindings& at) {
  auto output_slot = [](const analysis::Region& region, ir::ValueId value) {
    const auto it = std::find(region.outputs.begin(), region.outputs.end(), value);
    return it == region.outputs.end() ? -1 : static_cast<int>(it - region.outputs.begin());
  };
  std::vector<std::vector<SequenceLink>> links(layer.size());
  for (size_t k = 0; k < layer.size(); ++k) {
    const auto& inputs = layer[k]->inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto resolved = analysis::resolve_value(function, inputs[i], at);
      if (!resolved) continue;  // a view the runtime would refuse too: the input keeps its own buffer
      // A kv_append's result is its KV cache, which every copy of the unit holds on its own.
      const int producer = function.value(resolved->root).producer;
      if (producer >= 0 && function.nodes[static_cast<size_t>(producer)].op == ir::OpKind::kKvAppend) continue;
      for (size_t j = 0; j < layer.size(); ++j) {
        const bool same_layer = j < k;
        const int output = output_slot(same_layer ? *layer[j] : *previous_layer[j], resolved->root);
        if (output < 0) continue;
        links[k].push_back({static_cast<int>(i), static_cast<int>(j), output, resolved->byte_offset, !same_layer});
        break;
      }
    }
  }
  return links;
}

}  // namespace agentcompile::tune
