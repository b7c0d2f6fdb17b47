// compiler/schedule/layout.h — the layout stage: which activations are stored channels-last (NHWC),
// with which channel pitch, and where a layout conversion runs.
//
// The pipeline's "layout" stage (plan_layout, schedule/stages.h) runs it on the list of kernels:
// it sets each buffer's Storage (Buffer::storage; sizes follow the strides it picks) and weight
// storage (Buffer::ohwi), marks the kernels that run channels-last (Kernel::channels_last), and
// inserts the conversion kernels (Kernel::conversion says why); every kernel's views are then
// recomputed from the buffers (schedule/views.h resolve).
//
// The rules (graphs with 2-D / 3-D convolutions; LowerOptions::layout = nchw turns it off). The
// pass reads facts, never op or family names: the op's OpDef::layout and layout roles (ops/), and
// its family's FamilyFacts (schedule/families.h).
//  - Layout kernels run channels-last: nodes of rank 4 or 5 whose op has an NHWC form
//    (Layout::channels: Conv, FusedConv, the pools) and whose family runs it (channels_last: conv,
//    conv_depthwise, pool), with no other output used (MaxPool's Indices), and a constant weight
//    where the op has a weight role. Their X and Y (and a residual role, which must match Y
//    exactly) are channels-last views: strides [H*W*Cp, 1, W*Cp, Cp] on the logical [N, C, H, W]
//    shape.
//  - A buffer (a root value: a kernel output in the arena) is stored channels-last when every
//    kernel that writes or reads it takes a channels-last view there (layout kernels at X / Y /
//    residual; families with strided_operands anywhere) and a layout kernel, or a kernel whose
//    family follows_layout with a channels-last operand of the same shape (elementwise) or rank
//    (concat), touches it. Graph inputs and
//    outputs are the caller's dense NCHW buffers; a view that changes the shape keeps its root
//    dense unless only unit dims come or go. Dims of extent 1 make both layouts the same memory:
//    [N, C, 1, 1] needs no conversion either way.
//  - Channel pitch: Cp = round_up(C, 8) when a consumer is a convolution that can take tensor cores
//    (tensor_core_operands: float16 or bfloat16 X and W, one group) and C % 8 != 0 (16 for the INT8
//    ones: 8-bit X, int8 W; tensor_core_channels); C otherwise, and always for a buffer of one pixel
//    (N and every spatial extent 1: no stride of its views steps over a pixel, so none could carry
//    the pitch, and its readers would see C while its convolutions' weights were stored at Cp). Padded
//    channels are never written nor read as data; only kernels that take a pitch (FamilyFacts::
//    pitch: pools, depthwise, tensor-core-eligible convolutions; strided families) read or write
//    such buffers.
//  - Where a layout kernel's X, Y or residual is not stored as it needs, a conversion kernel (an
//    Identity run by the elementwise family, strided in and out) copies it: before the kernel for
//    inputs, after it for Y (the kernel then writes a channels-last temporary).
//  - Weight roles of channels-last kernels are stored OHWI (WeightStorage): one row per output
//    channel, tap t's channels at t * pitch. Padded: the input's pitch (zero padded; grouped: their
//    own channel count), rows taps * Cp long: the view keeps W's logical [M, C/G, KH, KW] shape
//    with strides [KH*KW*Cp, 1, KW*Cp, Cp]. Compact (conv_weight_storage: a tensor-core
//    convolution, one group, fewer than kCompactKChannels input channels, where a 16-byte chunk
//    of channels would be mostly padding and the GEMM depth taps * Cp mostly zeros; an INT8 one,
//    16 channels, also where X's pitch is not a multiple of 16): pitch C, rows round_up(taps * C,
//    chunk) long (16-byte rows, the tail zero): strides [Kw, 1, KW*C, C].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace modelc {

/// \brief LowerOptions::layout: `automatic` runs the layout pass on graphs with 2-D / 3-D
/// convolutions, `nchw` keeps every buffer dense (C order).
enum class LayoutMode { automatic, nchw };
/// "auto" / "nchw" -> LayoutMode; throws Error naming the accepted words otherwise.
LayoutMode parse_layout_mode(const std::string& s);
const char* layout_mode_name(LayoutMode m);

/// Strides of a channels-last view of logical shape `s` ([N, C, spatial...]) with pitch `pitch`.
std::vector<int64_t> channels_last_strides(const Shape& s, int64_t pitch);
/// Strides of `s` under `storage` (dense C order when not channels-last).
std::vector<int64_t> storage_strides(const Shape& s, const Storage& storage);
/// Elements a buffer of shape `s` needs under `storage`: numel when dense, N * spatial * Cp when
/// channels-last (whole pixels, padding included: a reader may fetch a whole padded pixel).
int64_t storage_elements(const Shape& s, const Storage& storage);
/// True when strides `a` and `b` address the same elements of shape `s` (only dims of extent > 1
/// count).
bool same_memory(const Shape& s, const std::vector<int64_t>& a, const std::vector<int64_t>& b);
/// \brief The strides of a view of shape `view` on a buffer of shape `root` stored with
/// `root_strides`, when the view is expressible: a dense root (any reshape), or a reshape that only
/// adds or removes unit dims, or a root whose strides are the dense ones' memory. False otherwise.
bool view_strides(const Shape& root, const std::vector<int64_t>& root_strides, const Shape& view,
                  std::vector<int64_t>* out);

/// \brief For the families: true when view `v` ([N, C, spatial...]) is the same memory as a
/// channels-last view with some pitch Cp >= C, which goes to *pitch (C when the view is also dense,
/// e.g. [N, C, 1, 1] unpadded). False for any other strides.
bool channels_last_view(const TensorView& v, int64_t* pitch);
/// True when `v` is dense (C order) up to its dims of extent 1.
bool dense_view(const TensorView& v);

/// Below this many input channels a tensor-core convolution's K runs over the channels, not the
/// pitch (the compact form: one 16-byte chunk of 8 channels would be mostly padding).
constexpr int64_t kCompactKChannels = 8;

/// \brief The channels of one 16-byte chunk of a tensor-core operand of type t: 8 for FP16, 16 for
/// the 8-bit types of the INT8 kernels (templates/tensor_core_int8.cuh). A tensor-core convolution's
/// channel pitch is a multiple of it, and below it its K is compact.
int64_t tensor_core_channels(DType t);

/// \brief The storage of the weight `w` ([M, Cg, K...]) of a channels-last convolution whose X has
/// `x_channels` channels at pitch `x_pitch`: compact where `tensor_cores` (tensor_core_operands),
/// one group and Cg < `chunk` (tensor_core_channels: kCompactKChannels for FP16) or X a channel slice
/// of a wider buffer (`x_pitch` above Cg rounded up to `chunk`: elide_concat), or, for the 8-bit
/// operands (chunk 16, no SIMT form), a pitch that is not a multiple of 16, rows rounded up to
/// `chunk`; padded at X's pitch for one group; Cg otherwise.
WeightStorage conv_weight_storage(const Shape& w, int64_t x_channels, int64_t x_pitch, bool tensor_cores,
                                  int64_t chunk = kCompactKChannels);
/// \brief The convolutions `convs` (their nodes) now read X at another channel pitch (a channel
/// slice of a Concat's buffer: elide_concat; the BN input a prologue reads: fuse_prologue): each
/// one's weight buffer stored as conv_weight_storage says for the pitch of the kernel's X view
/// (compact K over the channels where the pitch is wider), then the views resolved again. The
/// callers have checked that no other kernel reads those weights.
void restore_conv_weights(Schedule& s, const std::vector<const Node*>& convs);
/// The strides of W's logical view [M, Cg, K...] under `ws`: [row, 1, pitch * (inner taps)..., pitch].
std::vector<int64_t> weight_strides(const Shape& w, const WeightStorage& ws);
/// \brief A conv weight [M, Cg, K...] (any dtype) stored as `ws` (zero outside the data): the
/// memory of the view weight_strides(w.shape, ws), row * M elements, shaped [M, K..., pitch] where
/// the rows are whole taps, [M, row] otherwise.
Tensor ohwi_weights(const Tensor& w, const WeightStorage& ws);

/// \brief The layout a convolution or pool kernel (conv, conv_depthwise, pool families) runs in,
/// read from its views: channels-last when X, W or Y is not dense, with X's and Y's channel pitches
/// and W's storage. Throws an internal Error naming the kernel when its views do not agree on one
/// layout (W must be stored as conv_weight_storage says for the kernel's node and X's pitch; a
/// FusedConv's residual must be Y's memory).
struct KernelLayout {
  bool channels_last = false;
  int64_t x_pitch = 0, y_pitch = 0;  ///< the channel counts when not padded
  WeightStorage w;                   ///< channels-last with a weight only
};
KernelLayout kernel_layout(const Kernel& k);
/// \brief The storage of channels-last kernel k's weight view `w` (conv_weight_storage for X's
/// channels and pitch, tensor_core_operands read from the views' types); throws an internal Error
/// naming the kernel when w's strides differ.
WeightStorage kernel_weight_storage(const Kernel& k, const TensorView& x, const TensorView& w, int64_t x_pitch);

}  // namespace modelc
