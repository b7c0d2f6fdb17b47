// compiler/ops/pool.cpp — MaxPool (with the optional Indices output),
// AveragePool, GlobalAveragePool, GlobalMaxPool (1 to 3 spatial dims).
#include <algorithm>
#include <array>
#include <limits>

#include "ops/common.h"
#include "ops/window.h"
#include "reference/parallel.h"

namespace modelc::ops {
namespace {

void require_flag(const Node& n, const char* name) {
  const int64_t v = n.attr_int(name, 0);
  if (v != 0 && v != 1) throw n.error(std::string("attribute '") + name + "' is " + std::to_string(v) + ", expected 0 or 1");
}

// Attribute checks that need no input shape (MaxPool, AveragePool).
void check_pool_attrs(const Node& n) {
  parse_auto_pad(n);
  if (!n.has_attr("kernel_shape")) throw n.error("attribute 'kernel_shape' is missing (it is required)");
  for (const char* name : {"strides", "dilations", "kernel_shape"}) {
    for (int64_t v : n.attr_ints(name)) {
      if (v < 1) throw n.error(std::string("attribute '") + name + "' has value " + std::to_string(v) + ", expected >= 1");
    }
  }
  for (int64_t v : n.attr_ints("pads")) {
    if (v < 0) throw n.error("attribute 'pads' has value " + std::to_string(v) + ", expected >= 0");
  }
  for (const char* flag : {"ceil_mode", "count_include_pad", "storage_order"}) require_flag(n, flag);
}

/// The taps of one window along one dim: where the in-bounds ones start, how
/// many are in bounds, and how many lie inside [-pad_begin, in + pad_end).
struct Taps {
  int64_t pos = 0;     // input position of the first tap inside the input
  int64_t count = 0;   // taps inside the input (consecutive: a window is a box)
  int64_t padded = 0;  // taps inside input + pads
};

Taps taps(const Window3& q, int dim, int64_t o) {
  const int64_t start = o * q.stride[dim] - q.pad[dim], d = q.dilation[dim];
  Taps t;
  for (int64_t j = 0; j < q.kernel[dim]; ++j) {
    const int64_t p = start + j * d;
    if (p >= -q.pad[dim] && p < q.in[dim] + q.pad_end[dim]) ++t.padded;
    if (p >= 0 && p < q.in[dim]) {
      if (t.count++ == 0) t.pos = p;
    }
  }
  return t;
}

/// The taps of every output column (the same for every row and plane).
std::vector<Taps> row_taps(const Window3& q) {
  std::vector<Taps> r(static_cast<std::size_t>(q.out[2]));
  for (int64_t ox = 0; ox < q.out[2]; ++ox) r[static_cast<std::size_t>(ox)] = taps(q, 2, ox);
  return r;
}

// First maximum wins on ties. Indices are flat over N x C x spatial.
std::vector<Tensor> eval_maxpool(const Node& n, const TensorRefs& in) {
  const WindowGeometry g = pool_geometry(n);
  const Window3 q = g.padded3();
  const bool col_major = n.attr_int("storage_order", 0) != 0;
  const int64_t planes = g.N * g.C, in_sz = q.in_size(), out_sz = q.out_size();
  // float32 is compared and stored as it is (a maximum needs no widening); other types as doubles.
  const bool f32 = in[0]->dtype() == DType::float32;
  const std::vector<double> xd = f32 ? std::vector<double>() : in[0]->to_f64();
  std::vector<double> y(f32 ? 0 : static_cast<std::size_t>(planes * out_sz));
  Tensor yf = f32 ? Tensor(DType::float32, g.output_shape()) : Tensor();
  float* yfp = f32 ? yf.mutable_data<float>() : nullptr;
  const float* xf = f32 ? in[0]->data<float>() : nullptr;
  // The Indices only when the node has that output.
  const bool want_indices = n.has_output(1);
  std::vector<int64_t> ind(want_indices ? static_cast<std::size_t>(planes * out_sz) : 0);
  // Column-major (storage_order=1) strides of the original spatial dims, as 3-D.
  std::array<int64_t, 3> cm{0, 0, 0};
  {
    const std::size_t off = 3 - g.in.size();
    int64_t st = 1;
    for (std::size_t i = 0; i < g.in.size(); ++i) {
      cm[off + i] = st;
      st *= g.in[i];
    }
  }
  const std::vector<Taps> xtaps = row_taps(q);
  // Threads over planes (reference/parallel.h): each writes its own.
  auto plane = [&](auto tag, int64_t p) {
    using T = decltype(tag);
    const T* xp = (f32 ? reinterpret_cast<const T*>(xf) : reinterpret_cast<const T*>(xd.data())) + p * in_sz;
    T* yp = (f32 ? reinterpret_cast<T*>(yfp) : reinterpret_cast<T*>(y.data()));
    int64_t o = p * out_sz;
    for (int64_t oz = 0; oz < q.out[0]; ++oz) {
      const Taps tz = taps(q, 0, oz);
      for (int64_t oy = 0; oy < q.out[1]; ++oy) {
        const Taps ty = taps(q, 1, oy);
        for (int64_t ox = 0; ox < q.out[2]; ++ox, ++o) {
          const Taps& tx = xtaps[static_cast<std::size_t>(ox)];
          T best = 0;
          int64_t bz = -1, by = -1, bx = -1;
          for (int64_t a = 0; a < tz.count; ++a) {
            const int64_t iz = tz.pos + a * q.dilation[0];
            for (int64_t b = 0; b < ty.count; ++b) {
              const int64_t iy = ty.pos + b * q.dilation[1];
              const T* row = xp + (iz * q.in[1] + iy) * q.in[2];
              for (int64_t c = 0; c < tx.count; ++c) {
                const int64_t ix = tx.pos + c * q.dilation[2];
                if (bx < 0 || row[ix] > best) {
                  best = row[ix];
                  bz = iz;
                  by = iy;
                  bx = ix;
                }
              }
            }
          }
          // A window entirely in the padding (possible only with pads >= the
          // window) gives 0 and index -1, like the ONNX reference.
          yp[o] = best;
          if (want_indices) {
            ind[o] = bx < 0 ? -1
                            : p * in_sz + (col_major ? bz * cm[0] + by * cm[1] + bx * cm[2]
                                                     : (bz * q.in[1] + by) * q.in[2] + bx);
          }
        }
      }
    }
  };
  reference::parallel_items(planes, out_sz * q.k_size(), [&](int64_t p) {
    if (f32) {
      plane(float{}, p);
    } else {
      plane(double{}, p);
    }
  });
  const Shape ys = g.output_shape();
  return {f32 ? yf : Tensor::from_f64(in[0]->dtype(), ys, y),
          want_indices ? Tensor::from_i64(DType::int64, ys, ind) : Tensor()};
}

// count_include_pad=0 divides by the taps inside the input; =1 by the taps
// inside input + pads (a ceil_mode window running past the end padding does
// not count the part beyond it, as in PyTorch and onnxruntime).
Tensor eval_averagepool(const Node& n, const TensorRefs& in) {
  const WindowGeometry g = pool_geometry(n);
  const Window3 q = g.padded3();
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  const std::vector<double> x = in[0]->to_f64();
  const int64_t planes = g.N * g.C, in_sz = q.in_size(), out_sz = q.out_size();
  std::vector<double> y(static_cast<std::size_t>(planes * out_sz));
  const std::vector<Taps> xtaps = row_taps(q);
  reference::parallel_items(planes, out_sz * q.k_size(), [&](int64_t p) {
    const double* xp = x.data() + p * in_sz;
    int64_t o = p * out_sz;
    for (int64_t oz = 0; oz < q.out[0]; ++oz) {
      const Taps tz = taps(q, 0, oz);
      for (int64_t oy = 0; oy < q.out[1]; ++oy) {
        const Taps ty = taps(q, 1, oy);
        for (int64_t ox = 0; ox < q.out[2]; ++ox, ++o) {
          const Taps& tx = xtaps[static_cast<std::size_t>(ox)];
          double sum = 0.0;
          for (int64_t a = 0; a < tz.count; ++a) {
            const int64_t iz = tz.pos + a * q.dilation[0];
            for (int64_t b = 0; b < ty.count; ++b) {
              const int64_t iy = ty.pos + b * q.dilation[1];
              const double* row = xp + (iz * q.in[1] + iy) * q.in[2];
              for (int64_t c = 0; c < tx.count; ++c) sum += row[tx.pos + c * q.dilation[2]];
            }
          }
          const int64_t count =
              include_pad ? tz.padded * ty.padded * tx.padded : tz.count * ty.count * tx.count;
          y[o] = count > 0 ? sum / static_cast<double>(count) : 0.0;
        }
      }
    }
  });
  return Tensor::from_f64(in[0]->dtype(), g.output_shape(), y);
}

void infer_maxpool(Node& n) {
  const Shape s = pool_geometry(n).output_shape();
  n.output(0).set_type(n.input(0).dtype(), s);
  if (n.has_output(1)) n.output(1).set_type(DType::int64, s);
}

void infer_averagepool(Node& n) { n.output(0).set_type(n.input(0).dtype(), pool_geometry(n).output_shape()); }

int64_t window_flops(const Node& n) {
  const WindowGeometry g = pool_geometry(n);
  return g.N * g.C * num_elements(g.out) * num_elements(g.kernel);
}

void validate_maxpool(const Node& n) {
  check_pool_attrs(n);
  if (n.input(0).has_type()) {
    require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16, DType::int8, DType::uint8});
  }
}

void validate_averagepool(const Node& n) {
  check_pool_attrs(n);
  if (n.input(0).has_type()) require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16});
}

// ---- Global pools ----------------------------------------------------------

Shape global_output_shape(const Node& n) {
  require_spatial_input(n, 2);
  Shape s = n.input(0).shape();
  std::fill(s.begin() + 2, s.end(), 1);
  return s;
}

Tensor eval_global(const Node& n, const Tensor& X, bool average) {
  const Shape ys = global_output_shape(n);
  const Shape& xs = X.shape();
  const int64_t planes = xs[0] * xs[1];
  const int64_t inner = planes > 0 ? X.numel() / planes : 0;
  const std::vector<double> x = X.to_f64();
  std::vector<double> y(static_cast<std::size_t>(planes));
  reference::parallel_items(planes, inner, [&](int64_t p) {
    const double* v = x.data() + p * inner;
    if (average) {
      double sum = 0.0;
      for (int64_t k = 0; k < inner; ++k) sum += v[k];
      y[p] = inner > 0 ? sum / static_cast<double>(inner) : 0.0;
    } else {
      double best = inner > 0 ? v[0] : 0.0;
      for (int64_t k = 1; k < inner; ++k) best = std::max(best, v[k]);
      y[p] = best;
    }
  });
  return Tensor::from_f64(X.dtype(), ys, y);
}

}  // namespace

MODELC_REGISTER_OP(MaxPool)
    .since(1)
    .attrs({"auto_pad", "kernel_shape", "pads", "strides"})
    .inputs(1, 1)
    .validate(validate_maxpool)
    .infer(infer_maxpool)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_maxpool(n, in)[0]}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("max over each window");

MODELC_REGISTER_OP(MaxPool)
    .since(8)
    .attrs({"auto_pad", "kernel_shape", "pads", "storage_order", "strides"})
    .inputs(1, 1)
    .outputs(1, 2)
    .validate(validate_maxpool)
    .infer(infer_maxpool)
    .eval(eval_maxpool)
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("max over each window; optional Indices (flat, row- or column-major per storage_order)");

MODELC_REGISTER_OP(MaxPool)
    .since(10)
    .attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"})
    .inputs(1, 1)
    .outputs(1, 2)
    .validate(validate_maxpool)
    .infer(infer_maxpool)
    .eval(eval_maxpool)
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("max over each (dilated) window, ceil_mode; optional Indices (flat, row- or column-major)");

MODELC_REGISTER_OP(AveragePool)
    .since(1)
    .attrs({"auto_pad", "kernel_shape", "pads", "strides"})
    .inputs(1, 1)
    .validate(validate_averagepool)
    .infer(infer_averagepool)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_averagepool(n, in)}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("mean over each window, padding not counted");

MODELC_REGISTER_OP(AveragePool)
    .since(7)
    .attrs({"auto_pad", "count_include_pad", "kernel_shape", "pads", "strides"})
    .inputs(1, 1)
    .validate(validate_averagepool)
    .infer(infer_averagepool)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_averagepool(n, in)}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("mean over each window (count_include_pad)");

MODELC_REGISTER_OP(AveragePool)
    .since(10)
    .attrs({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"})
    .inputs(1, 1)
    .validate(validate_averagepool)
    .infer(infer_averagepool)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_averagepool(n, in)}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("mean over each window (count_include_pad, ceil_mode)");

MODELC_REGISTER_OP(AveragePool)
    .since(19)
    .attrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"})
    .inputs(1, 1)
    .validate(validate_averagepool)
    .infer(infer_averagepool)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_averagepool(n, in)}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops(window_flops)
    .doc("mean over each (dilated) window (count_include_pad, ceil_mode)");

MODELC_REGISTER_OP(GlobalAveragePool)
    .since(1)
    .inputs(1, 1)
    .validate([](const Node& n) {
      if (n.input(0).has_type()) require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16});
    })
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), global_output_shape(n)); })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_global(n, *in[0], true)}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops([](const Node& n) { return n.input(0).numel(); })
    .doc("mean over all spatial dims");

MODELC_REGISTER_OP(GlobalMaxPool)
    .since(1)
    .inputs(1, 1)
    .validate([](const Node& n) {
      if (n.input(0).has_type()) require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16});
    })
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), global_output_shape(n)); })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_global(n, *in[0], false)}; })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("pool")
    .family("pool")
    .flops([](const Node& n) { return n.input(0).numel(); })
    .doc("max over all spatial dims");

}  // namespace modelc::ops
