// compiler/frontend/batch.h — what a change of batch size does to a graph: where each value holds
// the batch, and whether a node combines the items of a batch (then a re-batch, `--batch N` on a
// model that fixes its batch, or the padding of batch profiles, `--batch 1,8,32`, would change what
// the model computes for an item).
//
// The rule works on the model imported at two batch sizes (the frontend fixes every shape, so the
// two graphs are the same nodes with other shapes). A value holds the batch in dim d when its shape
// differs from one graph to the other in that dim only, by the batch's factor (b x 16 rows where the
// batch was folded into rows); every other value has the same shape in both. Then no node may read a
// value that holds the batch without passing it on to an output (a reduction or a contraction over
// the batch), and none may work along the batch's dim (its `axis` attribute, or its op's default
// axis, there: Softmax, Concat, Gather, Split, ...; LayerNormalization and the opset < 13 Softmax
// family over the dims from their axis on). A graph that hard-codes its batch in a shape op (Reshape to [1, -1], a Slice or Pad of
// the batch dim, a Concat with a constant along it) fails one of these rules or ONNX's shape rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc {

/// \brief Where the batch lies in a graph's inputs and outputs: per graph input (in order) and per
/// graph output, the dim that holds the batch, or -1 when its shape is the same at every batch.
struct BatchLayout {
  std::vector<int> inputs, outputs;
};

/// \brief Compares `a` (a model at batch `batch_a`) with `b` (the same model at `batch_b`, another
/// size) by the rules above. Throws Error naming the value or node that breaks one, its shapes at
/// both batches and why; `what` starts the message ("--batch 4", "batch profiles 1 and 8").
BatchLayout check_batch(const Graph& a, int64_t batch_a, const Graph& b, int64_t batch_b, const std::string& what);

/// The hint of the errors of a graph that hard-codes its batch: re-export it with a dynamic one.
extern const char* const kDynamicBatchHint;

}  // namespace modelc
