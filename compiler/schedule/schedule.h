// compiler/schedule/schedule.h — the Schedule: the IR of the schedule stages, and what codegen prints.
//
// From list_kernels on (compiler/pipeline/pipeline.cpp orders the stages; schedule/stages.h
// declares them), the Schedule is the program being decided: an ordered list of kernels, each
// naming its template family and holding views (TensorView) of buffers, and the buffers
// themselves (Buffer: a model input or output, an arena buffer, a weight, a workspace). Every
// decision a stage makes is a field of a kernel or a buffer: a buffer's layout and the values that
// are views or Concat slices of it, a kernel's folded Casts, operand views, fused ranges, stream,
// tactic and workspace; the memory plan and the weights blob place the buffers last. Reshape,
// Flatten, Squeeze, Unsqueeze and Identity are views (no kernel). Codegen (codegen/) turns a
// finished Schedule into files; it reads the kernels, their placed views and the weights, never a
// stage-side field (those marked so below: they point into the Graph the stages lower).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_se_gate.h"
#include "passes/pass.h"
#include "schedule/memory_plan.h"
#include "schedule/plan.h"
#include "schedule/tactic.h"

namespace modelc {

struct FamilyFacts;  // schedule/families.h

/// Where a tensor's bytes live in the generated program.
enum class Space {
  input,    ///< a model input: the caller's device pointer (index = graph input index)
  output,   ///< a model output: the caller's device pointer (index = graph output index)
  arena,    ///< the activation arena (offset in bytes)
  weights,  ///< the weights blob uploaded at create (offset in bytes)
};
const char* space_name(Space s);

/// Alignment of every buffer in the arena and the weights blob (the caller's buffers, from
/// cudaMalloc, are at least as aligned): a view's alignment up to this is its offset in its buffer.
constexpr int64_t kBufferAlignment = 256;

/// \brief How a buffer is stored (the layout stage, schedule/layout.h): channels-last with channel
/// pitch `pitch` (>= C), or dense.
struct Storage {
  bool channels_last = false;
  int64_t pitch = 0;  ///< Cp; 0 when dense
};

/// \brief How a channels-last kernel's weight [M, Cg, K...] is stored: OHWI rows of `row` elements,
/// one per output channel, tap t's Cg channels at t * pitch .. t * pitch + Cg - 1, the rest zero.
/// Padded: row = taps * pitch (pitch >= Cg); compact: pitch = Cg, row = round_up(taps * Cg, 8).
struct WeightStorage {
  int64_t pitch = 0;
  int64_t row = 0;
  bool compact = false;  ///< the compact form: a tensor-core convolution's K is taps * Cg
  bool operator==(const WeightStorage& o) const { return pitch == o.pitch && row == o.row && compact == o.compact; }
  bool operator!=(const WeightStorage& o) const { return !(*this == o); }
};

/// \brief A strided window on a buffer: what a kernel reads or writes.
struct TensorView {
  std::string value;              ///< the IR value it holds (comments, report)
  DType dtype = DType::float32;
  Shape shape;
  std::vector<int64_t> strides;   ///< in elements, one per dim (C order when dense)
  Space space = Space::arena;
  int index = 0;                  ///< graph input/output index (Space::input / output)
  /// Bytes from the start of the arena / weights blob once its buffer is placed (memory_plan,
  /// place_weights; -1 before); for a model input or output, buffer_offset.
  int64_t offset = 0;
  int buffer = -1;                ///< Schedule::buffers index (-1: no buffer, e.g. an absent input)
  /// Bytes from the start of its buffer. Every buffer starts kBufferAlignment-aligned, so this is
  /// the view's alignment before the buffers are placed (what the tactic rules read: aligned()).
  int64_t buffer_offset = 0;

  int64_t numel() const { return num_elements(shape); }
  int64_t nbytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype)); }
  bool dense() const;             ///< C-order contiguous
  /// True when the view's first byte is `bytes`-aligned (a power of two up to kBufferAlignment).
  bool aligned(int64_t bytes) const { return buffer_offset % bytes == 0; }
  /// Same buffer, new shape (only for dense views).
  TensorView reshaped(const Shape& s) const;
};

/// \brief How a value that is not its buffer's own is addressed in it: one step from the value
/// before it in its chain (which ends at the buffer's value). Stage-side.
struct ViewStep {
  enum class Kind {
    reshape,        ///< a view op (Reshape, Flatten, Squeeze, Unsqueeze, Identity, ...; find_views)
    transpose,      ///< a Transpose read as strides (fold_operand_views)
    slice,          ///< a Slice read as strides and an offset (fold_operand_views)
    write_through,  ///< a product's output written through the inverse of the Transpose after it:
                    ///< `from` is the Transpose's output (fold_operand_views)
    concat_slice,   ///< an elided Concat's input: its slice of the Concat's output (elide_concat)
    row_gather,     ///< a matrix product's A whose rows are rows of `from` through a table (the
                    ///< Pad / Slice / Concat / Transpose chain it replaces; fold_row_maps)
    row_scatter,    ///< a matrix product's Y written row by row into `from` through a table
                    ///< (the chain after it; fold_row_maps)
  };
  Kind kind = Kind::reshape;
  const Value* value = nullptr;  ///< the value it addresses
  const Value* from = nullptr;   ///< the value before it in the chain
  const Node* node = nullptr;    ///< the view op, Transpose, Slice or elided Concat
  int axis = 0;                  ///< concat_slice: the Concat's axis
  int64_t start = 0;             ///< concat_slice: where the slice starts along it (elements)
  /// row_gather, row_scatter: the value's own dense strides (rows of its last dim, which is
  /// `from`'s); the table (Kernel::row_maps) says where each row is in `from`'s buffer.
};
const char* view_step_name(ViewStep::Kind k);

/// \brief One buffer of the program: a model input or output (the caller's memory), an arena buffer
/// (an activation, or a kernel's workspace), or a weight in the blob. Kernels' views name it by
/// index (TensorView::buffer). Created by the stages that find the values the kernels touch
/// (find_views, claim_outputs, list_kernels, layout, fuse_horizontal) and the tactics (workspaces,
/// transformed weights); placed last (memory_plan, place_weights).
struct Buffer {
  std::string name;               ///< the value it holds (a workspace: "k7 workspace")
  const Value* value = nullptr;   ///< stage-side: that graph value (null: a workspace or transformed weight)
  DType dtype = DType::undefined;
  Shape shape;                    ///< its value's logical shape
  Space space = Space::arena;
  int index = 0;                  ///< graph input/output index (Space::input / output)
  Storage storage;                ///< layout: channels-last with a pitch, or dense
  /// layout: a channels-last convolution's weight, stored OHWI this way (Space::weights).
  std::optional<WeightStorage> ohwi;
  /// The values that are views or slices of it (find_views, fold_operand_views, elide_concat).
  std::vector<ViewStep> views;
  /// claim_outputs: the Identity node added to copy into this model output (its value is the copy's).
  const Node* copy = nullptr;
  /// A weight computed by a stage (Winograd's U, tactics): its bytes; undefined for a constant of
  /// the graph, stored as its value's data (OHWI where `ohwi`).
  Tensor data;
  int kernel = -1;                ///< a workspace: the index of the kernel whose scratch it is
  /// The kernels' zeroed scratch (Kernel::zeroed, one buffer for all): live through the whole run.
  bool zeroed = false;
  /// Its size in bytes: storage elements x dtype size (layout-padded pixels included); a weight's
  /// stored form; a workspace's request.
  int64_t bytes = 0;
  /// The memory plan's live interval in kernel positions (arena buffers; -1: not planned).
  int first = -1, last = -1;
  /// Bytes from the start of its space once placed (memory_plan, place_weights; -1 before); 0 for
  /// a model input or output.
  int64_t offset = -1;
};

/// \brief What a convolution or matrix product runs on (Kernel::engine; report.json "engine").
enum class Engine {
  none,         ///< not a convolution or matrix product
  simt,         ///< the SIMT templates
  tensor_core,  ///< the tensor-core templates (implicit GEMM, GEMM)
  winograd,     ///< Winograd F(2x2, 3x3) on tensor cores (schedule/winograd.h)
  gemv,         ///< a product of at most 8 rows (templates/gemv.cuh)
  hopper,       ///< wgmma + TMA, warp-specialized and persistent (templates/hopper_gemm.cuh; --arch sm_90a)
  /// A depthwise convolution through a shared-memory input tile, weights in registers
  /// (templates/conv_depthwise.cuh ConvDepthwiseTiled; NHWC FP16 / BF16)
  depthwise_tiled,
  /// A tensor-core product for small M (templates/gemm_small_m.cuh: K split across a block's warps
  /// and split-K reduced by the tiles' own blocks in one launch; schedule/small_m.h)
  small_m,
};
/// "", "simt", "tensor_core", "winograd", "gemv", "hopper", "depthwise_tiled", "small_m".
const char* engine_name(Engine e);

/// \brief The ONNX node a kernel runs, as the IR keeps it: names only (attributes and operator
/// parameters are in the kernel's plan).
struct KernelOp {
  std::string name;    ///< the node's name
  std::string type;    ///< its op ("Conv", "FusedConv", "QMatMul", ...); empty: no node
  std::string domain;  ///< its domain ("" for ONNX's, ops::kModelcDomain for modelc's own)
  int opset = 0;
  bool empty() const { return type.empty(); }
};

/// \brief One output of a horizontally fused kernel (schedule stage fuse_horizontal): the node
/// whose output it is, and the channels [begin, end) of the fused product it holds (a convolution's
/// output channels; a matrix product's columns).
struct OutputRange {
  const Node* source = nullptr;  ///< stage-side: that node
  KernelOp op;                   ///< that node, by name (its epilogue is in the kernel's plan)
  std::string output;            ///< the value it writes (that node's output 0)
  int64_t begin = 0, end = 0;
};

/// \brief What a convolution or a pool applies to its X (input 0) as it loads it (schedule stage
/// fuse_prologue: a per-channel BatchNormalization (+ ReLU), or squeeze-and-excite's Mul by a
/// [N, C, 1, 1] gate, that ran as a kernel of its own before it): element x of channel c of image n
/// becomes act(x scale[c] + shift[c]) (affine), times gate[n][c] (gate), in FP32, rounded once.
struct OperandPrologue {
  bool affine = false;  ///< inputs kPrologueScaleInput and kPrologueShiftInput: FP32 [C]
  bool relu = false;    ///< affine's activation: ReLU (else none)
  bool gate = false;    ///< input kPrologueGateInput: X's type, [N, C, 1, 1]
  std::vector<std::string> nodes;  ///< the nodes it runs (BatchNormalization, Mul)
  bool active() const { return affine || gate; }
  /// "x * scale + shift, relu, x * gate" (the report's and the emitted comments' text).
  std::string text() const;
};
/// The input slots of a conv's or pool's prologue operands (after X, W, bias, residual: a pool's absent).
constexpr int kPrologueScaleInput = 4;
constexpr int kPrologueShiftInput = 5;
constexpr int kPrologueGateInput = 6;

/// \brief fold_row_maps (schedule/row_maps.cpp): a matrix product that reads A's rows through a
/// table of int32 rows (input kRowTableAInput: the Pad / Slice / Concat / Transpose kernels
/// between A and the value whose rows they move run no more; -1 is a zero row) or writes Y's rows
/// through one (input kRowTableYInput: the kernels after it; -1 is a row not written), and, with
/// a scattered Y, the residual Add after those kernels taken as its epilogue's residual (input 3,
/// read where the row is written). templates/gemm.cuh gemm::RowMapped; tc::Gemm, smallm::Gemm.
struct RowMaps {
  bool gather_a = false;
  bool scatter_y = false;
  bool residual = false;           ///< the residual is the folded Add's other operand
  std::vector<std::string> folded; ///< what it took, for the report ("Pad 'p'", "Add 'a' as the residual")
  bool active() const { return gather_a || scatter_y; }
};
constexpr int kRowTableAInput = 4;
constexpr int kRowTableYInput = 5;
/// \brief fuse_row_norm: the LayerNormalization over a matrix product's output rows that the
/// product's own launch runs (the last block of each row panel normalizes it: templates/
/// residual_norm.cuh PanelNorm), reading gamma (input kRowNormGammaInput) and beta (input
/// kRowNormBetaInput, optional) and writing the normalized rows as the kernel's output 1.
struct RowNorm {
  bool active = false;
  float epsilon = 1e-5f;
  std::vector<std::string> nodes;  ///< the LayerNormalization it runs
  std::string why;                 ///< the cost model's comparison (the report's note)
};
/// The input slots of a product's row norm operands (after A, B, bias, residual and the row tables).
constexpr int kRowNormGammaInput = 6;
constexpr int kRowNormBetaInput = 7;

/// \brief Stage-side: what a kernel runs in the graph. The schedule stages read the node's
/// attributes and OpDef facts, and each operand's graph value, through it; codegen, the report and
/// the cost model never do.
struct KernelSource {
  const Node* node = nullptr;           ///< the (main) node it runs
  /// The graph value of each view in Kernel::inputs / outputs, in order (null: absent): the node's
  /// operands, but the other side of a folded boundary Cast, and for a horizontally fused kernel
  /// the concatenated weights and bias and every range's output.
  std::vector<const Value*> inputs, outputs;
};

/// \brief One kernel launch (or a group of launches of one template family).
struct Kernel {
  std::string id;                       ///< "k7": unique, a C identifier
  /// Its template family's descriptor (schedule/families.h: facts, plan, tactic, work), set by
  /// list_kernels; the stages, the cost model and codegen's printer registry ask it, by pointer.
  const FamilyFacts* family = nullptr;
  /// The (main) ONNX node it runs, by name, op and opset (comments, errors, the report); an output
  /// copy or a layout conversion has none (op.type empty).
  KernelOp op;
  std::vector<std::string> nodes;       ///< every ONNX node this kernel covers (report)
  /// What its family's printer, the cost model and the report read of it: geometry, epilogue,
  /// strides, operator parameters (schedule/plan.h), set once by the plan_kernels stage from the
  /// node and the views (the tactics stage adds a transformed-weight plan). Null before.
  std::shared_ptr<const KernelPlan> plan;
  /// plan_kernels, for the report and the cost model: the FLOPs of the ONNX nodes it runs (their
  /// OpDef::flops; each range's node's for a horizontally fused kernel), and its fused epilogue as
  /// text ("bias + relu + residual"; an activation-only fused op's activation; empty without one).
  int64_t flops = 0;
  std::string epilogue;
  std::vector<TensorView> inputs;       ///< node inputs in order (absent optional inputs: dtype undefined)
  std::vector<TensorView> outputs;      ///< node outputs in order (absent: dtype undefined)
  /// The template's compile-time parameters (tile, threads), set by the tactics stage for the oldest
  /// --arch; report.json and the emitted comments print tactic_fields(tactic).
  Tactic tactic;
  std::string note;                     ///< why this template / tactic (report.md)
  /// Convolutions and matrix products (the gemm, conv and conv_depthwise families):
  /// Engine::tensor_core when the kernel runs on the tensor-core templates (a grouped convolution:
  /// tc::ConvGrouped; winograd, gemv: those forms), depthwise_tiled for ConvDepthwiseTiled, simt
  /// otherwise; none for every other family. A BF16 tensor_core kernel planned for sm_75 too runs a SIMT tile there
  /// (its arch_tactic entry is a TileConfig: no BF16 MMA below sm_80).
  Engine engine = Engine::none;
  /// Why a convolution or matrix product is not on tensor cores ("depthwise", "FP32 storage", ...);
  /// empty when it is, or when engine is empty.
  std::string fallback_reason;
  /// The tactic per --arch (SM number, e.g. 75 or 90) where the choice depends on the target;
  /// `tactic` is the choice for the lowest --arch. Empty: one tactic for every arch.
  std::map<int, Tactic> arch_tactic;
  /// The cost model's estimate with the tactic for the first (oldest) --arch, on that arch's
  /// target (schedule/cost_model.h; set by the tactics stage; report.json "estimate").
  Estimate estimate;
  /// Matrix products (the gemm family): the innermost batch dims that B broadcasts over (stride 0)
  /// and along which A, Y and C continue their rows run as more rows of one product
  /// (schedule/linear.h lower_gemm); set by the fold_gemm_batch stage.
  bool batch_as_rows = false;
  /// A horizontally fused convolution or matrix product (schedule/fuse_horizontal.cpp): output i is
  /// ranges[i].node's output, channels (columns) [begin, end) of the product of the concatenated
  /// weights (inputs 1, 2); each range has its node's epilogue. Empty for every other kernel.
  std::vector<OutputRange> ranges;
  /// Scratch the kernel needs in the arena while it runs (a split-K product's FP32 partial sums):
  /// its size, set by the tactic rule (the largest over the --arch targets), and the view of the
  /// workspace buffer the tactics stage adds for it, placed by the memory plan (dtype undefined
  /// when the kernel needs none).
  int64_t workspace_bytes = 0;
  TensorView workspace{"", DType::undefined, {}, {}, Space::arena, 0, 0};
  /// Scratch that must be zero when the kernel starts and that the kernel leaves zero (a small-M
  /// product's split-K tickets): its size (the largest over the --arch targets), and the view of
  /// its slice of the schedule's one zeroed buffer (Schedule::zeroed_offset; dtype undefined when
  /// the kernel needs none). That buffer is live through the whole run, so nothing else writes it.
  int64_t zeroed_bytes = 0;
  TensorView zeroed{"", DType::undefined, {}, {}, Space::arena, 0, 0};
  /// The streams stage (schedule/streams.h): the stream it runs on (0 = the caller's), the events
  /// it waits on before it starts (ids of Schedule's events), and the event recorded after it (-1:
  /// none, no kernel on another stream waits for it).
  int stream = 0;
  std::vector<int> waits;
  int event = -1;
  /// A tensor-core kernel's tuning signature (schedule/tactics.h tuning_signature; report.json
  /// "tuning_signature"): the key of its entry in a tuning cache. Empty for every other kernel.
  std::string tuning_signature;
  /// `modelc tune` (PassOptions::tune_candidates): the candidate tactics of a tensor-core kernel on
  /// the first --arch, the chosen one first (schedule/tactics.h tc_candidates). Empty otherwise.
  std::vector<TcCandidate> tune_candidates;

  // ---- what the stages before the tactics decided (read by the tactics stage's note) --------
  KernelSource source;                  ///< stage-side (list_kernels; layout, fold_boundary_casts, fuse_horizontal)
  bool output_copy = false;             ///< claim_outputs: copies a value into a model output (an Identity)
  bool channels_last = false;           ///< layout: runs channels-last (NHWC views of X, Y, OHWI W)
  std::string conversion;               ///< layout: a conversion kernel, and why it runs ("layout conversion: ...")
  std::vector<std::string> folded_casts;///< fold_boundary_casts: the boundary Casts it took
  /// fold_operand_views: the Transposes / Slices it reads as strides, or writes through.
  std::vector<std::string> operand_views;
  std::string kept_view;                ///< fold_operand_views: a Transpose / Slice that stays a kernel: why
  /// fold_row_maps: a matrix product's row tables; for a data-movement kernel (or a product) next
  /// to a product that the stage looked at and left, why (the report's note).
  RowMaps row_maps;
  std::string kept_row_map;
  /// fuse_prologue: a convolution's or pool's operand prologue (inputs 4..6); for a per-channel
  /// elementwise kernel that stays a kernel, why it was not folded into its readers (kept_prologue).
  OperandPrologue prologue;
  std::string kept_prologue;
  /// fuse_row_norm: a matrix product's row norm (output 1); for a LayerNormalization that stays a
  /// kernel, why it is not in its producer's launch (kept_row_norm).
  RowNorm row_norm;
  std::string kept_row_norm;

  /// Its family's name (templates/<name>.cuh, codegen/families/<name>.cpp); "?" before list_kernels.
  const std::string& family_name() const;
  /// Its family's descriptor; an internal Error naming the kernel before list_kernels set it.
  const FamilyFacts& facts() const;
  /// An Error about this kernel: naming its node (op, opset) when it has one, else its id and family.
  Error error(const std::string& message, const std::string& hint = {}) const;
};

/// \brief Kernel k's plan as the T its family made it (make_plan); an internal Error naming the
/// kernel when it has none or one of another type (a printer reading what its family did not plan).
template <class T>
const T& plan_of(const Kernel& k) {
  if (const auto* p = dynamic_cast<const PlanOf<T>*>(k.plan.get())) return p->value;
  throw k.error(std::string("internal: the kernel's plan is ") + (k.plan ? k.plan->kind() : "missing") +
                ", not the one its printer reads (the plan_kernels stage did not run, or its family planned another)");
}

/// \brief The node kernel k runs, for its family's plan function (stage-side: k.source.node); an
/// internal Error naming the kernel when it has none.
const Node& node_to_plan(const Kernel& k);

/// \brief Kernel k's plan as a T, or null when it has none or one of another type.
template <class T>
const T* plan_if(const Kernel& k) {
  const auto* p = dynamic_cast<const PlanOf<T>*>(k.plan.get());
  return p ? &p->value : nullptr;
}

/// \brief A weight in the blob (constants the kernels read).
struct WeightEntry {
  std::string value;
  int64_t offset = 0;  ///< bytes, 256-aligned
  Tensor data;
};

/// \brief What the elide_concat stage (schedule/elide_concat.cpp) decided for one Concat kernel: elided (its
/// producers write their slices of its buffer, no kernel runs) or kept, with the inputs that stop it.
struct ConcatElision {
  std::string name;    ///< the Concat node's name
  std::string output;  ///< its output value
  bool elided = false;
  struct Input {
    std::string value;
    int64_t offset = 0;  ///< where its slice starts along the Concat's axis (elements of that axis)
    std::string reason;  ///< why it cannot be a slice of the output; empty when it can
  };
  std::vector<Input> inputs;
  std::string reason;  ///< kept for a reason of the Concat as a whole (its axis, its output); may be empty
  /// A prefix of a wider Concat (its inputs the first of that one's, DenseNet's nested concats): that
  /// Concat's name. Elided, its output is the first channels of that one's buffer; empty otherwise.
  std::string prefix_of;
};

/// \brief The kernels one optional stage of the pipeline saves: the stages after it run again on a
/// copy of the graph without it, up to the last stage that may change the kernel count
/// (pipeline/pipeline.h, LowerOptions::count_stage_kernels).
struct StageKernels {
  std::string stage;
  int64_t kernels_without = -1;  ///< the kernel count without the stage; -1 when that did not compile
  int64_t kernels = 0;           ///< the kernel count with every stage (the Schedule's)
  std::string error;             ///< why the compile without the stage failed; empty when it did not
};

struct ModelTensor {
  std::string name;
  DType dtype;
  Shape shape;
  /// Batch profiles (schedule/profiles.h): the first dim is the batch times a constant, so the
  /// program pads (an input) or trims (an output) it at run time. False with one profile.
  bool batched = false;
};

/// \brief The IR of the schedule stages, and everything codegen needs.
struct Schedule {
  /// Stage-side: the graph the stages lower (kernels' and buffers' sources point into it; it must
  /// outlive the Schedule). Codegen never reads it.
  Graph* graph = nullptr;
  /// Stage-side: the schedule stages that ran, for --print-after and --verify-each (which invariants
  /// hold yet); the pipeline records each.
  std::set<std::string> ran;
  /// Every buffer a kernel's view names (TensorView::buffer), from list_kernels on; before it, the
  /// buffers of the views and outputs find_views and claim_outputs decided.
  std::vector<Buffer> buffers;
  std::string name;                     ///< --name: prefix of every symbol
  std::vector<std::string> archs;       ///< --arch list, e.g. {"sm_75", "sm_90"}
  /// The batch it runs: --batch's, else its first input's first dim (the CLI sets it; 0: unset, and
  /// the emitter takes schedule/profiles.h default_batch). With batch profiles (--batch 1,8,32), one
  /// schedule per batch (schedule/profiles.h).
  int64_t batch = 0;
  std::vector<ModelTensor> inputs, outputs;
  std::vector<Kernel> kernels;
  /// The weights blob (place_weights): each weight buffer's bytes, identical data once.
  std::vector<WeightEntry> weights;
  int64_t weights_bytes = 0;
  int64_t arena_bytes = 0;              ///< after liveness planning
  int64_t activation_bytes_total = 0;   ///< sum of every activation's size (what no reuse would need)
  int64_t arena_max_live_bytes = 0;     ///< the arena's lower bound (schedule/memory_plan.h)
  int64_t arena_alignment = 0;          ///< every buffer's offset and size are rounded to this
  std::string arena_order;              ///< the placement order that gave the plan
  /// The arena's buffers as the memory plan placed them (activations in order of first write, then
  /// the workspaces): live interval (positions in `kernels`), size and offset.
  std::vector<LiveBuffer> arena_buffers;
  /// The arena bytes [zeroed_offset, zeroed_offset + zeroed_bytes) that hold the kernels' zeroed
  /// scratch (Kernel::zeroed): one buffer live through the whole run; the runtime zeroes it at
  /// create and again before a run that follows another batch profile's (which may have written
  /// there: the profiles share the arena); 0 bytes when no kernel needs it.
  int64_t zeroed_offset = 0, zeroed_bytes = 0;
  /// --fp16: what passes/precision did (report.md / report.json's "precision"); unset without it.
  std::optional<PrecisionReport> precision;
  /// The fuse_attention stage's outcome per candidate (a Softmax of a product's scores, read by a
  /// product): fused into which modelc.Attention node, covering which ONNX nodes, or why not
  /// (report.json "attention"); empty when the stage did not run (FP32 compiles, --disable-pass).
  std::vector<AttentionOutcome> attention;
  /// The fuse_se_gate stage's outcome per candidate (a GlobalAveragePool or spatial ReduceMean of a
  /// rank-4 value): fused into which modelc.SEGate node, covering which ONNX nodes, or why not
  /// (report.json "se_gates"); empty when the stage did not run (--disable-pass).
  std::vector<SeGateOutcome> se_gates;
  /// The layout pass's one-line account (schedule/layout.h): kernels and buffers channels-last,
  /// padded ones, conversions; empty when every buffer is dense.
  std::string layout;
  /// The elide_concat stage's decision per Concat kernel, in kernel order (report.json "concats").
  std::vector<ConcatElision> concats;
  /// The streams stage (schedule/streams.h): streams used (1: every kernel on the caller's stream),
  /// cudaEvent_t's created (the kernels' events 0..E-1, then the fork event E and the join events
  /// E+1.. of streams 1..; 0 with one stream), and the kernels on the longest dependency chain (0
  /// when the stage did not run).
  int streams = 1;
  int events = 0;
  int critical_path = 0;
  /// Per optional stage that ran, the kernels without it (report.json "passes"); empty unless
  /// LowerOptions::count_stage_kernels.
  std::vector<StageKernels> stage_kernels;
};

}  // namespace modelc
