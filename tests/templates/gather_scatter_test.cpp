// The kernels of templates/gather_scatter.cuh, scan.cuh and triangular.cuh on the host emulation
// against the reference interpreter, in the cases the ONNX node tests leave out: NonZero over many
// chunks per thread (the prefix sums across the block, NaN counted), scatters whose updates collide
// (applied in index order by one thread), gathers and scans reading strided views, CumSum on FP16
// storage. (Every op's node tests run the printed kernels too: codegen_node_tests.)
#include <doctest/doctest.h>

#include "templates/gather_scatter.cuh"
#include "templates/scan.cuh"
#include "templates/triangular.cuh"
#include "tests/templates/elementwise_harness.h"

using namespace ew_test;
using mc::gs::Reduce;
using mc::ix::Dims;

namespace {

/// The transpose of a 2-D tensor (dense), so a kernel can read the original through strides.
Tensor transposed(const Tensor& t) {
  const int64_t r = t.shape()[0], c = t.shape()[1];
  const std::size_t es = dtype_size(t.dtype());
  Tensor out(t.dtype(), {c, r});
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) std::memcpy(out.mutable_raw() + (j * r + i) * es, t.raw() + (i * c + j) * es, es);
  }
  return out;
}

}  // namespace

TEST_CASE("NonZero kernel: 3 x 700 elements, chunks of 9 per thread, NaN non-zero, -1 after the count") {
  Tensor x = random_tensor(DType::float32, {3, 700}, 5, -1, 1);
  {
    std::vector<double> v = x.to_f64();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i % 3 != 0) v[i] = 0;  // about a third non-zero
    }
    v[4] = NAN;
    x = Tensor::from_f64(DType::float32, x.shape(), v);
  }
  OneNode c("NonZero", 13, {x});
  const Tensor want = c.reference1();
  REQUIRE(want.shape() == Shape{2, 2100});
  Tensor y = like(want);
  using K = mc::scan::NonZero<float, Dims<3, 700>, Dims<700, 1>, 2100, 1>;
  launch<K>(mc::scan::scan_kernel<K>, {y.mutable_data<int64_t>(), x.raw()});
  check_bits(y, want);
  CHECK(y.to_i64()[2] == 0);  // the third non-zero element is the NaN at (0, 4)
  CHECK(y.to_i64()[2100 + 2] == 4);
}

TEST_CASE("NonZero kernel: bool input read through strides, every element zero") {
  const Tensor m = random_tensor(DType::boolean, {6, 5}, 9);
  OneNode c("NonZero", 13, {m});
  const Tensor want = c.reference1();
  Tensor y = like(want);
  const Tensor mt = transposed(m);  // the kernel reads m's [6, 5] elements at strides (1, 6) of mt
  using K = mc::scan::NonZero<bool, Dims<6, 5>, Dims<1, 6>, 30, 1>;
  launch<K>(mc::scan::scan_kernel<K>, {y.mutable_data<int64_t>(), mt.raw()});
  check_bits(y, want);

  const Tensor zeros(DType::float32, {4, 4});
  OneNode z("NonZero", 13, {zeros});
  const Tensor want0 = z.reference1();
  Tensor y0 = like(want0);
  using K0 = mc::scan::NonZero<float, Dims<4, 4>, Dims<4, 1>, 16, 1>;
  launch<K0>(mc::scan::scan_kernel<K0>, {y0.mutable_data<int64_t>(), zeros.raw()});
  check_bits(y0, want0);
  CHECK(y0.to_i64() == std::vector<int64_t>(32, -1));
}

TEST_CASE("ScatterND kernel: colliding index rows are applied in order (add on FP32, mul on int64, none)") {
  const Tensor data = random_tensor(DType::float32, {5, 4}, 3);
  const Tensor idx = i64({6, 1}, {2, 0, 2, 4, 2, -1});  // row 2 three times, row 4 twice (-1 is 4)
  const Tensor upd = random_tensor(DType::float32, {6, 4}, 4);
  {
    OneNode c("ScatterND", 16, {data, idx, upd});
    c.n->set_attr_string("reduction", "add");
    const Tensor want = c.reference1();
    Tensor y = data.cast(DType::float32);  // Y holds the data (the copy launch)
    using K = mc::gs::ScatterND<float, Reduce::add, Dims<6>, Dims<4>, Dims<1>, 1, 1, Dims<5>, Dims<4>, Dims<4>,
                                Dims<1>, Dims<1>>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y.mutable_raw(), upd.raw(), idx.data<int64_t>()});
    check_close(y, want, 1e-6, 1e-6);
  }
  {
    const Tensor di = random_tensor(DType::int64, {5, 4}, 7, -5, 5);
    const Tensor ui = random_tensor(DType::int64, {6, 4}, 8, -5, 5);
    OneNode c("ScatterND", 16, {di, idx, ui});
    c.n->set_attr_string("reduction", "mul");
    const Tensor want = c.reference1();
    Tensor y = di.cast(DType::int64);
    using K = mc::gs::ScatterND<int64_t, Reduce::mul, Dims<6>, Dims<4>, Dims<1>, 1, 1, Dims<5>, Dims<4>, Dims<4>,
                                Dims<1>, Dims<1>>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y.mutable_raw(), ui.raw(), idx.data<int64_t>()});
    check_bits(y, want);
  }
  {  // no reduction, distinct rows: a thread per element
    const Tensor idx2 = i64({3, 1}, {3, 0, -1});
    const Tensor upd2 = random_tensor(DType::float32, {3, 4}, 11);
    OneNode c("ScatterND", 13, {data, idx2, upd2});
    const Tensor want = c.reference1();
    Tensor y = data.cast(DType::float32);
    using K = mc::gs::ScatterND<uint32_t, Reduce::none, Dims<3>, Dims<4>, Dims<1>, 1, 1, Dims<5>, Dims<4>, Dims<4>,
                                Dims<1>, Dims<1>>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y.mutable_raw(), upd2.raw(), idx2.data<int64_t>()});
    check_bits(y, want);
  }
}

TEST_CASE("ScatterElements kernel: duplicates along the axis in order, FP16 add in FP32") {
  const Tensor data = random_tensor(DType::float16, {3, 6}, 21);
  const Tensor idx = i64({3, 4}, {1, 1, 5, -1, 0, 2, 2, 2, 3, 3, 3, 0});
  const Tensor upd = random_tensor(DType::float16, {3, 4}, 22);
  OneNode c("ScatterElements", 16, {data, idx, upd});
  c.n->set_attr_int("axis", 1);
  c.n->set_attr_string("reduction", "add");
  const Tensor want = c.reference1();
  Tensor y = data.cast(DType::float16);
  // Lines: the 3 rows; 4 updates along the axis each.
  using K = mc::gs::ScatterElements<__half, int64_t, Reduce::add, Dims<3>, Dims<4>, Dims<4>, Dims<6>, 4, 1, 1, 6, 1>;
  launch<K>(mc::gs::gather_scatter_kernel<K>, {y.mutable_raw(), upd.raw(), idx.raw()});
  check_close(y, want, 4e-3, 4e-3);  // each sum rounded to FP16 in the kernel, once in the reference
}

TEST_CASE("GatherElements and GatherND kernels read a transposed view") {
  const Tensor x = random_tensor(DType::float32, {4, 5}, 31);
  const Tensor xt = transposed(x);  // x[i][j] is xt at i * 1 + j * 4
  {
    const Tensor idx = random_tensor(DType::int32, {4, 3}, 32, -5, 4);
    OneNode c("GatherElements", 13, {x, idx});
    c.n->set_attr_int("axis", 1);
    const Tensor want = c.reference1();
    Tensor y = like(want);
    using K = mc::gs::GatherElements<uint32_t, int32_t, Dims<4, 3>, Dims<3, 1>, Dims<3, 1>, Dims<1, 0>, 5, 4>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y.mutable_raw(), xt.raw(), idx.raw()});
    check_bits(y, want);
  }
  {
    const Tensor idx = i64({3, 2}, {3, 4, -1, 0, 0, -2});
    OneNode c("GatherND", 13, {x, idx});
    const Tensor want = c.reference1();
    Tensor y = like(want);
    using K = mc::gs::GatherND<uint32_t, Dims<3>, Dims<0>, Dims<2>, 2, 1, Dims<4, 5>, Dims<1, 4>, Dims<>, Dims<>,
                               Dims<3>, Dims<1>>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y.mutable_raw(), xt.raw(), idx.data<int64_t>()});
    check_bits(y, want);
  }
}

TEST_CASE("CumSum kernel: FP16 storage, reversed exclusive sums along a middle axis; int32 wraps") {
  const Tensor x = random_tensor(DType::float16, {2, 5, 3}, 41);
  OneNode c("CumSum", 14, {x, Tensor::scalar_i64(1)}, {1});
  c.n->set_attr_int("exclusive", 1);
  c.n->set_attr_int("reverse", 1);
  const Tensor want = c.reference1();
  Tensor y = like(want);
  using K = mc::scan::CumSum<__half, true, true, Dims<2>, Dims<15>, Dims<15>, 5, 3, 3, Dims<3>, Dims<1>, Dims<1>>;
  launch<K>(mc::scan::scan_kernel<K>, {y.mutable_raw(), x.raw()});
  check_close(y, want, 2e-3, 2e-3);

  const Tensor xi = Tensor::from_i64(DType::int32, {3}, {2147483647, 1, -5});
  OneNode ci("CumSum", 14, {xi, Tensor::scalar_i64(0)}, {1});
  const Tensor wi = ci.reference1();
  Tensor yi = like(wi);
  using KI = mc::scan::CumSum<int32_t, false, false, Dims<>, Dims<>, Dims<>, 3, 1, 1, Dims<>, Dims<>, Dims<>>;
  launch<KI>(mc::scan::scan_kernel<KI>, {yi.mutable_raw(), xi.raw()});
  check_bits(yi, wi);
}

TEST_CASE("Trilu kernel: k from Params or read at run time; bool and float16 bits") {
  const Tensor x = random_tensor(DType::float16, {2, 4, 6}, 51);
  for (int64_t k : {-2, 0, 3}) {
    CAPTURE(k);
    OneNode c("Trilu", 14, {x, Tensor::scalar_i64(k)}, {1});
    c.n->set_attr_int("upper", 0);
    const Tensor want = c.reference1();
    Tensor y = like(want);
    using K = mc::tri::Trilu<uint16_t, false, Dims<2, 4, 6>, Dims<24, 6, 1>, Dims<24, 6, 1>>;
    launch<K>(mc::tri::trilu_kernel<K>, {y.mutable_raw(), x.raw(), k, nullptr});
    check_bits(y, want);
    Tensor y2 = like(want);
    const Tensor kt = Tensor::scalar_i64(k);
    launch<K>(mc::tri::trilu_kernel<K>, {y2.mutable_raw(), x.raw(), 0, kt.data<int64_t>()});
    check_bits(y2, want);
  }
  const Tensor m = random_tensor(DType::boolean, {5, 5}, 52);
  OneNode c("Trilu", 14, {m});
  const Tensor want = c.reference1();
  Tensor y = like(want);
  using K = mc::tri::Trilu<uint8_t, true, Dims<5, 5>, Dims<5, 1>, Dims<5, 1>>;
  launch<K>(mc::tri::trilu_kernel<K>, {y.mutable_raw(), m.raw(), 0, nullptr});
  check_bits(y, want);
}
