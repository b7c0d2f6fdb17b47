// compiler/pipeline/pipeline.cpp — the order of the stages, readable top to bottom.
#include "pipeline/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "passes/fuse_attention.h"
#include "passes/fuse_se_gate.h"
#include "schedule/target.h"
#include "support/error.h"

namespace modelc {

namespace {

// A graph pass as a stage's run function.
template <bool (*Pass)(Graph&, const PassOptions&)>
bool graph_pass(Compilation& c) {
  return Pass(c.graph, c.options.passes);
}

// A schedule stage: a function of the Schedule (the first one starts it from the graph).
template <bool (*Fn)(Schedule&, const LowerOptions&)>
bool schedule_stage(Compilation& c) {
  if (!c.schedule) c.schedule = std::make_unique<Schedule>(begin_schedule(c.graph, c.options));
  return Fn(*c.schedule, c.options);
}

bool with_half(const LowerOptions& o) { return o.passes.half_type() != DType::undefined; }
bool with_fuse_epilogue(const LowerOptions& o) { return o.passes.fuse_epilogue; }

// fuse_attention for the oldest --arch, its outcomes into PassOptions::attention_report (cleared
// first: a stage may run again on a copy of the graph).
bool fuse_attention_stage(Compilation& c) {
  PassOptions o = c.options.passes;
  for (const std::string& a : c.options.archs) {
    const int sm = arch_number(a);
    o.min_sm = o.min_sm == 0 ? sm : std::min(o.min_sm, sm);
  }
  std::vector<AttentionOutcome>* r = o.attention_report;
  if (r) r->clear();
  return fuse_attention(c.graph, o, r);
}

// fuse_se_gate, its outcomes into PassOptions::se_gate_report (cleared first, as above).
bool fuse_se_gate_stage(Compilation& c) {
  std::vector<SeGateOutcome>* r = c.options.passes.se_gate_report;
  if (r) r->clear();
  return fuse_se_gate(c.graph, c.options.passes, r);
}

}  // namespace

const std::vector<Stage>& pipeline() {
  using K = StageKind;
  static const std::vector<Stage> stages = {
      // ---- graph passes (compiler/passes/) -------------------------------------------------------
      {"simplify", K::graph, "shapes inferred (frontend: ops::infer_graph)",
       "removes nodes that compute nothing at inference: Identity, Dropout, a Cast to its own type, a Concat of one", true, nullptr,
       graph_pass<simplify>},
      {"quantize_explicit", K::graph,
       "shapes inferred; before fold_constants (the DequantizeLinear nodes of constant weights still there)",
       "a Q/DQ model's DequantizeLinear -> Conv / Gemm / MatMul, and QLinearConv / ConvInteger / QLinearMatMul / "
       "MatMulInteger with constant weights, become INT8 tensor-core products with the model's scales "
       "(modelc.QConv / QMatMul; passes/quantize_explicit.cpp)",
       true, nullptr, graph_pass<quantize_explicit>},
      {"fold_constants", K::graph, "constants propagated (ops::infer_graph)",
       "replaces nodes whose outputs are all constant (shape subgraphs, Constant) by those constants", true,
       nullptr, graph_pass<fold_constants>},
      {"fold_pads", K::graph, "constant pads and fill (fold_constants)",
       "a Pad of all zeros disappears; a zero Pad of the spatial dims folds into the Conv / AveragePool reading it",
       true, nullptr, graph_pass<fold_pads>},
      {"fold_batchnorm", K::graph, "constant weights (fold_constants)",
       "folds BatchNormalization and constant per-channel scales into the Conv / Gemm / MatMul before it (a "
       "MatMul's also through its bias Add and a Transpose: a ConvNeXt layer scale)", true, nullptr,
       graph_pass<fold_batchnorm>},
      {"split_recurrence", K::graph, "constant weights final (fold_batchnorm); before precision (the product takes FP16)",
       "the input projection of LSTM / GRU / RNN (X * W^T for every step) becomes one MatMul before the recurrence",
       true, nullptr, graph_pass<split_recurrence>},
      {"precision", K::graph, "weights final (fold_batchnorm), so each is converted to FP16 (BF16) once",
       "--fp16 / --bf16: FP16 (BF16) storage where it is safe, Casts at the FP32 boundaries, the FP32-pinned nodes; "
       "--int8: calibrated convolutions and matrix products on INT8 first (passes/precision_int8.cpp)",
       true, with_half, graph_pass<precision>},
      {"fuse_attention", K::graph,
       "the 16-bit types in place (precision: Q, K and V FP16 / BF16, a pinned node behind its Casts); masks and "
       "scales constant (fold_constants); before sink_reshapes and fuse_epilogue (they would move or take the "
       "scores' Adds)",
       "--fp16 / --bf16: each attention (MatMul, scale, bias / mask, Softmax, MatMul and the views around them) "
       "becomes one modelc.Attention kernel reading Q, K and V where the projections wrote them "
       "(passes/fuse_attention.cpp); the report says why a candidate stays unfused (FP32 compiles keep the "
       "unfused subgraph: the kernel takes 16-bit operands)",
       true, with_half, fuse_attention_stage},
      {"fold_cast_pairs", K::graph, "the precision Casts in place (precision)",
       "a Cast pair from FP16 (BF16) around an op that computes in FP32 on 16-bit storage (fp32_compute) folds into it",
       true, nullptr, graph_pass<fold_cast_pairs>},
      {"sink_reshapes", K::graph, "the precision Casts in place (a Cast between a product and its reader stays)",
       "an elementwise binary op reading a Conv / Gemm / MatMul through a reshape (or a Transpose of unit dims) "
       "moves before it, so fuse_epilogue takes it; a residual Add after a product's NHWC -> NCHW Transpose too "
       "(its other operand transposed back); a Transpose of a Transpose composes (an Identity when they cancel)",
       true, nullptr, graph_pass<sink_reshapes>},
      {"fuse_epilogue", K::graph,
       "BN and scales folded (fold_batchnorm); the precision Casts in place (a Cast stops a fusion)",
       "bias, activation and residual add into the producing Conv / Gemm / MatMul (modelc.Fused*)", true,
       with_fuse_epilogue, graph_pass<fuse_epilogue>},
      {"fuse_se_gate", K::graph,
       "the epilogues fused (fuse_epilogue: each FC carries its activation, the gate its Sigmoid / HardSigmoid); "
       "before fuse_elementwise",
       "the gate of each squeeze-and-excite block (GlobalAveragePool or ReduceMean over H, W, FC, activation, FC, "
       "sigmoid / hard-sigmoid) becomes one modelc.SEGate kernel writing the [N, C, 1, 1] gate "
       "(passes/fuse_se_gate.cpp); the report says why a candidate stays unfused",
       true, with_fuse_epilogue, fuse_se_gate_stage},
      {"fold_scale", K::graph, "the epilogues fused (fuse_epilogue: a MatMul made a FusedMatMul takes no bias after)",
       "a constant scalar Mul / Div read only by matrix products' operands becomes their alpha", true, nullptr,
       graph_pass<fold_scale>},
      {"fuse_elementwise", K::graph,
       "the epilogues fused (fuse_epilogue, fold_scale): a producer's activation is its epilogue, not a chain",
       "an elementwise head (BatchNormalization, Add, Sub, Mul, Div) and the activation after it become one "
       "node (modelc.FusedBatchNormalization etc.): one elementwise kernel",
       true, nullptr, graph_pass<fuse_elementwise>},
      {"fold_quantize", K::graph,
       "the epilogues fused (fuse_epilogue): a product's activation and residual are in it before its output is "
       "quantized",
       "a QuantizeLinear after an INT8 product (or a MaxPool) moves into it: INT8 activations between INT8 kernels "
       "(passes/fold_quantize.cpp)",
       true, nullptr, graph_pass<fold_quantize>},
      // ---- schedule stages (compiler/schedule/, schedule/stages.h) -----------------------------------
      {"remove_dead", K::schedule, "the graph final (the graph passes)",
       "removes the nodes whose results no output needs, through chains of them", true, nullptr,
       schedule_stage<remove_dead>},
      {"find_views", K::schedule, "dead nodes gone (remove_dead), so an unused view output is not refused",
       "view ops (Reshape, Flatten, Squeeze, ...) alias their input: each view a step in its root's buffer", false,
       nullptr, schedule_stage<find_views>},
      {"claim_outputs", K::schedule, "each value's root buffer (find_views)",
       "each graph output owns its buffer; the others get a copy kernel (an Identity node)", false, nullptr,
       schedule_stage<claim_outputs>},
      {"list_kernels", K::schedule, "views and output copies known (claim_outputs)",
       "the Schedule's kernels: the nodes that run one, in order, each with its family (schedule/families.h) and "
       "its views of the buffers it touches",
       false, nullptr, schedule_stage<list_kernels>},
      {"layout", K::schedule, "the kernel list and families (list_kernels); buffers not yet sized",
       "channels-last buffers and conversions, OHWI weights, channel padding (--layout)", false, nullptr,
       schedule_stage<plan_layout>},
      {"fold_boundary_casts", K::schedule, "the layout (a channels-last or converted value keeps its Cast)",
       "--fp16 / --bf16: Casts at the model's boundary fold into the converting kernels beside them", true, with_half,
       schedule_stage<fold_boundary_casts>},
      {"elide_concat", K::schedule,
       "each buffer's layout (layout) and the final writers (fold_boundary_casts); before the arena is planned",
       "a Concat whose inputs can all be slices of its output runs no kernel: their producers write there "
       "(schedule/elide_concat.cpp)",
       true, nullptr, schedule_stage<elide_concat>},
      {"fold_operand_views", K::schedule,
       "the final kernel list and each buffer's layout (fold_boundary_casts): views of dense buffers, and "
       "Transposes that read a buffer in the order its output is stored",
       "a Transpose that is its input's memory as the layout stores both (a channels-last move) becomes a view for "
       "every reader; Transposes and Slices read only by matrix products become strides of their operands; a "
       "product writes through the Transpose after it",
       true, nullptr, schedule_stage<fold_operand_views>},
      {"fold_row_maps", K::schedule,
       "the strided views and elided Concats decided (fold_operand_views, elide_concat); before fuse_horizontal "
       "(a product with a table is fused with no sibling) and the arena",
       "Pad / Slice / Concat / Transpose chains that move whole rows between a value and a FP16 / BF16 matrix "
       "product's A (or from its Y to a value) run no kernels: the product reads (writes) those rows through an "
       "int32 table computed by evaluating the chain, and takes the residual Add after a scattered Y "
       "(schedule/row_maps.cpp)",
       true, nullptr, schedule_stage<fold_row_maps>},
      {"fuse_horizontal", K::schedule,
       "each output's layout and Concat slice (layout, elide_concat), the epilogues fused (fuse_epilogue) and the "
       "weights in their final type (precision); before the arena is planned",
       "sibling convolutions reading one input with one geometry (sibling MatMuls / Gemms reading one A with "
       "constant B's of one K) run as one kernel on their concatenated weights, each writing its output channel "
       "(column) range where it was planned (schedule/fuse_horizontal.cpp)",
       true, nullptr, schedule_stage<fuse_horizontal>},
      {"fuse_prologue", K::schedule,
       "the final readers' views and layouts (layout, elide_concat, fuse_horizontal); before streams and the arena",
       "a BatchNormalization (+ ReLU) or squeeze-and-excite Mul by an [N, C, 1, 1] gate read only by 1x1 FP16 / "
       "BF16 channels-last convolutions or by pools runs no kernel: they apply it as they load X (an operand "
       "prologue; schedule/fuse_prologue.cpp)",
       true, nullptr, schedule_stage<fuse_prologue>},
      {"fuse_row_norm", K::schedule,
       "the final kernel list but for it and each product's epilogue (fuse_epilogue: the residual add); before "
       "streams and the arena",
       "a LayerNormalization over the last dim of a MatMul / Gemm's output runs in the product's launch: the last "
       "block of each row panel normalizes its rows (templates/residual_norm.cuh PanelNorm; "
       "schedule/fuse_row_norm.cpp)",
       true, nullptr, schedule_stage<fuse_row_norm>},
      {"streams", K::schedule,
       "the final kernel list and each value's buffer (elide_concat, fold_operand_views, fuse_horizontal); "
       "before the arena is planned",
       "each kernel's stream from the kernel DAG, events where an edge crosses streams (--streams N; "
       "schedule/streams.h)",
       true, nullptr, schedule_stage<plan_streams>, true},
      {"fold_gemm_batch", K::schedule, "each kernel's final views (fuse_horizontal: a range's strides)",
       "a matrix product's batch dims that B broadcasts over and A and Y continue become rows (M) of one product",
       true, nullptr, schedule_stage<fold_gemm_batch>, true},
      {"plan_kernels", K::schedule, "each kernel's final views and family (fold_gemm_batch)",
       "each kernel's plan from its node and views, once (geometry, epilogue, operator parameters: "
       "schedule/plan.h); from here on nothing reads the graph for a kernel but the stages",
       false, nullptr, schedule_stage<plan_kernels>, true},
      {"tactics", K::schedule,
       "each kernel's views (strides, and alignment: offsets in their 256-byte aligned buffers) and the --arch "
       "targets; before anything is placed",
       "each kernel's tactic per --arch by the cost model, engine, estimate and note (schedule/tactics.h); its "
       "workspace buffer, and the weights its tactic transforms (Winograd's U)",
       false, nullptr, schedule_stage<choose_kernel_tactics>, true},
      {"memory_plan", K::schedule,
       "every arena buffer decided: the final kernel list and views, each kernel's stream (streams) and "
       "workspace (tactics)",
       "arena offsets by liveness over the kernel order for every activation and workspace, once; a buffer live "
       "until every later kernel is ordered after its accesses (streams; schedule/memory_plan.h)",
       false, nullptr, schedule_stage<plan_arena>, true},
      {"place_weights", K::schedule,
       "every weight in its final form: the OHWI copies (layout) and the transformed weights (tactics)",
       "the weights blob: each weight a kernel reads, once, identical data once", false, nullptr,
       schedule_stage<place_weights>, true},
  };
  return stages;
}

namespace {

const Stage* find_stage(const std::string& name) {
  for (const Stage& s : pipeline()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string stage_names(bool optional_only) {
  std::string r;
  for (const Stage& s : pipeline()) {
    if (optional_only && !s.optional) continue;
    r += (r.empty() ? "" : ", ") + std::string(s.name);
  }
  return r;
}

// Runs a stage (a schedule stage is recorded in Schedule::ran).
bool run_only(const Stage& s, Compilation& c) {
  const bool changed = s.run(c);
  if (s.kind == StageKind::schedule && c.schedule) c.schedule->ran.insert(s.name);
  return changed;
}

// Runs a stage, then verifies and prints what the flags ask for.
bool run_and_check(const Stage& s, Compilation& c) {
  const PassOptions& o = c.options.passes;
  const bool changed = run_only(s, c);
  if (o.verify_each) {
    try {
      c.graph.verify();
      if (c.schedule) verify_schedule(*c.schedule);
    } catch (const Error& e) {
      throw Error(std::string("after stage ") + s.name + ": " + e.what());
    }
  }
  if (o.print_after.count(s.name) || o.print_after.count("all")) {
    std::ostream& os = o.log ? *o.log : std::cerr;
    os << "// after " << s.name << (changed ? "" : " (unchanged)") << "\n" << c.graph.to_string();
    if (c.schedule) os << print_schedule(*c.schedule);
  }
  return changed;
}

// Whether a stage runs for these options: not disabled, for them (runs_for), and a graph stage only
// when the graph stages run at all.
bool runs(const Stage& s, const LowerOptions& o) {
  if (s.kind == StageKind::graph && !o.run_passes) return false;
  return !o.passes.disabled.count(s.name) && (!s.runs_for || s.runs_for(o));
}

// A stage of the pipeline: skipped when it does not run for these options.
bool run_stage(const Stage& s, Compilation& c) { return runs(s, c.options) && run_and_check(s, c); }

// One past the last stage that may change the kernel count: where a count of the kernels stops.
std::size_t kernel_count_final() {
  const std::vector<Stage>& stages = pipeline();
  std::size_t end = stages.size();
  while (end > 0 && stages[end - 1].keeps_kernel_count) --end;
  return end;
}

// The kernels of the compile without pipeline()[skip]: g is the graph as the stages before `from`
// left it (it is changed); the stages from `from` on, but `skip` (disabled), run up to the last one
// that may change the kernel count (the later ones place and tune the kernels). No verifier, nothing
// printed.
StageKernels count_without(Graph& g, const LowerOptions& o, std::size_t from, std::size_t skip) {
  const std::vector<Stage>& stages = pipeline();
  LowerOptions without = o;
  without.count_stage_kernels = false;
  without.passes.disabled.insert(stages[skip].name);
  without.passes.print_after.clear();
  without.passes.verify_each = false;
  without.passes.precision_report = nullptr;
  without.passes.attention_report = nullptr;
  without.passes.se_gate_report = nullptr;
  StageKernels k;
  k.stage = stages[skip].name;
  Compilation c{g, without, nullptr};
  try {
    for (std::size_t i = from; i < kernel_count_final(); ++i) {
      if (runs(stages[i], without)) run_only(stages[i], c);
    }
    if (!c.schedule || !c.schedule->ran.count("list_kernels")) {
      throw Error("internal: the stages that list the kernels did not run");
    }
    k.kernels_without = static_cast<int64_t>(c.schedule->kernels.size());
  } catch (const Error& e) {
    k.error = e.what();
  }
  return k;
}

}  // namespace

void check_stage_flags(const PassOptions& o) {
  for (const std::string& d : o.disabled) {
    const Stage* s = find_stage(d);
    if (!s) throw Error("--disable-pass: no stage named '" + d + "'", "stages that can be disabled: " + stage_names(true));
    if (!s->optional) {
      throw Error("--disable-pass: stage '" + d + "' is needed to build a program",
                  "stages that can be disabled: " + stage_names(true));
    }
  }
  for (const std::string& p : o.print_after) {
    if (p != "all" && !find_stage(p)) {
      throw Error("--print-after: no stage named '" + p + "'", "stages: " + stage_names(false) + " (or 'all')");
    }
  }
}

Schedule lower(Graph& g, const LowerOptions& o) {
  check_stage_flags(o.passes);
  // The precision pass's report goes into the Schedule (for the report), and to the caller's too.
  PrecisionReport precision;
  std::vector<AttentionOutcome> attention;
  std::vector<SeGateOutcome> se_gates;
  LowerOptions options = o;
  if (!options.passes.precision_report) options.passes.precision_report = &precision;
  if (!options.passes.attention_report) options.passes.attention_report = &attention;
  if (!options.passes.se_gate_report) options.passes.se_gate_report = &se_gates;
  Compilation c{g, options, nullptr};
  const std::vector<Stage>& stages = pipeline();
  // count_stage_kernels: the graph as the graph stages left it (the counts without a schedule stage
  // start there), the index of the first schedule stage, and per counted stage whether it changed
  // nothing (then the compile without it is this one, kernel for kernel).
  std::unique_ptr<Graph> graph_done;
  std::size_t first_schedule = 0;
  std::vector<StageKernels> counts;
  std::vector<bool> unchanged;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const Stage& s = stages[i];
    if (!runs(s, options)) continue;
    const bool count = o.count_stage_kernels && s.optional;
    if (o.count_stage_kernels && s.kind == StageKind::schedule && !graph_done) {
      graph_done = g.clone();
      first_schedule = i;
    }
    std::unique_ptr<Graph> before = count && s.kind == StageKind::graph ? g.clone() : nullptr;
    const int64_t kernels_before = c.schedule ? static_cast<int64_t>(c.schedule->kernels.size()) : -1;
    const bool changed = run_and_check(s, c);
    if (s.keeps_kernel_count && c.schedule && static_cast<int64_t>(c.schedule->kernels.size()) != kernels_before) {
      throw Error(std::string("internal: stage ") + s.name + " changed the kernel count (Stage::keeps_kernel_count)");
    }
    if (!count) continue;
    // After the last stage that may change the kernel count, a stage saves no kernel.
    unchanged.push_back(!changed || i >= kernel_count_final());
    if (unchanged.back()) {
      counts.emplace_back();
      counts.back().stage = s.name;
    } else if (before) {
      counts.push_back(count_without(*before, o, i + 1, i));
    } else {
      counts.push_back(count_without(*graph_done->clone(), o, first_schedule, i));
    }
  }
  if (!c.schedule) throw Error("internal: no schedule stage ran");
  Schedule r = std::move(*c.schedule);
  for (std::size_t k = 0; k < counts.size(); ++k) {
    counts[k].kernels = static_cast<int64_t>(r.kernels.size());
    if (unchanged[k]) counts[k].kernels_without = counts[k].kernels;
  }
  r.stage_kernels = std::move(counts);
  r.attention = *options.passes.attention_report;  // empty where the stage did not run
  r.se_gates = *options.passes.se_gate_report;
  if (o.run_passes && with_half(o) && !o.passes.disabled.count("precision")) r.precision = *options.passes.precision_report;
  return r;
}

void run_graph_stages(Graph& g, const PassOptions& o) {
  check_stage_flags(o);
  LowerOptions options;
  options.passes = o;
  Compilation c{g, options, nullptr};
  for (const Stage& s : pipeline()) {
    if (s.kind == StageKind::graph) run_stage(s, c);
  }
}

bool run_graph_stage(Graph& g, const PassOptions& o, const std::string& name) {
  const Stage* s = find_stage(name);
  if (!s || s->kind != StageKind::graph) throw Error("internal: no graph stage named '" + name + "'");
  LowerOptions options;
  options.passes = o;
  Compilation c{g, options, nullptr};
  if (o.disabled.count(name)) return false;
  return run_and_check(*s, c);
}

Schedule lower_before(Graph& g, const LowerOptions& o, const std::string& stage) {
  const Stage* target = find_stage(stage);
  if (!target || target->kind != StageKind::schedule) throw Error("internal: no schedule stage named '" + stage + "'");
  check_stage_flags(o.passes);
  PrecisionReport precision;
  std::vector<AttentionOutcome> attention;
  std::vector<SeGateOutcome> se_gates;
  LowerOptions options = o;
  if (!options.passes.precision_report) options.passes.precision_report = &precision;
  if (!options.passes.attention_report) options.passes.attention_report = &attention;
  if (!options.passes.se_gate_report) options.passes.se_gate_report = &se_gates;
  Compilation c{g, options, nullptr};
  for (const Stage& s : pipeline()) {
    if (&s == target) break;
    run_stage(s, c);
  }
  if (!c.schedule) c.schedule = std::make_unique<Schedule>(begin_schedule(g, options));
  return std::move(*c.schedule);
}

bool run_schedule_stage(Schedule& s, const LowerOptions& o, const std::string& name) {
  const Stage* stage = find_stage(name);
  if (!stage || stage->kind != StageKind::schedule) throw Error("internal: no schedule stage named '" + name + "'");
  if (!s.graph) throw Error("internal: a schedule without its graph");
  Compilation c{*s.graph, o, std::make_unique<Schedule>(std::move(s))};
  bool changed = false;
  try {
    changed = run_and_check(*stage, c);
  } catch (...) {
    s = std::move(*c.schedule);
    throw;
  }
  s = std::move(*c.schedule);
  return changed;
}

std::string describe_pipeline() {
  std::string r =
      "The stages of a compile, in order (compiler/pipeline/pipeline.cpp). --disable-pass NAME skips an\n"
      "optional one; --print-after NAME (or all) prints the graph, and from the schedule stages on the\n"
      "schedule so far (its kernels, buffers and decisions), after it; --verify-each checks both after\n"
      "every stage.\n\n";
  int i = 0;
  for (const Stage& s : pipeline()) {
    r += fmt::format("{:2} {} ({}{})\n     {}\n     needs: {}\n", ++i, s.name,
                     s.kind == StageKind::graph ? "graph" : "schedule", s.optional ? ", optional" : "", s.does,
                     s.needs);
  }
  return r;
}

}  // namespace modelc
