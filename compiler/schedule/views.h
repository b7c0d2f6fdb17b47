// compiler/schedule/views.h — where each graph value lives among the Schedule's buffers, and the
// views the kernels hold, computed from the stages' decisions (helpers every schedule stage shares).
//
// A value a kernel touches is its buffer's own value, or one step (Buffer::views) from another
// value of the same buffer: a reshape (find_views), a Transpose or Slice read as strides, a
// product's output written through a Transpose (fold_operand_views), or an elided Concat's input
// (elide_concat). Its view's strides and offset follow from the buffer's storage (layout) along
// that chain, so a stage records a decision (a step, a storage) and resolve() recomputes every
// kernel's views from it.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "schedule/schedule.h"

namespace modelc {

/// \brief The buffer and step of each value Schedule::buffers name (their own values and their
/// steps' values). Derived: after a stage adds, merges or removes buffers, rebuild() (or note() a
/// buffer it added).
class ValueIndex {
 public:
  explicit ValueIndex(const Schedule& s) : s_(s) { rebuild(); }
  void rebuild();
  /// Indexes buffer b (added since the last rebuild).
  void note(int b);
  /// The buffer holding v (its own value, a view or a slice of it); -1 when none does.
  int buffer(const Value* v) const;
  /// The step that makes v from the value before it; null for a buffer's own value (or a value in
  /// no buffer). Valid until the buffers change.
  const ViewStep* step(const Value* v) const;
  /// The value v is a view of: its buffer's value, following every step but a Concat slice (an
  /// elided Concat's input is its own root, its buffer the Concat's output's); v itself when it is
  /// a buffer's value, a slice, or in no buffer.
  const Value* root(const Value* v) const;
  /// The buffer's space for v's buffer; for a value in no buffer, what add_value_buffer would give.
  Space space(const Value* v) const;

 private:
  const Schedule& s_;
  std::map<const Value*, std::pair<int, int>> at_;  // value -> (buffer, index in its views; -1: its own)
};

/// \brief Adds a buffer whose own value is v: a constant goes in the weights, a model input is the
/// caller's (its input index), anything else in the arena (claim_outputs makes model outputs
/// theirs). Returns its index.
int add_value_buffer(Schedule& s, const Value* v);

/// \brief Makes buffer `from`'s value a step of buffer `into` (step.value is that value), moves
/// `from`'s views along, and erases `from` (buffer indices above it shift down: rebuild an index).
void absorb_buffer(Schedule& s, int from, int into, ViewStep step);

/// \brief The strides (elements) of v in its buffer and the offset of its first element (elements,
/// added to *offset), along its chain of steps; false when a reshape on the way has no strides (a
/// Transpose then a Reshape merging dims it separated). Internal Error when v is in no buffer.
bool strides_in_buffer(const Schedule& s, const ValueIndex& index, const Value* v, std::vector<int64_t>* strides,
                       int64_t* offset);

/// \brief The view of v: its name, type, shape, its buffer (space, index) and its strides and
/// offset there (TensorView::offset once the buffer is placed, -1 before). null: an absent operand
/// (dtype undefined). Internal Error when v has no strides in its buffer.
TensorView view_of(const Schedule& s, const ValueIndex& index, const Value* v);

/// \brief After a stage before the tactics changed the kernel list or the buffers (the tactics add
/// views without a source value: workspaces, transformed weights): kernel ids in order ("k0", ...), a
/// buffer for every value a kernel touches that none holds (add_value_buffer), the buffers no
/// kernel touches dropped, each buffer's size (Buffer::bytes), and every kernel's views recomputed
/// from its source values (KernelSource).
void resolve(Schedule& s);

/// \brief Erases the kernels at `indices` (a stage folded them into others) and resolve()s.
void erase_kernels(Schedule& s, const std::set<std::size_t>& indices);

/// \brief Drops the buffers no kernel's view (inputs, outputs, workspace) names, and renumbers the
/// views' TensorView::buffer (a weight the tactics replaced by its transformed form, say).
void drop_unused_buffers(Schedule& s);

/// \brief The size of buffer b in bytes: a weight's stored form (its data, its OHWI rows, or its
/// constant), a workspace's request, otherwise storage_elements x dtype size.
int64_t buffer_bytes(const Buffer& b);

/// \brief For a stage that needs each kernel's node: the kernel index of every source node
/// (KernelSource::node) in s.kernels.
std::map<const Node*, std::size_t> kernel_of_node(const Schedule& s);

/// True when every output of n is a constant (there is one at least): computed at compile time.
bool compile_time_node(const Node& n);
/// True when v is read by a node or is a model output.
bool used_value(const Value* v);
/// True when no output of n is used (used_value).
bool dead_node(const Node& n);
/// \brief True when n runs no kernel: its op is a view (OpDef::kernels {"view"}: Reshape, Identity,
/// ...), or a conversion to the type its input already has (OpDef::view_when_same_type).
bool is_view_node(const Node& n);

}  // namespace modelc
