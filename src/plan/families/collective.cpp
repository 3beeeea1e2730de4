// The collective family (record in collective.h): the NCCL call of an all_reduce or all_gather region,
// the one candidate, and so the region's fallback. NCCL picks its own algorithm (ring, tree, NVLS is
// kept off); a one-shot kernel over peer memory would be a second candidate here, measured against it.
//
// An all_gather joins the ranks' blocks along its axis; NCCL's joins whole buffers in rank order, which
// is the same only when every dim before the axis is 1 (the LM head's [1, V/N] logits row): other
// gathers are left unplanned.
#include "plan/families/collective.h"

namespace agentcompile::plan {

namespace {

class CollectiveFamily final : public TypedFamily<CollectiveMatch, CollectiveConfig> {
 public:
  std::string name() const override { return "collective"; }
  std::string template_file() const override { return ""; }
  bool library() const override { return true; }

  std::optional<CollectiveMatch> match(const RegionContext& ctx) const override {
    if (ctx.size() != 1) return std::nullopt;
    const ir::Node& node = ctx.node(0);
    if (node.op != ir::OpKind::kAllReduce && node.op != ir::OpKind::kAllGather) return std::nullopt;
    const ir::TensorType& x = ctx.function->type(node.operands[0]);
    if (x.shape.empty() || !ir::shape_is_static({x.shape.begin() + 1, x.shape.end()})) return std::nullopt;
    CollectiveMatch m;
    m.op = node.op;
    m.dtype = x.dtype;
    m.in = ctx.slot_of(node.operands[0]);
    m.out = ctx.slot_of(node.result);
    m.ranks = node.int_attr("ranks", 1);
    m.row = ir::static_elements({x.shape.begin() + 1, x.shape.end()});
    m.tokens = x.shape[0].is_static() ? x.shape[0].value : 0;
    if (m.in.empty() || m.out.empty()) return std::nullopt;
    if (node.op == ir::OpKind::kAllGather) {
      const auto rank = static_cast<int64_t>(x.shape.size());
      int64_t axis = node.int_attr("axis", -1);
      if (axis < 0) axis += rank;
      for (int64_t d = 0; d < axis; ++d)
        if (!x.shape[static_cast<size_t>(d)].is_static() || x.shape[static_cast<size_t>(d)].value != 1) return std::nullopt;
    }
    return m;
  }

  std::vector<Choice> param_space(const CollectiveMatch& m, const DeviceProfile&) const override {
    Choice c{CollectiveConfig(m)};
    c.score = 0.05;
    c.notes.push_back("library call: NCCL " + std::string(m.op == ir::OpKind::kAllReduce ? "ncclAllReduce (sum)" : "ncclAllGather") +
                      " over " + std::to_string(m.ranks) + " rank(s) on the region's stream");
    std::vector<Choice> out;
    out.push_back(std::move(c));
    return out;
  }

  std::string kernel_name(const CollectiveConfig& config) const override {
    const CollectiveMatch& m = config.match;
    return "nccl_" + std::string(ir::op_name(m.op)) + "_" + dtype_tag(m.dtype) + "_r" + std::to_string(m.ranks) + "_m" +
           (m.tokens ? std::to_string(m.tokens) : "T") + "_n" + std::to_string(m.row);
  }

  std::vector<Launch> launches(const CollectiveConfig& config) const override {
    const CollectiveMatch& m = config.match;
    Launch l;
    l.kernel = kernel_name(config);
    l.library = true;
    l.library_args = {{"op", m.op == ir::OpKind::kAllReduce ? "nccl_all_reduce" : "nccl_all_gather"},
                      {"in", m.in},
                      {"out", m.out},
                      {"rows", m.tokens ? std::to_string(m.tokens) : "T"},
                      {"row", std::to_string(m.row)},
                      {"ranks", std::to_string(m.ranks)},
                      {"dtype", std::string(ir::dtype_name(m.dtype))}};
    return {l};
  }
};

}  // namespace

Match CollectiveConfig::match_view() const {
  Match m;
  m.variant = std::string(ir::op_name(match.op));
  m.dtype = match.dtype;
  m.out_dtype = match.dtype;
  m.roles["in"] = match.in;
  m.roles["out"] = match.out;
  m.facts["ranks"] = match.ranks;
  m.facts["row"] = match.row;
  m.facts["tokens"] = match.tokens;
  return m;
}

AC_REGISTER_FAMILY(collective, 180, CollectiveFamily)

}  // namespace agentcompile::plan
