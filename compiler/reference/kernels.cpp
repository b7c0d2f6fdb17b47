// compiler/reference/kernels.cpp — see kernels.h.
#include "reference/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "ops/common.h"
#include "reference/parallel.h"
#include "support/error.h"

// OpenBLAS's own (its cblas.h declares it too; the generic cblas.h of another BLAS does not).
extern "C" void openblas_set_num_threads(int num_threads);

namespace modelc::reference {

namespace {

thread_local Accumulation t_accumulation = Accumulation::f64;

// Every BLAS call runs on the thread that makes it: the tasks are ours, and OpenBLAS splitting a
// call over its own threads would make the blocking, and so the sums, depend on the machine.
void blas_on_calling_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

int blas_int(int64_t v) {
  if (v < 0 || v > std::numeric_limits<int>::max()) throw Error("internal: a matrix dimension of " + std::to_string(v) + " does not fit the BLAS's int");
  return static_cast<int>(v);
}

/// Per-thread scratch, reused from task to task (a fresh allocation of a few MB per task would
/// cost its page faults every time); a buffer that grew past 64 MB is released after its task.
template <class S>
class Scratch {
 public:
  explicit Scratch(int slot) : slot_(slot) {}
  S* get(std::size_t n) {
    std::vector<S>& b = buffers()[slot_];
    if (b.size() < n) b.resize(n);
    return b.data();
  }
  ~Scratch() {
    std::vector<S>& b = buffers()[slot_];
    if (b.size() * sizeof(S) > (std::size_t{64} << 20)) std::vector<S>().swap(b);
  }

 private:
  static std::vector<S>* buffers() {
    thread_local std::vector<S> b[2];
    return b;
  }
  int slot_;
};

inline void store(float& d, double v) { d = static_cast<float>(v); }
inline void store(float& d, float v) { d = v; }
inline void store(double& d, double v) { d = v; }
inline void store(int64_t& d, double v) { d = static_cast<int64_t>(v); }
// The int32 accumulators of ConvInteger wrap, as a C cast of the int64 sum.
inline void store(int32_t& d, double v) { d = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v))); }

// Output positions per im2col tile and channels per task, from the shapes only (parallel.h).
constexpr int64_t kTileElements = int64_t{1} << 17;  // im2col tile and product tile: 1 MB of doubles each
constexpr int64_t kMinTasks = 8;                      // cut channels too when positions give fewer tasks

/// Column tile of an im2col product: rows of `rows` elements, at most kTileElements in all.
int64_t column_tile(int64_t rows, int64_t other_rows, int64_t columns) {
  const int64_t t = kTileElements / std::max<int64_t>(1, std::max(rows, other_rows));
  return std::max<int64_t>(1, std::min(columns, std::max<int64_t>(16, t)));
}

/// Channel blocks: enough that `base` tasks times the blocks reach kMinTasks, blocks of >= 16.
int64_t channel_block(int64_t channels, int64_t base) {
  if (base >= kMinTasks || channels <= 16) return std::max<int64_t>(1, channels);
  const int64_t want = std::min((kMinTasks + base - 1) / base, (channels + 15) / 16);
  return (channels + want - 1) / want;
}

/// Rows [o0, o1) of the im2col matrix of one group: row (c, kz, ky, kx), column o - o0, the input
/// tap of output position o (minus x_zero), 0 in the padding.
template <class S, class Src>
void im2col(const ops::Window3& q, const Src* x, S x_zero, int64_t Cg, int64_t o0, int64_t o1, S* col) {
  const int64_t T = o1 - o0, in_sz = q.in_size();
  const int64_t out12 = q.out[1] * q.out[2];
  S* dst = col;
  for (int64_t c = 0; c < Cg; ++c) {
    const Src* xc = x + c * in_sz;
    for (int64_t kz = 0; kz < q.kernel[0]; ++kz) {
      for (int64_t ky = 0; ky < q.kernel[1]; ++ky) {
        for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
          const int64_t shift = kx * q.dilation[2] - q.pad[2];
          const int64_t sx = q.stride[2];
          int64_t o = o0, oz = o0 / out12, oy = (o0 / q.out[2]) % q.out[1], ox = o0 % q.out[2];
          S* d = dst;
          while (o < o1) {
            const int64_t run = std::min(o1 - o, q.out[2] - ox);
            const int64_t iz = oz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
            const int64_t iy = oy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
            if (iz < 0 || iz >= q.in[0] || iy < 0 || iy >= q.in[1]) {
              std::fill(d, d + run, S(0));
            } else {
              const Src* row = xc + (iz * q.in[1] + iy) * q.in[2];
              // ix = (ox + j) * sx + shift inside [0, in): j in [lo, hi).
              const int64_t lo = std::min(run, std::max<int64_t>(0, ops::ceil_div(-shift, sx) - ox));
              const int64_t hi = std::max(lo, std::min(run, ops::floor_div(q.in[2] - 1 - shift, sx) + 1 - ox));
              std::fill(d, d + lo, S(0));
              const Src* r = row + (ox + lo) * sx + shift;
              if (sx == 1) {
                for (int64_t j = 0; j < hi - lo; ++j) d[lo + j] = static_cast<S>(r[j]) - x_zero;
              } else {
                for (int64_t j = 0; j < hi - lo; ++j) d[lo + j] = static_cast<S>(r[j * sx]) - x_zero;
              }
              std::fill(d + hi, d + run, S(0));
            }
            d += run;
            o += run;
            ox = 0;
            if (++oy == q.out[1]) {
              oy = 0;
              ++oz;
            }
          }
          dst += T;
        }
      }
    }
  }
}

/// Per kernel column kx, the positions i in [lo, hi) of a row of `count` whose tap i*s - p + kx*d
/// lands inside a row of `limit` (a convolution: output positions against the input row; a
/// transposed one: input positions against the output row).
void row_ranges(const ops::Window3& q, int64_t count, int64_t limit, std::vector<int64_t>& lo, std::vector<int64_t>& hi) {
  lo.resize(static_cast<std::size_t>(q.kernel[2]));
  hi.resize(static_cast<std::size_t>(q.kernel[2]));
  for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
    const int64_t shift = kx * q.dilation[2] - q.pad[2];
    lo[static_cast<std::size_t>(kx)] = std::max<int64_t>(0, ops::ceil_div(-shift, q.stride[2]));
    hi[static_cast<std::size_t>(kx)] = std::min<int64_t>(count, ops::floor_div(limit - 1 - shift, q.stride[2]) + 1);
  }
}

/// Few output channels per group (depthwise and the like): per (n, m) plane and tile of output
/// rows, the taps streamed along the rows into an accumulator that stays in cache.
template <class S, class Src, class Dst>
void conv_direct(const ops::Window3& q, const Src* x, S x_zero, const S* w, const S* bias, Dst* y) {
  const int64_t Cg = q.Cg(), Mg = q.Mg(), in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  const int64_t rows = q.out[0] * q.out[1];
  const int64_t rows_per_tile = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, q.out[2]));
  const Split tiles(rows, rows_per_tile);
  // Valid output x range per kernel column: ix = ox*s - p + kx*d in [0, in).
  std::vector<int64_t> ox_lo, ox_hi;
  row_ranges(q, q.out[2], q.in[2], ox_lo, ox_hi);
  const int64_t tasks = q.N * q.M * tiles.pieces;
  parallel_for(
      tasks,
      [&](int64_t t) {
        const int64_t tile = t % tiles.pieces, m = (t / tiles.pieces) % q.M, nb = t / (tiles.pieces * q.M);
        const int64_t r0 = tiles.begin(tile), r1 = tiles.end(tile);
        const int64_t grp = m / Mg;
        Scratch<S> scratch(0);
        S* acc = scratch.get(static_cast<std::size_t>((r1 - r0) * q.out[2]));
        std::fill(acc, acc + (r1 - r0) * q.out[2], S(0));
        for (int64_t c = 0; c < Cg; ++c) {
          const Src* xp = x + (nb * q.C + grp * Cg + c) * in_sz;
          const S* wp = w + (m * Cg + c) * k_sz;
          for (int64_t kz = 0; kz < q.kernel[0]; ++kz) {
            for (int64_t ky = 0; ky < q.kernel[1]; ++ky) {
              for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
                const S wv = wp[(kz * q.kernel[1] + ky) * q.kernel[2] + kx];
                const int64_t lo = ox_lo[static_cast<std::size_t>(kx)], hi = ox_hi[static_cast<std::size_t>(kx)];
                if (lo >= hi) continue;
                const int64_t shift_x = kx * q.dilation[2] - q.pad[2], sx = q.stride[2], len = hi - lo;
                for (int64_t r = r0; r < r1; ++r) {
                  const int64_t oz = r / q.out[1], oy = r % q.out[1];
                  const int64_t iz = oz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
                  if (iz < 0 || iz >= q.in[0]) continue;
                  const int64_t iy = oy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
                  if (iy < 0 || iy >= q.in[1]) continue;
                  // First valid element of the row; lo * s + shift_x >= 0 by construction.
                  const Src* __restrict xr = xp + (iz * q.in[1] + iy) * q.in[2] + lo * sx + shift_x;
                  S* __restrict ar = acc + (r - r0) * q.out[2] + lo;
                  if (sx == 1) {
                    for (int64_t j = 0; j < len; ++j) ar[j] += wv * (static_cast<S>(xr[j]) - x_zero);
                  } else {
                    for (int64_t j = 0; j < len; ++j) ar[j] += wv * (static_cast<S>(xr[j * sx]) - x_zero);
                  }
                }
              }
            }
          }
        }
        const S b = bias ? bias[m] : S(0);
        Dst* yp = y + (nb * q.M + m) * out_sz + r0 * q.out[2];
        const int64_t count = (r1 - r0) * q.out[2];
        for (int64_t j = 0; j < count; ++j) store(yp[j], acc[j] + b);
      },
      q.N * q.M * out_sz * Cg * k_sz);
}

/// Stride-1 convolutions of 1 or 2 spatial dims, per task a band of output rows: the band's input
/// rows, zero-padded and widened to S, are copied once; then each tap (ky, kx) is one product of the
/// tap's weights [mb x Cg] with a shifted view of the band (its rows the channels, its columns the
/// output positions counted over the padded width), accumulated in C. No im2col matrix (9 times the
/// input for a 3x3): the shift is a pointer offset. C's columns past the output width are the
/// padded width's extra columns, computed and dropped.
template <class S, class Src, class Dst>
void conv_shifted(const ops::Window3& q, const Src* x, S x_zero, const S* w, const S* bias, Dst* y) {
  const int64_t Cg = q.Cg(), Mg = q.Mg(), in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  const int64_t kh = q.kernel[1], kw = q.kernel[2], dh = q.dilation[1], dw = q.dilation[2];
  const int64_t Wp = q.in[2] + q.pad[2] + q.pad_end[2];  // padded width; out[2] = Wp - (kw - 1) * dw
  const int64_t slack = (kw - 1) * dw;                   // the last row's shifted view runs this far past it
  // The weights per group and tap: Wt[grp][tap] is [Mg x Cg], row-major.
  std::vector<S> wt(static_cast<std::size_t>(q.M * Cg * k_sz));
  for (int64_t m = 0; m < q.M; ++m) {
    const int64_t grp = m / Mg, mi = m % Mg;
    for (int64_t c = 0; c < Cg; ++c) {
      for (int64_t k = 0; k < k_sz; ++k) {
        wt[static_cast<std::size_t>(((grp * k_sz + k) * Mg + mi) * Cg + c)] = w[(m * Cg + c) * k_sz + k];
      }
    }
  }
  // At least 4 rows a band where the rows allow (a band copies kh - 1 rows more than it computes).
  const int64_t rows_per_band =
      std::max<int64_t>(1, std::min(q.out[1], std::max<int64_t>(4, 2 * kTileElements / (std::max(Cg, Mg) * Wp))));
  const Split bands(q.out[1], rows_per_band);
  const int64_t mb = channel_block(Mg, q.N * q.G * bands.pieces);
  const Split blocks(Mg, mb);
  const int64_t tasks = q.N * q.G * blocks.pieces * bands.pieces;
  parallel_for(
      tasks,
      [&](int64_t t) {
        const int64_t band = t % bands.pieces;
        const int64_t blk = (t / bands.pieces) % blocks.pieces;
        const int64_t grp = (t / (bands.pieces * blocks.pieces)) % q.G;
        const int64_t nb = t / (bands.pieces * blocks.pieces * q.G);
        const int64_t oy0 = bands.begin(band), R = bands.end(band) - oy0;
        const int64_t m0 = blocks.begin(blk), rows = blocks.end(blk) - m0;
        const int64_t band_rows = R + (kh - 1) * dh;
        const int64_t plane = band_rows * Wp + slack;
        const int64_t cols = R * Wp;
        Scratch<S> band_scratch(0), out_scratch(1);
        S* bp = band_scratch.get(static_cast<std::size_t>(Cg * plane));
        for (int64_t c = 0; c < Cg; ++c) {
          const Src* xc = x + (nb * q.C + grp * Cg + c) * in_sz;
          S* dst = bp + c * plane;
          for (int64_t r = 0; r < band_rows; ++r) {
            const int64_t iy = oy0 - q.pad[1] + r;
            S* d = dst + r * Wp;
            if (iy < 0 || iy >= q.in[1]) {
              std::fill(d, d + Wp, S(0));
              continue;
            }
            const Src* row = xc + iy * q.in[2];
            std::fill(d, d + q.pad[2], S(0));
            for (int64_t ix = 0; ix < q.in[2]; ++ix) d[q.pad[2] + ix] = static_cast<S>(row[ix]) - x_zero;
            std::fill(d + q.pad[2] + q.in[2], d + Wp, S(0));
          }
          std::fill(dst + band_rows * Wp, dst + plane, S(0));
        }
        S* C = out_scratch.get(static_cast<std::size_t>(rows * cols));
        for (int64_t ky = 0; ky < kh; ++ky) {
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t k = ky * kw + kx;
            gemm(false, false, rows, cols, Cg, S(1), wt.data() + ((grp * k_sz + k) * Mg + m0) * Cg, Cg,
                 bp + ky * dh * Wp + kx * dw, plane, k == 0 ? S(0) : S(1), C, cols);
          }
        }
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t m = grp * Mg + m0 + i;
          const S b = bias ? bias[m] : S(0);
          for (int64_t r = 0; r < R; ++r) {
            Dst* yp = y + (nb * q.M + m) * out_sz + (oy0 + r) * q.out[2];
            const S* cp = C + i * cols + r * Wp;
            for (int64_t j = 0; j < q.out[2]; ++j) store(yp[j], cp[j] + b);
          }
        }
      },
      q.N * q.M * out_sz * Cg * k_sz);
}

bool is_pointwise(const ops::Window3& q) {
  for (int d = 0; d < 3; ++d) {
    if (q.kernel[d] != 1 || q.stride[d] != 1 || q.pad[d] != 0) return false;
  }
  return true;
}

}  // namespace

Accumulation accumulation() { return t_accumulation; }

AccumulationScope::AccumulationScope(Accumulation a) : saved_(t_accumulation) { t_accumulation = a; }
AccumulationScope::~AccumulationScope() { t_accumulation = saved_; }

void gemm(bool t_a, bool t_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0.0 : beta * C[i * ldc + j];
    }
    return;
  }
  blas_on_calling_thread();
  cblas_dgemm(CblasRowMajor, t_a ? CblasTrans : CblasNoTrans, t_b ? CblasTrans : CblasNoTrans, blas_int(M), blas_int(N),
              blas_int(K), alpha, A, blas_int(lda), B, blas_int(ldb), beta, C, blas_int(ldc));
}

void gemm(bool t_a, bool t_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0 ? 0.0f : beta * C[i * ldc + j];
    }
    return;
  }
  blas_on_calling_thread();
  cblas_sgemm(CblasRowMajor, t_a ? CblasTrans : CblasNoTrans, t_b ? CblasTrans : CblasNoTrans, blas_int(M), blas_int(N),
              blas_int(K), alpha, A, blas_int(lda), B, blas_int(ldb), beta, C, blas_int(ldc));
}

template <class S, class Src, class Dst>
void conv_forward(const ops::Window3& q, const Src* x, S x_zero, const S* w, const S* bias, Dst* y) {
  const int64_t Cg = q.Cg(), Mg = q.Mg(), in_sz = q.in_size(), out_sz = q.out_size();
  const int64_t Kg = Cg * q.k_size();
  if (q.N * q.M * out_sz == 0) return;
  if (Mg <= 4 || Kg == 0) {
    conv_direct(q, x, x_zero, w, bias, y);
    return;
  }
  const bool stride_1 = q.stride[0] == 1 && q.stride[1] == 1 && q.stride[2] == 1;
  // One padded row of every channel must fit a task's buffers (a very wide row takes im2col, which
  // cuts any row).
  const int64_t row = (q.in[2] + q.pad[2] + q.pad_end[2]) * std::max(Cg, Mg);
  if (stride_1 && q.in[0] == 1 && q.kernel[0] == 1 && q.pad[0] == 0 && q.pad_end[0] == 0 && q.k_size() > 1 &&
      row <= 4 * kTileElements) {
    conv_shifted(q, x, x_zero, w, bias, y);
    return;
  }
  // Per task: one image, one group, a block of output channels, a tile of output positions;
  // the tile's im2col matrix [Kg x T] times the block's weights [mb x Kg].
  const int64_t T = column_tile(Kg, Mg, out_sz);
  const Split tiles(out_sz, T);
  const int64_t mb = channel_block(Mg, q.N * q.G * tiles.pieces);
  const Split blocks(Mg, mb);
  // A pointwise convolution of double data reads X in place (its im2col matrix is X).
  const bool in_place = std::is_same_v<S, Src> && is_pointwise(q) && x_zero == S(0);
  const int64_t tasks = q.N * q.G * blocks.pieces * tiles.pieces;
  parallel_for(
      tasks,
      [&](int64_t t) {
        const int64_t tile = t % tiles.pieces;
        const int64_t blk = (t / tiles.pieces) % blocks.pieces;
        const int64_t grp = (t / (tiles.pieces * blocks.pieces)) % q.G;
        const int64_t nb = t / (tiles.pieces * blocks.pieces * q.G);
        const int64_t o0 = tiles.begin(tile), o1 = tiles.end(tile), cols = o1 - o0;
        const int64_t m0 = blocks.begin(blk), rows = blocks.end(blk) - m0;
        const Src* xg = x + (nb * q.C + grp * Cg) * in_sz;
        Scratch<S> col_scratch(0), out_scratch(1);
        const S* B;
        int64_t ldb;
        if constexpr (std::is_same_v<S, Src>) {
          if (in_place) {
            B = xg + o0;
            ldb = in_sz;
          } else {
            S* col = col_scratch.get(static_cast<std::size_t>(Kg * cols));
            im2col(q, xg, x_zero, Cg, o0, o1, col);
            B = col;
            ldb = cols;
          }
        } else {
          S* col = col_scratch.get(static_cast<std::size_t>(Kg * cols));
          im2col(q, xg, x_zero, Cg, o0, o1, col);
          B = col;
          ldb = cols;
        }
        S* C = out_scratch.get(static_cast<std::size_t>(rows * cols));
        gemm(false, false, rows, cols, Kg, S(1), w + (grp * Mg + m0) * Kg, Kg, B, ldb, S(0), C, cols);
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t m = grp * Mg + m0 + i;
          const S b = bias ? bias[m] : S(0);
          Dst* yp = y + (nb * q.M + m) * out_sz + o0;
          const S* cp = C + i * cols;
          for (int64_t j = 0; j < cols; ++j) store(yp[j], cp[j] + b);
        }
      },
      q.N * q.M * out_sz * Kg);
}

template <class S, class Src, class Dst>
void conv_transpose(const ops::Window3& q, const Src* x, const S* w, const S* bias, Dst* y) {
  const int64_t Cg = q.Cg(), Mg = q.Mg(), in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  if (q.N * q.M * out_sz == 0) return;
  // Per task: one image, one group, a block of its output channels; the task's columns
  // col[(m, k), i] = sum over c of W[c, (m, k)] * X[c, i], tile by tile of input positions,
  // scattered into the task's own output planes.
  // A task's accumulator holds its channels' whole output planes: at most 16M elements.
  const int64_t mb = std::max<int64_t>(1, std::min(channel_block(Mg, q.N * q.G), (int64_t{1} << 24) / out_sz));
  const Split blocks(Mg, mb);
  const int64_t T = column_tile(Cg, mb * k_sz, in_sz);
  const Split tiles(in_sz, T);
  // Valid input x range per kernel column: ox = ix*s - p + kx*d in [0, out).
  std::vector<int64_t> ix_lo, ix_hi;
  row_ranges(q, q.in[2], q.out[2], ix_lo, ix_hi);
  const int64_t tasks = q.N * q.G * blocks.pieces;
  parallel_for(
      tasks,
      [&](int64_t t) {
        const int64_t blk = t % blocks.pieces, grp = (t / blocks.pieces) % q.G, nb = t / (blocks.pieces * q.G);
        const int64_t m0 = blocks.begin(blk), rows = blocks.end(blk) - m0;
        Scratch<S> acc_scratch(0), col_scratch(1);
        S* acc = acc_scratch.get(static_cast<std::size_t>(rows * out_sz));
        for (int64_t i = 0; i < rows; ++i) {
          const S b = bias ? bias[grp * Mg + m0 + i] : S(0);
          std::fill(acc + i * out_sz, acc + (i + 1) * out_sz, b);
        }
        // X of this group as S, tile by tile: [Cg x cols].
        std::vector<S> xt;
        for (int64_t tile = 0; tile < tiles.pieces; ++tile) {
          const int64_t i0 = tiles.begin(tile), cols = tiles.end(tile) - i0;
          xt.resize(static_cast<std::size_t>(Cg * cols));
          for (int64_t c = 0; c < Cg; ++c) {
            const Src* xs = x + (nb * q.C + grp * Cg + c) * in_sz + i0;
            for (int64_t j = 0; j < cols; ++j) xt[static_cast<std::size_t>(c * cols + j)] = static_cast<S>(xs[j]);
          }
          S* col = col_scratch.get(static_cast<std::size_t>(rows * k_sz * cols));
          // W of the group is [Cg, Mg * k]: its columns m0 * k .. (m0 + rows) * k, transposed.
          gemm(true, false, rows * k_sz, cols, Cg, S(1), w + grp * Cg * Mg * k_sz + m0 * k_sz, Mg * k_sz, xt.data(), cols,
               S(0), col, cols);
          for (int64_t i = 0; i < rows; ++i) {
            S* yp = acc + i * out_sz;
            for (int64_t kz = 0; kz < q.kernel[0]; ++kz) {
              for (int64_t ky = 0; ky < q.kernel[1]; ++ky) {
                for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
                  const int64_t k = (kz * q.kernel[1] + ky) * q.kernel[2] + kx;
                  const S* cr = col + (i * k_sz + k) * cols;
                  const int64_t lo = ix_lo[static_cast<std::size_t>(kx)], hi = ix_hi[static_cast<std::size_t>(kx)];
                  if (lo >= hi) continue;
                  const int64_t shift_x = kx * q.dilation[2] - q.pad[2], sx = q.stride[2];
                  // The tile's input positions, row by row of the input.
                  int64_t p = i0;
                  while (p < i0 + cols) {
                    const int64_t iz = p / (q.in[1] * q.in[2]), iy = (p / q.in[2]) % q.in[1], ix0 = p % q.in[2];
                    const int64_t run = std::min(i0 + cols - p, q.in[2] - ix0);
                    const int64_t oz = iz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
                    const int64_t oy = iy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
                    if (oz >= 0 && oz < q.out[0] && oy >= 0 && oy < q.out[1]) {
                      const int64_t a = std::max(lo, ix0), e = std::min(hi, ix0 + run);
                      S* yr = yp + (oz * q.out[1] + oy) * q.out[2] + shift_x;
                      const S* cc = cr + (p - i0) - ix0;
                      for (int64_t ix = a; ix < e; ++ix) yr[ix * sx] += cc[ix];
                    }
                    p += run;
                  }
                }
              }
            }
          }
        }
        for (int64_t i = 0; i < rows; ++i) {
          Dst* yo = y + (nb * q.M + grp * Mg + m0 + i) * out_sz;
          const S* a = acc + i * out_sz;
          for (int64_t j = 0; j < out_sz; ++j) store(yo[j], a[j]);
        }
      },
      q.N * q.C * in_sz * Mg * k_sz);
}

template <class S>
void matmul(int64_t batches, const int64_t* a_index, const int64_t* b_index, int64_t M, int64_t K, int64_t N,
            const S* A, bool t_a, const S* B, bool t_b, S* Y) {
  if (batches * M * N == 0) return;
  constexpr int64_t kRows = 256, kCols = 256;
  const Split rows(M, kRows), cols(N, kCols);
  const int64_t per = rows.pieces * cols.pieces;
  parallel_for(
      batches * per,
      [&](int64_t t) {
        const int64_t b = t / per, r = (t % per) / cols.pieces, c = t % cols.pieces;
        const int64_t i0 = rows.begin(r), j0 = cols.begin(c);
        // Rows i0.. of op(A): rows of A, or its columns when it is stored transposed; likewise B.
        const S* a = A + a_index[b] * M * K + (t_a ? i0 : i0 * K);
        const S* bm = B + b_index[b] * K * N + (t_b ? j0 * K : j0);
        S* y = Y + b * M * N + i0 * N + j0;
        gemm(t_a, t_b, rows.end(r) - i0, cols.end(c) - j0, K, S(1), a, t_a ? M : K, bm, t_b ? K : N, S(0), y, N);
      },
      batches * M * N * std::max<int64_t>(1, K));
}

// The forms the ops use.
template void conv_forward<double, double, double>(const ops::Window3&, const double*, double, const double*,
                                                   const double*, double*);
template void conv_forward<double, float, float>(const ops::Window3&, const float*, double, const double*,
                                                 const double*, float*);
template void conv_forward<float, float, float>(const ops::Window3&, const float*, float, const float*,
                                                const float*, float*);
template void conv_forward<double, uint8_t, int64_t>(const ops::Window3&, const uint8_t*, double, const double*,
                                                     const double*, int64_t*);
template void conv_forward<double, int8_t, int64_t>(const ops::Window3&, const int8_t*, double, const double*,
                                                    const double*, int64_t*);
template void conv_forward<double, uint8_t, int32_t>(const ops::Window3&, const uint8_t*, double, const double*,
                                                     const double*, int32_t*);
template void conv_forward<double, int8_t, int32_t>(const ops::Window3&, const int8_t*, double, const double*,
                                                    const double*, int32_t*);
template void conv_transpose<double, double, double>(const ops::Window3&, const double*, const double*, const double*,
                                                     double*);
template void conv_transpose<double, float, float>(const ops::Window3&, const float*, const double*, const double*,
                                                   float*);
template void conv_transpose<float, float, float>(const ops::Window3&, const float*, const float*, const float*, float*);
template void matmul<double>(int64_t, const int64_t*, const int64_t*, int64_t, int64_t, int64_t, const double*, bool,
                             const double*, bool, double*);
template void matmul<float>(int64_t, const int64_t*, const int64_t*, int64_t, int64_t, int64_t, const float*, bool,
                            const float*, bool, float*);

}  // namespace modelc::reference
