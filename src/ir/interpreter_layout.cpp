// The reference interpreter's data-movement ops: transpose, slice, broadcast, concat, flip and the
// gathers (embedding, index_select, gather), for float and int32 storage alike.
//
// Types promise the shapes; what they cannot promise is checked against the data before anything is
// read: every index value (embedding ids, index_select and gather indices), gather's index dims
// (torch allows them to be smaller than x's, never larger), and slices of a symbolic dim.
#include <algorithm>

#include "ir/interpreter_exec.h"

namespace agentcompile::ir::exec {

int64_t normalize_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis) {
  AxisSplit split;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      split.outer *= shape[d];
    else if (d == axis)
      split.n = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

}  // namespace

std::vector<int64_t> broadcast_steps(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  const size_t lead = out_shape.size() - in_shape.size();
  std::vector<int64_t> step(out_shape.size(), 0);
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (in_shape[d] != 1) step[lead + d] = strides[d];
  return step;
}

namespace {

Status invalid(const std::string& what) { return error(ErrorCode::kInvalidArgument, what); }

// Calls f(o, offset) for every element o of `shape`, offset = sum(index[d] * step[d]): covers
// permutation (steps are permuted strides), broadcasting (a stretched dim has step 0) and gather
// (the gathered axis has step 0).
template <typename F>
void for_each_strided(const std::vector<int64_t>& shape, const std::vector<int64_t>& step, F f) {
  int64_t total = 1;
  for (int64_t size : shape) total *= size;
  const int rank = static_cast<int>(shape.size());
  parallel_elements(total, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(rank, 0);  // the chunk's first element, and its offset
    int64_t offset = 0;
    for (int64_t d = rank - 1, rest = begin; d >= 0; --d) {
      index[d] = rest % shape[d];
      rest /= shape[d];
      offset += index[d] * step[d];
    }
    for (int64_t o = begin; o < end; ++o) {
      f(o, offset);
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < shape[d]) {
          offset += step[d];
          break;
        }
        offset -= step[d] * (shape[d] - 1);
        index[d] = 0;
      }
    }
  });
}

std::string axis_of_size(int64_t axis, int64_t size) {
  return "axis " + std::to_string(axis) + " of size " + std::to_string(size);
}

template <typename T>
Expected<Tensor> layout(const Node& node, const std::vector<const Tensor*>& in, Tensor out) {
  const Tensor& x = *in[0];
  const T* src = x.data<T>();
  T* y = out.mutable_data<T>();
  const size_t rank = x.shape.size();
  const int64_t axis = normalize_axis(node.int_attr("axis"), rank);
  switch (node.op) {
    case OpKind::kTranspose: {
      const std::vector<int64_t> strides = row_major_strides(x.shape);
      std::vector<int64_t> step;
      for (const Dim& d : node.dims_attr("perm")) step.push_back(strides[d.value]);
      for_each_strided(out.shape, step, [&](int64_t o, int64_t at) { y[o] = src[at]; });
      return out;
    }
    case OpKind::kBroadcast:
      for_each_strided(out.shape, broadcast_steps(x.shape, out.shape), [&](int64_t o, int64_t at) { y[o] = src[at]; });
      return out;
    case OpKind::kSlice: {
      const AxisSplit split = split_at(x.shape, axis);
      const int64_t length = node.int_attr("length");
      int64_t start = node.int_attr("start");
      if (start < 0) start += split.n;
      if (start < 0 || start + length > split.n)
        return invalid("slice [" + std::to_string(node.int_attr("start")) + ", +" + std::to_string(length) +
                       ") is out of range of axis " + std::to_string(axis) + " (size " + std::to_string(split.n) + ")");
      for (int64_t o = 0; o < split.outer; ++o)
        std::copy_n(src + (o * split.n + start) * split.inner, length * split.inner, y + o * length * split.inner);
      return out;
    }
    case OpKind::kConcat: {
      const AxisSplit joined = split_at(out.shape, axis);
      for (int64_t o = 0; o < joined.outer; ++o) {
        int64_t row = 0;  // rows of the concat axis written so far for this o
        for (const Tensor* part : in) {
          const int64_t rows = part->shape[axis];
          std::copy_n(part->data<T>() + o * rows * joined.inner, rows * joined.inner,
                      y + (o * joined.n + row) * joined.inner);
          row += rows;
        }
      }
      return out;
    }
    case OpKind::kFlip: {
      const AxisSplit split = split_at(x.shape, axis);
      for (int64_t o = 0; o < split.outer; ++o)
        for (int64_t j = 0; j < split.n; ++j)
          std::copy_n(src + (o * split.n + split.n - 1 - j) * split.inner, split.inner,
                      y + (o * split.n + j) * split.inner);
      return out;
    }
    case OpKind::kEmbedding: {
      const int64_t vocab = x.shape[0], hidden = x.shape[1];  // table [V, H]
      AC_TRY(check_indices(*in[1], vocab, "token id", "vocab size " + std::to_string(vocab)));
      const int32_t* ids = in[1]->i();
      for (int64_t t = 0; t < in[1]->elements(); ++t) std::copy_n(src + ids[t] * hidden, hidden, y + t * hidden);
      return out;
    }
    case OpKind::kIndexSelect: {
      const AxisSplit split = split_at(x.shape, axis);
      const Tensor& index = *in[1];  // [m]
      AC_TRY(check_indices(index, split.n, "index", axis_of_size(axis, split.n)));
      const int64_t m = index.elements();
      for (int64_t o = 0; o < split.outer; ++o)
        for (int64_t j = 0; j < m; ++j)
          std::copy_n(src + (o * split.n + index.i()[j]) * split.inner, split.inner, y + (o * m + j) * split.inner);
      return out;
    }
    case OpKind::kGather: {
      const Tensor& index = *in[1];  // x's rank; its shape is out's
      for (size_t d = 0; d < rank; ++d)
        if (static_cast<int64_t>(d) != axis && index.shape[d] > x.shape[d])
          return invalid("index dim " + std::to_string(d) + " has size " + std::to_string(index.shape[d]) +
                         ", more than x's " + std::to_string(x.shape[d]));
      AC_TRY(check_indices(index, x.shape[axis], "index", axis_of_size(axis, x.shape[axis])));
      std::vector<int64_t> step = row_major_strides(x.shape);
      const int64_t axis_stride = step[axis];
      step[axis] = 0;
      const int32_t* idx = index.i();
      for_each_strided(out.shape, step, [&](int64_t o, int64_t at) { y[o] = src[at + idx[o] * axis_stride]; });
      return out;
    }
    default: return error(ErrorCode::kInternal, "no layout rule for this op");
  }
}

}  // namespace

Expected<Tensor> run_layout(const Node& node, const std::vector<const Tensor*>& in, Tensor out) {
  return with_storage(out.is_int(), [&](auto tag) { return layout<decltype(tag)>(node, in, std::move(out)); });
}

}  // namespace agentcompile::ir::exec
