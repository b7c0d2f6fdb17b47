// runtime_stub/npy.h and compare.h: the .npy / .pb reader and writer of the generated program and of
// modelc (compiler/io/tensor_io.cpp adapts it), its .pb decoding checked against libprotobuf and
// the frontend's TensorProto reading, and the output comparison.
#include <doctest/doctest.h>

#include <dirent.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "io/tensor_io.h"
#include "onnx/onnx_pb.h"
#include "runtime_stub/compare.h"
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

template <class T>
mc_npy::Array typed(int dtype, std::vector<int64_t> shape, const std::vector<T>& v) {
  mc_npy::Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(v.size() * sizeof(T));
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mc_npy::Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A TensorProto of `dtype` with `values` in int32_data.
onnx::TensorProto in_int32_data(onnx::TensorProto::DataType dtype, const std::vector<int64_t>& dims,
                                const std::vector<int32_t>& values) {
  onnx::TensorProto t;
  t.set_data_type(dtype);
  for (int64_t d : dims) t.add_dims(d);
  for (int32_t v : values) t.add_int32_data(v);
  return t;
}

// A .npy file with a hand-written header (version major.0).
std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  std::string h = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}

}  // namespace

TEST_CASE("npy.h: encode/decode round trip for every dtype") {
  std::mt19937 rng(7);
  const std::vector<int> dtypes = {mc_npy::kFloat32, mc_npy::kFloat16, mc_npy::kFloat64, mc_npy::kInt64,
                                   mc_npy::kInt32,   mc_npy::kInt16,   mc_npy::kInt8,    mc_npy::kUint64,
                                   mc_npy::kUint32,  mc_npy::kUint16,  mc_npy::kUint8,   mc_npy::kBool};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {1, 3, 2, 2}, {0, 4}};
  for (int dt : dtypes) {
    for (const auto& shape : shapes) {
      mc_npy::Array a;
      a.dtype = dt;
      a.shape = shape;
      a.data.resize(a.numel() * mc_npy::dtype_size(dt));
      for (auto& b : a.data) b = static_cast<unsigned char>(rng());
      if (dt == mc_npy::kBool) {
        for (auto& b : a.data) b &= 1;
      }
      const std::string bytes = mc_npy::encode_npy(a);
      CAPTURE(mc_npy::type_str(dt, shape));
      CHECK(bytes.size() % 64 == a.data.size() % 64);  // header padded to 64 bytes
      const mc_npy::Array back = mc_npy::decode_npy(bytes, "x.npy");
      CHECK(back.dtype == dt);
      CHECK(back.shape == shape);
      CHECK(back.data == a.data);
    }
  }
}

TEST_CASE("npy.h: header forms numpy writes: versions 2.0/3.0, Fortran order of a vector, one-byte orders") {
  const std::string data(24, '\0');
  auto a = mc_npy::decode_npy(npy_bytes(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data), "v2");
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  a = mc_npy::decode_npy(npy_bytes(3, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (6,)}", data), "v3");
  CHECK(a.dtype == mc_npy::kInt32);
  a = mc_npy::decode_npy(npy_bytes(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (1, 3, 1), }", data), "f");
  CHECK(a.shape == std::vector<int64_t>{1, 3, 1});
  a = mc_npy::decode_npy(npy_bytes(1, "{'shape': (3L,), 'fortran_order': False, 'descr': '<u1'}", "abc"), "py2");
  CHECK(a.dtype == mc_npy::kUint8);
  a = mc_npy::decode_npy(npy_bytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x02\x01", 3)), "b");
  CHECK(a.data == std::vector<unsigned char>{0, 1, 1});  // bools normalised to 0/1
  a = mc_npy::decode_npy(npy_bytes(1, "{'descr': '<i1', 'fortran_order': False, 'shape': (), }", "\x05"), "s");
  CHECK(a.shape.empty());
  CHECK(a.numel() == 1);
}

TEST_CASE("npy.h: malformed, truncated and unsupported .npy files are clear errors") {
  const std::string good = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                     std::string(24, '\0'));
  CHECK(has(error_of([&] { mc_npy::decode_npy("hello world", "a.npy"); }), "a.npy: not a .npy file"));
  CHECK(has(error_of([&] { mc_npy::decode_npy("", "a.npy"); }), "a.npy: empty file (not a .npy file)"));
  CHECK(has(error_of([&] { mc_npy::decode_npy(good.substr(0, 8), "a.npy"); }), "truncated .npy file"));
  CHECK(has(error_of([&] { mc_npy::decode_npy(good.substr(0, 40), "a.npy"); }), "truncated .npy file: the header"));
  CHECK(has(error_of([&] { mc_npy::decode_npy(good.substr(0, good.size() - 1), "a.npy"); }),
            "truncated .npy file: float32[2x3] needs 24 data bytes, the file has 23"));
  CHECK(has(error_of([&] { mc_npy::decode_npy(good + "x", "a.npy"); }), "extra bytes"));
  // Every truncation is an error (never a crash or a short array).
  for (std::size_t n = 0; n < good.size(); ++n) {
    CHECK(has(error_of([&] { mc_npy::decode_npy(good.substr(0, n), "a.npy"); }), "a.npy: "));
  }
  std::string v9 = good;
  v9[6] = 9;
  CHECK(has(error_of([&] { mc_npy::decode_npy(v9, "a.npy"); }), "version 9.0 is not supported"));
  auto header_error = [](const std::string& dict, const std::string& data = std::string(24, '\0')) {
    return error_of([&] { mc_npy::decode_npy(npy_bytes(1, dict, data), "h.npy"); });
  };
  CHECK(has(header_error("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"), "dtype '<c8' is not supported"));
  CHECK(has(header_error("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }"), "big-endian"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"), "Fortran-order"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': False}"), "are required"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"), "unexpected key"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }"), "non-negative integer"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
            "too large"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}"),
            "too large"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,)}"), "malformed .npy header"));
  CHECK(has(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} junk"), "after the closing"));
  CHECK(has(header_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}"), "repeats"));
  CHECK(has(header_error("{'descr': '<U4', 'fortran_order': False, 'shape': (6,)}"), "dtype '<U4' is not supported"));
  // At most 2^49 elements (as the compiler has always allowed), whatever the file holds.
  CHECK(has(header_error("{'descr': '|u1', 'fortran_order': False, 'shape': (33554432, 33554432)}"),
            "h.npy: shape 33554432x33554432 is too large"));
  CHECK(has(header_error("{'descr': '|u1', 'fortran_order': False, 'shape': (9007199254740992, 0)}"),
            "h.npy: shape 9007199254740992x0 is too large"));
  CHECK(mc_npy::decode_npy(npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1048576, 0)}", ""), "z")
            .numel() == 0);
}

TEST_CASE("npy.h: Error keeps the file, the message and the hint apart") {
  const std::string dict = "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }";
  try {
    mc_npy::decode_npy(npy_bytes(1, dict, std::string(4, '\0')), "b.npy");
    FAIL("big-endian data was read");
  } catch (const mc_npy::Error& e) {
    CHECK(e.file() == "b.npy");
    CHECK(e.message() == "big-endian data ('>f4') is not supported");
    CHECK(e.hint() == "save the array little-endian: np.save(f, a.astype(a.dtype.newbyteorder('<')))");
    CHECK(std::string(e.what()) == "b.npy: " + e.message() + "; " + e.hint());
  }
  mc_npy::Array bf;
  bf.dtype = mc_npy::kBfloat16;
  bf.shape = {1};
  bf.data = {0x80, 0x3f};
  try {
    mc_npy::encode_npy(bf);
    FAIL("bfloat16 was written as .npy");
  } catch (const mc_npy::Error& e) {
    CHECK(e.file().empty());
    CHECK(std::string(e.what()) ==
          "cannot write a bfloat16 tensor as .npy: numpy has no such dtype; cast the tensor to float32 first");
  }
  CHECK(mc_npy::Error("", "m").what() == std::string("m"));
}

TEST_CASE("npy.h: write_npy is atomic and leaves no temporary file; errors name the file") {
  TempDir dir;
  const std::string path = dir / "y.npy";
  mc_npy::write_npy(path, f32({2}, {1.5f, -2.0f}));
  mc_npy::write_npy(path, f32({3}, {1, 2, 3}));  // replaces
  const mc_npy::Array a = mc_npy::read(path);
  CHECK(a.shape == std::vector<int64_t>{3});
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    ++files;
    CHECK(e.path().filename() == "y.npy");
  }
  CHECK(files == 1);
  CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::others_read) !=
        std::filesystem::perms::none);
  CHECK(has(error_of([&] { mc_npy::write_npy(dir / "missing/y.npy", f32({1}, {1})); }), "missing/y.npy: cannot create"));
  mc_npy::Array bad = f32({2}, {1});
  CHECK(has(error_of([&] { mc_npy::write_npy(dir / "z.npy", bad); }), "cannot write an array of 4 bytes"));
  CHECK(!std::filesystem::exists(dir / "z.npy"));
  CHECK(has(error_of([&] { mc_npy::read(dir / "nope.npy"); }), "nope.npy: cannot open"));
  CHECK(has(error_of([&] { mc_npy::read(dir / "noext"); }), "unknown tensor file type (no extension)"));
  CHECK(has(error_of([&] { mc_npy::read(dir / "x.d/y.TXT"); }), "unknown tensor file type '.txt': expected a .npy"));
  std::filesystem::create_directory(dir / "d.npy");
  CHECK(has(error_of([&] { mc_npy::read(dir / "d.npy"); }), "is a directory"));
}

TEST_CASE("npy.h: .pb TensorProto decoding: raw, typed packed and unpacked fields, every dtype") {
  auto decode = [](const onnx::TensorProto& t) { return mc_npy::decode_pb(t.SerializeAsString(), "t.pb"); };
  onnx::TensorProto t;
  t.set_name("X");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(2);
  for (float v : {1.0f, -2.5f, 3.25f, 0.0f}) t.add_float_data(v);
  mc_npy::Array a = decode(t);
  CHECK(a.name == "X");
  CHECK(a.dtype == mc_npy::kFloat32);
  CHECK(a.shape == std::vector<int64_t>{2, 2});
  CHECK(a.data == f32({2, 2}, {1.0f, -2.5f, 3.25f, 0.0f}).data);

  onnx::TensorProto i64;
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_dims(3);
  for (int64_t v : {int64_t(-1), int64_t(5), std::numeric_limits<int64_t>::min()}) i64.add_int64_data(v);
  CHECK(decode(i64).data == typed<int64_t>(7, {3}, {-1, 5, std::numeric_limits<int64_t>::min()}).data);

  onnx::TensorProto i32;
  i32.set_data_type(onnx::TensorProto::INT32);
  i32.add_dims(2);
  i32.add_int32_data(-7);
  i32.add_int32_data(std::numeric_limits<int32_t>::max());
  CHECK(decode(i32).data == typed<int32_t>(6, {2}, {-7, std::numeric_limits<int32_t>::max()}).data);

  onnx::TensorProto h;
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_dims(2);
  h.add_int32_data(0x3c00);
  h.add_int32_data(0xc000);
  CHECK(decode(h).data == typed<uint16_t>(10, {2}, {0x3c00, 0xc000}).data);

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {1, 0, 1}) b.add_int32_data(v);
  CHECK(decode(b).data == std::vector<unsigned char>{1, 0, 1});

  onnx::TensorProto i8;
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(2);
  i8.add_int32_data(-128);
  i8.add_int32_data(127);
  CHECK(decode(i8).data == std::vector<unsigned char>{0x80, 0x7f});

  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::UINT8);
  raw.set_raw_data(std::string("\x01\x02\x03", 3));
  raw.add_dims(3);
  CHECK(decode(raw).data == std::vector<unsigned char>{1, 2, 3});

  onnx::TensorProto scalar;
  scalar.set_data_type(onnx::TensorProto::FLOAT);
  scalar.add_float_data(4.0f);
  a = decode(scalar);
  CHECK(a.shape.empty());
  CHECK(a.data == f32({}, {4.0f}).data);

  // Unpacked repeated fields (proto2 writers may emit them): dims 2 as two varints, float_data as
  // fixed32 fields, data_type after the data.
  std::string bytes;
  bytes += "\x08\x02";                                   // dims: 2
  bytes += std::string("\x25\x00\x00\x80\x3f", 5);       // float_data: 1.0 (fixed32)
  bytes += std::string("\x25\x00\x00\x00\x40", 5);       // float_data: 2.0
  bytes += "\x10\x01";                                   // data_type: FLOAT
  bytes += std::string("\x62\x03" "doc", 5);             // doc_string (skipped)
  a = mc_npy::decode_pb(bytes, "u.pb");
  CHECK(a.shape == std::vector<int64_t>{2});
  CHECK(a.data == f32({2}, {1.0f, 2.0f}).data);
}

TEST_CASE("npy.h: malformed, truncated and unsupported .pb files are clear errors") {
  onnx::TensorProto t;
  t.set_name("X");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(4);
  t.set_raw_data(std::string(16, '\x01'));
  const std::string good = t.SerializeAsString();
  // Every truncation is an error or, when cut between fields, a shorter but consistent message:
  // never a crash, never data of the wrong size.
  for (std::size_t n = 0; n < good.size(); ++n) {
    try {
      const mc_npy::Array a = mc_npy::decode_pb(good.substr(0, n), "t.pb");
      CHECK(a.data.size() == a.numel() * mc_npy::dtype_size(a.dtype));
    } catch (const mc_npy::Error& e) {
      CHECK(has(e.what(), "t.pb: "));
    }
  }
  const std::size_t raw_at = good.find(std::string(16, '\x01'));
  REQUIRE(raw_at != std::string::npos);
  CHECK(has(error_of([&] { mc_npy::decode_pb(good.substr(0, raw_at + 8), "t.pb"); }), "truncated in a length"));
  CHECK(has(error_of([&] { mc_npy::decode_pb("", "t.pb"); }), "no data type, no data"));
  CHECK(has(error_of([&] { mc_npy::decode_pb("\x93NUMPY garbage", "t.pb"); }), "t.pb: not a valid serialized"));

  onnx::TensorProto short_raw = t;
  short_raw.set_raw_data(std::string(12, '\0'));
  CHECK(has(error_of([&] { mc_npy::decode_pb(short_raw.SerializeAsString(), "t.pb"); }),
            "t.pb: truncated tensor 'X': float32[4] needs 16 bytes of raw_data, the file has 12"));
  onnx::TensorProto few = t;
  few.clear_raw_data();
  few.add_float_data(1);
  CHECK(has(error_of([&] { mc_npy::decode_pb(few.SerializeAsString(), "t.pb"); }),
            "needs 4 values in float_data, the file has 1"));
  onnx::TensorProto both = t;
  both.add_float_data(1);
  CHECK(has(error_of([&] { mc_npy::decode_pb(both.SerializeAsString(), "t.pb"); }),
            "tensor 'X' stores its data in both raw_data and float_data"));
  onnx::TensorProto cpx;
  cpx.set_data_type(onnx::TensorProto::COMPLEX64);
  cpx.add_dims(1);
  cpx.add_float_data(1.0f);
  cpx.add_float_data(2.0f);
  CHECK(has(error_of([&] { mc_npy::decode_pb(cpx.SerializeAsString(), "t.pb"); }),
            "t.pb: tensor has dtype complex64, which is not supported (float32, float16, bfloat16, float64, the 8-, "
            "16-, 32- and 64-bit integers and bool are)"));
  onnx::TensorProto str;
  str.set_data_type(onnx::TensorProto::STRING);
  str.add_string_data("a");
  CHECK(has(error_of([&] { mc_npy::decode_pb(str.SerializeAsString(), "t.pb"); }), "tensor has dtype string"));
  onnx::TensorProto ext = t;
  ext.clear_raw_data();
  ext.set_data_location(onnx::TensorProto::EXTERNAL);
  CHECK(has(error_of([&] { mc_npy::decode_pb(ext.SerializeAsString(), "t.pb"); }), "external data"));
  onnx::TensorProto wrong_field;
  wrong_field.set_data_type(onnx::TensorProto::INT64);
  wrong_field.add_dims(1);
  wrong_field.add_int32_data(1);
  CHECK(has(error_of([&] { mc_npy::decode_pb(wrong_field.SerializeAsString(), "t.pb"); }),
            "tensor is int64 but stores its data in int32_data (expected int64_data or raw_data)"));
  onnx::TensorProto neg = t;
  neg.set_dims(0, -4);
  CHECK(has(error_of([&] { mc_npy::decode_pb(neg.SerializeAsString(), "t.pb"); }), "negative dimension"));
  CHECK(has(error_of([&] { mc_npy::decode_pb(std::string("\x10\x01\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 14), "t.pb"); }),
            "t.pb: "));
  CHECK(has(error_of([&] { mc_npy::decode_pb(std::string("\x7f", 1), "t.pb"); }), "field 15 has wire type 7"));
}

TEST_CASE("npy.h: a header promising more than the file holds is refused before anything is allocated") {
  TempDir dir;
  // A .npy of float32[2^40] (4 TiB) holding 16 bytes: refused by the byte count, not by memory.
  const std::string big = dir / "big.npy";
  modelc::test::write_bytes(big, npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }",
                                           std::string(16, '\0')));
  CHECK(error_of([&] { mc_npy::read(big); }) ==
        big + ": truncated .npy file: float32[1099511627776] needs 4398046511104 data bytes, the file has 16");
  CHECK(has(error_of([&] { mc_npy::decode_npy(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                                                           "(1048576, 1048576, 1048576, 1048576), }", ""), "o.npy"); }),
            "o.npy: shape 1048576x1048576x1048576x1048576 is too large"));
  std::string dims65 = "(";
  for (int i = 0; i < 65; ++i) dims65 += "1, ";
  CHECK(has(error_of([&] { mc_npy::decode_npy(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                                                           dims65 + "), }", std::string(4, '\0')), "r.npy"); }),
            "r.npy: the shape has more than 64 dimensions"));

  // .pb: a dims product past any file, raw_data and typed fields shorter than the dims.
  onnx::TensorProto huge;
  huge.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) huge.add_dims(int64_t{1} << 20);
  huge.set_raw_data(std::string(16, '\0'));
  const std::string huge_pb = dir / "huge.pb";
  modelc::test::write_bytes(huge_pb, huge.SerializeAsString());
  CHECK(error_of([&] { mc_npy::read(huge_pb); }) ==
        huge_pb + ": shape 1048576x1048576x1048576x1048576 is too large");
  onnx::TensorProto tb;
  tb.set_data_type(onnx::TensorProto::FLOAT);
  tb.add_dims(int64_t{1} << 40);
  tb.set_raw_data(std::string(16, '\0'));
  CHECK(error_of([&] { mc_npy::decode_pb(tb.SerializeAsString(), "tb.pb"); }) ==
        "tb.pb: truncated tensor: float32[1099511627776] needs 4398046511104 bytes of raw_data, the file has 16");
  tb.clear_raw_data();
  for (int i = 0; i < 4; ++i) tb.add_int32_data(0);
  tb.set_data_type(onnx::TensorProto::INT8);
  CHECK(error_of([&] { mc_npy::decode_pb(tb.SerializeAsString(), "tb.pb"); }) ==
        "tb.pb: truncated tensor: int8[1099511627776] needs 1099511627776 values in int32_data, the file has 4");
  // More dims than any tensor has: refused while read (each would be 8 bytes from 1 in the file).
  onnx::TensorProto ranked;
  ranked.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 1000; ++i) ranked.add_dims(1);
  ranked.add_float_data(1);
  CHECK(error_of([&] { mc_npy::decode_pb(ranked.SerializeAsString(), "r.pb"); }) ==
        "r.pb: the shape has more than 64 dimensions, which is not supported");
}

TEST_CASE("npy.h: read(path, dtype, shape) refuses, unread, a file larger than that tensor's file can be") {
  TempDir dir;
  const std::vector<int64_t> shape = {2, 3};
  // .npy: the data and the largest version 1.0 header.
  CHECK(mc_npy::max_file_bytes("x.npy", mc_npy::kFloat32, shape) == 10 + 65535 + 24);
  // .pb: every value a key and a 10-byte varint at most, and the same allowance for the rest.
  CHECK(mc_npy::max_file_bytes("x.pb", mc_npy::kInt8, shape) == 65545 + 6 * 11);
  CHECK(mc_npy::max_file_bytes("x.PB", mc_npy::kFloat32, {0}) == 65545);
  CHECK(has(error_of([&] { mc_npy::max_file_bytes("x.txt", mc_npy::kFloat32, shape); }), "unknown tensor file type"));

  const std::string big = dir / "big.npy";
  mc_npy::write_npy(big, f32({1000, 100}, std::vector<float>(100000, 1.0f)));
  CHECK(mc_npy::read(big).shape == std::vector<int64_t>{1000, 100});  // no limit but the file's size
  CHECK(error_of([&] { mc_npy::read(big, mc_npy::kFloat32, shape); }) ==
        big + ": is 400128 bytes, more than a .npy file of a float32[2x3] tensor can be (65569 bytes)");
  // A larger .npy of the right tensor: a version 1.0 header padded to its 65535 bytes is the most
  // the limit allows; one byte more (a version 2.0 header) is refused.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  auto padded = [&](int major) {  // a header of 65535 bytes (not a multiple of 64: numpy reads it)
    std::string b("\x93NUMPY", 6);
    b += static_cast<char>(major);
    b += '\0';
    b += major == 1 ? std::string("\xff\xff", 2) : std::string("\xff\xff\0\0", 4);
    return b + dict + std::string(65535 - 1 - dict.size(), ' ') + '\n' + std::string(24, '\0');
  };
  const std::string at_limit = dir / "at_limit.npy";
  modelc::test::write_bytes(at_limit, padded(1));
  REQUIRE(std::filesystem::file_size(at_limit) == 65569);
  CHECK(mc_npy::read(at_limit, mc_npy::kFloat32, shape).shape == shape);
  const std::string past = dir / "past.npy";
  modelc::test::write_bytes(past, padded(2));
  CHECK(mc_npy::read(past).shape == shape);
  CHECK(error_of([&] { mc_npy::read(past, mc_npy::kFloat32, shape); }) ==
        past + ": is 65571 bytes, more than a .npy file of a float32[2x3] tensor can be (65569 bytes)");
  // A .pb holding a larger tensor than the input's.
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(100000);
  t.set_raw_data(std::string(400000, '\0'));
  const std::string pb = dir / "big.pb";
  modelc::test::write_bytes(pb, t.SerializeAsString());
  CHECK(has(error_of([&] { mc_npy::read(pb, mc_npy::kFloat32, shape); }),
            pb + ": is 400010 bytes, more than a .pb file of a float32[2x3] tensor can be (65611 bytes)"));
}

TEST_CASE("npy.h: .pb data rules: bfloat16, int32_data ranges, exactly one data field, empty tensors") {
  auto decode = [](const onnx::TensorProto& t) { return mc_npy::decode_pb(t.SerializeAsString(), "t.pb"); };
  auto error = [&](const onnx::TensorProto& t) { return error_of([&] { decode(t); }); };
  onnx::TensorProto bf = in_int32_data(onnx::TensorProto::BFLOAT16, {2}, {0x3f80, 0xffff});
  mc_npy::Array a = decode(bf);
  CHECK(a.dtype == mc_npy::kBfloat16);
  CHECK(a.data == std::vector<unsigned char>{0x80, 0x3f, 0xff, 0xff});
  bf.clear_int32_data();
  bf.set_raw_data(std::string("\x80\x3f\x00\xc0", 4));
  CHECK(decode(bf).data == std::vector<unsigned char>{0x80, 0x3f, 0x00, 0xc0});
  CHECK(decode(in_int32_data(onnx::TensorProto::BOOL, {2}, {-7, 0})).data == std::vector<unsigned char>{1, 0});

  const std::vector<std::pair<onnx::TensorProto, std::string>> out_of_range = {
      {in_int32_data(onnx::TensorProto::BFLOAT16, {2}, {1, 0x10000}),
       "int32_data value 65536 at 1 is out of range for bfloat16"},
      {in_int32_data(onnx::TensorProto::FLOAT16, {1}, {-1}), "int32_data value -1 at 0 is out of range for float16"},
      {in_int32_data(onnx::TensorProto::UINT8, {2}, {255, 256}), "int32_data value 256 at 1 is out of range for uint8"},
      {in_int32_data(onnx::TensorProto::INT8, {1}, {-129}), "int32_data value -129 at 0 is out of range for int8"},
  };
  for (const auto& [t, why] : out_of_range) CHECK(has(error(t), "t.pb: tensor: " + why));
  onnx::TensorProto named = in_int32_data(onnx::TensorProto::INT8, {1}, {128});
  named.set_name("H");
  CHECK(has(error(named), "tensor 'H': int32_data value 128 at 0 is out of range for int8"));

  onnx::TensorProto two;
  two.set_data_type(onnx::TensorProto::FLOAT);
  two.add_dims(1);
  two.add_float_data(1);
  two.add_int32_data(1);
  CHECK(has(error(two), "tensor stores its data in both float_data and int32_data"));
  onnx::TensorProto dbl;
  dbl.set_data_type(onnx::TensorProto::FLOAT);
  dbl.add_dims(1);
  dbl.add_double_data(1);
  CHECK(has(error(dbl), "tensor is float32 but stores its data in double_data (expected float_data or raw_data)"));
  CHECK(has(error(in_int32_data(onnx::TensorProto::INT32, {3}, {})),
            "truncated tensor: int32[3] needs 3 values in int32_data, the file has 0"));
  a = decode(in_int32_data(onnx::TensorProto::INT32, {0, 5}, {}));
  CHECK(a.shape == std::vector<int64_t>{0, 5});
  CHECK(a.data.empty());
  onnx::TensorProto seg;
  seg.set_data_type(onnx::TensorProto::FLOAT);
  seg.mutable_segment()->set_begin(0);
  CHECK(has(error(seg), "segmented tensors"));
  onnx::TensorProto undefined;
  undefined.add_dims(1);
  undefined.add_float_data(1);
  CHECK(has(error(undefined), "tensor has dtype undefined, which is not supported"));
  CHECK(has(error_of([] { mc_npy::decode_pb(std::string("\x10\xff\xff\xff\xff\x0f", 6), "t.pb"); }),
            "tensor has dtype code 4294967295, which is not supported"));
}

TEST_CASE("npy.h: every ONNX node-test .pb file decodes as libprotobuf and the frontend's TensorProto reading do") {
  const std::string root = "/usr/share/libonnx-testdata/data/node";
  if (!std::filesystem::exists(root)) {
    MESSAGE("skipped: " << root << " not installed (Debian libonnx-testdata)");
    return;
  }
  int same = 0, refused_both = 0;
  for (const auto& c : std::filesystem::directory_iterator(root)) {
    const std::filesystem::path set = c.path() / "test_data_set_0";
    if (!std::filesystem::exists(set)) continue;
    for (const auto& f : std::filesystem::directory_iterator(set)) {
      if (f.path().extension() != ".pb") continue;
      const std::string path = f.path().string();
      CAPTURE(path);
      const std::string bytes = modelc::test::read_bytes(path);
      modelc::Tensor t;
      bool modelc_ok = true;
      try {
        onnx::TensorProto p;
        modelc_ok = p.ParseFromString(bytes);
        if (modelc_ok) t = modelc::tensor_from_proto(p, "tensor");
      } catch (const std::exception&) {  // modelc::Error, or bad_alloc for a huge bogus shape
        modelc_ok = false;
      }
      std::string err;
      mc_npy::Array a;
      try {
        a = mc_npy::decode_pb(bytes, path);
      } catch (const mc_npy::Error& e) {
        err = e.what();
      }
      if (!modelc_ok) {  // sequences, strings, doubles...: refused by both
        CHECK(!err.empty());
        ++refused_both;
        continue;
      }
      REQUIRE_MESSAGE(err.empty(), err);
      CHECK(a.dtype == static_cast<int>(t.dtype()));
      CHECK(a.shape == t.shape());
      CHECK(a.data == std::vector<unsigned char>(t.raw(), t.raw() + t.nbytes()));
      ++same;
    }
  }
  MESSAGE(same << " .pb files decoded identically, " << refused_both << " refused by both readers");
  CHECK(same > 1000);
}

TEST_CASE("npy.h: output file names as run-reference gives them") {
  CHECK(mc_npy::sanitize_file_name("out:0/x") == "out_0_x");
  CHECK(mc_npy::sanitize_file_name("..") == "___");
  CHECK(mc_npy::sanitize_file_name("") == "_");
  CHECK(mc_npy::sanitize_file_name(std::string(300, 'a')).size() == 200);
  CHECK(mc_npy::sanitize_file_name("../etc/passwd") == ".._etc_passwd");
  CHECK(mc_npy::sanitize_file_name("x y\xc3\xa9") == "x_y__");
  CHECK(mc_npy::sanitize_file_name("ok-name_1.2") == "ok-name_1.2");
  CHECK(mc_npy::sanitize_file_name(".") == "__");
  CHECK(mc_npy::output_file_names({"a:0", "a/0", "a_0", "b"}) ==
        std::vector<std::string>{"a_0.npy", "a_0_1.npy", "a_0_2.npy", "b.npy"});
}

TEST_CASE("compare.h: metrics, tolerances, NaN/Inf, integers, shape and dtype disagreements") {
  const mc_npy::Array want = f32({2, 2}, {1.0f, -2.0f, 0.0f, 4.0f});
  mc_npy::Comparison c = mc_npy::compare(want, want, 1e-3, 1e-5);
  CHECK(c.pass);
  CHECK(c.count == 4);
  CHECK(c.max_abs == 0);
  CHECK(c.rel_l2 == 0);

  const mc_npy::Array got = f32({2, 2}, {1.0005f, -2.0f, 1e-6f, 4.5f});
  c = mc_npy::compare(got, want, 1e-3, 1e-5);
  CHECK(!c.pass);
  CHECK(c.mismatches == 1);  // 1.0005 is within 1e-5 + 1e-3 * 1; 4.5 is not
  CHECK(c.first_mismatch == 3);
  CHECK(c.first_got == doctest::Approx(4.5));
  CHECK(c.max_abs == doctest::Approx(0.5));
  CHECK(c.max_rel == doctest::Approx(0.125));  // the 0 expected is left out of max_rel
  CHECK(c.rel_l2 == doctest::Approx(std::sqrt((0.0005 * 0.0005 + 1e-12 + 0.25) / 21.0)).epsilon(1e-4));
  const std::string line = mc_npy::comparison_line("Y", want, c);
  CHECK(has(line, "Y  float32[2x2]  max_abs 0.5  max_rel 0.125"));
  CHECK(has(line, "mismatches 1/4  FAIL (first mismatch at [1,1]: got 4.5, expected 4)"));
  CHECK(has(mc_npy::comparison_line("Y", want, mc_npy::compare(want, want, 0, 0)), "mismatches 0/4  PASS"));

  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK(mc_npy::compare(f32({3}, {nan, inf, -inf}), f32({3}, {nan, inf, -inf}), 0, 0).pass);
  c = mc_npy::compare(f32({3}, {nan, inf, 1}), f32({3}, {1, -inf, 1}), 1, 1);
  CHECK(c.mismatches == 2);
  CHECK(c.max_abs == 0);

  const auto i64 = [](std::vector<int64_t> v) { return typed<int64_t>(mc_npy::kInt64, {int64_t(v.size())}, v); };
  CHECK(!mc_npy::compare(i64({(int64_t(1) << 60) + 1}), i64({int64_t(1) << 60}), 1, 1).pass);  // exact for ints
  CHECK(mc_npy::compare(i64({3, 4}), i64({3, 4}), 0, 0).pass);
  c = mc_npy::compare(f32({4}, {1, 2, 3, 4}), want, 1, 1);
  CHECK(!c.pass);
  CHECK(has(c.problem, "shape differs: got float32[4], expected float32[2x2]"));
  c = mc_npy::compare(i64({1, 2, 3, 4}), f32({4}, {1, 2, 3, 4}), 1, 1);
  CHECK(has(c.problem, "dtype differs"));
  CHECK(has(mc_npy::comparison_line("Y", want, c), "FAIL"));
  CHECK(mc_npy::index_str({2, 3, 4}, 23) == "[1,2,3]");
  CHECK(mc_npy::index_str({}, 0) == "[]");
}

TEST_CASE("npy.h: float64 and the 16-, 32- and 64-bit integer types in .npy and .pb files") {
  auto decode = [](const onnx::TensorProto& t) { return mc_npy::decode_pb(t.SerializeAsString(), "t.pb"); };
  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(3);
  for (double v : {1.0 / 3, -2.5, 1e300}) d.add_double_data(v);
  mc_npy::Array a = decode(d);
  CHECK(a.dtype == mc_npy::kFloat64);
  CHECK(a.data == typed<double>(mc_npy::kFloat64, {3}, {1.0 / 3, -2.5, 1e300}).data);

  onnx::TensorProto u64;
  u64.set_data_type(onnx::TensorProto::UINT64);
  u64.add_dims(2);
  u64.add_uint64_data(std::numeric_limits<uint64_t>::max());
  u64.add_uint64_data(7);
  CHECK(decode(u64).data == typed<uint64_t>(mc_npy::kUint64, {2}, {std::numeric_limits<uint64_t>::max(), 7}).data);

  onnx::TensorProto u32;
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_dims(2);
  u32.add_uint64_data(4294967295u);
  u32.add_uint64_data(1);
  CHECK(decode(u32).data == typed<uint32_t>(mc_npy::kUint32, {2}, {4294967295u, 1}).data);
  u32.add_uint64_data(4294967296u);
  u32.set_dims(0, 3);
  CHECK(has(error_of([&] { decode(u32); }), "uint64_data value 4294967296 at 2 is out of range for uint32"));

  CHECK(decode(in_int32_data(onnx::TensorProto::INT16, {2}, {-32768, 32767})).data ==
        typed<int16_t>(mc_npy::kInt16, {2}, {-32768, 32767}).data);
  CHECK(decode(in_int32_data(onnx::TensorProto::UINT16, {2}, {0, 65535})).data ==
        typed<uint16_t>(mc_npy::kUint16, {2}, {0, 65535}).data);
  CHECK(has(error_of([&] { decode(in_int32_data(onnx::TensorProto::INT16, {1}, {32768})); }),
            "int32_data value 32768 at 0 is out of range for int16"));
  CHECK(has(error_of([&] { decode(in_int32_data(onnx::TensorProto::UINT16, {1}, {-1})); }),
            "int32_data value -1 at 0 is out of range for uint16"));
  onnx::TensorProto wrong = d;
  wrong.clear_double_data();
  wrong.add_float_data(1);
  wrong.add_float_data(2);
  wrong.add_float_data(3);
  CHECK(has(error_of([&] { decode(wrong); }),
            "tensor is float64 but stores its data in float_data (expected double_data or raw_data)"));
  // Unpacked double_data: fixed64 fields (wire type 1).
  std::string bytes = "\x08\x01";                                            // dims: 1
  bytes += std::string("\x51\x00\x00\x00\x00\x00\x00\xf0\x3f", 9);          // double_data: 1.0
  bytes += "\x10\x0b";                                                       // data_type: DOUBLE
  CHECK(mc_npy::decode_pb(bytes, "u.pb").data == typed<double>(mc_npy::kFloat64, {1}, {1.0}).data);

  // .npy descriptors, as numpy writes them.
  for (const auto& [descr, dtype] : std::vector<std::pair<std::string, int>>{
           {"<f8", mc_npy::kFloat64}, {"<i2", mc_npy::kInt16}, {"<u2", mc_npy::kUint16},
           {"<u4", mc_npy::kUint32}, {"<u8", mc_npy::kUint64}}) {
    const std::string what(descr);  // CAPTURE of a structured binding is C++20 (clang refuses it)
    CAPTURE(what);
    const std::size_t n = 3 * mc_npy::dtype_size(dtype);
    const mc_npy::Array b = mc_npy::decode_npy(
        npy_bytes(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3,), }", std::string(n, '\x01')),
        "x.npy");
    CHECK(b.dtype == dtype);
    CHECK(mc_npy::encode_npy(b).find("'descr': '" + descr + "'") != std::string::npos);
  }
}

TEST_CASE("compare.h: float64 within the tolerances, uint64 exactly beyond 2^53") {
  const auto d = typed<double>(mc_npy::kFloat64, {2}, {1.0, 2.0});
  CHECK(mc_npy::compare(typed<double>(mc_npy::kFloat64, {2}, {1.0 + 1e-6, 2.0}), d, 1e-3, 1e-5).pass);
  CHECK_FALSE(mc_npy::compare(typed<double>(mc_npy::kFloat64, {2}, {1.1, 2.0}), d, 1e-3, 1e-5).pass);
  const uint64_t big = (uint64_t{1} << 63) + 1;
  const auto u = typed<uint64_t>(mc_npy::kUint64, {1}, {big});
  CHECK(mc_npy::compare(u, u, 0, 0).pass);
  CHECK_FALSE(mc_npy::compare(typed<uint64_t>(mc_npy::kUint64, {1}, {big + 1}), u, 1, 1).pass);
}
