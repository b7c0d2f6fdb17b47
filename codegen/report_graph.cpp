// codegen/report_graph.cpp — see report_graph.h.
#include "codegen/report_graph.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "codegen/literals.h"
#include "codegen/report.h"
#include "ir/dtype.h"
#include "support/error.h"

// graphviz's plugins, linked in (CMakeLists.txt): the dot layout and the core renderers (SVG).
// Only these: no text layout plugin (pango) is loaded, so label widths come from graphviz's own
// font metrics and the SVG is the same on every machine with this graphviz.
extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
}

namespace modelc {

namespace {

// Text for a DOT quoted string: '"' and '\\' escaped, control characters as '?', bytes that are not
// UTF-8 as U+FFFD (names come from the model); cut to `max` characters.
std::string dot_text(const std::string& s, std::size_t max = 48) {
  const std::string u = valid_utf8(s);
  std::string r;
  std::size_t chars = 0, i = 0;
  for (; i < u.size() && chars < max; ++chars) {
    const unsigned char c = static_cast<unsigned char>(u[i]);
    const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;  // valid_utf8's output
    if (len == 1 && (c < 0x20 || c == 0x7f)) {
      r += '?';
    } else {
      if (c == '"' || c == '\\') r += '\\';
      r.append(u, i, len);
    }
    i += len;
  }
  if (i < u.size()) r += "...";
  return r;
}

// FP32 / FP16 / BF16 / INT8 / "" (integers, bool): an INT8 product reads 8-bit data; else the type
// of the first output.
std::string precision_of(const Kernel& k) {
  for (const TensorView& v : k.inputs) {
    if (v.dtype == DType::int8 || v.dtype == DType::uint8) return "INT8";
  }
  for (const TensorView& v : k.outputs) {
    if (v.dtype == DType::undefined) continue;
    if (v.dtype == DType::float32 || v.dtype == DType::float64) return "FP32";
    if (v.dtype == DType::float16) return "FP16";
    if (v.dtype == DType::bfloat16) return "BF16";
    return "";
  }
  return "";
}

const char* fill_of(const std::string& precision) {
  if (precision == "FP32") return "#dbe9f6";
  if (precision == "FP16") return "#d9f0d3";
  if (precision == "BF16") return "#c7eae5";
  if (precision == "INT8") return "#fdd9b5";
  return "#eeeeee";
}

// Border colour, width and style by engine ("" : not a convolution or matrix product).
std::string border_of(const std::string& engine) {
  if (engine == "tensor_core") return "color=\"#1b7837\", penwidth=3";
  if (engine == "winograd") return "color=\"#762a83\", penwidth=3";
  if (engine == "gemv") return "color=\"#b35806\", penwidth=2";
  if (engine == "simt") return "color=\"#555555\", penwidth=2, style=\"filled,dashed\"";
  return "color=\"#888888\", penwidth=1";
}

std::string engine_words(const std::string& engine) {
  if (engine == "tensor_core") return "tensor core";
  if (engine == "winograd") return "Winograd (tensor core)";
  if (engine == "small_m") return "small-M (tensor core)";
  if (engine == "gemv") return "GEMV";
  if (engine == "simt") return "SIMT";
  if (engine == "depthwise_tiled") return "tiled depthwise (SIMT)";
  return "";
}

// The box's label: id and family; engine and precision; each ONNX node it covers (at most 6, the
// rest counted); a horizontally fused kernel's ranges.
std::string kernel_label(const Kernel& k) {
  const std::string engine = engine_words(engine_of(k));
  const std::string precision = precision_of(k);
  std::string l = dot_text(k.id + " (" + k.family_name() + ")", 60) + "\\n";
  std::string what = engine;
  if (!precision.empty()) what += (what.empty() ? "" : ", ") + precision;
  if (!what.empty()) l += dot_text(what) + "\\n";
  // A horizontally fused kernel: each output's node and its channel (column) range first.
  std::set<std::string> ranged;
  for (const OutputRange& r : k.ranges) {
    const std::string name = r.op.empty() ? std::string("?") : r.op.name;
    ranged.insert(name);
    l += dot_text(name + " [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")") + "\\l";
  }
  std::vector<std::string> rest;
  for (const std::string& n : k.nodes) {
    if (!ranged.count(n)) rest.push_back(n);
  }
  const std::size_t shown = std::min<std::size_t>(rest.size(), 6);
  for (std::size_t i = 0; i < shown; ++i) l += dot_text((i || !ranged.empty() ? "+ " : "") + rest[i]) + "\\l";
  if (rest.size() > shown) l += "+ " + std::to_string(rest.size() - shown) + " more nodes\\l";
  return l;
}

// A view's bytes: [lo, hi) in its space (strided views: from the first element to the last).
struct Extent {
  Space space = Space::arena;
  int index = 0;
  int64_t lo = 0, hi = 0;
};

Extent extent_of(const TensorView& v) {
  Extent e;
  e.space = v.space;
  e.index = v.index;
  const int64_t size = static_cast<int64_t>(dtype_size(v.dtype));
  int64_t last = 0;
  for (std::size_t i = 0; i < v.shape.size() && i < v.strides.size(); ++i) {
    if (v.shape[i] == 0) return e;
    last += (v.shape[i] - 1) * std::max<int64_t>(v.strides[i], 0);
  }
  e.lo = v.offset;
  e.hi = v.offset + (last + 1) * size;
  return e;
}

// graphviz's default object-ID discipline gives a named object the address of its name string, and
// an anonymous one (an edge) a counter that lives as long as the process: the order of subgraphs
// (the stream lanes) followed malloc, so a second layout in one process (batch profiles, the
// tests) drew the same graph with its clusters in another order. These IDs are per graph, in
// creation order: the same DOT text gives the same SVG, first call or not.
struct GraphIds {
  std::map<std::string, IDTYPE> by_name;
  std::map<IDTYPE, std::string> names;
  IDTYPE next_named = 2, next_anonymous = 1;  // even: named; odd: anonymous (as graphviz's own)
};

extern "C" {
void* ids_open(Agraph_t*, Agdisc_t*) { return new GraphIds; }
long ids_map(void* state, int, char* str, IDTYPE* id, int createflag) {
  GraphIds& g = *static_cast<GraphIds*>(state);
  if (!str) {
    *id = g.next_anonymous;
    g.next_anonymous += 2;
    return 1;
  }
  const auto it = g.by_name.find(str);
  if (it != g.by_name.end()) {
    *id = it->second;
    return 1;
  }
  if (!createflag) return 0;
  *id = g.next_named;
  g.next_named += 2;
  g.by_name.emplace(str, *id);
  g.names.emplace(*id, str);
  return 1;
}
long ids_alloc(void*, int, IDTYPE) { return 0; }  // no IDs chosen by the caller
void ids_free(void*, int, IDTYPE) {}
char* ids_print(void* state, int, IDTYPE id) {
  GraphIds& g = *static_cast<GraphIds*>(state);
  const auto it = g.names.find(id);
  return it == g.names.end() ? nullptr : const_cast<char*>(it->second.c_str());
}
void ids_close(void* state) { delete static_cast<GraphIds*>(state); }
void ids_register(void*, int, void*) {}

// Reading the DOT text from memory, a line at a time.
struct DotText {
  const std::string* text;
  std::size_t at;
};
int dot_read(void* chan, char* buf, int size) {
  DotText& t = *static_cast<DotText*>(chan);
  if (t.at >= t.text->size() || size <= 1) return 0;
  const std::size_t eol = t.text->find('\n', t.at);
  std::size_t n = (eol == std::string::npos ? t.text->size() : eol + 1) - t.at;
  n = std::min(n, static_cast<std::size_t>(size - 1));
  std::memcpy(buf, t.text->data() + t.at, n);
  t.at += n;
  return static_cast<int>(n);
}
}

Agiddisc_t graph_ids = {ids_open, ids_map, ids_alloc, ids_free, ids_print, ids_close, ids_register};

bool overlap(const Extent& a, const Extent& b) {
  return a.space == b.space && (a.space != Space::input && a.space != Space::output ? true : a.index == b.index) &&
         a.lo < b.hi && b.lo < a.hi;
}

}  // namespace

std::string report_graph_dot(const Schedule& s) {
  std::string d = "digraph \"" + dot_text(s.name) + "\" {\n";
  // nslimit bounds the network-simplex passes of dot's x-coordinate assignment (2 x the node count
  // each): unbounded, densenet121's 248 kernels and 792 edges (an elided Concat feeds every later
  // layer) took 36 s of a 38 s compile; bounded, 3 s, and the same ranks and orders.
  d += "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, nodesep=0.25, ranksep=0.35, newrank=true, nslimit=2, "
       "label=\"" + dot_text(s.name, 60) + ": " + std::to_string(s.kernels.size()) +
       " kernels (modelc report.md)\", labelloc=t];\n";
  d += "  node [shape=box, style=filled, fontname=\"Courier\", fontsize=10, margin=\"0.12,0.05\"];\n";
  d += "  edge [color=\"#666666\", arrowsize=0.6];\n";

  // The legend: one box per precision and per engine, in a row at the top.
  d += "  subgraph cluster_legend {\n    label=\"legend: fill = precision, border = engine\"; fontsize=10; "
       "color=\"#bbbbbb\";\n";
  const std::vector<std::pair<std::string, std::string>> legend = {
      {"FP32", ""}, {"FP16", ""}, {"BF16", ""}, {"INT8", ""}, {"", "tensor_core"}, {"", "winograd"}, {"", "gemv"},
      {"", "simt"}};
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const auto& [p, e] = legend[i];
    d += "    legend" + std::to_string(i) + " [label=\"" + (p.empty() ? engine_words(e) : p) + "\", fillcolor=\"" +
         (p.empty() ? "#ffffff" : fill_of(p)) + "\", " + border_of(e) + ", fontsize=9];\n";
  }
  d += "    {rank=same;";
  for (std::size_t i = 0; i < legend.size(); ++i) d += " legend" + std::to_string(i) + ";";
  d += "}\n";
  for (std::size_t i = 0; i + 1 < legend.size(); ++i) {
    d += "    legend" + std::to_string(i) + " -> legend" + std::to_string(i + 1) + " [style=invis];\n";
  }
  d += "  }\n";

  // Inputs and outputs.
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    d += "  in" + std::to_string(i) + " [shape=ellipse, style=filled, fillcolor=\"#ffffff\", label=\"input " +
         dot_text(s.inputs[i].name) + "\\n" + dtype_name(s.inputs[i].dtype) + "[" + shape_str(s.inputs[i].shape) +
         "]\"];\n";
  }
  for (std::size_t i = 0; i < s.outputs.size(); ++i) {
    d += "  out" + std::to_string(i) + " [shape=ellipse, style=filled, fillcolor=\"#ffffff\", label=\"output " +
         dot_text(s.outputs[i].name) + "\\n" + dtype_name(s.outputs[i].dtype) + "[" + shape_str(s.outputs[i].shape) +
         "]\"];\n";
  }
  if (!s.kernels.empty()) d += "  legend0 -> " + std::string(s.inputs.empty() ? "k_0" : "in0") + " [style=invis];\n";

  // Kernels, in lanes per stream when there are several.
  std::map<int, std::vector<std::size_t>> by_stream;
  for (std::size_t i = 0; i < s.kernels.size(); ++i) by_stream[s.streams > 1 ? s.kernels[i].stream : 0].push_back(i);
  for (const auto& [stream, ids] : by_stream) {
    std::string indent = "  ";
    if (s.streams > 1) {
      d += "  subgraph cluster_stream" + std::to_string(stream) + " {\n    label=\"stream " + std::to_string(stream) +
           (stream == 0 ? " (the caller's)" : "") + "\"; style=dashed; color=\"#999999\";\n";
      indent = "    ";
    }
    for (std::size_t i : ids) {
      const Kernel& k = s.kernels[i];
      const std::string engine = engine_of(k);
      d += indent + "k_" + std::to_string(i) + " [label=\"" + kernel_label(k) + "\", fillcolor=\"" +
           fill_of(precision_of(k)) + "\", " + border_of(engine) + "];\n";
    }
    if (s.streams > 1) d += "  }\n";
  }

  // Edges. A value a kernel writes, by name (its last writer); a view of it (a Reshape) or any
  // value no kernel writes by name, by bytes: the last kernel before the reader that wrote bytes
  // it reads (the memory plan lets no other kernel write them while they are live).
  std::map<std::string, std::size_t> writer;  // value -> kernel index
  std::map<std::string, std::size_t> concat_of;  // an elided Concat's output -> its index in s.concats
  for (std::size_t c = 0; c < s.concats.size(); ++c) {
    if (s.concats[c].elided) concat_of[s.concats[c].output] = c;
  }
  std::set<std::pair<std::string, std::string>> edges;  // (from, to), DOT ids
  std::vector<std::pair<Extent, std::size_t>> written;  // every output's bytes, in kernel order
  std::set<std::size_t> concat_used;
  // The DOT ids of what wrote value `v` (viewed as `view`) before kernel `before`.
  auto sources = [&](const std::string& v, const TensorView& view, std::size_t before) {
    std::vector<std::string> r;
    if (view.space == Space::input) {
      r.push_back("in" + std::to_string(view.index));
      return r;
    }
    if (view.space == Space::weights) return r;
    if (auto c = concat_of.find(v); c != concat_of.end()) {
      concat_used.insert(c->second);
      r.push_back("concat" + std::to_string(c->second));
      return r;
    }
    if (auto w = writer.find(v); w != writer.end() && w->second < before) {
      r.push_back("k_" + std::to_string(w->second));
      return r;
    }
    const Extent e = extent_of(view);
    for (auto it = written.rbegin(); it != written.rend(); ++it) {
      if (it->second < before && overlap(it->first, e)) {
        r.push_back("k_" + std::to_string(it->second));
        break;
      }
    }
    return r;
  };
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const Kernel& k = s.kernels[i];
    for (const TensorView& in : k.inputs) {
      if (in.dtype == DType::undefined) continue;
      for (const std::string& from : sources(in.value, in, i)) edges.insert({from, "k_" + std::to_string(i)});
    }
    for (const TensorView& o : k.outputs) {
      if (o.dtype == DType::undefined) continue;
      writer[o.value] = i;
      written.emplace_back(extent_of(o), i);
      if (o.space == Space::output) edges.insert({"k_" + std::to_string(i), "out" + std::to_string(o.index)});
    }
  }
  // Elided Concats that a kernel reads: a dashed note, its producers' edges into it.
  for (std::size_t c : concat_used) {
    const ConcatElision& e = s.concats[c];
    d += "  concat" + std::to_string(c) + " [shape=note, style=\"filled,dashed\", fillcolor=\"#ffffff\", label=\"" +
         dot_text("Concat " + e.name) + "\\nelided: " + std::to_string(e.inputs.size()) +
         " producers write its slices\", fontsize=9];\n";
    for (const ConcatElision::Input& in : e.inputs) {
      if (auto w = writer.find(in.value); w != writer.end()) {
        edges.insert({"k_" + std::to_string(w->second), "concat" + std::to_string(c)});
      } else if (auto nested = concat_of.find(in.value); nested != concat_of.end()) {
        edges.insert({"concat" + std::to_string(nested->second), "concat" + std::to_string(c)});
      }
    }
  }
  for (std::size_t i = 0; i < s.outputs.size(); ++i) {
    if (auto c = concat_of.find(s.outputs[i].name); c != concat_of.end()) {
      edges.insert({"concat" + std::to_string(c->second), "out" + std::to_string(i)});
    }
  }
  // In kernel order (the set's order is by text: "k_10" before "k_2").
  std::vector<std::pair<std::string, std::string>> ordered(edges.begin(), edges.end());
  auto rank = [](const std::string& id) {
    const std::size_t digits = id.find_first_of("0123456789");
    const int64_t n = digits == std::string::npos ? 0 : std::stoll(id.substr(digits));
    const int kind = id.rfind("in", 0) == 0 ? 0 : id.rfind("k_", 0) == 0 ? 1 : id.rfind("concat", 0) == 0 ? 2 : 3;
    return std::make_pair(kind, n);
  };
  std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(rank(a.first), rank(a.second)) < std::make_pair(rank(b.first), rank(b.second));
  });
  for (const auto& [from, to] : ordered) {
    d += "  " + from + " -> " + to + (from.rfind("concat", 0) == 0 || to.rfind("concat", 0) == 0 ? " [style=dashed]" : "") +
         ";\n";
  }
  d += "}\n";
  return d;
}

std::string graph_link_markdown(const std::string& file) {
  return "The kernel graph: [" + file + "](" + file +
         ") (each kernel with the ONNX nodes it covers; fill: precision, border: engine; streams as lanes; elided "
         "Concats dashed).\n\n";
}

std::string report_graph_svg(const Schedule& s) {
  const std::string dot = report_graph_dot(s);
  // graphviz keeps global state (the error handler, its symbol tables): one layout at a time.
  static std::mutex gv_mutex;
  const std::lock_guard<std::mutex> lock(gv_mutex);
  static const lt_symlist_t plugins[] = {{"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
                                         {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
                                         {nullptr, nullptr}};
  agseterr(AGMAX);  // graphviz's messages go nowhere: an error is reported below
  const std::unique_ptr<GVC_t, int (*)(GVC_t*)> gvc(gvContextPlugins(plugins, 0), gvFreeContext);
  if (!gvc) throw Error("graphviz: cannot create a context for report.svg");
  Agiodisc_t io = AgIoDisc;
  io.afread = dot_read;
  Agdisc_t disc = {&AgMemDisc, &graph_ids, &io};
  DotText chan{&dot, 0};
  const std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> g(agread(&chan, &disc), agclose);
  if (!g) throw Error("internal: graphviz cannot read the kernel graph of report.svg");
  if (gvLayout(gvc.get(), g.get(), "dot") != 0) throw Error("graphviz: the dot layout of report.svg failed");
  char* data = nullptr;
  unsigned int length = 0;
  const int rendered = gvRenderData(gvc.get(), g.get(), "svg", &data, &length);
  std::string svg = rendered == 0 && data ? std::string(data, length) : std::string();
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc.get(), g.get());
  if (svg.empty()) throw Error("graphviz: rendering report.svg failed");
  return svg;
}

}  // namespace modelc
