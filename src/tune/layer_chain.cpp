// The decode layer chain's alternatives and links (see layer_chain.h).
#include "tune/layer_chain.h"

#include <algorithm>
#include <map>

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

LayerUnit layer_unit(const std::vector<int>& region_of_site, const std::function<bool(size_t)>& usable) {
  std::map<size_t, std::vector<int>> sites_of;  // plan region -> its sites, in order
  for (size_t site = 0; site < region_of_site.size(); ++site)
    if (region_of_site[site] >= 0) sites_of[static_cast<size_t>(region_of_site[site])].push_back(static_cast<int>(site));
  size_t most = 0;
  std::map<size_t, int> regions_with;  // site count -> regions with that many sites
  for (const auto& [r, sites] : sites_of) {
    most = std::max(most, sites.size());
    if (sites.size() >= 2) ++regions_with[sites.size()];
  }
  // The narrower rule: the regions with the most sites, once each, in the order of their first site.
  auto narrow = [&] {
    LayerUnit out;
    out.layers = most;
    if (most < 2) return out;
    for (const auto& [r, sites] : sites_of)
      if (sites.size() == most && usable(r)) out.regions.push_back(r);
    std::sort(out.regions.begin(), out.regions.end(), [&](size_t a, size_t b) { return sites_of[a][0] < sites_of[b][0]; });
    for (size_t r : out.regions) {
      out.previous_sites.push_back(sites_of[r][0]);
      out.sites.push_back(sites_of[r][1]);
    }
    return out;
  };
  // The layer count: the site count most regions share (the larger on a tie), so a norm that an
  // unfused layer runs twice does not set it.
  size_t layers = 0;
  int sharing = 0;
  for (const auto& [count, regions] : regions_with)
    if (regions >= sharing) layers = count, sharing = regions;
  if (layers < 3) return narrow();
  const std::vector<int>* anchor = nullptr;
  for (const auto& [r, sites] : sites_of)
    if (sites.size() == layers && (!anchor || sites[0] < (*anchor)[0])) anchor = &sites;
  const std::vector<int>& a = *anchor;
  LayerUnit unit;
  unit.layers = layers;
  for (int site = a[1]; site < a[2]; ++site) {
    const int r = region_of_site[static_cast<size_t>(site)];
    if (r < 0 || !usable(static_cast<size_t>(r))) continue;
    if (std::find(unit.regions.begin(), unit.regions.end(), static_cast<size_t>(r)) != unit.regions.end()) return narrow();
    // Its site in the layer before where it has one, else its own: then nothing links to it as the
    // layer before (a region never reads a later region's output).
    int previous = site;
    for (int before = a[0]; before < a[1]; ++before)
      if (region_of_site[static_cast<size_t>(before)] == r) previous = before;
    unit.regions.push_back(static_cast<size_t>(r));
    unit.sites.push_back(site);
    unit.previous_sites.push_back(previous);
  }
  return unit;
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
