// templates/channel_norm.cuh (LRN), rnn.cuh and vision.cuh on the host emulation against the
// reference interpreter, each through its family's printer (the emitted instantiation is the one
// run): LRN on a channels-last padded FP16 input writing FP32; GridSample on a channels-last input
// in every mode and padding; RoiAlign's max mode on a channels-last input; NonMaxSuppression's two
// launches on their workspace (the -1 rows past the selections); an LSTM computing its input
// projection per step, bidirectional with every optional input.
#include <algorithm>
#include <cctype>

#include "reduction_test_util.h"
#include "templates/channel_norm.cuh"
#include "templates/rnn.cuh"
#include "templates/vision.cuh"

using namespace reduction_test;

namespace {

std::string squeezed(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) r += c;
  }
  return r;
}

/// The launch's instantiation, whitespace aside (the printer breaks long lines).
void check_type(const Launch& l, const std::string& type) { CHECK(squeezed(l.type) == squeezed(type)); }

/// The NHWC strides of [N, C, H, W] with channel pitch `pitch`.
std::vector<int64_t> nhwc(const Shape& s, int64_t pitch) {
  return {s[2] * s[3] * pitch, 1, s[3] * pitch, pitch};
}

/// t ([N, C, H, W]) laid out with `strides` in a buffer of `elements`, as dtype `to`.
Tensor laid_out(const Tensor& t, const std::vector<int64_t>& strides, int64_t elements, DType to) {
  const Shape& s = t.shape();
  std::vector<double> v = t.to_f64(), buf(static_cast<std::size_t>(elements), 0.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t rest = i, off = 0;
    for (std::size_t d = s.size(); d-- > 0;) {
      off += (rest % s[d]) * strides[d];
      rest /= s[d];
    }
    buf[static_cast<std::size_t>(off)] = v[static_cast<std::size_t>(i)];
  }
  return Tensor::from_f64(to, {elements}, buf);
}

template <class K>
void launch(const typename K::Params& p, std::size_t smem = 0) {
  REQUIRE(mc::launch(mc::vision::vision_kernel<K>, K::grid(), K::block(), smem, nullptr, p) == cudaSuccess);
}

}  // namespace

TEST_CASE("lrn: a channels-last input of pitch 8 in FP16, an FP32 output") {
  const Tensor x = random_f32({2, 5, 3, 4}, 81, -3.0f, 3.0f).cast(DType::float16).cast(DType::float32);
  OneNode t("LRN", 13, {x});
  t.n->set_attr_int("size", 3);
  t.n->set_attr_float("alpha", 0.5);
  t.n->set_attr_float("beta", 0.6);
  t.n->set_attr_float("bias", 1.5);
  const std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "lrn");
  k.inputs[0].dtype = DType::float16;
  k.inputs[0].strides = nhwc(x.shape(), 8);
  const KernelLaunches e = plan_and_emit(k);
  REQUIRE(e.launches.size() == 1);
  using K = mc::norm::Lrn<__half, float, mc::ix::Dims<2, 5, 3, 4>, mc::ix::Dims<96, 1, 32, 8>,
                          mc::ix::Dims<60, 12, 4, 1>, 1, 1>;
  check_type(e.launches[0], "mc::norm::Lrn<__half, float, mc::ix::Dims<2, 5, 3, 4>, mc::ix::Dims<96, 1, 32, 8>, "
                            "mc::ix::Dims<60, 12, 4, 1>, 1, 1>");
  const Tensor xb = laid_out(x, nhwc(x.shape(), 8), 2 * 3 * 4 * 8, DType::float16);
  Tensor y(DType::float32, x.shape());
  K::Params p;
  p.x = xb.raw();
  p.y = y.mutable_raw();
  p.alpha_over_size = 0.5f / 3;
  p.beta = 0.6f;
  p.bias = 1.5f;
  REQUIRE(mc::launch(mc::norm::lrn_kernel<K>, K::grid(), K::block(), 0, nullptr, p) == cudaSuccess);
  check_close(y, want[0], 1e-5, 1e-6);
}

namespace {

// GridSample of a channels-last X [2, 3, 5, 6] (pitch 4) at a grid reaching outside [-1, 1].
template <class K>
void grid_sample_case(const char* mode, const char* padding, int align_corners, const std::string& type) {
  INFO(mode << " " << padding << " align_corners " << align_corners);
  const Tensor x = random_f32({2, 3, 5, 6}, 82, -2.0f, 2.0f), g = random_f32({2, 4, 7, 2}, 83, -1.3f, 1.3f);
  OneNode t("GridSample", 16, {x, g});
  t.n->set_attr_string("mode", mode);
  t.n->set_attr_string("padding_mode", padding);
  t.n->set_attr_int("align_corners", align_corners);
  const std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "grid_sample");
  k.inputs[0].strides = nhwc(x.shape(), 4);
  const KernelLaunches e = plan_and_emit(k);
  REQUIRE(e.launches.size() == 1);
  check_type(e.launches[0], type);
  const Tensor xb = laid_out(x, nhwc(x.shape(), 4), 2 * 5 * 6 * 4, DType::float32);
  Tensor y(DType::float32, want[0].shape());
  launch<K>({xb.raw(), g.raw(), y.mutable_raw()});
  check_close(y, want[0], 1e-4, 2e-5);
}

}  // namespace

TEST_CASE("grid_sample: every mode and padding on a channels-last input") {
  using namespace mc::vision;
  using X = mc::ix::Dims<2, 3, 5, 6>;
  using XS = mc::ix::Dims<120, 1, 24, 4>;
  using GS = mc::ix::Dims<56, 14, 2, 1>;
  using Y = mc::ix::Dims<2, 3, 4, 7>;
  using YS = mc::ix::Dims<84, 28, 7, 1>;
  const std::string tail = ", mc::ix::Dims<2, 3, 5, 6>, mc::ix::Dims<120, 1, 24, 4>, mc::ix::Dims<56, 14, 2, 1>, "
                           "mc::ix::Dims<2, 3, 4, 7>, mc::ix::Dims<84, 28, 7, 1>>";
  grid_sample_case<GridSample<float, float, float, 0, 0, false, X, XS, GS, Y, YS>>(
      "bilinear", "zeros", 0, "mc::vision::GridSample<float, float, float, 0, 0, false" + tail);
  grid_sample_case<GridSample<float, float, float, 0, 2, true, X, XS, GS, Y, YS>>(
      "bilinear", "reflection", 1, "mc::vision::GridSample<float, float, float, 0, 2, true" + tail);
  grid_sample_case<GridSample<float, float, float, 1, 1, false, X, XS, GS, Y, YS>>(
      "nearest", "border", 0, "mc::vision::GridSample<float, float, float, 1, 1, false" + tail);
  grid_sample_case<GridSample<float, float, float, 2, 2, false, X, XS, GS, Y, YS>>(
      "bicubic", "reflection", 0, "mc::vision::GridSample<float, float, float, 2, 2, false" + tail);
  grid_sample_case<GridSample<float, float, float, 2, 0, true, X, XS, GS, Y, YS>>(
      "bicubic", "zeros", 1, "mc::vision::GridSample<float, float, float, 2, 0, true" + tail);
}

TEST_CASE("roi_align: max mode, adaptive sampling, a channels-last input, regions beyond the image") {
  const Tensor x = random_f32({2, 3, 9, 7}, 84, -1.0f, 3.0f);
  const Tensor rois = Tensor::from_f32({3, 4}, {0.5f, 1.0f, 5.2f, 8.0f, -2.0f, -1.0f, 8.5f, 10.5f, 3.0f, 3.0f, 3.4f, 3.2f});
  const Tensor batch = Tensor::from_i64(DType::int64, {3}, {1, 0, 1});
  OneNode t("RoiAlign", 16, {x, rois, batch});
  t.n->set_attr_string("mode", "max");
  t.n->set_attr_int("output_height", 3);
  t.n->set_attr_int("output_width", 2);
  t.n->set_attr_float("spatial_scale", 0.9);
  const std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "roi_align");
  k.inputs[0].strides = nhwc(x.shape(), 3);
  const KernelLaunches e = plan_and_emit(k);
  REQUIRE(e.launches.size() == 1);
  using K = mc::vision::RoiAlign<float, float, float, true, true, 0, mc::ix::Dims<2, 3, 9, 7>, mc::ix::Dims<189, 1, 21, 3>,
                                 mc::ix::Dims<4, 1>, mc::ix::Dims<1>, mc::ix::Dims<3, 3, 3, 2>, mc::ix::Dims<18, 6, 2, 1>>;
  check_type(e.launches[0],
             "mc::vision::RoiAlign<float, float, float, true, true, 0, mc::ix::Dims<2, 3, 9, 7>, mc::ix::Dims<189, 1, 21, 3>, "
             "mc::ix::Dims<4, 1>, mc::ix::Dims<1>, mc::ix::Dims<3, 3, 3, 2>, mc::ix::Dims<18, 6, 2, 1>>");
  const Tensor xb = laid_out(x, nhwc(x.shape(), 3), 2 * 9 * 7 * 3, DType::float32);
  Tensor y(DType::float32, want[0].shape());
  K::Params p;
  p.x = xb.raw();
  p.rois = rois.raw();
  p.batch_indices = batch.data<int64_t>();
  p.y = y.mutable_raw();
  p.spatial_scale = 0.9f;
  launch<K>(p);
  check_close(y, want[0], 1e-5, 1e-5);
}

TEST_CASE("nms: two launches on the workspace; the rows past the selections are -1") {
  // 2 batches x 2 classes x 7 boxes (centers), ties in the scores, a score threshold.
  std::vector<float> b, s;
  for (int i = 0; i < 14; ++i) b.insert(b.end(), {static_cast<float>(i % 4), static_cast<float>(i / 4), 1.6f, 1.2f});
  for (int i = 0; i < 28; ++i) s.push_back(static_cast<float>((i * 5) % 9) / 8.0f);
  const Tensor boxes = Tensor::from_f32({2, 7, 4}, b), scores = Tensor::from_f32({2, 2, 7}, s);
  const Tensor max_out = Tensor::from_i64(DType::int64, {1}, {4});
  const Tensor iou = Tensor::from_f32({1}, {0.3f}), smin = Tensor::from_f32({1}, {0.5f});
  OneNode t("NonMaxSuppression", 11, {boxes, scores, Tensor(), iou, smin}, 1, {{2, max_out}});
  t.n->set_attr_int("center_point_box", 1);
  const std::vector<Tensor> want = t.reference();
  REQUIRE(want[0].shape() == Shape{16, 3});
  CHECK(want[0].to_i64().back() == -1);  // fewer than 16 boxes survive: the padding is exercised
  Kernel k = kernel_of(*t.n, "nms");
  k.workspace = TensorView{"ws", DType::float32, {1024}, {1}, Space::arena, 0, 0};
  const KernelLaunches e = plan_and_emit(k);
  REQUIRE(e.launches.size() == 2);
  using Select = mc::vision::NmsSelect<float, float, true, 2, 2, 7, 4, mc::ix::Dims<28, 4, 1>, mc::ix::Dims<14, 7, 1>>;
  using Compact = mc::vision::NmsCompact<2, 2, 7, 4, mc::ix::Dims<3, 1>>;
  check_type(e.launches[0], "mc::vision::NmsSelect<float, float, true, 2, 2, 7, 4, mc::ix::Dims<28, 4, 1>, "
                            "mc::ix::Dims<14, 7, 1>>");
  check_type(e.launches[1], "mc::vision::NmsCompact<2, 2, 7, 4, mc::ix::Dims<3, 1>>");
  CHECK(k.workspace_bytes >= mc::vision::NmsWorkspace<2, 2, 7, 4>::kBytes);
  std::vector<uint8_t> workspace(static_cast<std::size_t>(k.workspace_bytes), 0xab);
  Tensor y(DType::int64, {16, 3});
  launch<Select>({boxes.raw(), scores.raw(), iou.raw(), smin.raw(), workspace.data()});
  launch<Compact>({workspace.data(), y.mutable_data<int64_t>()});
  check_close(y, want[0]);
}

TEST_CASE("rnn: a bidirectional LSTM projecting X itself, every optional input, clip") {
  const int64_t S = 4, B = 2, I = 3, H = 5;
  const Tensor x = random_f32({S, B, I}, 85), w = random_f32({2, 4 * H, I}, 86, -0.6f, 0.6f);
  const Tensor r = random_f32({2, 4 * H, H}, 87, -0.6f, 0.6f), bias = random_f32({2, 8 * H}, 88, -0.3f, 0.3f);
  const Tensor lens = Tensor::from_i64(DType::int32, {B}, {4, 3});
  const Tensor h0 = random_f32({2, B, H}, 89), c0 = random_f32({2, B, H}, 90), peep = random_f32({2, 3 * H}, 91);
  OneNode t("LSTM", 14, {x, w, r, bias, lens, h0, c0, peep}, 3);
  t.n->set_attr_string("direction", "bidirectional");
  t.n->set_attr_float("clip", 2.5);
  const std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "rnn");
  const KernelLaunches e = plan_and_emit(k);
  REQUIRE(e.launches.size() == 1);
  CHECK(e.launches[0].dynamic_smem == 4 * (4 * H + 4 * H + I));
  using K = mc::rnn::Recurrence<0, 0, 96, float, mc::ix::Dims<2, 4, 2, 3, 5>, mc::ix::Dims<6, 3, 1>,
                                mc::ix::Dims<60, 3, 1>, mc::ix::Dims<100, 5, 1>, mc::ix::Dims<40, 1>, mc::ix::Dims<1>,
                                mc::ix::Dims<10, 5, 1>, mc::ix::Dims<10, 5, 1>, mc::ix::Dims<15, 1>,
                                mc::ix::Dims<20, 10, 5, 1>, mc::ix::Dims<10, 5, 1>, mc::ix::Dims<10, 5, 1>>;
  check_type(e.launches[0],
             "mc::rnn::Recurrence<0, 0, 96, float, mc::ix::Dims<2, 4, 2, 3, 5>, mc::ix::Dims<6, 3, 1>, "
             "mc::ix::Dims<60, 3, 1>, mc::ix::Dims<100, 5, 1>, mc::ix::Dims<40, 1>, mc::ix::Dims<1>, "
             "mc::ix::Dims<10, 5, 1>, mc::ix::Dims<10, 5, 1>, mc::ix::Dims<15, 1>, mc::ix::Dims<20, 10, 5, 1>, "
             "mc::ix::Dims<10, 5, 1>, mc::ix::Dims<10, 5, 1>>");
  Tensor y(DType::float32, want[0].shape()), yh(DType::float32, want[1].shape()), yc(DType::float32, want[2].shape());
  K::Params p;
  p.x = x.raw();
  p.w = w.raw();
  p.r = r.raw();
  p.b = bias.raw();
  p.sequence_lens = lens.data<int32_t>();
  p.initial_h = h0.raw();
  p.initial_c = c0.raw();
  p.p = peep.raw();
  p.y = y.mutable_raw();
  p.y_h = yh.mutable_raw();
  p.y_c = yc.mutable_raw();
  p.clip = 2.5f;
  for (int d = 0; d < 2; ++d) {
    p.act[d][0] = mc::rnn::Act{2, 0.0f, 0.0f};  // Sigmoid, Tanh, Tanh: the defaults
    p.act[d][1] = mc::rnn::Act{1, 0.0f, 0.0f};
    p.act[d][2] = mc::rnn::Act{1, 0.0f, 0.0f};
  }
  REQUIRE(mc::launch(mc::rnn::recurrence_kernel<K>, K::grid(), K::block(), K::kSmemBytes, nullptr, p) == cudaSuccess);
  check_close(y, want[0]);
  check_close(yh, want[1]);
  check_close(yc, want[2]);
}
