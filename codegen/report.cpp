#include "codegen/report.h"
#include "codegen/report_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/literals.h"
#include "ops/fused.h"
#include "ops/quantize.h"
#include "ops/registry.h"
#include "plugin/plugin.h"
#include "schedule/linear_plans.h"
#include "schedule/plugin_family.h"
#include "schedule/target.h"
#include "support/error.h"

namespace modelc {

namespace {

using Json = nlohmann::ordered_json;

std::string type_text(DType t, const Shape& s) {
  return std::string(dtype_name(t)) + "[" + (s.empty() ? "" : shape_str(s)) + "]";
}

Json view_json(const TensorView& v) {
  Json j;
  if (v.dtype == DType::undefined) return nullptr;
  j["value"] = v.value;
  j["dtype"] = dtype_name(v.dtype);
  j["shape"] = v.shape;
  j["space"] = space_name(v.space);
  if (v.space == Space::input || v.space == Space::output) {
    j["index"] = v.index;
  } else {
    j["offset"] = v.offset;
  }
  if (!v.dense()) j["strides"] = v.strides;
  return j;
}

std::string tactic_text(const Kernel& k) {
  std::string s;
  for (const auto& [key, value] : tactic_fields(k.tactic)) s += (s.empty() ? "" : " ") + key + "=" + std::to_string(value);
  return s;
}

// Markdown table cells must not hold '|' or line breaks; names from the model may hold any bytes
// (control characters become spaces, bytes that are not UTF-8 U+FFFD).
std::string cell(const std::string& s) {
  std::string r;
  for (unsigned char c : s) {
    if (c == '|') {
      r += "\\|";
    } else if (c < 0x20 || c == 0x7f) {
      r += ' ';
    } else {
      r += static_cast<char>(c);
    }
  }
  return valid_utf8(r);
}

std::string human(int64_t b) {
  char buf[32];
  if (b < 1024) return std::to_string(b) + " B";
  if (b < (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024.0);
  } else if (b < (int64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / 1073741824.0);
  }
  return buf;
}

// Tactic text per arch ("sm_75: BM=128 ...; sm_90: ..."), or the one tactic.
std::string arch_tactic_text(const Kernel& k, const std::string& sep) {
  if (k.arch_tactic.empty()) return tactic_text(k);
  std::string s;
  for (const auto& [sm, tactic] : k.arch_tactic) {
    Kernel t;
    t.tactic = tactic;
    s += (s.empty() ? "" : sep) + "sm_" + std::to_string(sm) + ": " + tactic_text(t);
  }
  return s;
}

// "/conv/Conv + /relu/Relu + /add/Add": the ONNX nodes a kernel covers, in order.
std::string nodes_text(const Kernel& k) {
  std::string s;
  for (const std::string& n : k.nodes) s += (s.empty() ? "" : " + ") + n;
  return s;
}

std::string family_default_reason(const Kernel& k) {
  if (k.family_name() == "conv_depthwise") return "depthwise convolution (SIMT template)";
  if (k.family_name() == "conv_transpose") return "ConvTranspose (SIMT template)";
  return "no engine recorded by the " + k.family_name() + " family";
}

// The target the estimates are for: the first --arch (the one k.tactic and k.estimate are for).
Target estimate_target(const Schedule& s) { return targets_for(s.archs, false).front(); }

// A float for report.json, rounded to `digits` decimals (its shortest form is then that text).
double rounded(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

Json estimate_json(const Estimate& e) {
  return {{"us", rounded(e.us, 3)},
          {"bound", e.bound},
          {"blocks", e.blocks},
          {"waves", rounded(e.waves, 3)},
          {"flops", static_cast<int64_t>(std::llround(e.flops))},
          {"bytes", static_cast<int64_t>(std::llround(e.bytes))}};
}

// The tile of a tensor-core, small-M or SIMT tactic by name, else its fields (k.tactic: the first --arch's).
std::string tile_text(const Kernel& k) {
  const Tactic& tactic = k.tactic;
  if (const TcTile* tc = std::get_if<TcTile>(&tactic)) return tc->name();
  if (const TileConfig* simt = std::get_if<TileConfig>(&tactic)) return simt->name();
  if (const SmallMTile* sm = std::get_if<SmallMTile>(&tactic)) return sm->name();
  std::string s;
  for (const auto& [key, value] : tactic_fields(tactic)) s += (s.empty() ? "" : " ") + key + "=" + std::to_string(value);
  return s;
}

// A plugin kernel (compiler/plugin/plugin.h): which plugin, op, header and instantiation.
Json plugin_json(const Kernel& k) {
  const PluginPlan& p = plan_of<PluginPlan>(k);
  const plugin::PluginOp& op = *p.op;
  return {{"name", op.plugin->name},
          {"op", op.op},
          {"domain", op.domain},
          {"header", op.header},
          {"kernel", op.kernel},
          {"instantiation", p.instance.type},
          {"workspace_bytes", k.workspace_bytes}};
}

// report.md's "Plugins": each plugin kernel, what it runs and from where.
std::string plugins_markdown(const Schedule& s) {
  std::string rows;
  for (const Kernel& k : s.kernels) {
    if (k.family_name() != "plugin" || k.op.empty()) continue;
    const PluginPlan& p = plan_of<PluginPlan>(k);
    const plugin::PluginOp& op = *p.op;
    rows += "| " + k.id + " | " + cell(op.qualified()) + " | " + cell(nodes_text(k)) + " | " + cell(op.plugin->name) +
            " | " + cell(op.header) + " | `" + cell(p.instance.type) + "` | " +
            grouped(k.workspace_bytes) + " |\n";
  }
  if (rows.empty()) return "";
  return "\n## Plugins\n\nCustom operators (`--plugin`, docs/PLUGINS.md): the plugin's own kernel, launched like every "
         "template; its header is in kernels/plugins/.\n\n| id | op | nodes | plugin | header | kernel | workspace bytes "
         "|\n|---|---|---|---|---|---|---:|\n" +
         rows;
}

}  // namespace

bool is_conv_or_matmul(const Kernel& k) {
  if (k.engine != Engine::none) return true;
  if (k.op.empty()) return false;
  const std::string producer = ops::producer_of_fused(k.op.type);
  const std::string op = producer.empty() ? k.op.type : producer;
  static const std::set<std::string> kOps = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "ConvInteger",
                                             "MatMulInteger", "QLinearConv", "QLinearMatMul"};
  return kOps.count(op) > 0;
}

bool on_tensor_cores(const std::string& engine) {
  return engine == "tensor_core" || engine == "winograd" || engine == "hopper" || engine == "small_m";
}

std::string engine_of(const Kernel& k) {
  if (!is_conv_or_matmul(k)) return "";
  return k.engine == Engine::none ? "simt" : engine_name(k.engine);
}

std::string fallback_reason_of(const Kernel& k) {
  const std::string e = engine_of(k);
  if (e.empty() || on_tensor_cores(e)) return "";
  if (!k.fallback_reason.empty()) return k.fallback_reason;
  return k.engine == Engine::none ? family_default_reason(k) : "no reason recorded";
}

std::string engine_summary(const Schedule& s) {
  int total = 0, tc = 0, gemv = 0, simt = 0;
  std::map<std::string, int> reasons;
  for (const Kernel& k : s.kernels) {
    const std::string e = engine_of(k);
    if (e.empty()) continue;
    ++total;
    if (on_tensor_cores(e)) {
      ++tc;
    } else if (e == "gemv") {
      ++gemv;
    } else {
      ++simt;
      ++reasons[fallback_reason_of(k)];
    }
  }
  std::vector<std::pair<std::string, int>> order(reasons.begin(), reasons.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string why;
  for (const auto& [r, n] : order) why += (why.empty() ? "" : ", ") + r + ": " + std::to_string(n);
  return std::to_string(s.kernels.size()) + " kernels; " + std::to_string(total) + " convolutions/matrix products: " +
         std::to_string(tc) + " on tensor cores, " + (gemv > 0 ? std::to_string(gemv) + " on GEMV, " : "") +
         std::to_string(simt) + " on SIMT" +
         (why.empty() ? std::string() : " (" + why + ")");
}

std::string grouped(int64_t n) {
  std::string d = std::to_string(n < 0 ? -n : n);
  std::string r;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) r += ',';
    r += d[i];
  }
  return (n < 0 ? "-" : "") + r;
}

std::string view_text(const TensorView& v) {
  if (v.dtype == DType::undefined) return "-";
  std::string s = type_text(v.dtype, v.shape) + " @";
  switch (v.space) {
    case Space::input: return s + "input" + std::to_string(v.index);
    case Space::output: return s + "output" + std::to_string(v.index);
    case Space::arena: return s + "arena+" + std::to_string(v.offset);
    case Space::weights: return s + "weights+" + std::to_string(v.offset);
  }
  return s;
}

namespace {

// --fp16 / --bf16: passes/precision's report (the weights it clamped or made subnormal, by tensor
// name; the nodes left in FP32 and why). "fp16_nodes" counts the nodes in the 16-bit type, "type".
Json precision_json(const PrecisionReport& p) {
  Json weights = Json::array();
  for (const PrecisionReport::Weight& w : p.weights) {
    if (!w.clamped && !w.subnormal && !w.underflow) continue;
    weights.push_back({{"name", w.name},
                       {"elements", w.elements},
                       {"clamped", w.clamped},
                       {"subnormal", w.subnormal},
                       {"underflow", w.underflow}});
  }
  Json fp32 = Json::array();
  for (const PrecisionReport::Fp32Node& n : p.fp32_nodes) fp32.push_back({{"node", n.name}, {"op", n.op}, {"reason", n.reason}});
  return {{"fp16", p.type == DType::float16},
          {"bf16", p.type == DType::bfloat16},
          {"type", dtype_name(p.type)},
          {"fp16_accumulate", p.fp16_accumulate},
          {"io_fp16", p.io_fp16},
          {"fp16_nodes", p.fp16_nodes},
          {"casts_inserted", p.casts_inserted},
          {"weights_converted", p.weights.size()},
          {"clamped", p.total_clamped()},
          {"subnormal", p.total_subnormal()},
          {"weights_clamped_or_subnormal", std::move(weights)},
          {"fp32_nodes", std::move(fp32)}};
}

std::string precision_markdown(const PrecisionReport& p) {
  const bool bf16 = p.type == DType::bfloat16;
  const std::string t = bf16 ? "BF16" : "FP16";
  std::string m = "\n## Precision (" + std::string(bf16 ? "--bf16" : "--fp16") + ")\n\n";
  m += std::to_string(p.fp16_nodes) + " nodes store " + t + ", " + std::to_string(p.fp32_nodes.size()) +
       " float nodes stay FP32; " + std::to_string(p.casts_inserted) + " casts at " + t + "/FP32 boundaries; " +
       std::to_string(p.weights.size()) + " weights converted at compile time (" + grouped(p.total_clamped()) +
       " values clamped to " + (bf16 ? "+-3.3895e38" : "+-65504") + ", " + grouped(p.total_subnormal()) +
       " subnormal); accumulation in " + (p.fp16_accumulate ? "FP16 where faster (--fp16-accumulate)" : "FP32") +
       (bf16 ? " (tensor cores from sm_80; sm_75 has no BF16 MMA: its matrix products and convolutions run SIMT)"
             : "") +
       "; model inputs and outputs " + (p.io_fp16 ? t + " (--io-fp16)" : "FP32") + ".\n";
  bool any = false;
  for (const PrecisionReport::Weight& w : p.weights) {
    if (!w.clamped && !w.subnormal && !w.underflow) continue;
    if (!any) m += "\n| weight | elements | clamped | subnormal | underflow to 0 |\n|---|---:|---:|---:|---:|\n";
    any = true;
    m += "| " + cell(w.name) + " | " + grouped(w.elements) + " | " + grouped(w.clamped) + " | " + grouped(w.subnormal) +
         " | " + grouped(w.underflow) + " |\n";
  }
  if (!p.fp32_nodes.empty()) {
    m += "\n| FP32 node | op | why |\n|---|---|---|\n";
    for (const PrecisionReport::Fp32Node& n : p.fp32_nodes) m += "| " + cell(n.name) + " | " + n.op + " | " + cell(n.reason) + " |\n";
  }
  return m;
}

// --int8 (passes/precision_int8.cpp, the INT8 kernels): per convolution / matrix product of the
// model its precision (INT8 / FP16 / FP32), its scales (X's, the weights' per-channel range, the
// output's when INT8 is stored) and why a layer is not INT8; the calibration.

/// The kernel that runs ONNX node `name` (its node or a node it covers); null when none does.
const Kernel* kernel_of(const Schedule& s, const std::string& name) {
  for (const Kernel& k : s.kernels) {
    if (std::find(k.nodes.begin(), k.nodes.end(), name) != k.nodes.end()) return &k;
    if (!k.op.empty() && k.op.name == name) return &k;
  }
  return nullptr;
}

/// The precision a convolution / matrix product kernel computes in, from its first operand.
std::string kernel_precision(const Kernel& k) {
  if (k.inputs.empty()) return "";
  const DType t = k.inputs[0].dtype;
  return ops::is_int8_type(t) ? "INT8" : t == DType::float16 ? "FP16" : t == DType::bfloat16 ? "BF16" : "FP32";
}

/// An INT8 kernel's output: "int8 (scale 0.0123)", "float16", "the INT32 accumulators".
std::string int8_output_text(const Kernel& k) {
  const ops::Int8Epilogue* plan = linear::int8_epilogue_of(k);
  if (!plan) return "";
  const ops::Int8Epilogue& e = *plan;
  if (e.quantized()) return fmt::format("{} (scale {:.4g}{})", dtype_name(e.out), e.y_scale,
                                        e.y_zero_point ? fmt::format(", zero point {}", e.y_zero_point) : "");
  return e.raw() ? "the INT32 accumulators" : dtype_name(e.out);
}

Json int8_json(const Schedule& s, const PrecisionReport& p) {
  Json layers = Json::array();
  for (const PrecisionReport::Int8Layer& l : p.int8_layers) {
    Json j = {{"node", l.name}, {"op", l.op}, {"precision", l.precision}};
    const Kernel* k = kernel_of(s, l.name);
    if (k) j["kernel"] = k->id;
    if (l.precision == "INT8") {
      j["x_scale"] = l.x_scale;
      j["w_scale_min"] = l.w_scale_min;
      j["w_scale_max"] = l.w_scale_max;
      if (k) j["output"] = int8_output_text(*k);
    } else {
      j["reason"] = l.reason;
    }
    layers.push_back(std::move(j));
  }
  int64_t int8 = 0;
  for (const Kernel& k : s.kernels) int8 += is_conv_or_matmul(k) && kernel_precision(k) == "INT8";
  return {{"calibration", {{"method", p.calibration_method}, {"samples", p.calibration_samples}, {"source", p.calibration_source}}},
          {"int8_kernels", int8},
          {"layers", std::move(layers)}};
}

std::string int8_markdown(const Schedule& s, const PrecisionReport& p) {
  int64_t int8 = 0, total = 0;
  for (const Kernel& k : s.kernels) {
    if (!is_conv_or_matmul(k)) continue;
    ++total;
    int8 += kernel_precision(k) == "INT8";
  }
  std::string m = "\n## INT8 (--int8)\n\n" + std::to_string(int8) + " of " + std::to_string(total) +
                  " convolution / matrix product kernels run INT8 (integer tensor cores, INT32 accumulation); calibration: " +
                  p.calibration_method + ", " + std::to_string(p.calibration_samples) + " samples (" +
                  cell(p.calibration_source) + "). Activations: one scale per tensor (threshold / 127, symmetric); "
                  "weights: one per output channel (max |w| / 127).\n\n";
  m += "| node | op | kernel | precision | x scale | weight scales | output | why not INT8 |\n|---|---|---|---|---:|---|---|---|\n";
  for (const PrecisionReport::Int8Layer& l : p.int8_layers) {
    const Kernel* k = kernel_of(s, l.name);
    const bool i8 = l.precision == "INT8";
    m += "| " + cell(l.name) + " | " + l.op + " | " + (k ? k->id : "-") + " | " + l.precision + " | " +
         (i8 ? fmt::format("{:.4g}", l.x_scale) : "") + " | " +
         (i8 ? fmt::format("{:.3g} .. {:.3g}", l.w_scale_min, l.w_scale_max) : "") + " | " + (i8 && k ? cell(int8_output_text(*k)) : "") +
         " | " + cell(l.reason) + " |\n";
  }
  return m;
}

// The elide_concat stage's decisions: each Concat kernel, elided or kept, and each input's slice
// offset and, where it cannot be a slice, why.
Json concats_json(const std::vector<ConcatElision>& concats) {
  Json a = Json::array();
  for (const ConcatElision& c : concats) {
    Json inputs = Json::array();
    for (const ConcatElision::Input& in : c.inputs) {
      Json i = {{"value", in.value}, {"offset", in.offset}};
      if (!in.reason.empty()) i["kept_because"] = in.reason;
      inputs.push_back(std::move(i));
    }
    Json j = {{"node", c.name}, {"output", c.output}, {"elided", c.elided}, {"inputs", std::move(inputs)}};
    if (!c.prefix_of.empty()) j["prefix_of"] = c.prefix_of;
    if (!c.reason.empty()) j["kept_because"] = c.reason;
    a.push_back(std::move(j));
  }
  return a;
}

std::string concats_markdown(const std::vector<ConcatElision>& concats) {
  if (concats.empty()) return "";
  const auto elided = std::count_if(concats.begin(), concats.end(), [](const ConcatElision& c) { return c.elided; });
  std::string m = "\n## Concats\n\n" + std::to_string(elided) + " of " + std::to_string(concats.size()) +
                  " Concats elided (their producers write into the output's slices, a prefix of a wider Concat is its first channels; no kernel).\n";
  if (elided == static_cast<std::ptrdiff_t>(concats.size())) return m;
  m += "\n| Concat kept | input | why it cannot be a slice of the output |\n|---|---|---|\n";
  for (const ConcatElision& c : concats) {
    if (!c.reason.empty()) m += "| " + cell(c.name) + " | (all) | " + cell(c.reason) + " |\n";
    for (const ConcatElision::Input& in : c.inputs) {
      if (!in.reason.empty()) m += "| " + cell(c.name) + " | " + cell(in.value) + " | " + cell(in.reason) + " |\n";
    }
  }
  return m;
}

// A fusion stage's outcome per candidate (fuse_attention: a Softmax; fuse_se_gate: a pool): the
// fused kernel and the ONNX nodes it covers, or why the subgraph stays unfused. `candidate` is the
// outcome's field naming the candidate node, `key` its report.json name.
const Kernel* fused_kernel(const Schedule& s, const char* family, const std::string& node) {
  for (const Kernel& k : s.kernels) {
    if (k.family_name() == family && k.op.name == node) return &k;
  }
  return nullptr;
}

template <class Outcome>
Json outcomes_json(const Schedule& s, const std::vector<Outcome>& outcomes, const char* family, const char* key,
                   std::string Outcome::*candidate) {
  Json a = Json::array();
  for (const Outcome& o : outcomes) {
    Json j = {{key, o.*candidate}, {"fused", o.fused}};
    if (o.fused) {
      const Kernel* k = fused_kernel(s, family, o.fused_node);
      j["node"] = o.fused_node;
      j["kernel"] = k ? Json(k->id) : Json();
      j["covers"] = o.covers;
    } else {
      j["reason"] = o.reason;
    }
    a.push_back(std::move(j));
  }
  return a;
}

// report.md's section: `title`, "F of N `what` fused into one kernel each.", a row per candidate.
template <class Outcome>
std::string outcomes_markdown(const Schedule& s, const std::vector<Outcome>& outcomes, const char* family,
                              std::string Outcome::*candidate, const std::string& title, const std::string& what,
                              const std::string& column) {
  if (outcomes.empty()) return "";
  const auto fused = std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.fused; });
  std::string m = "\n## " + title + "\n\n" + std::to_string(fused) + " of " + std::to_string(outcomes.size()) + " " +
                  what + " fused into one kernel each.\n\n| " + column +
                  " | kernel | covers / why not fused |\n|---|---|---|\n";
  for (const Outcome& o : outcomes) {
    const Kernel* k = o.fused ? fused_kernel(s, family, o.fused_node) : nullptr;
    std::string covers;
    for (const std::string& c : o.covers) covers += (covers.empty() ? "" : ", ") + c;
    m += "| " + cell(o.*candidate) + " | " + (k ? k->id : "-") + " | " + cell(o.fused ? covers : "not fused: " + o.reason) +
         " |\n";
  }
  return m;
}

Json stage_kernels_json(const std::vector<StageKernels>& stages) {
  Json a = Json::array();
  for (const StageKernels& k : stages) {
    Json j = {{"name", k.stage}, {"kernels", k.kernels}};
    j["kernels_without"] = k.kernels_without < 0 ? Json() : Json(k.kernels_without);
    if (!k.error.empty()) j["error_without"] = k.error;
    a.push_back(std::move(j));
  }
  return a;
}

std::string stage_kernels_markdown(const std::vector<StageKernels>& stages) {
  if (stages.empty()) return "";
  std::string m =
      "\n## Kernels per stage\n\nEach optional stage that ran, the model compiled again without it "
      "(`--disable-pass NAME`).\n\n| stage | kernels without it | kernels | saved |\n|---|---:|---:|---:|\n";
  for (const StageKernels& k : stages) {
    if (k.kernels_without < 0) {
      m += "| " + k.stage + " | does not compile: " + cell(k.error) + " | " + std::to_string(k.kernels) + " | |\n";
      continue;
    }
    m += "| " + k.stage + " | " + std::to_string(k.kernels_without) + " | " + std::to_string(k.kernels) + " | " +
         std::to_string(k.kernels_without - k.kernels) + " |\n";
  }
  return m;
}

}  // namespace

std::string report_json(const Schedule& s, const ReportInfo& info) {
  Json j;
  j["generator"] = "modelc";
  j["model"] = s.name;
  j["source"] = info.source;
  j["archs"] = s.archs;
  auto tensors = [](const std::vector<ModelTensor>& ts) {
    Json a = Json::array();
    for (const ModelTensor& t : ts) a.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}});
    return a;
  };
  j["inputs"] = tensors(s.inputs);
  j["outputs"] = tensors(s.outputs);
  Json buffers = Json::array();
  for (const LiveBuffer& b : s.arena_buffers) {
    buffers.push_back({{"value", b.name}, {"bytes", b.bytes}, {"first", b.first}, {"last", b.last}, {"offset", b.offset}});
  }
  j["memory"] = {{"arena_bytes", s.arena_bytes},
                 {"arena_max_live_bytes", s.arena_max_live_bytes},
                 {"arena_alignment", s.arena_alignment},
                 {"arena_order", s.arena_order},
                 {"arena_buffers", buffers},
                 {"activation_bytes_total", s.activation_bytes_total},
                 {"weights_bytes", s.weights_bytes},
                 {"weights_count", s.weights.size()},
                 {"weights_file", info.weights_file}};
  j["parts"] = info.parts;
  std::map<std::string, int> families;
  int64_t flops = 0;
  double estimate_us = 0;
  const Target target = estimate_target(s);
  Json kernels = Json::array();
  for (const Kernel& k : s.kernels) {
    Json kj;
    kj["id"] = k.id;
    kj["family"] = k.family_name();
    kj["op"] = k.op.type;
    kj["nodes"] = k.nodes;
    Json in = Json::array(), out = Json::array();
    for (const TensorView& v : k.inputs) in.push_back(view_json(v));
    for (const TensorView& v : k.outputs) out.push_back(view_json(v));
    kj["inputs"] = in;
    kj["outputs"] = out;
    kj["tactic"] = Json::object();
    for (const auto& [key, value] : tactic_fields(k.tactic)) kj["tactic"][key] = value;
    if (!k.tuning_signature.empty()) kj["tuning_signature"] = k.tuning_signature;
    kj["note"] = k.note;
    if (!k.ranges.empty()) {  // horizontally fused (schedule/fuse_horizontal.cpp): output i is range i
      Json ranges = Json::array();
      for (const OutputRange& r : k.ranges) {
        ranges.push_back({{"node", r.op.name}, {"output", r.output}, {"begin", r.begin}, {"end", r.end}});
      }
      kj["ranges"] = std::move(ranges);
    }
    if (is_conv_or_matmul(k)) {
      kj["engine"] = engine_of(k);
      if (s.precision && s.precision->int8) kj["precision"] = kernel_precision(k);  // --int8: INT8 / FP16 / FP32
      kj["fallback_reason"] = fallback_reason_of(k);
      if (!k.arch_tactic.empty()) {
        Json at = Json::object();
        // A tensor-core kernel's variants on another engine (SIMT: BF16 below sm_80; tc::Gemm or the
        // small-M kernel) say so.
        Json engines = Json::object();
        bool other_engine = false;
        for (const auto& [sm, tactic] : k.arch_tactic) {
          Json t = Json::object();
          for (const auto& [key, value] : tactic_fields(tactic)) t[key] = value;
          at["sm_" + std::to_string(sm)] = std::move(t);
          const bool tc_of_small_m = engine_of(k) == "small_m" && std::holds_alternative<TcTile>(tactic);
          const std::string e = std::holds_alternative<TileConfig>(tactic)   ? "simt"
                                : std::holds_alternative<SmallMTile>(tactic) ? "small_m"
                                : tc_of_small_m                              ? "tensor_core"
                                                                             : engine_of(k);
          other_engine = other_engine || e != engine_of(k);
          engines["sm_" + std::to_string(sm)] = e;
        }
        kj["arch_tactic"] = std::move(at);
        if (other_engine && on_tensor_cores(engine_of(k))) kj["arch_engine"] = std::move(engines);
      }
      const std::string epi = k.epilogue;
      if (!epi.empty()) kj["epilogue"] = epi;
    }
    if (k.family_name() == "plugin" && !k.op.empty()) {
      kj["engine"] = "plugin";
      kj["plugin"] = plugin_json(k);
    }
    auto launched = info.launches.find(k.id);
    kj["launches"] = launched == info.launches.end() ? Json::array() : Json(launched->second);
    kj["flops"] = k.flops;
    const Estimate& e = k.estimate;
    kj["estimate"] = estimate_json(e);
    estimate_us += e.us;
    kj["stream"] = k.stream;
    kj["waits"] = k.waits;
    if (k.event >= 0) kj["event"] = k.event;
    flops += k.flops;
    ++families[k.family_name()];
    kernels.push_back(std::move(kj));
  }
  j["flops"] = flops;
  j["estimate_arch"] = fmt::format("sm_{} ({})", target.sm, target.part);
  j["estimate_us"] = rounded(estimate_us, 3);
  {
    int total = 0, tc = 0, gemv = 0;
    Json reasons = Json::object();
    std::map<std::string, int> why;
    for (const Kernel& k : s.kernels) {
      const std::string e = engine_of(k);
      if (e.empty()) continue;
      ++total;
      if (on_tensor_cores(e)) {
        ++tc;
      } else if (e == "gemv") {
        ++gemv;
      } else {
        ++why[fallback_reason_of(k)];
      }
    }
    for (const auto& [r, n] : why) reasons[r] = n;
    j["engines"] = {{"summary", engine_summary(s)},
                    {"convolutions_and_matrix_products", total},
                    {"tensor_core", tc},
                    {"gemv", gemv},
                    {"simt", total - tc - gemv},
                    {"simt_reasons", reasons}};
  }
  j["families"] = Json::object();
  for (const auto& [f, n] : families) j["families"][f] = n;
  j["kernels"] = std::move(kernels);
  j["streams"] = {{"count", s.streams}, {"events", s.events}, {"critical_path_kernels", s.critical_path}};
  Json weights = Json::array();
  for (const WeightEntry& w : s.weights) {
    weights.push_back({{"value", w.value},
                       {"offset", w.offset},
                       {"bytes", w.data.nbytes()},
                       {"dtype", dtype_name(w.data.dtype())},
                       {"shape", w.data.shape()}});
  }
  j["weights"] = std::move(weights);
  if (!s.concats.empty()) j["concats"] = concats_json(s.concats);
  if (!s.attention.empty()) j["attention"] = outcomes_json(s, s.attention, "attention", "softmax", &AttentionOutcome::softmax);
  if (!s.se_gates.empty()) j["se_gates"] = outcomes_json(s, s.se_gates, "se_gate", "pool", &SeGateOutcome::pool);
  if (!s.stage_kernels.empty()) j["passes"] = stage_kernels_json(s.stage_kernels);
  if (s.precision) j["precision"] = precision_json(*s.precision);
  if (s.precision && s.precision->int8) j["precision"]["int8"] = int8_json(s, *s.precision);
  // Names come from the model: bytes that are not UTF-8 become U+FFFD, so the file is valid JSON.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

// The streams stage's result: how many, the events, the critical path; per stream its kernels
// (schedule/streams.h).
std::string streams_markdown(const Schedule& s) {
  std::string m = "\n## Streams\n\n" + std::to_string(s.streams) + (s.streams == 1 ? " stream" : " streams") + ", " +
                  std::to_string(s.events) + " events";
  if (s.critical_path > 0) {
    m += "; the critical path (the longest chain of dependent kernels) is " + std::to_string(s.critical_path) + " of " +
         std::to_string(s.kernels.size()) + " kernels";
  }
  m += ".\n";
  if (s.streams == 1) return m;
  m += "\n| stream | kernels | waits for events before |\n|---:|---|---|\n";
  for (int t = 0; t < s.streams; ++t) {
    std::string ids, waits;
    for (const Kernel& k : s.kernels) {
      if (k.stream != t) continue;
      ids += (ids.empty() ? "" : ", ") + k.id + (k.event >= 0 ? " (event " + std::to_string(k.event) + ")" : "");
      for (int e : k.waits) waits += (waits.empty() ? "" : ", ") + k.id + ": " + std::to_string(e);
    }
    m += "| " + std::to_string(t) + (t == 0 ? " (the caller's)" : "") + " | " + ids + " | " + waits + " |\n";
  }
  return m;
}

// The cost model's estimate of each kernel on the first --arch (schedule/cost_model.h), and the
// total: kernels one after another.
std::string roofline_markdown(const Schedule& s) {
  const Target t = estimate_target(s);
  std::string rows;
  double total = 0;
  for (const Kernel& k : s.kernels) {
    const Estimate& e = k.estimate;
    total += e.us;
    const std::string engine = engine_of(k);
    rows += fmt::format("| {} | {} | {} | {} | {:.2f} | {:.4f} | {:.3f} | {:.2f} | {} |\n", k.id,
                        engine.empty() ? k.family_name() : engine, cell(tile_text(k)), e.blocks, e.waves, e.flops / 1e9,
                        e.bytes / 1e6, e.us, e.bound);
  }
  return fmt::format(
      "\n## Roofline (estimates for sm_{}, {})\n\nThe cost model (schedule/cost_model.h): the estimated total is "
      "{:.2f} us, the kernels one after another.\n\n"
      "| kernel | engine | tile | blocks | waves | GFLOP | MB | us | bound |\n|---|---|---|---:|---:|---:|---:|---:|---|\n{}"
      "| total | | | | | | | {:.2f} | |\n",
      t.sm, t.part, total, rows, total);
}

}  // namespace

std::string report_markdown(const Schedule& s, const ReportInfo& info) {
  std::string archs;
  for (const std::string& a : s.archs) archs += (archs.empty() ? "" : ", ") + a;
  std::string m = "# " + s.name + ": modelc report\n\n";
  m += "Compiled from `" + info.source + "` for " + archs + " (plus PTX of the newest). ";
  m += std::to_string(s.kernels.size()) + " kernels";
  m += info.parts ? " in " + std::to_string(info.parts) + " parts" : std::string();
  m += "; weights " + std::string(info.weights_file ? "read at create from " + s.name + "_weights.bin"
                                                    : "embedded in the binary") + ".\n\n";
  if (!info.graph_svg.empty()) m += graph_link_markdown(info.graph_svg);

  m += "| tensor | name | type |\n|---|---|---|\n";
  for (const ModelTensor& t : s.inputs) m += "| input | " + cell(t.name) + " | " + type_text(t.dtype, t.shape) + " |\n";
  for (const ModelTensor& t : s.outputs) m += "| output | " + cell(t.name) + " | " + type_text(t.dtype, t.shape) + " |\n";

  m += "\n## Memory\n\n| | bytes | |\n|---|---:|---|\n";
  m += "| activation arena | " + grouped(s.arena_bytes) + " | " + human(s.arena_bytes) + " |\n";
  m += "| most live at one kernel (the arena's lower bound) | " + grouped(s.arena_max_live_bytes) + " | " +
       human(s.arena_max_live_bytes) + (s.arena_order.empty() ? "" : "; placed " + s.arena_order) + " |\n";
  m += "| sum of all activations (no reuse) | " + grouped(s.activation_bytes_total) + " | " +
       human(s.activation_bytes_total) + " |\n";
  m += "| weights (" + std::to_string(s.weights.size()) + " tensors, 256-byte aligned) | " + grouped(s.weights_bytes) +
       " | " + human(s.weights_bytes) + " |\n";

  m += "\n## Tensor cores\n\n" + engine_summary(s) + ".\n";
  bool any = false;
  for (const Kernel& k : s.kernels) any = any || is_conv_or_matmul(k);
  if (any) {
    m += "\n| id | op | nodes | engine | why not tensor cores | tactic |\n|---|---|---|---|---|---|\n";
    for (const Kernel& k : s.kernels) {
      if (!is_conv_or_matmul(k)) continue;
      const std::string epi = k.epilogue;
      const std::string op = k.op.type + (epi.empty() ? "" : " (" + epi + ")");
      const std::string e = engine_of(k);
      m += "| " + k.id + " | " + cell(op) + " | " + cell(nodes_text(k)) + " | " +
           (e == "winograd"          ? "Winograd (tensor core)"
            : e == "small_m"         ? "small-M (tensor core)"
            : on_tensor_cores(e)     ? "tensor core"
            : e == "gemv"            ? "GEMV"
            : e == "depthwise_tiled" ? "tiled depthwise (SIMT)"
                                     : "SIMT") +
           " | " + cell(fallback_reason_of(k)) + " | " +
           cell(arch_tactic_text(k, "<br>")) + " |\n";
    }
  }

  std::map<std::string, int> families;
  for (const Kernel& k : s.kernels) ++families[k.family_name()];
  m += "\n## Template families\n\n| family | kernels |\n|---|---:|\n";
  for (const auto& [f, n] : families) m += "| " + f + " | " + std::to_string(n) + " |\n";

  m += "\n## Kernels\n\n| id | family | op | nodes | inputs | outputs | tactic | FLOPs | launches | note |\n";
  m += "|---|---|---|---|---|---|---|---:|---|---|\n";
  for (const Kernel& k : s.kernels) {
    std::string in, out, launched;
    const std::string nodes = nodes_text(k);
    const auto symbols = info.launches.find(k.id);
    if (symbols != info.launches.end()) {
      for (const std::string& l : symbols->second) launched += (launched.empty() ? "" : "<br>") + l;
    }
    for (const TensorView& v : k.inputs) in += (in.empty() ? "" : "<br>") + view_text(v);
    for (const TensorView& v : k.outputs) out += (out.empty() ? "" : "<br>") + view_text(v);
    m += "| " + k.id + " | " + k.family_name() + " | " + k.op.type + " | " + cell(nodes) + " | " +
         cell(in) + " | " + cell(out) + " | " + cell(arch_tactic_text(k, "<br>")) + " | " + grouped(k.flops) + " | " +
         cell(launched) + " | " + cell(k.note) + " |\n";
  }
  m += plugins_markdown(s);
  m += roofline_markdown(s);
  m += streams_markdown(s);
  m += concats_markdown(s.concats);
  m += outcomes_markdown(s, s.attention, "attention", &AttentionOutcome::softmax, "Attention",
                         "attention candidates (a Softmax of a product's scores)", "Softmax");
  m += outcomes_markdown(s, s.se_gates, "se_gate", &SeGateOutcome::pool, "Squeeze-and-excite gates",
                         "squeeze-and-excite candidates (a global average pool and the two FCs after it)", "pool");
  m += stage_kernels_markdown(s.stage_kernels);
  if (s.precision && s.precision->int8) m += int8_markdown(s, *s.precision);
  if (s.precision) m += precision_markdown(*s.precision);
  return m;
}

}  // namespace modelc

// ---- batch profiles ------------------------------------------------------------------------------

namespace modelc {

std::string report_json_profiles(const std::vector<ProfileReport>& profiles) {
  if (profiles.empty()) throw Error("internal: a report of no profiles");
  const Schedule& s = *profiles.back().s;  // the largest batch: the tensors; the weights are shared
  const ReportInfo& info = profiles.back().info;
  Json j;
  j["generator"] = "modelc";
  j["model"] = s.name;
  j["source"] = info.source;
  j["archs"] = s.archs;
  Json batches = Json::array();
  for (const ProfileReport& p : profiles) batches.push_back(p.s->batch);
  j["batch_profiles"] = std::move(batches);
  auto tensors = [](const std::vector<ModelTensor>& ts) {
    Json a = Json::array();
    for (const ModelTensor& t : ts) {
      a.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"batched", t.batched}});
    }
    return a;
  };
  j["inputs"] = tensors(s.inputs);
  j["outputs"] = tensors(s.outputs);
  int64_t arena = 0;
  for (const ProfileReport& p : profiles) arena = std::max(arena, p.s->arena_bytes);
  j["memory"] = {{"arena_bytes", arena},
                 {"weights_bytes", s.weights_bytes},
                 {"weights_count", s.weights.size()},
                 {"weights_file", info.weights_file}};
  Json sources = Json::array({s.name});
  int parts = 0;
  for (const ProfileReport& p : profiles) {
    for (const std::string& f : p.sources) {
      sources.push_back(f);
      ++parts;
    }
  }
  j["parts"] = parts;
  j["sources"] = std::move(sources);
  Json weights = Json::array();
  for (const WeightEntry& w : s.weights) {
    weights.push_back({{"value", w.value},
                       {"offset", w.offset},
                       {"bytes", w.data.nbytes()},
                       {"dtype", dtype_name(w.data.dtype())},
                       {"shape", w.data.shape()}});
  }
  j["weights"] = std::move(weights);
  Json list = Json::array();
  for (const ProfileReport& p : profiles) {
    // The profile's own report, less what the model's fields above say.
    const Json own = Json::parse(report_json(*p.s, p.info));
    Json pj;
    pj["batch"] = p.s->batch;
    pj["sources"] = p.sources;
    for (const auto& [key, value] : own.items()) {
      if (key == "generator" || key == "model" || key == "source" || key == "archs" || key == "weights" ||
          key == "parts") {
        continue;
      }
      pj[key] = value;
    }
    list.push_back(std::move(pj));
  }
  j["profiles"] = std::move(list);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string report_markdown_profiles(const std::vector<ProfileReport>& profiles) {
  if (profiles.empty()) throw Error("internal: a report of no profiles");
  const Schedule& s = *profiles.back().s;
  const ReportInfo& info = profiles.back().info;
  std::string archs, batches;
  for (const std::string& a : s.archs) archs += (archs.empty() ? "" : ", ") + a;
  for (const ProfileReport& p : profiles) batches += (batches.empty() ? "" : ", ") + std::to_string(p.s->batch);
  const Target t = estimate_target(s);
  std::string m = "# " + s.name + ": modelc report\n\n";
  m += "Compiled from `" + info.source + "` for " + archs + " (plus PTX of the newest) with batch profiles " + batches +
       ": each a schedule of its own, its kernels specialised to its batch; a run of b items runs on the "
       "smallest profile whose batch is at least b, the inputs padded with zeros and the outputs trimmed along "
       "their first dim. Weights " + grouped(s.weights_bytes) + " bytes (" + human(s.weights_bytes) + ") in " +
       std::to_string(s.weights.size()) + " tensors, shared by the profiles; " +
       (info.weights_file ? "read at create from " + s.name + "_weights.bin" : "embedded in the binary") + ".\n\n";
  m += fmt::format("| batch | kernels | files | activation arena | estimate (sm_{}) |\n|---:|---:|---|---:|---:|\n", t.sm);
  int64_t arena = 0;
  for (const ProfileReport& p : profiles) {
    double us = 0;
    for (const Kernel& k : p.s->kernels) us += k.estimate.us;
    std::string files;
    for (const std::string& f : p.sources) files += (files.empty() ? "" : ", ") + f + ".cu";
    m += fmt::format("| {} | {} | {} | {} | {:.2f} us |\n", p.s->batch, p.s->kernels.size(), files,
                     grouped(p.s->arena_bytes), us);
    arena = std::max(arena, p.s->arena_bytes);
  }
  m += "\nThe context's activation arena is the largest profile's: " + grouped(arena) + " bytes (" + human(arena) +
       ").\n\n";
  m += "| tensor | name | type at batch " + std::to_string(s.batch) + " | batched |\n|---|---|---|---|\n";
  for (const ModelTensor& x : s.inputs) {
    m += "| input | " + cell(x.name) + " | " + type_text(x.dtype, x.shape) + " | " + (x.batched ? "yes" : "no") + " |\n";
  }
  for (const ModelTensor& x : s.outputs) {
    m += "| output | " + cell(x.name) + " | " + type_text(x.dtype, x.shape) + " | " + (x.batched ? "yes" : "no") + " |\n";
  }
  for (const ProfileReport& p : profiles) {
    // The profile's own report less its title and first paragraph (what the lines above say).
    std::string own = report_markdown(*p.s, p.info);
    const std::size_t table = own.find("\n| tensor |");
    if (table != std::string::npos) own = own.substr(table + 1);
    m += "\n# Batch profile " + std::to_string(p.s->batch) + "\n\n" + std::to_string(p.s->kernels.size()) +
         " kernels" + (p.info.parts ? " in " + std::to_string(p.info.parts) + " parts" : std::string()) + ".\n\n" + own;
  }
  return m;
}

}  // namespace modelc
