// compiler/ops/window.h — the sliding-window geometry of Conv, ConvTranspose, MaxPool and
// AveragePool (and their fused forms): per spatial dim the input extent, the kernel (window), the
// stride, the dilation, the begin / end padding (auto_pad resolved) and the output extent.
//
// The one place these rules live: the ops' shape rules, FLOPs and reference evaluations, the
// schedule's tactic choice and the code generator's template arguments all read them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief The auto_pad attribute (NOTSET, SAME_UPPER, SAME_LOWER, VALID).
enum class AutoPad { notset, same_upper, same_lower, valid };
/// The node's auto_pad; an Error naming the node for any other word.
AutoPad parse_auto_pad(const Node& n);

/// Checks that X (input 0) is N x C x D1 x ... with at least `min_rank` dims; an Error naming the
/// node otherwise.
void require_spatial_input(const Node& n, int64_t min_rank);

/// \brief The geometry of a window, padded to 3 spatial dims (leading dims of extent 1), so one
/// loop nest or template serves 1-D, 2-D and 3-D alike.
struct Window3 {
  int64_t N = 1, C = 1, M = 1, G = 1;  ///< batch, input channels, output channels (pools: C), groups
  int spatial = 2;                     ///< the model's spatial rank (1 to 3)
  std::array<int64_t, 3> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0},
      pad_end{0, 0, 0}, dilation{1, 1, 1};
  int64_t Cg() const { return C / G; }  ///< input channels per group
  int64_t Mg() const { return M / G; }  ///< output channels per group
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t out_pixels() const { return out_size(); }
  int64_t k_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  std::string str() const;  ///< "k3x3 s1x1 p1x1 d1x1 g2" (the model's rank; no g when 1; p b/e when they differ)
};

/// \brief The geometry per spatial dim (the model's rank).
struct WindowGeometry {
  int64_t N = 0, C = 0, M = 0, group = 1;  ///< batch, input channels, output channels (pools: C), groups
  std::vector<int64_t> in, kernel, out, stride, dilation, pad_begin, pad_end;
  int64_t spatial() const { return static_cast<int64_t>(in.size()); }
  int64_t kernel_size() const { return num_elements(kernel); }
  Shape output_shape() const;  ///< [N, M, out...]
  Window3 padded3() const;
};

/// Conv and FusedConv: X (input 0), W (input 1) and the attributes; checks ranks, group, W against
/// X, kernel_shape, the bias (input 2) and that every output extent is positive.
WindowGeometry conv_geometry(const Node& n);
/// ConvTranspose: M = W dim 1 * group; pads from output_shape, output_padding and auto_pad.
WindowGeometry conv_transpose_geometry(const Node& n);
/// MaxPool and AveragePool: M = C; the window from kernel_shape; ceil_mode.
WindowGeometry pool_geometry(const Node& n);

}  // namespace modelc::ops
