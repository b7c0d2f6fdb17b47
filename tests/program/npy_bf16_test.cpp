// runtime_stub/npy.h's bfloat16 through float32 .npy files: widen_bfloat16 (exact),
// narrow_to_bfloat16 (round to nearest even, as compiler/ir/dtype.cpp), and read_input (a float32
// .npy or a bfloat16 .pb for a bfloat16 input; any other file as it is, for the caller to refuse).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ir/dtype.h"
#include "onnx/onnx_pb.h"
#include "runtime_stub/npy.h"
#include "tests/frontend/onnx_builder.h"

using modelc::test::TempDir;

namespace {

mc_npy::Array f32(std::vector<int64_t> shape, const std::vector<float>& v) {
  mc_npy::Array a;
  a.dtype = mc_npy::kFloat32;
  a.shape = std::move(shape);
  a.data.resize(v.size() * 4);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

std::vector<uint16_t> bits16(const mc_npy::Array& a) {
  std::vector<uint16_t> r(a.data.size() / 2);
  std::memcpy(r.data(), a.data.data(), a.data.size());
  return r;
}

}  // namespace

TEST_CASE("npy.h: float32 -> bfloat16 rounds to nearest even (as ir/dtype.cpp), bfloat16 -> float32 is exact") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> any;
  std::vector<float> v;
  for (int i = 0; i < 4096; ++i) {
    const uint32_t x = any(rng);
    float f;
    std::memcpy(&f, &x, 4);
    v.push_back(f);
  }
  v.insert(v.end(), {1.00390625f, 1.01171875f, INFINITY, -INFINITY, 0.0f, -0.0f, 3.4e38f});
  const mc_npy::Array b = mc_npy::narrow_to_bfloat16(f32({static_cast<int64_t>(v.size())}, v));
  CHECK(b.dtype == mc_npy::kBfloat16);
  const std::vector<uint16_t> got = bits16(b);
  for (std::size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got[i] == modelc::float_to_bfloat16(v[i]));
  }
  const mc_npy::Array w = mc_npy::widen_bfloat16(b);
  CHECK(w.dtype == mc_npy::kFloat32);
  CHECK(w.shape == b.shape);
  for (std::size_t i = 0; i < v.size(); ++i) {
    float f;
    std::memcpy(&f, &w.data[4 * i], 4);
    const float want = modelc::bfloat16_to_float(got[i]);
    CHECK(std::memcmp(&f, &want, 4) == 0);
  }
  CHECK(mc_npy::widen_bfloat16(f32({1}, {2.5f})).dtype == mc_npy::kFloat32);  // others unchanged
}

TEST_CASE("npy.h read_input: a bfloat16 input reads a float32 .npy (rounded) or a bfloat16 .pb") {
  TempDir dir;
  mc_npy::write_npy(dir / "x.npy", f32({2}, {1.00390625f, -3.0f}));
  const mc_npy::Array a = mc_npy::read_input(dir / "x.npy", mc_npy::kBfloat16, {2});
  CHECK(a.dtype == mc_npy::kBfloat16);
  CHECK(bits16(a) == std::vector<uint16_t>{0x3f80, 0xc040});

  onnx::TensorProto pb;
  pb.set_data_type(onnx::TensorProto::BFLOAT16);
  pb.add_dims(2);
  pb.add_int32_data(0x3f80);
  pb.add_int32_data(0xc040);
  modelc::test::write_bytes(dir / "x.pb", pb.SerializeAsString());
  const mc_npy::Array p = mc_npy::read_input(dir / "x.pb", mc_npy::kBfloat16, {2});
  CHECK(p.dtype == mc_npy::kBfloat16);
  CHECK(bits16(p) == bits16(a));

  // Anything else comes back as it is (the caller says what the input expects).
  mc_npy::Array h;
  h.dtype = mc_npy::kFloat16;
  h.shape = {2};
  h.data.assign(4, 0);
  mc_npy::write_npy(dir / "h.npy", h);
  CHECK(mc_npy::read_input(dir / "h.npy", mc_npy::kBfloat16, {2}).dtype == mc_npy::kFloat16);
  // A float32 input reads its file unchanged.
  CHECK(mc_npy::read_input(dir / "x.npy", mc_npy::kFloat32, {2}).dtype == mc_npy::kFloat32);
  // Another shape comes back as it is too (the caller refuses it).
  mc_npy::write_npy(dir / "big.npy", f32({3}, {1, 2, 3}));
  CHECK(mc_npy::read_input(dir / "big.npy", mc_npy::kBfloat16, {1}).shape == std::vector<int64_t>{3});
}
