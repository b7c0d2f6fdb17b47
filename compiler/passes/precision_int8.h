// compiler/passes/precision_int8.h — the INT8 part of passes/precision (--int8; see
// precision_int8.cpp): calibrated Conv / Gemm / MatMul become QConv / QMatMul on quantized inputs.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace modelc {

/// \brief Rewrites the calibrated convolutions and matrix products into INT8 ones (o.calibration:
/// Error when absent), recording every decision in report.int8_layers.
void quantize_calibrated_products(Graph& g, const PassOptions& o, PrecisionReport& report);

}  // namespace modelc
