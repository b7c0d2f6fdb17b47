// compiler/ops/rnn.h — the recurrent ops LSTM, GRU and RNN (opsets 7 and 14) and their internal
// recurrence forms (domain "modelc": LSTMRecurrence, GRURecurrence, RNNRecurrence), which read the
// input projection X * W^T as a tensor computed before them (passes/split_recurrence.cpp: a MatMul
// on the GEMM templates). The reference (ops/rnn.cpp), the pass and the rnn family
// (codegen/families/rnn.cpp, templates/rnn.cuh) read these rules.
//
// Inputs of the ONNX forms: X, W, R, B, sequence_lens, initial_h (and LSTM: initial_c, P).
// The recurrence forms take XW in place of X and W: [num_directions, seq_length, batch, gates *
// hidden] (layout 1: [num_directions, batch, seq_length, gates * hidden]), the rest unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

enum class RnnCell { lstm, gru, rnn };

/// \brief An activation of the recurrent ops ('activations'), with its alpha and beta.
struct RnnActivation {
  /// Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
  /// Softsign, Softplus (as the spec spells them).
  enum class Kind { relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu,
                    softsign, softplus };
  Kind kind = Kind::tanh;
  double alpha = 0, beta = 0;
  std::string name() const;  ///< as the spec spells it
};
/// The activation applied to x (the reference; templates/rnn.cuh computes the same in FP32).
double apply(const RnnActivation& a, double x);

/// \brief Everything a recurrent node means beyond its tensors.
struct RnnParams {
  RnnCell cell = RnnCell::lstm;
  bool projected = false;    ///< the internal recurrence form: input 0 is XW, there is no W
  int64_t gates = 4;         ///< 4 (LSTM: i, o, f, c), 3 (GRU: z, r, h), 1 (RNN)
  int64_t hidden = 0;        ///< 'hidden_size' (required here: modelc also checks it against W and R)
  int64_t directions = 1;    ///< 2 for 'direction' bidirectional
  bool reverse = false;      ///< 'direction' reverse (bidirectional: direction 1 runs reversed)
  int64_t layout = 0;        ///< 'layout' (opset 14): 0 = [seq, batch, ...], 1 = [batch, seq, ...]
  bool has_clip = false;
  double clip = 0;           ///< 'clip': pre-activations clipped to [-clip, clip]
  bool input_forget = false; ///< LSTM 'input_forget': f = 1 - i
  bool linear_before_reset = false;  ///< GRU
  /// Per direction, the cell's activations: LSTM f, g, h; GRU f, g; RNN f.
  std::vector<std::vector<RnnActivation>> activations;
  /// Sizes read from the inputs: seq_length, batch, input_size (0 in the recurrence form).
  int64_t seq = 0, batch = 0, input = 0;

  int64_t per_direction() const { return static_cast<int64_t>(cell == RnnCell::lstm ? 3 : cell == RnnCell::gru ? 2 : 1); }
  /// Input indices of the ONNX form (the recurrence form has the same ones; input 1, W, absent).
  static constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;
};

/// \brief The node's attributes checked against its inputs' shapes (X or XW, W, R, B, sequence_lens,
/// initial_h, initial_c, P); Error naming the node and what is wrong.
RnnParams rnn_params(const Node& n);

/// The cell of an op name: LSTM / LSTMRecurrence -> lstm, ...
RnnCell rnn_cell(const std::string& op);
/// The internal op of the recurrence form of `cell` ("LSTMRecurrence", ...).
const char* recurrence_op(RnnCell cell);

}  // namespace modelc::ops
