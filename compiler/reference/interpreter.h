// compiler/reference/interpreter.h — the CPU interpreter of the Graph: float32 data, float64
// accumulation for dot products and reductions (BLAS and threads for the heavy ops: see
// reference/kernels.h and reference/parallel.h). The ground truth for `verify`, constant folding
// and calibration.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "ir/graph.h"
#include "reference/accumulation.h"

namespace modelc {

using TensorMap = std::map<std::string, Tensor>;

/// Called after each node with its outputs (for layer-by-layer comparison).
using NodeObserver = std::function<void(const Node&, const std::vector<Tensor>&)>;

/// \brief Runs the graph on `inputs` (keyed by graph input name) and returns
/// every graph output keyed by name. Inputs are checked (present, dtype,
/// shape) with an Error naming the input; constant inputs may be omitted.
/// `accumulation`: how convolutions and matrix products accumulate (reference/kernels.h): f64, the
/// ground truth of verify and the tests; f32, the precision simulations' faster path.
TensorMap run_reference(const Graph& g, const TensorMap& inputs, const NodeObserver& observer = nullptr,
                        reference::Accumulation accumulation = reference::Accumulation::f64);

/// Seeded random inputs for every non-constant graph input: floats uniform in
/// [-1, 1), integers in [0, 10), bools 0/1. Same seed, same tensors.
TensorMap random_inputs(const Graph& g, uint64_t seed);

}  // namespace modelc
