// codegen/report_graph.h — the picture of report.md: the kernel graph as SVG, laid out by graphviz
// (libcgraph + libgvc, the dot layout).
//
// Each kernel is a box labelled with its id, family, engine and precision and the ONNX nodes it
// covers (a horizontally fused kernel: the channel range of each node); its fill says the
// precision (FP32 blue, FP16 green, BF16 teal, INT8 orange, integer / bool grey) and its border the
// engine of a convolution or matrix product (tensor core: thick green, Winograd: thick purple,
// GEMV: brown, SIMT: dashed grey). Edges follow the data: a kernel to each kernel that reads what
// it wrote. Graph inputs and outputs are ellipses; an elided Concat (its producers write their
// slices of its buffer) is a dashed note between its producers and its readers. With several
// streams, each is a lane (a cluster) of its kernels. A legend sits at the top.
#pragma once

#include <string>

#include "schedule/schedule.h"

namespace modelc {

/// \brief The kernel graph of `s` in graphviz's DOT language (what report_graph_svg lays out).
/// Deterministic: the same schedule gives the same text.
std::string report_graph_dot(const Schedule& s);

/// \brief report_graph_dot laid out by graphviz's dot and rendered as SVG (graphviz's own
/// renderer, font metrics estimated: the bytes do not depend on the fonts installed). Throws Error
/// when graphviz fails.
std::string report_graph_svg(const Schedule& s);

/// \brief report.md's line that links the picture `file` and says how to read it.
std::string graph_link_markdown(const std::string& file);

}  // namespace modelc
