// Tensor I/O (the adapter over runtime_stub/npy.h): .npy round trips and malformed files, TensorProto
// files, errors as modelc Errors naming the file.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "io/tensor_io.h"
#include "support/error.h"
#include "tests/frontend/onnx_builder.h"
#include "tests/runtime_stub/hostile_files.h"

using namespace modelc;
using namespace modelc::test;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A .npy file from its parts, for hand-made (and broken) headers.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string s("\x93NUMPY", 6);
  s += static_cast<char>(major);
  s += '\0';
  const uint32_t n = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
  return s + dict + data;
}

const std::string kTwoFloats("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f

}  // namespace

TEST_CASE("npy: byte-identical to numpy's np.save") {
  // np.save of np.array([[1,2,3],[4,5,6]], dtype=np.float32), and of np.array([True, False]).
  const std::string want = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(58, ' ') + "\n" +
                           std::string("\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@\x00\x00\xc0@", 24);
  CHECK(encode_npy(Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6})) == want);
  const std::string bools = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                            "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }" + std::string(60, ' ') + "\n" +
                            std::string("\x01\x00", 2);
  CHECK(encode_npy(Tensor::from_i64(DType::boolean, {2}, {1, 0})) == bools);
}

TEST_CASE("npy: round trip of every dtype, scalars and empty tensors") {
  const std::vector<DType> dtypes = {DType::float32, DType::float16, DType::int8,   DType::uint8,
                                     DType::int32,   DType::int64,   DType::boolean};
  const std::vector<Shape> shapes = {{}, {5}, {2, 3}, {1, 2, 1, 2}, {0, 3}};
  for (DType d : dtypes) {
    for (const Shape& s : shapes) {
      std::vector<double> v(static_cast<std::size_t>(num_elements(s)));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = d == DType::boolean ? static_cast<double>(i % 2) : static_cast<double>(i) - 2;
      if (d == DType::uint8) for (double& x : v) x = x < 0 ? 200 : x;
      const Tensor t = Tensor::from_f64(d, s, v);
      const std::string bytes = encode_npy(t);
      INFO(dtype_name(d) << " " << shape_str(s));
      const std::size_t header = bytes.size() - t.nbytes();
      CHECK(header % 64 == 0);
      const Tensor back = decode_npy(bytes, "t.npy");
      CHECK(back.dtype() == d);
      CHECK(back.shape() == s);
      CHECK(back.to_f64() == v);
    }
  }
  CHECK(has(error_of([] { encode_npy(Tensor::from_f64(DType::bfloat16, {1}, {1})); }), "bfloat16"));
}

TEST_CASE("npy: format versions 2.0 and 3.0, '<' for one-byte types, Python 2 headers") {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  for (int major : {2, 3}) {
    const Tensor t = decode_npy(npy(dict, kTwoFloats, major), "v.npy");
    CHECK(t.to_f64() == std::vector<double>{1, 2});
  }
  CHECK(decode_npy(npy("{'descr': '<i1', 'fortran_order': False, 'shape': (1,), }\n", "\xff"), "v.npy").to_f64() ==
        std::vector<double>{-1});
  // Double quotes, no trailing comma, any key order, 2L.
  CHECK(decode_npy(npy("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<f4\"}", kTwoFloats), "v.npy")
            .to_f64() == std::vector<double>{1, 2});
  // Fortran order with one non-1 dim is the same layout.
  CHECK(decode_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }", kTwoFloats), "v.npy").numel() == 2);
  // bool bytes other than 0/1 read as true.
  CHECK(decode_npy(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x00\x07", 2)), "b.npy")
            .to_i64() == std::vector<int64_t>{0, 1});
}

TEST_CASE("npy: every malformed or truncated file is an Error naming the file") {
  const std::string good = encode_npy(Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    CHECK(has(error_of([&] { decode_npy(good.substr(0, n), "cut.npy"); }), "file 'cut.npy'"));
  }
  CHECK(has(error_of([&] { decode_npy(good + "x", "long.npy"); }), "long.npy"));
  CHECK(has(error_of([&] { decode_npy("PK\x03\x04 a zip file", "z.npy"); }), "not a .npy file"));
  std::string v4 = good;
  v4[6] = 4;
  CHECK(has(error_of([&] { decode_npy(v4, "v.npy"); }), "version 4"));
  std::string huge_header = good;
  huge_header[8] = '\xff';
  CHECK(has(error_of([&] { decode_npy(huge_header, "h.npy"); }), "truncated"));

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", "big-endian"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "'<c8' is not supported"},
      {"{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", "not supported"},
      {"{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }", "not supported"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", "Fortran"},
      {"{'descr': '<f4', 'shape': (2,), }", "the keys 'descr', 'fortran_order' and 'shape' are required"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 'y'}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "repeats"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "non-negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3 }", "expected ','"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", "'fortran_order' is not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", "after the closing"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", "malformed"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", "too large"},
      {"['descr', '<f4']", "expected '{'"},
      {"", "unexpected end"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", "truncated"},
  };
  for (const auto& entry : bad) {
    const auto& dict = entry.first;  // not a structured binding: clang 14 cannot capture one
    const auto& why = entry.second;
    INFO(dict);
    const std::string e = error_of([&] { decode_npy(npy(dict, kTwoFloats), "bad.npy"); });
    CHECK(has(e, "file 'bad.npy'"));
    CHECK(has(e, why));
  }
}

TEST_CASE("npy files: atomic write, read back, errors name the file") {
  TempDir dir;
  const Tensor t = Tensor::from_f64(DType::int32, {3}, {1, -2, 3});
  write_npy(dir / "out.npy", t);
  write_npy(dir / "out.npy", t);  // overwrite
  CHECK(read_npy(dir / "out.npy").to_i64() == std::vector<int64_t>{1, -2, 3});
  CHECK(read_tensor_file(dir / "out.npy").dtype() == DType::int32);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);  // no temporary left behind
  CHECK(has(error_of([&] { write_npy(dir / "no/such/dir/x.npy", t); }), "x.npy"));
  CHECK(has(error_of([&] { write_npy(dir / "b.npy", Tensor::from_f64(DType::bfloat16, {1}, {1})); }), "file '"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "b.npy"));
  CHECK(has(error_of([&] { read_npy(dir / "missing.npy"); }), "missing.npy"));
  CHECK(has(error_of([&] { read_npy(dir.str()); }), "directory"));
  write_bytes(dir / "cut.npy", encode_npy(t).substr(0, 100));
  CHECK(has(error_of([&] { read_npy(dir / "cut.npy"); }), "cut.npy"));
  CHECK(has(error_of([&] { read_tensor_file(dir / "x.txt"); }), "'.txt'"));
}

TEST_CASE("tensor files meant for an input: only regular files, no larger than the input's file can be") {
  TempDir dir;
  const Deadline deadline(20);
  for (const std::string ext : {".npy", ".pb"}) {
    for (const HostileFile& h : hostile_files(dir, ext)) {
      CAPTURE(h.path);
      CHECK(error_of([&] { read_tensor_file(h.path, DType::float32, {2}); }) == "file '" + h.path + "': " + h.kind);
    }
  }
  write_npy(dir / "big.npy", Tensor::from_f64(DType::float32, {20000}, std::vector<double>(20000, 1.0)));
  CHECK(read_tensor_file(dir / "big.npy").shape() == Shape{20000});
  CHECK(error_of([&] { read_tensor_file(dir / "big.npy", DType::float32, {2}); }) ==
        "file '" + (dir / "big.npy") + "': is 80128 bytes, more than a .npy file of a float32[2] tensor can be " +
            "(65553 bytes)");
  write_npy(dir / "two.npy", Tensor::from_f32({2}, {1, 2}));
  CHECK(read_tensor_file(dir / "two.npy", DType::float32, {2}).to_f64() == std::vector<double>{1, 2});
}

TEST_CASE("TensorProto .pb files") {
  TempDir dir;
  onnx::TensorProto t = float_tensor("x", {2}, {1.5f, -2.f});
  std::string bytes;
  t.SerializeToString(&bytes);
  write_bytes(dir / "x.pb", bytes);
  const Tensor x = read_tensor_file(dir / "x.pb");
  CHECK(x.shape() == Shape{2});
  CHECK(x.to_f64() == std::vector<double>{1.5, -2});

  write_bytes(dir / "cut.pb", bytes.substr(0, bytes.size() - 3));
  CHECK(has(error_of([&] { read_tensor_pb(dir / "cut.pb"); }), "cut.pb"));
  write_bytes(dir / "empty.pb", "");
  CHECK(has(error_of([&] { read_tensor_pb(dir / "empty.pb"); }), "empty.pb"));
  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_double_data(1.0 / 3);
  d.SerializeToString(&bytes);
  write_bytes(dir / "d.pb", bytes);
  const Tensor dt = read_tensor_pb(dir / "d.pb");
  CHECK(dt.dtype() == DType::float64);
  CHECK(dt.to_f64() == std::vector<double>{1.0 / 3});
  onnx::TensorProto c;
  c.set_data_type(onnx::TensorProto::COMPLEX128);
  c.add_dims(1);
  c.add_double_data(1);
  c.add_double_data(2);
  c.SerializeToString(&bytes);
  write_bytes(dir / "c.pb", bytes);
  try {
    read_tensor_pb(dir / "c.pb");
    FAIL("a COMPLEX128 tensor was read");
  } catch (const Error& e) {
    CHECK(e.where().file == dir / "c.pb");
    CHECK(has(e.message(), "has dtype complex128, which is not supported"));
  }

  // bfloat16 reads from .pb (bit patterns in int32_data), though .npy cannot hold it.
  onnx::TensorProto bf;
  bf.set_data_type(onnx::TensorProto::BFLOAT16);
  bf.add_dims(2);
  bf.add_int32_data(0x3f80);  // 1.0
  bf.add_int32_data(0xc040);  // -3.0
  bf.SerializeToString(&bytes);
  write_bytes(dir / "bf.pb", bytes);
  const Tensor b = read_tensor_file(dir / "bf.pb");
  CHECK(b.dtype() == DType::bfloat16);
  CHECK(b.to_f64() == std::vector<double>{1, -3});
  CHECK(has(error_of([&] { write_npy(dir / "bf.npy", b); }), "file '" + dir / "bf.npy" + "': cannot write a bfloat16"));
}

TEST_CASE("npy errors keep their hint apart; Tensor <-> mc_npy::Array") {
  const auto error = [](const std::string& dict) {
    try {
      decode_npy(npy(dict, kTwoFloats), "e.npy");
    } catch (const Error& e) {
      return e;
    }
    return Error("no error");
  };
  Error e = error("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }");
  CHECK(e.where().file == "e.npy");
  CHECK(e.message() == "big-endian data ('>f4') is not supported");
  CHECK(has(e.hint(), "newbyteorder('<')"));
  CHECK(has(e.what(), "file 'e.npy': big-endian data ('>f4') is not supported\nhint: save the array little-endian"));
  CHECK(has(error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }").hint(), "np.ascontiguousarray"));
  e = Error("no error");
  try {
    encode_npy(Tensor::from_f64(DType::bfloat16, {1}, {1}));
  } catch (const Error& x) {
    e = x;
  }
  CHECK(e.where().file.empty());
  CHECK(e.message() == "cannot write a bfloat16 tensor as .npy: numpy has no such dtype");
  CHECK(e.hint() == "cast the tensor to float32 first");

  const Tensor t = Tensor::from_f64(DType::int64, {2, 1}, {7, -8});
  const mc_npy::Array a = to_array(t);
  CHECK(a.dtype == mc_npy::kInt64);
  CHECK(a.shape == std::vector<int64_t>{2, 1});
  CHECK(a.data.size() == 16);
  const Tensor back = from_array(a);
  CHECK(back.dtype() == DType::int64);
  CHECK(back.shape() == Shape{2, 1});
  CHECK(back.to_i64() == std::vector<int64_t>{7, -8});
}
