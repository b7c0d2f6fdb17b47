// `modelc run-reference --input` with files that are not what they claim: a FIFO, /dev/zero
// through a symlink, a directory, a socket, a header promising more than the file holds, a file
// larger than the input's: each exit 1 at once, naming the file, with no output written.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/tensor_io.h"
#include "tests/cli/run_modelc.h"
#include "tests/runtime_stub/hostile_files.h"

using namespace modelc;
using namespace modelc::test;

namespace {

// A .npy file from a header dict and data bytes (version 1.0, the header padded as numpy pads it).
std::string npy_file(const std::string& dict, const std::string& data) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

}  // namespace

TEST_CASE("cli: run-reference refuses a hostile --input file at once with exit 1, naming the file") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(relu_model({"2", "3"})));
  struct Case {
    std::string file, message;
  };
  std::vector<Case> cases;
  for (const std::string ext : {".npy", ".pb"}) {
    for (const HostileFile& h : hostile_files(dir, ext)) cases.push_back({h.path, h.kind});
  }
  // A header promising 2^40 float32 elements, 16 bytes of data.
  write_bytes(dir / "huge_header.npy",
              npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(16, '\0')));
  cases.push_back({dir / "huge_header.npy",
                   "truncated .npy file: float32[1099511627776] needs 4398046511104 data bytes, the file has 16"});
  // Far more data than the float32[2x3] input can take.
  write_npy(dir / "large.npy", Tensor::from_f64(DType::float32, {100000}, std::vector<double>(100000, 0.5)));
  cases.push_back({dir / "large.npy", "is 400128 bytes, more than a .npy file of a float32[2x3] tensor can be"});
  // A .pb whose dims multiply past any file.
  onnx::TensorProto dims;
  dims.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) dims.add_dims(int64_t{1} << 20);
  dims.set_raw_data(std::string(24, '\0'));
  write_bytes(dir / "huge_dims.pb", dims.SerializeAsString());
  cases.push_back({dir / "huge_dims.pb", "shape 1048576x1048576x1048576x1048576 is too large"});

  for (const Case& c : cases) {
    CAPTURE(c.file);
    const Result r = run_modelc(dir, "run-reference m.onnx -o out --input " + shell_quoted("x=" + c.file), 20);
    CAPTURE(r.err);
    CHECK(r.code == 1);
    CHECK(has(r.err, "error: file '" + c.file + "': " + c.message));
    CHECK_FALSE(std::filesystem::exists(dir.path / "out"));
  }
}
