// templates/vision.cuh — GridSample, RoiAlign and NonMaxSuppression (namespace mc::vision).
//
// GridSample and RoiAlign: one thread per output element (grid-stride loop), every operand a strided
// view (any layout), FP32 arithmetic; the sampling rules are compiler/ops/vision.cpp's (PyTorch's
// grid_sampler_2d; ONNX Runtime's RoiAlign), computed here in float.
//
// NonMaxSuppression: two launches. NmsSelect runs a block per (batch, class): the candidates (score
// above score_threshold) are flags in the workspace; each round the block finds the best candidate
// left (the highest score, the lower index among equal ones), selects it and clears every candidate
// it suppresses (IoU above iou_threshold), up to max_output_boxes_per_class rounds: the greedy
// algorithm, in ONNX's order. NmsCompact (one block) writes the selections in (batch, class, rank)
// order into selected_indices and -1 into the rows past them (the output's static bound).
#pragma once

#include "tensor_index.cuh"

namespace mc::vision {

// ---- GridSample ---------------------------------------------------------------------------------

enum GridMode : int { kLinear = 0, kNearest = 1, kCubic = 2 };
enum GridPadding : int { kZeros = 0, kBorder = 1, kReflection = 2 };

__device__ __forceinline__ float grid_unnormalize(float g, int size, bool align_corners) {
  const float s = static_cast<float>(size);
  return align_corners ? (g + 1.0f) / 2.0f * (s - 1.0f) : ((g + 1.0f) * s - 1.0f) / 2.0f;
}

__device__ __forceinline__ float grid_clip(float x, int size) { return fminf(static_cast<float>(size - 1), fmaxf(x, 0.0f)); }

__device__ __forceinline__ float grid_reflect(float x, int twice_low, int twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float lo = static_cast<float>(twice_low) / 2.0f, span = static_cast<float>(twice_high - twice_low) / 2.0f;
  x = fabsf(x - lo);
  const float extra = fmodf(x, span);
  const int flips = static_cast<int>(floorf(x / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

template <int kPadding, bool kAlignCorners>
__device__ __forceinline__ float grid_pad(float x, int size) {
  if constexpr (kPadding == kBorder) {
    return grid_clip(x, size);
  } else if constexpr (kPadding == kReflection) {
    return grid_clip(kAlignCorners ? grid_reflect(x, 0, 2 * (size - 1)) : grid_reflect(x, -1, 2 * size - 1), size);
  } else {
    return x;
  }
}

/// Cubic convolution weights, A = -0.75, of the taps floor(x) - 1 .. floor(x) + 2.
__device__ __forceinline__ void cubic_weights(float t, float w[4]) {
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f; };
  auto far = [](float x) { return ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A; };
  w[0] = far(t + 1.0f);
  w[1] = near(t);
  w[2] = near(1.0f - t);
  w[3] = far(2.0f - t);
}

/// \brief Y[n, c, i, j] = X[n, c] sampled at Grid[n, i, j] = (x, y) in [-1, 1]. XShape = [N, C, H, W],
/// YShape = [N, C, Ho, Wo]; GStrides the grid's [N, Ho, Wo, 2] strides.
template <class TX, class TG, class TY, int kMode, int kPadding, bool kAlignCorners, class XShape, class XStrides,
          class GStrides, class YShape, class YStrides>
struct GridSample {
  static constexpr int H = static_cast<int>(XShape::at(2)), W = static_cast<int>(XShape::at(3));
  using Index = ix::index_t<YShape, YStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(YShape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    const void* x = nullptr;
    const void* grid = nullptr;
    void* y = nullptr;
  };
  // X[plane] at (yy, xx), 0 outside.
  static __device__ __forceinline__ float at(const void* x, int64_t plane, int yy, int xx) {
    if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0.0f;
    return ix::load<TX>(x, plane + yy * XStrides::at(2) + xx * XStrides::at(3));
  }
  static __device__ void run(const Params& p) {
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(YShape::numel); i += ix::grid_stride<Index>()) {
      const int64_t n = ix::coord<YShape, 0>(i), c = ix::coord<YShape, 1>(i), oi = ix::coord<YShape, 2>(i),
                    oj = ix::coord<YShape, 3>(i);
      const int64_t g = n * GStrides::at(0) + oi * GStrides::at(1) + oj * GStrides::at(2);
      float px = grid_unnormalize(ix::load<TG>(p.grid, g), W, kAlignCorners);
      float py = grid_unnormalize(ix::load<TG>(p.grid, g + GStrides::at(3)), H, kAlignCorners);
      const int64_t plane = n * XStrides::at(0) + c * XStrides::at(1);
      float v = 0.0f;
      if constexpr (kMode == kCubic) {
        const float fx = floorf(px), fy = floorf(py);
        float wx[4], wy[4];
        cubic_weights(px - fx, wx);
        cubic_weights(py - fy, wy);
        MC_UNROLL
        for (int r = 0; r < 4; ++r) {
          const int ty = static_cast<int>(grid_pad<kPadding, kAlignCorners>(fy - 1.0f + static_cast<float>(r), H));
          float row = 0.0f;
          MC_UNROLL
          for (int q = 0; q < 4; ++q) {
            const int tx = static_cast<int>(grid_pad<kPadding, kAlignCorners>(fx - 1.0f + static_cast<float>(q), W));
            row += wx[q] * at(p.x, plane, ty, tx);
          }
          v += wy[r] * row;
        }
      } else {
        px = grid_pad<kPadding, kAlignCorners>(px, W);
        py = grid_pad<kPadding, kAlignCorners>(py, H);
        if constexpr (kMode == kNearest) {
          v = at(p.x, plane, static_cast<int>(nearbyintf(py)), static_cast<int>(nearbyintf(px)));
        } else {
          const float fx = floorf(px), fy = floorf(py), tx = px - fx, ty = py - fy;
          const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
          v = (1.0f - ty) * ((1.0f - tx) * at(p.x, plane, y0, x0) + tx * at(p.x, plane, y0, x0 + 1)) +
              ty * ((1.0f - tx) * at(p.x, plane, y0 + 1, x0) + tx * at(p.x, plane, y0 + 1, x0 + 1));
        }
      }
      ix::store<TY>(p.y, ix::offset<YShape, YStrides>(i), v);
    }
  }
};

// ---- RoiAlign -----------------------------------------------------------------------------------

/// \brief Y[r, c, i, j]: the average (kMax: the largest) of the bilinear samples of bin (i, j) of
/// region r of X[batch_indices[r], c]. XShape = [N, C, H, W], YShape = [R, C, PH, PW]; RStrides the
/// rois' [R, 4] strides, BStrides batch_indices' [R]. kSamplingRatio 0: adaptive per region. A
/// batch index outside [0, N) gives zeros (the reference refuses it).
template <class TX, class TR, class TY, bool kMax, bool kHalfPixel, int kSamplingRatio, class XShape, class XStrides,
          class RStrides, class BStrides, class YShape, class YStrides>
struct RoiAlign {
  static constexpr int N = static_cast<int>(XShape::at(0)), H = static_cast<int>(XShape::at(2)),
                       W = static_cast<int>(XShape::at(3));
  static constexpr int PH = static_cast<int>(YShape::at(2)), PW = static_cast<int>(YShape::at(3));
  using Index = ix::index_t<YShape, YStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(YShape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    const void* x = nullptr;
    const void* rois = nullptr;
    const int64_t* batch_indices = nullptr;
    void* y = nullptr;
    float spatial_scale = 1.0f;
  };
  // One sample: the bilinear value (kMax: the largest weighted corner), 0 beyond a pixel outside.
  static __device__ __forceinline__ float sample(const void* x, int64_t plane, float y, float xx) {
    if (y < -1.0f || y > static_cast<float>(H) || xx < -1.0f || xx > static_cast<float>(W)) return 0.0f;
    y = fmaxf(y, 0.0f);
    xx = fmaxf(xx, 0.0f);
    int y0 = static_cast<int>(y), x0 = static_cast<int>(xx), y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= H - 1) {
      y0 = y1 = H - 1;
      y = static_cast<float>(y0);
    }
    if (x0 >= W - 1) {
      x0 = x1 = W - 1;
      xx = static_cast<float>(x0);
    }
    const float ly = y - static_cast<float>(y0), lx = xx - static_cast<float>(x0), hy = 1.0f - ly, hx = 1.0f - lx;
    auto v = [&](int a, int b) { return ix::load<TX>(x, plane + a * XStrides::at(2) + b * XStrides::at(3)); };
    const float w00 = hy * hx * v(y0, x0), w01 = hy * lx * v(y0, x1), w10 = ly * hx * v(y1, x0), w11 = ly * lx * v(y1, x1);
    if constexpr (kMax) return fmaxf(fmaxf(w00, w01), fmaxf(w10, w11));
    return w00 + w01 + w10 + w11;
  }
  static __device__ void run(const Params& p) {
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(YShape::numel); i += ix::grid_stride<Index>()) {
      const int64_t r = ix::coord<YShape, 0>(i), c = ix::coord<YShape, 1>(i);
      const int ph = static_cast<int>(ix::coord<YShape, 2>(i)), pw = static_cast<int>(ix::coord<YShape, 3>(i));
      const int64_t b = p.batch_indices[r * BStrides::at(0)];
      float out = 0.0f;
      if (b >= 0 && b < N) {
        const float offset = kHalfPixel ? 0.5f : 0.0f;
        auto roi = [&](int k) { return ix::load<TR>(p.rois, r * RStrides::at(0) + k * RStrides::at(1)) * p.spatial_scale; };
        const float x1 = roi(0) - offset, y1 = roi(1) - offset;
        float rw = roi(2) - offset - x1, rh = roi(3) - offset - y1;
        if constexpr (!kHalfPixel) {
          rw = fmaxf(rw, 1.0f);
          rh = fmaxf(rh, 1.0f);
        }
        const float bh = rh / static_cast<float>(PH), bw = rw / static_cast<float>(PW);
        const int gh = kSamplingRatio > 0 ? kSamplingRatio : static_cast<int>(ceilf(rh / static_cast<float>(PH)));
        const int gw = kSamplingRatio > 0 ? kSamplingRatio : static_cast<int>(ceilf(rw / static_cast<float>(PW)));
        const int64_t plane = b * XStrides::at(0) + c * XStrides::at(1);
        bool first = true;
        for (int iy = 0; iy < gh; ++iy) {
          const float sy = y1 + static_cast<float>(ph) * bh + (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
          for (int jx = 0; jx < gw; ++jx) {
            const float sx = x1 + static_cast<float>(pw) * bw + (static_cast<float>(jx) + 0.5f) * bw / static_cast<float>(gw);
            const float s = sample(p.x, plane, sy, sx);
            if constexpr (kMax) {
              out = first ? s : fmaxf(out, s);
              first = false;
            } else {
              out += s;
            }
          }
        }
        if constexpr (!kMax) out /= static_cast<float>(gh * gw > 1 ? gh * gw : 1);
      }
      ix::store<TY>(p.y, ix::offset<YShape, YStrides>(i), out);
    }
  }
};

// ---- NonMaxSuppression --------------------------------------------------------------------------

/// The workspace of the two launches: candidate flags, selections and their counts and offsets.
template <int64_t kBatches, int64_t kClasses, int64_t kBoxes, int64_t kMaxPerClass>
struct NmsWorkspace {
  static constexpr int64_t kPairs = kBatches * kClasses;
  static constexpr int64_t kAliveBytes = (kPairs * kBoxes + 15) / 16 * 16;
  static constexpr int64_t kSelectedAt = kAliveBytes;                            // int32 [pairs, max per class]
  static constexpr int64_t kCountsAt = kSelectedAt + kPairs * kMaxPerClass * 4;  // int32 [pairs]
  static constexpr int64_t kOffsetsAt = kCountsAt + kPairs * 4;                  // int32 [pairs + 1]
  static constexpr int64_t kBytes = (kOffsetsAt + (kPairs + 1) * 4 + 15) / 16 * 16;
  static __device__ __forceinline__ uint8_t* alive(void* w) { return static_cast<uint8_t*>(w); }
  static __device__ __forceinline__ int32_t* selected(void* w) {
    return reinterpret_cast<int32_t*>(static_cast<uint8_t*>(w) + kSelectedAt);
  }
  static __device__ __forceinline__ int32_t* counts(void* w) {
    return reinterpret_cast<int32_t*>(static_cast<uint8_t*>(w) + kCountsAt);
  }
  static __device__ __forceinline__ int32_t* offsets(void* w) {
    return reinterpret_cast<int32_t*>(static_cast<uint8_t*>(w) + kOffsetsAt);
  }
};

struct NmsBox {
  float x1, y1, x2, y2;
};

/// True when the boxes' IoU is above `threshold` (compiler/ops/vision.cpp nms_suppresses).
__device__ __forceinline__ bool nms_suppresses(const NmsBox& a, const NmsBox& b, float threshold) {
  const float ix1 = fmaxf(a.x1, b.x1), iy1 = fmaxf(a.y1, b.y1), ix2 = fminf(a.x2, b.x2), iy2 = fminf(a.y2, b.y2);
  if (ix2 <= ix1 || iy2 <= iy1) return false;
  const float inter = (ix2 - ix1) * (iy2 - iy1);
  const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) return false;
  return inter / uni > threshold;
}

/// \brief The selections of one (batch, class) per block. BStrides: boxes [B, N, 4]; SStrides:
/// scores [B, C, N].
template <class TB, class TS, bool kCenter, int64_t kBatches, int64_t kClasses, int64_t kBoxes, int64_t kMaxPerClass,
          class BStrides, class SStrides>
struct NmsSelect {
  using Work = NmsWorkspace<kBatches, kClasses, kBoxes, kMaxPerClass>;
  static constexpr int kThreads = 256;
  static constexpr int kSmemBytes = 0;
  static dim3 grid() { return dim3(static_cast<unsigned>(Work::kPairs)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    const void* boxes = nullptr;
    const void* scores = nullptr;
    const void* iou_threshold = nullptr;    ///< null: 0
    const void* score_threshold = nullptr;  ///< null: every box is a candidate
    void* workspace = nullptr;
  };
  static __device__ __forceinline__ NmsBox box(const void* boxes, int64_t b, int64_t i) {
    const int64_t o = b * BStrides::at(0) + i * BStrides::at(1);
    float v[4];
    for (int k = 0; k < 4; ++k) v[k] = ix::load<TB>(boxes, o + k * BStrides::at(2));
    if constexpr (kCenter) {
      const float hw = v[2] / 2.0f, hh = v[3] / 2.0f;
      return NmsBox{v[0] - hw, v[1] - hh, v[0] + hw, v[1] + hh};
    } else {
      return NmsBox{fminf(v[1], v[3]), fminf(v[0], v[2]), fmaxf(v[1], v[3]), fmaxf(v[0], v[2])};
    }
  }
  static __device__ void run(const Params& p) {
    __shared__ float best_score[kThreads];
    __shared__ int best_index[kThreads];
    const int tid = static_cast<int>(threadIdx.x);
    const int64_t pair = static_cast<int64_t>(blockIdx.x), b = pair / kClasses, c = pair % kClasses;
    uint8_t* alive = Work::alive(p.workspace) + pair * kBoxes;
    const int64_t s0 = b * SStrides::at(0) + c * SStrides::at(1);
    auto score = [&](int64_t i) { return ix::load<TS>(p.scores, s0 + i * SStrides::at(2)); };
    const float iou = p.iou_threshold ? ix::load<TS>(p.iou_threshold, 0) : 0.0f;
    const bool has_min = p.score_threshold != nullptr;
    const float min_score = has_min ? ix::load<TS>(p.score_threshold, 0) : 0.0f;
    for (int64_t i = tid; i < kBoxes; i += kThreads) alive[i] = !has_min || score(i) > min_score ? 1 : 0;
    __syncthreads();
    int count = 0;
    for (; count < kMaxPerClass; ++count) {
      // The best candidate left: the highest score, the lower index among equal ones.
      float s = 0.0f;
      int at = -1;
      for (int64_t i = tid; i < kBoxes; i += kThreads) {
        if (!alive[i]) continue;
        const float v = score(i);
        if (at < 0 || v > s) {
          s = v;
          at = static_cast<int>(i);
        }
      }
      st_shared(best_score + tid, s);
      st_shared(best_index + tid, at);
      __syncthreads();
      for (int half = kThreads / 2; half > 0; half /= 2) {
        if (tid < half) {
          const int ia = ld_shared(best_index + tid), ib = ld_shared(best_index + tid + half);
          const float sa = ld_shared(best_score + tid), sb = ld_shared(best_score + tid + half);
          if (ib >= 0 && (ia < 0 || sb > sa || (sb == sa && ib < ia))) {
            st_shared(best_score + tid, sb);
            st_shared(best_index + tid, ib);
          }
        }
        __syncthreads();
      }
      const int best = ld_shared(best_index);
      __syncthreads();  // every thread has read the winner before the next round writes
      if (best < 0) break;
      if (tid == 0) Work::selected(p.workspace)[pair * kMaxPerClass + count] = best;
      const NmsBox chosen = box(p.boxes, b, best);
      for (int64_t i = tid; i < kBoxes; i += kThreads) {
        if (alive[i] && (i == best || nms_suppresses(chosen, box(p.boxes, b, i), iou))) alive[i] = 0;
      }
      __syncthreads();
    }
    if (tid == 0) Work::counts(p.workspace)[pair] = count;
  }
};

/// \brief selected_indices [Bound, 3] (YStrides): the selections of every (batch, class) in order,
/// then -1 rows up to the bound. One block.
template <int64_t kBatches, int64_t kClasses, int64_t kBoxes, int64_t kMaxPerClass, class YStrides>
struct NmsCompact {
  using Work = NmsWorkspace<kBatches, kClasses, kBoxes, kMaxPerClass>;
  static constexpr int64_t kBound = Work::kPairs * kMaxPerClass;
  static constexpr int kThreads = 256;
  static constexpr int kSmemBytes = 0;
  static dim3 grid() { return dim3(1); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* workspace = nullptr;
    int64_t* y = nullptr;
  };
  static __device__ void run(const Params& p) {
    const int tid = static_cast<int>(threadIdx.x);
    int32_t* offsets = Work::offsets(p.workspace);
    const int32_t* counts = Work::counts(p.workspace);
    const int32_t* selected = Work::selected(p.workspace);
    if (tid == 0) {
      int32_t total = 0;
      for (int64_t q = 0; q < Work::kPairs; ++q) {
        offsets[q] = total;
        total += counts[q];
      }
      offsets[Work::kPairs] = total;
    }
    __syncthreads();
    const int64_t total = offsets[Work::kPairs];
    for (int64_t r = tid; r < kBound; r += kThreads) {
      int64_t v[3] = {-1, -1, -1};
      if (r < total) {
        int64_t lo = 0, hi = Work::kPairs - 1;  // the last pair whose offset is <= r
        while (lo < hi) {
          const int64_t mid = (lo + hi + 1) / 2;
          if (offsets[mid] <= r) lo = mid; else hi = mid - 1;
        }
        v[0] = lo / kClasses;
        v[1] = lo % kClasses;
        v[2] = selected[lo * kMaxPerClass + (r - offsets[lo])];
      }
      for (int k = 0; k < 3; ++k) p.y[r * YStrides::at(0) + k * YStrides::at(1)] = v[k];
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) vision_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::vision
