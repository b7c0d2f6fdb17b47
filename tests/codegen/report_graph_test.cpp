// codegen/report_graph.h: the kernel graph of report.svg, in DOT and laid out by graphviz; and
// codegen/error_plot.h, the per-layer error plot. The pictures themselves are rendered to PNG by
// the ctest `pictures` (tests/pictures/).
#include <doctest/doctest.h>

#include "codegen/error_plot.h"
#include "codegen/report_graph.h"
#include "tests/codegen/sample_graph.h"

using namespace modelc;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("report graph: a box per kernel with its nodes, the data flow, inputs and outputs, the legend") {
  auto g = test::sample_graph();
  const Schedule s = lower(*g, test::sample_options());
  const std::string dot = report_graph_dot(s);
  INFO(dot);
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const Kernel& k = s.kernels[i];
    CHECK(has(dot, "k_" + std::to_string(i) + " [label=\"" + k.id + " (" + k.family_name() + ")"));
    for (const std::string& n : k.nodes) CHECK(has(dot, n));
  }
  CHECK(has(dot, "in0 [shape=ellipse"));
  CHECK(has(dot, "label=\"input x\\nfloat32[2x3x4]\""));
  CHECK(has(dot, "subgraph cluster_legend"));
  CHECK(has(dot, "in0 -> k_0;"));  // the Relu reads the input
  // Every output has an edge into it.
  for (std::size_t i = 0; i < s.outputs.size(); ++i) CHECK(has(dot, " -> out" + std::to_string(i)));
}

TEST_CASE("report graph: the SVG is the same bytes every time, also after other layouts in the process") {
  auto g = test::sample_graph();
  const Schedule s = lower(*g, test::sample_options());
  auto g2 = test::sample_graph(3);
  const Schedule other = lower(*g2, test::sample_options());
  const std::string first = report_graph_svg(s);
  CHECK(has(first, "<svg"));
  CHECK(has(first, "<title>k_0</title>"));
  report_graph_svg(other);  // graphviz's process-wide state (IDs, allocations) must not show
  CHECK(report_graph_svg(s) == first);
  CHECK(report_graph_svg(other) != first);
}

TEST_CASE("report graph: names from the model cannot break the DOT text") {
  auto g = test::sample_graph();
  Schedule s = lower(*g, test::sample_options());
  s.kernels[0].nodes = {"quote\" back\\slash", std::string("bad \xff\xfe utf8"), "brace } { ; -> x"};
  const std::string dot = report_graph_dot(s);
  CHECK(has(dot, "quote\\\" back\\\\slash"));
  CHECK(has(dot, "bad \xEF\xBF\xBD\xEF\xBF\xBD utf8"));  // U+FFFD twice
  CHECK(has(report_graph_svg(s), "brace } { ; &#45;&gt; x"));  // graphviz writes - as &#45;
}

TEST_CASE("error plot: a point per layer, the limit, the worst layer named; NaN/Inf drawn apart") {
  std::vector<LayerError> layers = {{"Conv a -> a0", 1e-4, 1e-3, false},
                                    {"Relu b -> b0", 3e-3, 2e-2, false},
                                    {"Add <c> & d -> c0", 2e-2, 1e-1, false},
                                    {"Exp e -> e0", 0, 0, true}};
  const std::string svg = layer_error_svg("m.onnx: FP16 simulation against FP32, per layer", layers, 1e-2);
  std::size_t circles = 0;
  for (std::size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  CHECK(circles == 3);
  CHECK(has(svg, "limit 0.01"));
  CHECK(has(svg, "worst: layer 3 Exp e -&gt; e0 (NaN/Inf); first above 0.01: layer 2"));
  CHECK(has(svg, "Add &lt;c&gt; &amp; d -&gt; c0"));
  CHECK(has(svg, "fill=\"#d62728\""));  // above the limit: red
  CHECK(layer_error_svg("m.onnx: FP16 simulation against FP32, per layer", layers, 1e-2) == svg);
}
