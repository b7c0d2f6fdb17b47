// compiler/schedule/lower.h — Graph -> Schedule: the schedule stages of the pipeline.
//
// Lowering holds what the schedule stages build, step by step; compiler/pipeline/pipeline.cpp
// orders the stages (one method each) and says what each needs. Walking the graph in order:
//  - nodes whose outputs are all constant were computed at compile time: no kernel;
//  - ops whose OpDef kernels are {"view"} (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
//    Dropout) give no kernel: their output is their input's buffer, reshaped;
//  - an op whose kernel is "none" (shape math) must have been folded: Error naming the node;
//  - every other node is a Kernel of the family family_for() picks (schedule/families.h), its
//    tactic chosen by that family's facts (schedule/tactics.h).
// Storage: graph inputs and outputs are the caller's buffers; a graph output that is a graph
// input, a constant, or shares its buffer with another graph output gets a copy kernel (an
// Identity node added to the graph, run by the "elementwise" family); constants read by kernels
// go in the weights blob (256-byte aligned, in order of first use, identical data stored once);
// every other value lives in the arena, at offsets from memory_plan.h.
// Layout (schedule/layout.h) runs after the kernels are listed and before the arena is planned: it
// picks channels-last buffers, inserts the conversion kernels it needs (Identity nodes it adds to
// the graph, run by the "elementwise" family, with a note saying why), and the OHWI weight copies;
// buffers are sized by their strides' extent.
// Concat elision (elide_concat, compiler/schedule/elide_concat.cpp) runs after the layout and the
// boundary-cast fold and before the memory plan: a Concat whose every input can be a slice of its
// output runs no kernel; each input is then a slice (same strides, an offset along the axis) of the
// Concat's buffer, written there by its producer, and the memory plan sees one buffer, live from
// the first producer to the last reader.
// Horizontal fusion (fuse_horizontal, compiler/schedule/fuse_horizontal.cpp) runs after it and
// before the memory plan: sibling convolutions (or matrix products) on one input become one kernel
// at the first one's place, writing each sibling's output (a channel, or column, range of the
// product) where it was planned.
// Streams (plan_streams, schedule/streams.h) run after the kernel list is final and before the
// memory plan: each kernel's stream from the kernel DAG (a value's writer -> its readers, views and
// elided Concats resolved to their buffers), and the events between streams. The memory plan then
// keeps a buffer live until every later kernel is ordered after its every access (by stream order
// and events, not by the listing): kernels that may run at the same time never share bytes.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"
#include "schedule/layout.h"
#include "schedule/memory_plan.h"
#include "schedule/schedule.h"
#include "schedule/streams.h"
#include "schedule/target.h"

namespace modelc {

struct LowerOptions {
  std::string name = "model";                ///< Schedule::name (--name)
  std::vector<std::string> archs = {"sm_75"};///< --arch list; the plan targets the oldest
  PassOptions passes;                        ///< what the stages read (--fp16, --disable-pass, ...)
  bool run_passes = true;                    ///< false: the graph stages are skipped (lowered as it is)
  /// Family to use instead of another (the key): lets tests and experiments run a node on an
  /// alternative family without touching the op table.
  std::map<std::string, std::string> family_substitutes;
  /// The layout pass (schedule/layout.h): `automatic` stores convolutional networks channels-last
  /// (NHWC, channel counts padded for tensor cores), `nchw` keeps every buffer dense.
  LayoutMode layout = LayoutMode::automatic;
  /// --streams: at most this many CUDA streams (schedule/streams.h); 0 is automatic (as many as
  /// the widest set of independent kernels needs, up to kAutomaticStreams); 1 runs every kernel on
  /// the caller's stream.
  int streams = 0;
  /// Schedule::stage_kernels: the compile also counts the kernels without each optional stage that
  /// runs, on copies of the graph (pipeline/pipeline.h says how; `modelc compile` sets it).
  bool count_stage_kernels = false;
};

/// Alignment of every buffer in the arena and the weights blob.
constexpr int64_t kBufferAlignment = 256;

/// \brief The lowering of one graph: the state the schedule stages fill in, one method per stage.
/// Each stage method returns true when it changed the graph or the schedule. The graph must
/// outlive the Schedule: kernels point at its nodes. Stages throw Error naming the node for
/// anything that cannot be lowered (a family that is not built in lists every node that needs one).
class Lowering {
 public:
  /// Records the graph's inputs and outputs; Error when the model has no outputs or no --arch.
  Lowering(Graph& g, const LowerOptions& o);

  bool remove_dead();          ///< nodes whose results no output needs (also through chains)
  bool find_views();           ///< view ops alias their input: each view's root buffer
  bool claim_outputs();        ///< a copy kernel for each output that cannot own its buffer
  bool list_kernels();         ///< the nodes that run a kernel, in order, and their families
  bool plan_layout();          ///< channels-last buffers, conversions, OHWI weights
  bool fold_boundary_casts();  ///< --fp16: boundary Casts into the kernels beside them
  /// Concats whose producers write straight into their slices (elide_concat.cpp says when).
  bool elide_concat();
  bool fold_operand_views();   ///< Transposes and Slices as strided operand views of matrix products
  /// Sibling convolutions on one X (matrix products on one A) as one kernel, each output a channel
  /// (column) range (fuse_horizontal.cpp).
  bool fuse_horizontal();
  bool plan_streams();         ///< each kernel's stream and the events between streams
  bool plan_arena();           ///< arena offsets by liveness
  bool place_weights();        ///< the weights blob (identical data once)
  bool build_kernels();        ///< one Kernel per listed node, with its views
  bool fold_gemm_batch();      ///< batch dims B broadcasts over run as rows of one product
  bool choose_tactics();       ///< each kernel's tactic per --arch, and its note; then place_workspaces
  /// The weights of the Winograd convolutions (engine "winograd") transformed (schedule/winograd.h
  /// winograd_weights) and stored in the blob, each kernel's W view on them; OHWI copies no kernel
  /// reads any more leave the blob (the others move down, their views with them).
  void transform_winograd_weights();
  /// Stores t in the weights blob as `value` (identical data once); returns its offset.
  int64_t store_weight(const std::string& value, const Tensor& t);
  /// The workspaces the tactics ask for (Kernel::workspace_bytes), live while their kernel runs: the
  /// arena planned again with them, every kernel's arena views moved with their buffers.
  void place_workspaces();
  /// plan_memory over buffers_ (offsets set, the plan checked) and the Schedule's arena fields.
  void plan_buffers();

  /// What the stages have built so far (--print-after): the kernel list, the layout, the arena,
  /// the weights and the kernels, each once its stage has run.
  std::string describe() const;
  /// Checks what the stages have built so far (--verify-each): the graph, every listed node in
  /// it, the arena plan, every view inside its buffer, a tactic per kernel. Error naming the
  /// broken invariant.
  void verify() const;
  /// The kernels listed so far (list_kernels and the stages after it), or built (kernels).
  int64_t kernel_count() const;
  /// The finished Schedule (moved out; call once, after every stage).
  Schedule finish();

 private:
  const Value* root(const Value* v) const;
  const Value* stored(const Value* v) const;
  const Value* buffer(const Value* v) const;
  std::string family_of(const Node& n) const;
  bool converts_operands(const Node& n) const;
  bool in_arena(const Value* r) const;
  Storage storage_of(const Value* r) const;
  TensorView view(const Value* v) const;
  bool strides_in_root(const Value* v, std::vector<int64_t>* strides, int64_t* offset) const;
  bool written_through(const Value* v) const;
  std::vector<std::pair<const Node*, int>> view_readers(const std::vector<const Value*>& views) const;
  bool is_product(const Node* n) const;
  std::vector<std::vector<int>> kernel_dependencies() const;
  std::string operand_view_refusal(const Node& n, const std::vector<const Value*>& views) const;
  std::string write_through_refusal(const Node& n) const;
  bool try_operand_view(const Node& n, std::string* why);
  bool compatible_siblings(const Node& a, const Node& b) const;
  /// The values kernel node n reads / writes: its inputs / outputs, or for a horizontally fused
  /// kernel the concatenated weights and bias / every range's output.
  std::vector<const Value*> kernel_inputs(const Node* n) const;
  std::vector<const Value*> kernel_outputs(const Node* n) const;

  Graph& g_;
  const LowerOptions& o_;
  Schedule s_;
  std::set<std::string> done_;                    // the stages that ran
  std::map<const Value*, const Value*> root_;     // view -> the value whose buffer it is
  // How a view is made from the value before it in its chain (find_views: a reshape; the
  // fold_operand_views stage: a Transpose or a Slice, or a product's output written through the
  // inverse of the Transpose after it). Each chain ends at its root.
  struct ViewStep {
    const Value* from = nullptr;
    const Node* node = nullptr;  // the view op, Transpose or Slice
    bool inverse = false;        // `from` is the Transpose's output: this value its input
  };
  std::map<const Value*, ViewStep> steps_;
  std::map<const Node*, std::vector<std::string>> operand_views_;  // product -> the views it reads / writes through
  std::map<const Node*, std::string> kept_views_;  // Transposes / Slices read by a product that stay kernels: why
  std::map<const Value*, int> output_of_;         // root -> the graph output whose buffer it is
  std::set<const Node*> copies_;                  // Identity nodes added for output copies
  std::map<const Value*, const Value*> folded_as_;  // a folded Cast's side -> the value stored instead
  std::set<const Node*> folded_casts_;            // Casts folded into their neighbouring kernel
  std::map<const Node*, std::vector<std::string>> folded_into_;  // kernel node -> the Casts it took
  std::vector<const Node*> nodes_;                // the kernels' nodes, in order
  std::vector<std::string> families_;
  std::vector<LiveBuffer> buffers_;
  StreamPlan streams_;                            // plan_streams; empty: one stream (the stage did not run)
  std::map<const Value*, int64_t> arena_offset_;
  std::map<const Value*, int64_t> weight_offset_;
  std::map<uint64_t, std::vector<std::size_t>> weight_keys_;  // sample_key -> entries of s_.weights with it
  LayoutPlan layout_;
  /// An elided Concat's input: a slice of `whole` (the Concat's output) from `offset` along `axis`.
  struct Slice {
    const Value* whole = nullptr;
    int axis = 0;
    int64_t offset = 0;
  };
  std::map<const Value*, Slice> slices_;
  /// A horizontally fused convolution or matrix product (fuse_horizontal): the first sibling (the
  /// node that stays in the kernel list) -> the concatenated weights and bias (constants added to
  /// the graph; bias null when no sibling has one) and every sibling's range, the first sibling's
  /// first.
  struct HorizontalFusion {
    const Value* weights = nullptr;
    const Value* bias = nullptr;
    std::vector<OutputRange> ranges;
  };
  std::map<const Node*, HorizontalFusion> horizontal_;
};

}  // namespace modelc
