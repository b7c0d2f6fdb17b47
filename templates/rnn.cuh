// templates/rnn.cuh — the steps of LSTM, GRU and RNN (namespace mc::rnn): one kernel per layer,
// the whole sequence looped inside it.
//
// One block per (direction, batch item): the steps of a sequence depend on each other, the batch
// items and directions do not. A block keeps its state (h, and LSTM's c) and the step's gate
// pre-activations in shared memory and loops over the steps with a barrier between the phases of
// a step; nothing goes through global memory between steps but the outputs. The recurrent product
// h * R^T (gates * hidden rows of R) runs a warp per row of R (the lanes split the row, coalesced,
// and add with shuffles), the rows spread over the block's warps. The input projection X * W^T
// normally comes in computed for every step at once (kProjected: XW, a MatMul on the GEMM templates
// before this kernel, passes/split_recurrence.cpp); otherwise this kernel computes it per step in
// the same warp-per-row loop, X's step row staged in shared memory.
//
// Numerics: FP32 for the state, the sums and the activations whatever the storage type T.
// Semantics: compiler/ops/rnn.cpp (gate orders, clip after every term, input_forget, GRU
// linear_before_reset, sequence_lens: the steps past a sequence's length write zeros to Y and Y_h
// holds the state after its last step).
#pragma once

#include "tensor_index.cuh"

namespace mc::rnn {

enum Cell : int { kLstm = 0, kGru = 1, kRnn = 2 };
/// kFlags bits.
enum Flag : int { kInputForget = 1, kLinearBeforeReset = 2, kReverse = 4 };

/// \brief An activation (ops::RnnActivation's kinds, in its order) with its alpha and beta.
struct Act {
  int kind = 1;  ///< 0 Relu, 1 Tanh, 2 Sigmoid, 3 Affine, 4 LeakyRelu, 5 ThresholdedRelu, 6 ScaledTanh,
                 ///< 7 HardSigmoid, 8 Elu, 9 Softsign, 10 Softplus
  float alpha = 0.0f;
  float beta = 0.0f;
};

__device__ __forceinline__ float activate(const Act& a, float x) {
  switch (a.kind) {
    case 0: return x > 0.0f ? x : 0.0f;
    case 1: return tanhf(x);
    case 2: return 1.0f / (1.0f + expf(-x));
    case 3: return a.alpha * x + a.beta;
    case 4: return x >= 0.0f ? x : a.alpha * x;
    case 5: return x > a.alpha ? x : 0.0f;
    case 6: return a.alpha * tanhf(a.beta * x);
    case 7: return fminf(fmaxf(a.alpha * x + a.beta, 0.0f), 1.0f);
    case 8: return x >= 0.0f ? x : a.alpha * (expf(x) - 1.0f);
    case 9: return x / (1.0f + fabsf(x));
    default: return log1pf(expf(-fabsf(x))) + fmaxf(x, 0.0f);
  }
}

/// True when an operand is present (its stride list is not empty).
template <class Strides>
__host__ __device__ constexpr bool present() {
  return Strides::rank > 0;
}

/// The sum over a warp (every lane gets it).
__device__ __forceinline__ float warp_sum(float v) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m, 32);
  return v;
}

/// \brief The recurrence of one layer. Size = Dims<D, S, B, I, H> (directions, steps, batch,
/// input size (0 with kProjected), hidden size). Each operand's strides are a Dims over its logical
/// shape, Dims<> when it is absent:
///   XS  kProjected: XW [D, S, B, G*H]; else X [S, B, I]      WS  W [D, G*H, I] (Dims<> with kProjected)
///   RS  R [D, G*H, H]          BS  B [D, 2*G*H]               LS  sequence_lens [B] (int32)
///   HS  initial_h [D, B, H]    CS  initial_c [D, B, H]        PS  P [D, 3*H]
///   YS  Y [S, D, B, H]         YHS Y_h [D, B, H]              YCS Y_c [D, B, H]
/// (layout 1 is these shapes with its strides permuted by codegen). T: the float operands' type.
template <int kCell, int kFlags, int kThreadsPerBlock, class T, class Size, class XS, class WS, class RS, class BS,
          class LS, class HS, class CS, class PS, class YS, class YHS, class YCS>
struct Recurrence {
  static constexpr int D = static_cast<int>(Size::at(0)), S = static_cast<int>(Size::at(1)),
                       B = static_cast<int>(Size::at(2)), I = static_cast<int>(Size::at(3)),
                       H = static_cast<int>(Size::at(4));
  static constexpr int G = kCell == kLstm ? 4 : kCell == kGru ? 3 : 1;
  static constexpr bool kProjected = XS::rank == 4;
  static constexpr int kThreads = kThreadsPerBlock;
  static constexpr int kWarps = kThreads / 32;
  static_assert(kThreads % 32 == 0 && kThreads >= 32, "Recurrence: whole warps");
  static_assert(kProjected ? (XS::rank == 4 && WS::rank == 0) : (XS::rank == 3 && WS::rank == 3 && I > 0),
                "Recurrence: XW [D, S, B, G*H], or X [S, B, I] with W");
  static_assert(present<RS>() && RS::rank == 3, "Recurrence: R is required");
  static_assert(YS::rank == 0 || YS::rank == 4, "Recurrence: Y is [S, D, B, H]");
  // Shared memory, in floats: the gates' pre-activations, h, c, GRU's second term of its h gate
  // (r * (h R_h^T + Rb_h), or (r * h) R_h^T + Rb_h), r * h, and X's step row (without kProjected).
  static constexpr int kGatesAt = 0, kHAt = G * H, kCAt = kHAt + H, kAuxAt = kCAt + H, kRhAt = kAuxAt + H,
                       kXAt = kRhAt + H;
  static constexpr int kSmemFloats = kXAt + (kProjected ? 0 : I);
  static constexpr int kSmemBytes = kSmemFloats * 4;

  static dim3 grid() { return dim3(D * B); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    const void* x = nullptr;  ///< XW (kProjected) or X
    const void* w = nullptr;
    const void* r = nullptr;
    const void* b = nullptr;
    const int32_t* sequence_lens = nullptr;
    const void* initial_h = nullptr;
    const void* initial_c = nullptr;
    const void* p = nullptr;
    void* y = nullptr;
    void* y_h = nullptr;
    void* y_c = nullptr;
    float clip = 0.0f;  ///< > 0: pre-activations clipped to [-clip, clip]
    Act act[2][3];      ///< per direction: f, g, h (LSTM), f, g (GRU), f (RNN)
  };

  template <class Strides>
  static __device__ __forceinline__ int64_t off(int64_t a, int64_t b = 0, int64_t c = 0, int64_t d = 0) {
    const int64_t idx[4] = {a, b, c, d};
    int64_t o = 0;
    for (int k = 0; k < Strides::rank; ++k) o += idx[k] * Strides::at(k);
    return o;
  }

  static __device__ __forceinline__ float clipped(const Params& p, float v) {
    return p.clip > 0.0f ? fminf(fmaxf(v, -p.clip), p.clip) : v;
  }

  // Row j of the gates (G*H rows): the input part (XW, or X_t W_j computed here), the biases Wb_j
  // (+ Rb_j when `recurrent`) and, when `recurrent`, R_j h. Warp-wide; the sum is lane 0's.
  static __device__ __forceinline__ float gate_row(const Params& p, const float* smem, int d, int t, int b, int j,
                                                   bool recurrent) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    float s = 0.0f;
    if constexpr (!kProjected) {
      for (int i = lane; i < I; i += 32) {
        s += ix::load<T>(p.w, off<WS>(d, j, i)) * ld_shared(smem + kXAt + i);
      }
    }
    if (recurrent) {
      for (int k = lane; k < H; k += 32) s += ix::load<T>(p.r, off<RS>(d, j, k)) * ld_shared(smem + kHAt + k);
    }
    s = warp_sum(s);
    if constexpr (kProjected) s += ix::load<T>(p.x, off<XS>(d, t, b, j));
    if constexpr (present<BS>()) {
      s += ix::load<T>(p.b, off<BS>(d, j));
      if (recurrent) s += ix::load<T>(p.b, off<BS>(d, G * H + j));
    }
    return s;
  }

  static __device__ void run(const Params& p) {
    float* smem = mc::dynamic_smem<float>();
    const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
    const int d = static_cast<int>(blockIdx.x) / B, b = static_cast<int>(blockIdx.x) % B;
    const bool reverse = (kFlags & kReverse) != 0 || d == 1;
    int len = S;
    if constexpr (present<LS>()) {
      const int32_t l = p.sequence_lens[off<LS>(b)];
      len = l < 0 ? 0 : (l > S ? S : l);
    }
    const Act& f = p.act[d][0];
    const Act& g = p.act[d][1];
    const Act& h_act = p.act[d][2];

    for (int u = tid; u < H; u += kThreads) {
      float h0 = 0.0f, c0 = 0.0f;
      if constexpr (present<HS>()) h0 = ix::load<T>(p.initial_h, off<HS>(d, b, u));
      if constexpr (present<CS>()) c0 = ix::load<T>(p.initial_c, off<CS>(d, b, u));
      st_shared(smem + kHAt + u, h0);
      st_shared(smem + kCAt + u, c0);
    }
    if constexpr (present<YS>()) {
      for (int e = tid; e < (S - len) * H; e += kThreads) {
        ix::store<T>(p.y, off<YS>(len + e / H, d, b, e % H), 0.0f);
      }
    }
    __syncthreads();

    for (int step = 0; step < len; ++step) {
      const int t = reverse ? len - 1 - step : step;
      if constexpr (!kProjected) {
        for (int i = tid; i < I; i += kThreads) st_shared(smem + kXAt + i, ix::load<T>(p.x, off<XS>(t, b, i)));
        __syncthreads();
      }
      // The gates: every row of R with its term, except GRU's h gate (its recurrent term below).
      for (int j = warp; j < G * H; j += kWarps) {
        const float s = gate_row(p, smem, d, t, b, j, !(kCell == kGru && j >= 2 * H));
        if (lane == 0) st_shared(smem + kGatesAt + j, s);
      }
      if constexpr (kCell == kGru) {
        // The h gate's recurrent term, with Rb_h: h R_h^T + Rb_h (linear_before_reset: r multiplies
        // it in the cell), else (r * h) R_h^T + Rb_h, once r is known.
        const float* in = smem + kHAt;
        if constexpr ((kFlags & kLinearBeforeReset) == 0) {
          __syncthreads();
          for (int k = tid; k < H; k += kThreads) {
            const float r = activate(f, clipped(p, ld_shared(smem + kGatesAt + H + k)));
            st_shared(smem + kRhAt + k, r * ld_shared(smem + kHAt + k));
          }
          __syncthreads();
          in = smem + kRhAt;
        }
        for (int u = warp; u < H; u += kWarps) {
          float s = 0.0f;
          for (int k = lane; k < H; k += 32) s += ix::load<T>(p.r, off<RS>(d, 2 * H + u, k)) * ld_shared(in + k);
          s = warp_sum(s);
          if constexpr (present<BS>()) s += ix::load<T>(p.b, off<BS>(d, G * H + 2 * H + u));
          if (lane == 0) st_shared(smem + kAuxAt + u, s);
        }
      }
      __syncthreads();

      // The cell: each thread its units.
      for (int u = tid; u < H; u += kThreads) {
        const float* gates = smem + kGatesAt;
        const float h_prev = ld_shared(smem + kHAt + u);
        float h;
        if constexpr (kCell == kLstm) {
          float peep_i = 0.0f, peep_o = 0.0f, peep_f = 0.0f;
          if constexpr (present<PS>()) {
            peep_i = ix::load<T>(p.p, off<PS>(d, u));
            peep_o = ix::load<T>(p.p, off<PS>(d, H + u));
            peep_f = ix::load<T>(p.p, off<PS>(d, 2 * H + u));
          }
          const float c_prev = ld_shared(smem + kCAt + u);
          const float ig = activate(f, clipped(p, ld_shared(gates + u) + peep_i * c_prev));
          const float fg = (kFlags & kInputForget) != 0 ? 1.0f - ig
                                                         : activate(f, clipped(p, ld_shared(gates + 2 * H + u) + peep_f * c_prev));
          const float cg = activate(g, clipped(p, ld_shared(gates + 3 * H + u)));
          const float c = fg * c_prev + ig * cg;
          const float og = activate(f, clipped(p, ld_shared(gates + H + u) + peep_o * c));
          h = og * activate(h_act, c);
          st_shared(smem + kCAt + u, c);
        } else if constexpr (kCell == kGru) {
          const float z = activate(f, clipped(p, ld_shared(gates + u)));
          const float aux = ld_shared(smem + kAuxAt + u);
          float pre = ld_shared(gates + 2 * H + u);
          if constexpr ((kFlags & kLinearBeforeReset) != 0) {
            const float r = activate(f, clipped(p, ld_shared(gates + H + u)));
            pre += r * aux;
          } else {
            pre += aux;
          }
          const float hh = activate(g, clipped(p, pre));
          h = (1.0f - z) * hh + z * h_prev;
        } else {
          h = activate(f, clipped(p, ld_shared(gates + u)));
        }
        st_shared(smem + kHAt + u, h);
        if constexpr (present<YS>()) ix::store<T>(p.y, off<YS>(t, d, b, u), h);
      }
      __syncthreads();
    }

    for (int u = tid; u < H; u += kThreads) {
      if constexpr (present<YHS>()) ix::store<T>(p.y_h, off<YHS>(d, b, u), ld_shared(smem + kHAt + u));
      if constexpr (present<YCS>()) ix::store<T>(p.y_c, off<YCS>(d, b, u), ld_shared(smem + kCAt + u));
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) recurrence_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::rnn
