// codegen/error_plot.h — a plot of the error per layer as SVG (`run-reference --fp16 --layers
// --plot FILE`, and the same for --bf16 and --int8): where along the graph a reduced precision
// loses accuracy, and where it crosses the tolerance.
#pragma once

#include <string>
#include <vector>

namespace modelc {

/// \brief One layer's error: a node output of the simulated program against FP32.
struct LayerError {
  std::string label;   ///< "Conv /conv1/Conv -> /conv1/Conv_output_0"
  double rel_l2 = 0;   ///< relative L2 error (accumulated up to this layer)
  double max_abs = 0;
  bool nonfinite = false;  ///< NaN or Inf where FP32 is finite
};

/// \brief The plot: the relative L2 error of each layer in graph order on a logarithmic axis, a
/// point per layer (its label and values as a tooltip), the `limit` as a dashed line (0: none), the
/// worst layer and the first above the limit named; a layer with NaN / Inf is a red cross at the
/// top. Plain SVG written by hand (no layout to do), deterministic.
std::string layer_error_svg(const std::string& title, const std::vector<LayerError>& layers, double limit);

}  // namespace modelc
