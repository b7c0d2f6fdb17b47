// tests/templates/nvcc/indexing_nvcc.cu — instantiates the gather / scatter / scan / triangular
// templates (gather_scatter.cuh, scan.cuh, triangular.cuh) and elementwise_math.cuh's ops on every
// compute path they take (float, half, bfloat16, integers, bool, raw bits), so that nvcc compiles
// them all (no run):
//   nvcc -std=c++17 -arch=sm_75 -I runtime_stub -I templates -c tests/templates/nvcc/indexing_nvcc.cu
#include "data_movement.cuh"
#include "elementwise.cuh"
#include "gather_scatter.cuh"
#include "scan.cuh"
#include "triangular.cuh"

using mc::ew::Operand;
using mc::gs::Reduce;
using mc::ix::bf16;
using mc::ix::Dims;

namespace {

cudaError_t e = cudaSuccess;
cudaStream_t stream = nullptr;
void* y = nullptr;
const void* a = nullptr;
const void* b = nullptr;
const void* c = nullptr;
const int64_t* idx = nullptr;

template <class K>
void launch(void (*kernel)(typename K::Params), const typename K::Params& p) {
  if (e == cudaSuccess) e = mc::launch(kernel, K::grid(), K::block(), 0, stream, p);
}

template <class Op, class Y, class... X>
void ew(Op op = Op{}) {
  using K = mc::ew::Elementwise<Op, Dims<3, 4>, Operand<Y, Dims<4, 1>>, Operand<X, Dims<4, 1>>...>;
  const void* const xs[] = {a, b, c};
  typename K::Params p{y, {}, op};
  for (int i = 0; i < K::kInputs; ++i) p.x[i] = xs[i];
  launch<K>(mc::ew::elementwise_kernel<K>, p);
}

template <class T>
void float_math() {
  ew<mc::ew::Sin, T, T>();
  ew<mc::ew::Cos, T, T>();
  ew<mc::ew::Tan, T, T>();
  ew<mc::ew::Asin, T, T>();
  ew<mc::ew::Acos, T, T>();
  ew<mc::ew::Atan, T, T>();
  ew<mc::ew::Sinh, T, T>();
  ew<mc::ew::Cosh, T, T>();
  ew<mc::ew::Asinh, T, T>();
  ew<mc::ew::Acosh, T, T>();
  ew<mc::ew::Atanh, T, T>();
  ew<mc::ew::Round, T, T>();
  ew<mc::ew::Sign, T, T>();
  ew<mc::ew::IsNaN, bool, T>();
  ew<mc::ew::IsInf<true, false>, bool, T>();
  ew<mc::ew::Mod<true>, T, T, T>();
  ew<mc::ew::Softsign, T, T>();
  ew<mc::ew::Mish, T, T>();
  ew<mc::ew::Celu, T, T>({1.0f});
  ew<mc::ew::Gelu, T, T>();
  ew<mc::ew::GeluTanh, T, T>();
  ew<mc::ew::Activated<mc::ew::Add, mc::Act::mish>, T, T, T>();
  ew<mc::ew::Activated<mc::ew::Mul, mc::Act::celu>, T, T, T>();
  ew<mc::ew::Activated<mc::ew::Add, mc::Act::softsign>, T, T, T>();
}

template <class T>
void int_math() {
  ew<mc::ew::Sign, T, T>();
  ew<mc::ew::Mod<false>, T, T, T>();
  ew<mc::ew::Mod<true>, T, T, T>();
}

// T: raw bits (copies) or the element type (reductions); I: the indices' type.
template <class T, class I>
void gathers() {
  {
    using K = mc::gs::GatherElements<T, I, Dims<2, 3>, Dims<3, 1>, Dims<3, 1>, Dims<0, 1>, 4, 3>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y, a, b});
  }
  {
    using K = mc::gs::OneHot<T, I, 2, 5, 3, Dims<2, 3>, Dims<3, 1>, Dims<2, 5, 3>, Dims<15, 3, 1>, 1>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y, b, a});
  }
}

template <class T>
void gather_nd() {
  using K = mc::gs::GatherND<T, Dims<2, 3>, Dims<20, 0>, Dims<6, 2>, 2, 1, Dims<4, 5>, Dims<5, 1>, Dims<>, Dims<>,
                             Dims<6>, Dims<1>>;
  launch<K>(mc::gs::gather_scatter_kernel<K>, {y, a, idx});
}

template <class T, Reduce R, class I>
void scatters() {
  {
    using K = mc::gs::ScatterElements<T, I, R, Dims<3>, Dims<1>, Dims<1>, Dims<1>, 2, 3, 3, 4, 3>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y, a, b});
  }
  {
    using K = mc::gs::ScatterND<T, R, Dims<4>, Dims<3>, Dims<1>, 1, 1, Dims<5>, Dims<3>, Dims<3>, Dims<1>, Dims<1>>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y, a, idx});
  }
}

template <class T>
void scans() {
  {
    using K = mc::scan::CumSum<T, false, true, Dims<2>, Dims<12>, Dims<12>, 3, 4, 4, Dims<4>, Dims<1>, Dims<1>>;
    launch<K>(mc::scan::scan_kernel<K>, {y, a});
  }
  {
    using K = mc::scan::CumSum<T, true, false, Dims<>, Dims<>, Dims<>, 7, 1, 1, Dims<>, Dims<>, Dims<>>;
    launch<K>(mc::scan::scan_kernel<K>, {y, a});
  }
}

template <class T>
void nonzero() {
  using K = mc::scan::NonZero<T, Dims<3, 700>, Dims<700, 1>, 2100, 1>;
  launch<K>(mc::scan::scan_kernel<K>, {static_cast<int64_t*>(y), a});
}

template <class T>
void trilu() {
  {
    using K = mc::tri::Trilu<T, true, Dims<2, 5, 7>, Dims<35, 7, 1>, Dims<35, 1, 5>>;
    launch<K>(mc::tri::trilu_kernel<K>, {y, a, 1, nullptr});
  }
  {
    using K = mc::tri::Trilu<T, false, Dims<4, 4>, Dims<4, 1>, Dims<4, 1>>;
    launch<K>(mc::tri::trilu_kernel<K>, {y, a, 0, idx});
  }
}

}  // namespace

cudaError_t launch_all() {
  float_math<float>();
  float_math<__half>();
  float_math<bf16>();
  int_math<int8_t>();
  int_math<uint8_t>();
  int_math<int32_t>();
  int_math<int64_t>();
  gathers<uint8_t, int64_t>();
  gathers<uint16_t, int32_t>();
  gathers<uint32_t, int64_t>();
  gathers<uint64_t, int32_t>();
  {
    using K = mc::gs::OneHot<uint32_t, float, 2, 5, 3, Dims<6>, Dims<1>, Dims<30>, Dims<1>, 1>;
    launch<K>(mc::gs::gather_scatter_kernel<K>, {y, b, a});
  }
  gather_nd<uint16_t>();
  gather_nd<uint64_t>();
  scatters<uint32_t, Reduce::none, int64_t>();
  scatters<uint8_t, Reduce::none, int32_t>();
  scatters<float, Reduce::add, int64_t>();
  scatters<__half, Reduce::mul, int32_t>();
  scatters<bf16, Reduce::max, int64_t>();
  scatters<int64_t, Reduce::min, int64_t>();
  scatters<int8_t, Reduce::add, int64_t>();
  scatters<bool, Reduce::max, int64_t>();
  scans<float>();
  scans<__half>();
  scans<bf16>();
  scans<int32_t>();
  scans<int64_t>();
  nonzero<float>();
  nonzero<__half>();
  nonzero<bool>();
  nonzero<int64_t>();
  trilu<uint8_t>();
  trilu<uint16_t>();
  trilu<uint32_t>();
  trilu<uint64_t>();
  return e;
}
