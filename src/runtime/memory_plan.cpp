// Liveness over region sites and first-fit placement in one arena.
#include "runtime/memory_plan.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "analysis/regions.h"
#include "analysis/views.h"

namespace agentcompile::runtime {

namespace {

constexpr size_t kAlignment = 256;

size_t align_up(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// First-fit allocator over [0, high-water) with coalescing free ranges.
class ArenaAllocator {
 public:
  size_t allocate(size_t bytes) {
    bytes = align_up(std::max<size_t>(bytes, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes) continue;
      const size_t offset = it->first;
      const size_t rest = it->second - bytes;
      free_.erase(it);
      if (rest) free_.emplace(offset + bytes, rest);
      return offset;
    }
    // Grow: reuse a free range that ends at the high-water mark.
    size_t offset = high_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == high_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    high_ = offset + bytes;
    return offset;
  }

  void release(size_t offset, size_t bytes) {
    bytes = align_up(std::max<size_t>(bytes, 1));
    auto [it, inserted] = free_.emplace(offset, bytes);
    if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  size_t high_water() const { return high_; }

 private:
  std::map<size_t, size_t> free_;  // offset -> bytes
  size_t high_ = 0;
};

}  // namespace

Expected<MemoryPlan> plan_memory(const ir::Function& function, const std::vector<SiteRecord>& sites, const ir::SymbolBindings& max) {
  MemoryPlan plan;
  const size_t n = function.values.size();
  plan.homes.assign(n, {});
  for (size_t a = 0; a < function.args.size(); ++a) {
    plan.homes[static_cast<size_t>(function.args[a])].kind = ValueHome::Kind::kArgument;
    plan.homes[static_cast<size_t>(function.args[a])].argument = static_cast<int>(a);
  }

  // Definitions and last uses, in site order; results live to the end.
  const int end = static_cast<int>(sites.size());
  std::vector<int> defined_at(n, -1), last_use(n, -1);
  for (int s = 0; s < end; ++s) {
    const SiteRecord& site = sites[static_cast<size_t>(s)];
    for (ir::ValueId input : site.inputs) {
      if (input < 0 || static_cast<size_t>(input) >= n)
        return error(ErrorCode::kParse, "site " + std::to_string(site.site) + " reads value " + std::to_string(input) + ", which " + function.name + " does not have");
      AC_ASSIGN_OR_RETURN(ResolvedValue r, resolve_value(function, input, max));
      const auto& home = plan.homes[static_cast<size_t>(r.root)];
      if (home.kind == ValueHome::Kind::kNone)
        return error(ErrorCode::kParse, "site " + std::to_string(site.site) + " (" + site.region + ") reads %" + function.value(r.root).name +
                                            " before any site defines it");
      last_use[static_cast<size_t>(r.root)] = s;
    }
    for (ir::ValueId output : site.outputs) {
      if (output < 0 || static_cast<size_t>(output) >= n)
        return error(ErrorCode::kParse, "site " + std::to_string(site.site) + " writes value " + std::to_string(output) + ", which " + function.name + " does not have");
      ValueHome& home = plan.homes[static_cast<size_t>(output)];
      const int producer = function.value(output).producer;
      // A side effect's result is the state it wrote (kv_append, index_copy): it lives there.
      if (producer >= 0 && ir::has_side_effect(function.nodes[static_cast<size_t>(producer)].op)) {
        home.kind = ValueHome::Kind::kState;
        home.state = function.nodes[static_cast<size_t>(producer)].string_attr("state");
      } else {
        home.kind = ValueHome::Kind::kArena;  // placed below
      }
      defined_at[static_cast<size_t>(output)] = s;
      last_use[static_cast<size_t>(output)] = std::max(last_use[static_cast<size_t>(output)], s);
    }
  }
  for (ir::ValueId result : function.results) {
    AC_ASSIGN_OR_RETURN(ResolvedValue r, resolve_value(function, result, max));
    if (plan.homes[static_cast<size_t>(r.root)].kind == ValueHome::Kind::kNone)
      return error(ErrorCode::kParse, function.name + " returns %" + function.value(r.root).name + ", which no site defines");
    last_use[static_cast<size_t>(r.root)] = end;
  }

  // Placement: a site's outputs are allocated before the values it reads for the last time are
  // released, so no kernel writes over its own inputs.
  ArenaAllocator arena;
  std::vector<std::vector<ir::ValueId>> release_after(static_cast<size_t>(end) + 1);
  for (size_t v = 0; v < n; ++v)
    if (plan.homes[v].kind == ValueHome::Kind::kArena) release_after[static_cast<size_t>(last_use[v])].push_back(static_cast<ir::ValueId>(v));
  for (int s = 0; s < end; ++s) {
    for (ir::ValueId output : sites[static_cast<size_t>(s)].outputs) {
      ValueHome& home = plan.homes[static_cast<size_t>(output)];
      if (home.kind != ValueHome::Kind::kArena) continue;
      const size_t bytes = static_cast<size_t>(value_bytes(function, output, max));
      home.offset = arena.allocate(bytes);
      plan.naive_bytes += align_up(bytes);
    }
    for (ir::ValueId v : release_after[static_cast<size_t>(s)])
      arena.release(plan.homes[static_cast<size_t>(v)].offset, static_cast<size_t>(value_bytes(function, v, max)));
  }
  plan.arena_bytes = arena.high_water();
  return plan;
}

}  // namespace agentcompile::runtime
