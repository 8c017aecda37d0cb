// Row-wise L2 normalisation of a column-wise concatenation [x_0 | x_1 | ...], as one autograd node
// with fused CPU kernels (a single input is plain row normalisation).
//
// Written with libtorch's composite ops, cat then x * rsqrt(max(sum(x^2), 1e-24)) costs about ten
// passes over the matrix forward and backward (the concatenation, a squared copy, a broadcast
// multiply, the engine's reductions of broadcast gradients, accumulations where x is used three
// times), and the concatenation's backward hands each input a strided slice of its gradient, on
// which the next backward (SELU's, batch norm's) runs slowly. Here the forward reads each row once
// and writes y; the backward is one pass per row over the saved inputs (as the composite ops
// save them; the output may then be modified in place, e.g. by an in-place SELU),
//   dx = r * (g - y <g, y>),   y = r x,   r = 1 / max(||x||, 1e-12),
// split into one contiguous gradient per input. Where the norm is clamped (r fixed) the projection
// is dropped, as the clamp's gradient does. Each row's sums run in a fixed order, so the bits do
// not depend on the number of threads.
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr float kMinSquaredNorm = 1e-24f;

// Eight floats; on x86-64 the kernels are compiled twice (AVX2 + FMA, and the baseline) and the
// loader picks one for the machine.
typedef float v8 __attribute__((vector_size(32)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GNNAUDIT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GNNAUDIT_CLONES
#endif

// Helpers are inlined into each clone, so that they are compiled for its instruction set.
#define GNNAUDIT_INLINE inline __attribute__((always_inline))

GNNAUDIT_INLINE v8 load(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
GNNAUDIT_INLINE void store(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }
GNNAUDIT_INLINE v8 splat(float x) { return v8{x, x, x, x, x, x, x, x}; }
GNNAUDIT_INLINE float sum(v8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// The parts of a row-major concatenation: pointers to [n, width] blocks.
struct Parts {
  std::vector<const float*> data;
  std::vector<int64_t> widths;
  int64_t total = 0;
};

// Whether every width is a multiple of 8 (the vector path).
bool vectorisable(const std::vector<int64_t>& widths) {
  return std::all_of(widths.begin(), widths.end(), [](int64_t w) { return w % 8 == 0; });
}

// 1 / max(||x||, 1e-12) from the squared norm; stored negated where clamped.
GNNAUDIT_INLINE float inverse_norm(float s, float* flag) {
  const bool clamped = !(s > kMinSquaredNorm);
  const float r = 1.0f / std::sqrt(clamped ? kMinSquaredNorm : s);
  *flag = clamped ? -r : r;
  return r;
}

// Rows are taken four at a time so that four independent sums are in flight; leftover rows take
// the same path one at a time, so a row's bits do not depend on where a task's range starts.
constexpr int64_t kRows = 4;

template <int64_t M>
GNNAUDIT_INLINE void forward_block(const Parts& x, int64_t i, float* y, float* r) {
  v8 acc[M] = {};
  for (size_t k = 0; k < x.widths.size(); ++k) {
    const int64_t w = x.widths[k];
    const float* xk = x.data[k] + i * w;
    for (int64_t j = 0; j < w; j += 8) {
      for (int64_t q = 0; q < M; ++q) {
        const v8 v = load(xk + q * w + j);
        acc[q] += v * v;
      }
    }
  }
  float inv[M];
  for (int64_t q = 0; q < M; ++q) inv[q] = inverse_norm(sum(acc[q]), r + i + q);
  int64_t offset = 0;
  for (size_t k = 0; k < x.widths.size(); ++k) {
    const int64_t w = x.widths[k];
    const float* xk = x.data[k] + i * w;
    for (int64_t q = 0; q < M; ++q) {
      const v8 s = splat(inv[q]);
      for (int64_t j = 0; j < w; j += 8) store(y + (i + q) * x.total + offset + j, load(xk + q * w + j) * s);
    }
    offset += w;
  }
}

GNNAUDIT_CLONES
void forward_rows(const Parts& x, int64_t begin, int64_t end, float* y, float* r) {
  if (vectorisable(x.widths)) {
    int64_t i = begin;
    for (; i + kRows <= end; i += kRows) forward_block<kRows>(x, i, y, r);
    for (; i < end; ++i) forward_block<1>(x, i, y, r);
    return;
  }
  for (int64_t i = begin; i < end; ++i) {
    float s = 0;
    for (size_t k = 0; k < x.widths.size(); ++k) {
      const float* xk = x.data[k] + i * x.widths[k];
      for (int64_t j = 0; j < x.widths[k]; ++j) s += xk[j] * xk[j];
    }
    const float inv = inverse_norm(s, r + i);
    float* yi = y + i * x.total;
    for (size_t k = 0; k < x.widths.size(); ++k) {
      const float* xk = x.data[k] + i * x.widths[k];
      for (int64_t j = 0; j < x.widths[k]; ++j) yi[j] = xk[j] * inv;
      yi += x.widths[k];
    }
  }
}

// The gradients' layout: the saved inputs and r, the output's gradient g, and one output block
// per part.
struct Grads {
  std::vector<const float*> x;
  const float* r;
  const float* g;
  int64_t total;
  std::vector<int64_t> widths;
  std::vector<float*> dx;
};

// dx_k = |r| (g - y <g, y>) with y = x |r| recomputed from the inputs (the node saves its inputs,
// not its output, so that callers may modify the output in place, as with the composite ops),
// and <g, y> taken as 0 on clamped rows (r < 0).
template <int64_t M>
GNNAUDIT_INLINE void backward_block(const Grads& b, int64_t i) {
  const int64_t d = b.total;
  v8 acc[M] = {};
  int64_t offset = 0;
  for (size_t k = 0; k < b.widths.size(); ++k) {
    const int64_t w = b.widths[k];
    for (int64_t j = 0; j < w; j += 8) {
      for (int64_t q = 0; q < M; ++q) acc[q] += load(b.g + (i + q) * d + offset + j) * load(b.x[k] + (i + q) * w + j);
    }
    offset += w;
  }
  v8 scale[M], c[M];
  for (int64_t q = 0; q < M; ++q) {
    const float ri = b.r[i + q];
    const float s = ri < 0 ? -ri : ri;
    scale[q] = splat(s);
    c[q] = splat(ri < 0 ? 0.0f : s * sum(acc[q]));
  }
  offset = 0;
  for (size_t k = 0; k < b.widths.size(); ++k) {
    const int64_t w = b.widths[k];
    for (int64_t q = 0; q < M; ++q) {
      const float* gi = b.g + (i + q) * d + offset;
      const float* xi = b.x[k] + (i + q) * w;
      float* di = b.dx[k] + (i + q) * w;
      for (int64_t j = 0; j < w; j += 8) store(di + j, scale[q] * (load(gi + j) - load(xi + j) * scale[q] * c[q]));
    }
    offset += w;
  }
}

GNNAUDIT_CLONES
void backward_rows(const Grads& b, bool vector_path, int64_t begin, int64_t end) {
  if (vector_path) {
    int64_t i = begin;
    for (; i + kRows <= end; i += kRows) backward_block<kRows>(b, i);
    for (; i < end; ++i) backward_block<1>(b, i);
    return;
  }
  for (int64_t i = begin; i < end; ++i) {
    const float* gi = b.g + i * b.total;
    const float ri = b.r[i];
    const float scale = ri < 0 ? -ri : ri;
    float c = 0;
    if (ri >= 0) {
      for (size_t k = 0; k < b.widths.size(); ++k) {
        const float* xi = b.x[k] + i * b.widths[k];
        for (int64_t j = 0; j < b.widths[k]; ++j) c += gi[j] * xi[j];
        gi += b.widths[k];
      }
      c *= scale;
      gi = b.g + i * b.total;
    }
    for (size_t k = 0; k < b.widths.size(); ++k) {
      const float* xi = b.x[k] + i * b.widths[k];
      float* di = b.dx[k] + i * b.widths[k];
      for (int64_t j = 0; j < b.widths[k]; ++j) di[j] = scale * (gi[j] - xi[j] * scale * c);
      gi += b.widths[k];
    }
  }
}

// Rows per parallel task (a multiple of kRows): enough work to amortise a task.
int64_t grain(int64_t cols) { return kRows * std::max<int64_t>(1, 8192 / std::max<int64_t>(cols, 1)); }

// The forward over the parts: y, r (negated where clamped) and the contiguous parts.
std::tuple<at::Tensor, at::Tensor, std::vector<at::Tensor>> forward_kernel(at::TensorList inputs) {
  std::vector<at::Tensor> xs;
  Parts parts;
  for (const auto& x : inputs) {
    xs.push_back(x.contiguous());
    parts.data.push_back(xs.back().const_data_ptr<float>());
    parts.widths.push_back(x.size(1));
    parts.total += x.size(1);
  }
  const int64_t n = xs[0].size(0);
  at::Tensor y = at::empty({n, parts.total}, xs[0].options());
  at::Tensor r = at::empty({n}, xs[0].options());
  float* yp = y.mutable_data_ptr<float>();
  float* rp = r.mutable_data_ptr<float>();
  at::parallel_for(0, n, grain(parts.total), [&](int64_t begin, int64_t end) { forward_rows(parts, begin, end, yp, rp); });
  return {y, r, xs};
}

// The gradient of each (contiguous) part from r and the output's gradient `grad`.
variable_list backward_kernel(const std::vector<at::Tensor>& xs, const at::Tensor& r, const at::Tensor& grad) {
  const at::Tensor g = grad.contiguous();
  Grads b{{}, r.const_data_ptr<float>(), g.const_data_ptr<float>(), 0, {}, {}};
  const int64_t n = r.size(0);
  variable_list dxs;
  for (const auto& x : xs) {
    b.x.push_back(x.const_data_ptr<float>());
    b.widths.push_back(x.size(1));
    b.total += x.size(1);
    dxs.push_back(at::empty({n, x.size(1)}, x.options()));
    b.dx.push_back(dxs.back().mutable_data_ptr<float>());
  }
  const bool vector_path = vectorisable(b.widths);
  at::parallel_for(0, n, grain(b.total), [&](int64_t begin, int64_t end) { backward_rows(b, vector_path, begin, end); });
  return dxs;
}

struct NormalizedConcat : public torch::autograd::Function<NormalizedConcat> {
  static at::Tensor forward(AutogradContext* ctx, at::TensorList inputs) {
    auto [y, r, xs] = forward_kernel(inputs);
    xs.push_back(r);
    ctx->save_for_backward(xs);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor r = saved.back();
    saved.pop_back();
    return backward_kernel(saved, r, grads[0]);
  }
};

}  // namespace

// Normalises the rows of [xs[0] | ... | xs[count-1]], 2-D float CPU tensors with equal row counts
// (the caller checks). Returns a new tensor that the caller owns, or null if libtorch threw (no
// exception may cross into Rust).
extern "C" at::Tensor* gnnaudit_normalized_concat(const at::Tensor* const* xs, int64_t count) {
  try {
    std::vector<at::Tensor> inputs;
    for (int64_t k = 0; k < count; ++k) inputs.push_back(*xs[k]);
    return new at::Tensor(NormalizedConcat::apply(at::TensorList(inputs)));
  } catch (...) {
    return nullptr;
  }
}

// The two kernels alone, outside autograd, for `bench methods`' compute floor: the forward over
// xs and, when `grad` is not null, the backward from it. The outputs are dropped. Returns false
// if libtorch threw.
extern "C" bool gnnaudit_normalized_concat_kernels(const at::Tensor* const* xs, int64_t count,
                                                   const at::Tensor* grad) {
  try {
    std::vector<at::Tensor> inputs;
    for (int64_t k = 0; k < count; ++k) inputs.push_back(*xs[k]);
    auto [y, r, xs] = forward_kernel(inputs);
    if (grad != nullptr) backward_kernel(xs, r, *grad);
    return true;
  } catch (...) {
    return false;
  }
}
