// Building admission cases and their reference outputs.
//
// Values are drawn at magnitudes a real model sees: activations O(1), weight matrices scaled by
// 1/sqrt(K) so dot products stay O(1), norm weights near 1. Inputs are drawn inside the domains of
// the ops that read them (input_domains.h: index ranges, positive arguments of log and sqrt, ...).
// All are rounded to their dtype before either side sees them, so the only difference left is the
// arithmetic under test.
#include "tune/region_cases.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "ir/interpreter.h"
#include "tune/input_domains.h"

namespace agentcompile::tune {

namespace {

std::vector<int64_t> sizes(const ir::TensorType& type, const ir::SymbolBindings& symbols) { return symbols.resolve(type.shape); }

bool is_integer(ir::DType dtype) { return dtype == ir::DType::kI32 || dtype == ir::DType::kBool; }

// An i32 input: indices in [0, limit) (distinct ones for index_copy: a shuffled prefix of the
// range), or small integers of either sign.
TestTensor integer_input(const ir::TensorType& type, const std::vector<int64_t>& shape, const InputDomain& domain, uint64_t seed,
                         const RegionBindings& bindings) {
  if (domain.domain == Domain::kRowPosition || domain.domain == Domain::kRowBase) {
    // One slot of L / T rows per row (input_domains.h): positions inside it, bases a shuffle of the slots.
    const int64_t rows = std::max<int64_t>(1, bindings.T);
    const auto slot = static_cast<int32_t>(std::max<int64_t>(1, bindings.L / rows));
    if (domain.domain == Domain::kRowPosition)
      return random_tensor(ir::DType::kI32, shape, Distribution::kUniform, seed, 1.0f, slot);
    TestTensor slots = integer_input(type, shape, InputDomain{Domain::kDistinctIndex, static_cast<int32_t>(rows)}, seed, bindings);
    for (float& v : slots.values) v *= static_cast<float>(slot);
    return tensor_from_values(type.dtype, shape, std::move(slots.values));
  }
  if (domain.domain == Domain::kIndex) return random_tensor(ir::DType::kI32, shape, Distribution::kUniform, seed, 1.0f, domain.limit);
  TestTensor t = random_tensor(ir::DType::kI32, shape, Distribution::kUniform, seed, 1.0f, domain.domain == Domain::kAny ? 128 : domain.limit);
  if (domain.domain == Domain::kAny) {
    for (float& v : t.values) v -= 64.0f;
  } else {  // kDistinctIndex: a Fisher-Yates shuffle of [0, limit), drawn from the values above
    std::vector<float> order(static_cast<size_t>(std::max(1, domain.limit)));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<float>(i);
    for (size_t i = order.size(); i-- > 1;) std::swap(order[i], order[static_cast<size_t>(t.values[i % t.values.size()]) % (i + 1)]);
    for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = order[i % order.size()];
  }
  return tensor_from_values(type.dtype, shape, std::move(t.values));
}

}  // namespace

Expected<RegionLayout> region_layout(const ir::Module& region_module, const RegionBindings& bindings) {
  const ir::Function* function = region_module.find_function("region");
  if (!function) return error(ErrorCode::kInternal, region_module.name + " has no function 'region'");
  RegionLayout layout;
  layout.symbols = ir::SymbolBindings{bindings.T, bindings.L};
  for (ir::ValueId arg : function->args) layout.inputs.push_back(function->type(arg));
  for (const auto& param : region_module.params) layout.params.push_back(param.type);
  for (const auto& state : region_module.states) layout.states.push_back(state.type);
  for (ir::ValueId result : function->results) {
    layout.outputs.push_back(function->type(result));
    int aliased = -1;
    const int producer = function->value(result).producer;
    if (producer >= 0 && ir::has_side_effect(function->nodes[static_cast<size_t>(producer)].op)) {  // the state itself
      const std::string state = function->nodes[static_cast<size_t>(producer)].string_attr("state");
      for (size_t s = 0; s < region_module.states.size(); ++s)
        if (region_module.states[s].name == state) aliased = static_cast<int>(s);
    }
    layout.output_state.push_back(aliased);
  }
  for (const ir::Node& node : function->nodes) {
    const ir::DType dtype = function->type(node.result).dtype;
    const bool internal = std::find(function->results.begin(), function->results.end(), node.result) == function->results.end();
    if (node.op != ir::OpKind::kWeight && internal && tolerance_for(dtype) > tolerance_for(layout.precision)) layout.precision = dtype;
  }
  if (layout.inputs.size() > 8 || layout.params.size() > 8 || layout.outputs.size() > 8 || layout.states.size() > 4)
    return error(ErrorCode::kUnsupported, region_module.name + ": more interface slots than ac::RegionArgs holds");
  return layout;
}

RegionWeights random_weights(const ir::Module& region_module, const RegionLayout& layout, WeightCache* cache) {
  RegionWeights weights;
  std::map<WeightKey, int> seen;  // weights of the region with the same (dtype, shape, kind) so far
  for (size_t p = 0; p < layout.params.size(); ++p) {
    WeightKey key;
    key.dtype = layout.params[p].dtype;
    key.shape = sizes(layout.params[p], layout.symbols);
    key.norm = region_module.params[p].name.find("norm") != std::string::npos;
    key.occurrence = seen[key]++;
    weights.push_back(cache ? cache->get(key) : std::make_shared<const TestTensor>(draw_weight(key)));
  }
  return weights;
}

namespace {

// One period of a tensor drawn by `draw` at its own shape: the first `period` elements, repeated on upload.
template <typename Draw>
TestTensor drawn_periodic(const std::vector<int64_t>& shape, int64_t period, Draw&& draw) {
  int64_t elements = 1;
  for (int64_t size : shape) elements *= size;
  if (period <= 0 || elements <= period) return draw(shape);
  TestTensor t = draw(std::vector<int64_t>{period});
  t.values.clear();
  t.values.shrink_to_fit();
  t.shape = shape;
  t.periodic = true;
  return t;
}

}  // namespace

int case_count(const RegionLayout& layout, int seeds, size_t distributions) {
  const int all = std::max(1, seeds * static_cast<int>(distributions));
  int64_t bytes = 0;
  for (const auto* types : {&layout.inputs, &layout.outputs, &layout.states})
    for (const auto& type : *types) {
      int64_t elements = 1;
      for (int64_t size : layout.symbols.resolve(type.shape)) elements *= size;
      bytes += elements * static_cast<int64_t>(std::max<size_t>(ir::dtype_size(type.dtype), 1));
    }
  if (bytes <= 0) return all;
  return static_cast<int>(std::clamp<int64_t>(kCaseBudgetBytes / bytes, 1, all));
}

RegionCase random_case(const ir::Module& region_module, const RegionLayout& layout, const RegionBindings& bindings,
                       RegionWeights weights, int seed, Distribution distribution, int64_t period) {
  const ir::Function& function = *region_module.find_function("region");
  RegionCase c;
  c.label = "seed " + std::to_string(seed) + ", " + distribution_name(distribution);
  c.seed = seed;
  c.distribution = distribution;
  uint64_t stream = static_cast<uint64_t>(seed) * 1000003u + static_cast<uint64_t>(distribution) * 7919u;
  const std::vector<InputDomain> domains = input_domains(function);
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    const auto& type = layout.inputs[i];
    const auto shape = sizes(type, layout.symbols);
    if (type.dtype == ir::DType::kI32 && type.shape.empty() && domains[i].domain == Domain::kAny) {
      c.inputs.push_back(tensor_from_values(ir::DType::kI32, {}, {static_cast<float>(bindings.pos)}));  // a position
    } else if (type.dtype == ir::DType::kI32) {
      const uint64_t s = ++stream;
      c.inputs.push_back(drawn_periodic(shape, period, [&](const std::vector<int64_t>& at) { return integer_input(type, at, domains[i], s, bindings); }));
    } else if (domains[i].domain == Domain::kAny || type.dtype == ir::DType::kBool) {
      const uint64_t s = ++stream;
      c.inputs.push_back(drawn_periodic(shape, period, [&](const std::vector<int64_t>& at) { return random_tensor(type.dtype, at, distribution, s); }));
    } else {
      const uint64_t s = ++stream;
      c.inputs.push_back(drawn_periodic(shape, period, [&](const std::vector<int64_t>& at) {
        TestTensor t = random_tensor(type.dtype, at, distribution, s);
        apply_domain(domains[i], t.values);
        return tensor_from_values(type.dtype, at, std::move(t.values));
      }));
    }
  }
  c.params = std::move(weights);
  for (const auto& type : layout.states) {
    const uint64_t s = ++stream;
    c.states.push_back(drawn_periodic(sizes(type, layout.symbols), period,
                                      [&](const std::vector<int64_t>& at) { return random_tensor(type.dtype, at, distribution, s); }));
  }
  return c;
}

Expected<std::vector<RegionCase>> build_region_cases(const ir::Module& region_module, const RegionBindings& bindings,
                                                     int seeds, const std::vector<Distribution>& distributions,
                                                     AdmissionTimes* times, WeightCache* cache) {
  AC_ASSIGN_OR_RETURN(RegionLayout layout, region_layout(region_module, bindings));
  using Clock = std::chrono::steady_clock;
  auto lap = [last = Clock::now()](double AdmissionTimes::*stage, AdmissionTimes* into) mutable {
    const auto now = Clock::now();
    if (into) into->*stage += std::chrono::duration<double>(now - last).count();
    last = now;
  };
  // Weights are drawn once per region, or once per compile through the cache (they can be the
  // largest tensors: lm_head is 0.6 GB), and shared by every case; inputs and cache contents vary
  // by seed and distribution.
  const RegionWeights params = random_weights(region_module, layout, cache);
  lap(&AdmissionTimes::case_data_s, times);
  // Reference: the interpreter on the extracted module. One interpreter serves every case: it loads
  // the weights once, and each case sets every state before it runs.
  ir::Interpreter interpreter(
      region_module,
      [&](const std::string& name, std::vector<float>& out) -> Status {
        for (size_t p = 0; p < region_module.params.size(); ++p)
          if (region_module.params[p].name == name) {
            out = params[p]->values;
            return Status::ok();
          }
        return error(ErrorCode::kNotFound, "no test values for parameter " + name);
      },
      [&](const std::string& name, ir::DType, std::vector<uint8_t>& out) -> Status {  // quantized: the bytes a kernel reads
        for (size_t p = 0; p < region_module.params.size(); ++p)
          if (region_module.params[p].name == name) {
            out = params[p]->bytes;
            return Status::ok();
          }
        return error(ErrorCode::kNotFound, "no test bytes for parameter " + name);
      },
      ir::InterpreterOptions{bindings.L, 0});
  std::vector<RegionCase> cases;
  const size_t wanted = static_cast<size_t>(case_count(layout, seeds, distributions.size()));
  for (int seed = 1; seed <= seeds && cases.size() < wanted; ++seed) {
    for (Distribution distribution : distributions) {
      if (cases.size() == wanted) break;
      RegionCase c = random_case(region_module, layout, bindings, params, seed, distribution);
      lap(&AdmissionTimes::case_data_s, times);

      for (size_t s = 0; s < layout.states.size(); ++s)
        AC_TRY(interpreter.set_state(region_module.states[s].name, c.states[s].values));
      // Float inputs are lent to the interpreter (which copies its arguments) and taken back after the
      // run: a 2^30-element input is not copied twice.
      std::vector<ir::HostTensor> args;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        ir::HostTensor arg;
        arg.dtype = c.inputs[i].dtype;
        arg.shape = c.inputs[i].shape;
        if (is_integer(arg.dtype))  // i32 and bool arguments are held as int32 values
          for (float v : c.inputs[i].values) arg.i32.push_back(static_cast<int32_t>(v));
        else
          arg.f32 = std::move(c.inputs[i].values);
        args.push_back(std::move(arg));
      }
      auto ran = interpreter.run("region", args);
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (!is_integer(args[i].dtype)) c.inputs[i].values = std::move(args[i].f32);
      AC_ASSIGN_OR_RETURN(auto outputs, std::move(ran));
      for (size_t o = 0; o < outputs.size(); ++o) {
        if (layout.output_state[o] >= 0) {
          c.expected_outputs.emplace_back();
          continue;
        }
        TestTensor expected;
        expected.dtype = layout.outputs[o].dtype;
        expected.shape = outputs[o].shape;
        expected.values = std::move(outputs[o].f32);
        if (is_integer(expected.dtype))
          for (int32_t v : outputs[o].i32) expected.values.push_back(static_cast<float>(v));
        c.expected_outputs.push_back(std::move(expected));
      }
      for (size_t s = 0; s < layout.states.size(); ++s) {
        AC_ASSIGN_OR_RETURN(std::vector<float> after, interpreter.state(region_module.states[s].name));
        TestTensor expected;
        expected.dtype = layout.states[s].dtype;
        expected.shape = c.states[s].shape;
        expected.values = std::move(after);
        c.expected_states.push_back(std::move(expected));
      }
      cases.push_back(std::move(c));
      lap(&AdmissionTimes::reference_s, times);
    }
  }
  return cases;
}

}  // namespace agentcompile::tune
