// templates/conv_grouped.cuh — grouped convolution on tensor cores (sm_75 and newer): one implicit
// GEMM over (pixel, output channel) tiles for every group at once, on mma.sync m16n8k16 with ldmatrix
// fragment loads (tensor_core.cuh's primitives: StageLayout, Chunk, Accum, tc::mma, and its
// epilogue), FP16 or BF16 (sm_80+) operands, FP32 accumulators.
//
// The product. A group g maps input channels [g Cg, (g + 1) Cg) to output channels
// [g Mg, (g + 1) Mg); over all groups the weight matrix is block-diagonal. An m16n8 MMA tile covers
// 8 output channels, which must share the A fragment (the im2col rows of their group). Where Mg is a
// multiple of 8 each n8 tile lies in one group. Elsewhere (Mg 4, 12, 20, ...: ResNeXt's 32x4d)
// groups are merged F at a time into super-groups of Cs = F Cg input and Ms = F Mg output channels,
// F = 8 / gcd(Mg, 8), whose weights are the block-diagonal F x F arrangement of the groups' (zero
// off the diagonal, made by the B loader from the ONNX weights, never stored): the MMA then spends F
// times the useful work on the zeros, the price of an n8 tile across groups (F = 2 for Mg = 4).
// Groups past G (a last super-group that G does not fill) read zero channels and are never stored.
//
// A block computes BM pixels x BN output channels (output channels in ONNX order over all groups,
// so a block may span super-groups: BN of them at most when Ms = 8, or part of one when Ms > BN). Its
// K loop walks one super-group's depth Ks = taps x Cs (k = tap x Cs + c, c fastest) in BK-deep
// slices, for all the block's super-groups in lockstep: per slice, shared memory holds the BM x BK
// im2col slice of each super-group the block touches (kGroups of them) and the BN x BK slice of W.
// Per 16 of k a warp loads its B fragments (ldmatrix.x4 per 16 channels) and, for each of its n8
// tiles, the A fragments of that tile's super-group (ldmatrix.x4 per 16 pixels; reloaded only where
// the super-group changes between consecutive tiles), then one mma per m16n8 tile.
//
// Operands. X: NHWC with channel pitch Cp (channels >= C read as zero); A chunks are 8 consecutive k
// of one tap, 16-byte loads (cp.async on sm_80+) where Cs and Cp are multiples of 8, element loads
// otherwise. W: the layout stage's grouped OHWI, [M][taps][Cg] (rows of taps x Cg); 16-byte loads
// where F = 1 and the row is a multiple of 8, element loads otherwise (and always where F > 1:
// the block-diagonal expansion). Staging (Tile's kAsync): cp.async in kStages stages (sm_80+), one
// commit group and one barrier per slice, as tc::Mainloop; without it (sm_75) one stage, loaded
// through registers before each slice's MMAs. No split-K (Tile's kSplitK must be 1).
//
// Epilogue and store: tensor_core.cuh's (for_each_output, epilogue8: bias, activation, residual in
// FP32; __half outputs clamped to +-65504), Y NHWC with pitch Yp, channels >= M never written.
//
// Fallback (the schedule's, not here): where the shared memory of a stage (kGroups A slices and
// one B slice) exceeds the target's limit at every tile. Depthwise convolutions (Cg = 1) take
// conv_depthwise.cuh: here F would be 8 (Mg = 1), an MMA of 7/8 zeros. (The geometry is 3-D
// throughout, as tc::Conv's; the tests run 2-D.)
#pragma once

#include "tensor_core.cuh"

namespace mc {
namespace tc {

/// \brief The super-group arithmetic of a grouped convolution Sh: F groups merged so that an n8 MMA
/// tile lies in one super-group.
template <class Sh>
struct SuperGroups {
  static constexpr int gcd8(int m) { return m % 8 == 0 ? 8 : m % 4 == 0 ? 4 : m % 2 == 0 ? 2 : 1; }
  static constexpr int kF = 8 / gcd8(Sh::kMg);
  static constexpr int kCs = kF * Sh::kCg, kMs = kF * Sh::kMg;
  static constexpr int kCount = (Sh::kG + kF - 1) / kF;  ///< super-groups (the last may be partial)
  static constexpr int kTaps = Sh::KernelDims::kSize;
  static constexpr int kK = kTaps * kCs;  ///< a super-group's GEMM depth
};

/// \brief Loads BM x BK im2col slices of X for one super-group at a time: element (j, k) is
/// X[n, pixel of tap, sg Cs + c] for k = tap x Cs + c (zero in the padding, past the last pixel,
/// past the depth, and for channels >= C). The pixels (decoded once per block, shared by the
/// super-groups) are tensor_core.cuh's Im2colLoader's.
template <class T, class Sh, int Cp, int BK, int BM, int NT>
struct GroupedIm2col : Im2colLoader<T, Sh, Cp, Cp, BK, BM, NT> {
  using Base = Im2colLoader<T, Sh, Cp, Cp, BK, BM, NT>;
  using typename Base::I;
  using typename Base::KD;
  using typename Base::Dl;
  using typename Base::Map;
  using typename Base::Layout;
  using Base::kCount;
  using SG = SuperGroups<Sh>;
  static constexpr bool kVector = SG::kCs % 8 == 0 && Cp % 8 == 0;

  __device__ __forceinline__ GroupedIm2col(const T* x_, int j0, int tid_) : Base(x_, j0, tid_) {}

  /// Offset in X of (chunk i, depth k) of super-group sg, and how many channels from there are data.
  __device__ __forceinline__ int at(int i, int sg, int k, int& avail) const {
    const int tap = k / SG::kCs, c = k % SG::kCs, channel = sg * SG::kCs + c;
    const int kd = tap / (KD::kH * KD::kW), kh = (tap / KD::kW) % KD::kH, kw = tap % KD::kW;
    const int id = this->id0[i] + kd * Dl::kD, ih = this->ih0[i] + kh * Dl::kH, iw = this->iw0[i] + kw * Dl::kW;
    const bool inside = k < SG::kK && this->pix_base[i] >= 0 && channel < Sh::kC &&
                        static_cast<unsigned>(id) < unsigned(I::kD) && static_cast<unsigned>(ih) < unsigned(I::kH) &&
                        static_cast<unsigned>(iw) < unsigned(I::kW);
    const int in_group = SG::kCs - c, in_x = Sh::kC - channel;
    avail = inside ? (in_group < in_x ? in_group : in_x) : 0;
    return inside ? this->pix_base[i] + ((id * I::kH + ih) * I::kW + iw) * Cp + channel : 0;
  }

  /// Slice k0 of super-group sg into `stage` (cp.async where kVector and Async).
  template <bool Async>
  __device__ __forceinline__ void load(int sg, int k0, T* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = this->tid + i * NT;
      const int k = k0 + Map::k(c);
      T* dst = stage + Layout::offset(Map::x(c), Map::k(c));
      const T* x = this->x;
      if constexpr (kVector) {
        int avail;
        const int off = at(i, sg, k, avail);  // the 8 channels share one tap (Cs % 8 == 0)
        const int n = avail < 8 ? (avail > 0 ? avail : 0) : 8;
        if constexpr (Async) {
          cp_async_16(dst, x + off, n * 2);
        } else {
          Chunk<T> r;
          if (n == 8) {
            r.v = *reinterpret_cast<const uint4*>(x + off);
          } else {
            MC_UNROLL
            for (int e = 0; e < 8; ++e) r.h[e] = e < n ? x[off + e] : static_cast<T>(0.0f);
          }
          st_shared(reinterpret_cast<uint4*>(dst), r.v);
        }
      } else {
        Chunk<T> r;
        MC_UNROLL
        for (int e = 0; e < 8; ++e) {
          int avail;
          const int off = at(i, sg, k + e, avail);
          r.h[e] = avail > 0 ? x[off] : static_cast<T>(0.0f);
        }
        st_shared(reinterpret_cast<uint4*>(dst), r.v);
      }
    }
  }
};

/// \brief Loads BN x BK slices of the super-groups' weights: element (n, k) for output channel n and
/// k = tap x Cs + c is W[n][tap][c - sub Cg] when c lies in n's own group (sub = (n mod Ms) / Mg),
/// zero elsewhere, past M and past the depth. W: [M][taps][Cg].
template <class T, class Sh, int BK, int BN, int NT>
struct GroupedWeights {
  using SG = SuperGroups<Sh>;
  static constexpr bool kKFast = true;  // staged [BN][BK + 8] (ldmatrix_offset)
  static constexpr int kRow = SG::kTaps * Sh::kCg;  ///< W's row: one output channel
  static constexpr bool kVector = SG::kF == 1 && kRow % 8 == 0;
  using Map = Chunks<BN, BK, true, NT>;
  using Layout = StageLayout<BN, BK, true>;
  static constexpr int kCount = Map::kCount;

  const T* w;
  int n0, tid;

  __device__ __forceinline__ T element(int n, int k) const {
    if (n >= Sh::kM || k >= SG::kK) return static_cast<T>(0.0f);
    const int tap = k / SG::kCs, c = k % SG::kCs, sub = (n % SG::kMs) / Sh::kMg;
    if (c / Sh::kCg != sub) return static_cast<T>(0.0f);
    return w[n * kRow + tap * Sh::kCg + c % Sh::kCg];
  }

  template <bool Async>
  __device__ __forceinline__ void load(int k0, T* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      const int n = n0 + Map::x(c), k = k0 + Map::k(c);
      T* dst = stage + Layout::offset(Map::x(c), Map::k(c));
      if constexpr (kVector) {  // F = 1: W's row is the depth, k = tap x Cg + c
        const int left = kRow - k;
        const int avail = n < Sh::kM ? (left < 8 ? (left > 0 ? left : 0) : 8) : 0;
        const T* src = w + (avail > 0 ? n * kRow + k : 0);
        if constexpr (Async) {
          cp_async_16(dst, src, avail * 2);
        } else {
          Chunk<T> r;
          if (avail == 8) {
            r.v = *reinterpret_cast<const uint4*>(src);
          } else {
            MC_UNROLL
            for (int e = 0; e < 8; ++e) r.h[e] = e < avail ? src[e] : static_cast<T>(0.0f);
          }
          st_shared(reinterpret_cast<uint4*>(dst), r.v);
        }
      } else {
        Chunk<T> r;
        MC_UNROLL
        for (int e = 0; e < 8; ++e) r.h[e] = element(n, k + e);
        st_shared(reinterpret_cast<uint4*>(dst), r.v);
      }
    }
  }
};

/// \brief Y = Epi(grouped conv(X, W)) on tensor cores: X [N][D][H][W][Cp] and Y [N][OD][OH][OW][Yp]
/// of T / TY (__half, or bf16 on sm_80 and newer), W [M][taps][Cg], FP32 accumulation. Sh:
/// mc::conv::Shape with any G >= 1 (G = 1 works too, as a plain convolution with K = taps x C).
/// TileT: tc::Tile (BM pixels, BN output channels, BK a multiple of 16; kSplitK 1). Grid: (pixel
/// tiles, channel tiles); kSmemBytes of dynamic shared memory. See the file comment.
template <class T, class TY, class Sh, int Cp, int Yp, class TileT, class Epi>
struct ConvGrouped {
  using Tl = TileT;
  using SG = SuperGroups<Sh>;
  static_assert(Tl::kSplitK == 1, "tc::ConvGrouped: no split-K");
  static_assert(Cp >= Sh::kC && Yp >= Sh::kM, "tc::ConvGrouped: a channel pitch below the channel count");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kPixels = Sh::kN * Sh::OutDims::kSize;
  /// The most super-groups one block's channels touch (1 where BN divides Ms, BN / Ms where Ms
  /// divides BN): the A slices of a stage.
  static constexpr int groups_touched() {
    int most = 1;
    for (int n0 = 0; n0 < Sh::kM; n0 += Tl::kBN) {
      const int last = (n0 + Tl::kBN < Sh::kM ? n0 + Tl::kBN : Sh::kM) - 1;
      most = last / SG::kMs - n0 / SG::kMs + 1 > most ? last / SG::kMs - n0 / SG::kMs + 1 : most;
    }
    return most;
  }
  static constexpr int kGroups = groups_touched();
  using LA = GroupedIm2col<T, Sh, Cp, Tl::kBK, Tl::kBM, kThreads>;
  using LB = GroupedWeights<T, Sh, Tl::kBK, Tl::kBN, kThreads>;
  static constexpr bool kAsync = Tl::kAsync && LA::kVector;  ///< cp.async staging (else one stage)
  static constexpr int kStages = kAsync ? Tl::kStages : 1;
  static constexpr int kStageBytes = kGroups * LA::Layout::kBytes + LB::Layout::kBytes;
  static constexpr int kSmemBytes = max_int(kStages * kStageBytes, scratch_bytes<Tl>());
  using EpiShape = gemm::Shape<1, 1, 1, kPixels, Sh::kM, SG::kK>;

  struct Params {
    const T* __restrict__ X = nullptr;
    const T* __restrict__ W = nullptr;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3((kPixels + Tl::kBM - 1) / Tl::kBM, (Sh::kM + Tl::kBN - 1) / Tl::kBN, 1); }
  static dim3 block() { return dim3(kThreads); }

  /// The epilogue and store of output channels m .. m + 7 of pixel j (as tc::Conv's).
  __device__ __forceinline__ static void finish(const Params& p, int j, int m, float (&v)[8]) {
    const int row = j * Yp;
    const Out8<TY> out = epilogue8<Epi, EpiShape, gemm::ChannelAxis::row, Sh::kM, TY>(p.epilogue, v, m,
                                                                                       gemm::Coord{0, m, j, row + m}, 1);
    if (Yp % 8 == 0 && m + 8 <= Sh::kM) {
      store8(p.Y + row + m, out);
    } else {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (m + e < Sh::kM) p.Y[row + m + e] = out.t[e];
      }
    }
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    const int j0 = static_cast<int>(blockIdx.x) * Tl::kBM, n0 = static_cast<int>(blockIdx.y) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
    const int sg0 = n0 / SG::kMs;  // the block's first super-group
    const LA la(p.X, j0, tid);
    const LB lb{p.W, n0, tid};
    auto a_stage = [&](int stage, int g) {
      return reinterpret_cast<T*>(smem + stage * kStageBytes + g * LA::Layout::kBytes);
    };
    auto b_stage = [&](int stage) {
      return reinterpret_cast<T*>(smem + stage * kStageBytes + kGroups * LA::Layout::kBytes);
    };
    // The super-groups of channels n0 .. min(n0 + BN, M) - 1 (an n8 tile past M reads a stage
    // clamped below kGroups: its sums are never stored).
    const int groups = ((n0 + Tl::kBN < Sh::kM ? n0 + Tl::kBN : Sh::kM) - 1) / SG::kMs - sg0 + 1;
    auto load = [&](int slice, int stage) {
      MC_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        if (g < groups) la.template load<kAsync>(sg0 + g, slice * Tl::kBK, a_stage(stage, g));
      }
      lb.template load<kAsync>(slice * Tl::kBK, b_stage(stage));
    };

    const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
    const int a_lane = ldmatrix_offset<LA, true>(lane, wm0, 0), b_lane = ldmatrix_offset<LB, false>(lane, wn0, 0);
    Accum<float> acc[Tl::kFragM][Tl::kFragN];
    auto compute = [&](int stage) {
      const T* sb = b_stage(stage) + b_lane;
      MC_UNROLL
      for (int kk = 0; kk < Tl::kBK; kk += 16) {
        unsigned b[Tl::kFragN][2];
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; j += 2) {
          unsigned r[4];
          ldmatrix<4, false>(r, sb + LB::Layout::offset(j * 8, kk));
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
        unsigned a[Tl::kFragM][4];
        int loaded = -1;  // the super-group whose A fragments a holds (warp-uniform)
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; ++j) {
          const int g = (n0 + wn0 + j * 8) / SG::kMs - sg0;
          if (g != loaded) {
            const T* sa = a_stage(stage, g < kGroups ? g : kGroups - 1) + a_lane;
            MC_UNROLL
            for (int i = 0; i < Tl::kFragM; ++i) ldmatrix<4, false>(a[i], sa + LA::Layout::offset(i * 16, kk));
            loaded = g;
          }
          MC_UNROLL
          for (int i = 0; i < Tl::kFragM; ++i) tc::mma<T>(acc[i][j].r, a[i], b[j]);
        }
      }
    };

    constexpr int kSlices = (SG::kK + Tl::kBK - 1) / Tl::kBK;
    if constexpr (kAsync) {
      // As tc::Mainloop: kStages - 1 slices in flight, one commit group per slice (empty past the
      // end), one barrier per slice (the stage loaded in iteration s was last read in s - 1).
      MC_UNROLL
      for (int s = 0; s < kStages - 1; ++s) {
        if (s < kSlices) load(s, s);
        cp_async_commit();
      }
      int stage = 0, load_stage = kStages - 1;
      for (int s = 0; s < kSlices; ++s) {
        cp_async_wait<kStages - 2>();
        __syncthreads();
        if (s + kStages - 1 < kSlices) load(s + kStages - 1, load_stage);
        cp_async_commit();
        compute(stage);
        stage = stage + 1 == kStages ? 0 : stage + 1;
        load_stage = load_stage + 1 == kStages ? 0 : load_stage + 1;
      }
      cp_async_wait<0>();
      __syncthreads();
    } else {
      for (int s = 0; s < kSlices; ++s) {
        load(s, 0);
        __syncthreads();
        compute(0);
        __syncthreads();
      }
    }
    // The staging memory is free (the loops end on a barrier): the epilogue's scratch.
    for_each_output<Tl, float>(acc, smem, [&](int r, int c, float (&v)[8]) {
      if (j0 + r < kPixels) finish(p, j0 + r, n0 + c, v);
    });
  }
};

}  // namespace tc
}  // namespace mc
