// tests/frontend/onnx_builder.h — small ONNX models built in C++ for the
// frontend and CLI tests (no binary fixtures), and a temporary folder.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace modelc::test {

/// A temporary folder, removed with everything in it at the end of the scope.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "modelc_test_XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::string str() const { return path.string(); }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Dims as strings: "3" is a fixed dim, "N" a dim_param, "" a dim with neither.
inline void set_type(onnx::ValueInfoProto* v, int elem_type, const std::vector<std::string>& dims, bool has_shape = true) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!has_shape) return;
  auto* shape = tt->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = shape->add_dim();
    if (d.empty()) continue;
    if (d.find_first_not_of("0123456789") == std::string::npos) {
      dim->set_dim_value(std::stoll(d));
    } else {
      dim->set_dim_param(d);
    }
  }
}

inline onnx::ValueInfoProto* add_input(onnx::ModelProto& m, const std::string& name, const std::vector<std::string>& dims,
                                       int elem_type = onnx::TensorProto::FLOAT) {
  auto* v = m.mutable_graph()->add_input();
  v->set_name(name);
  set_type(v, elem_type, dims);
  return v;
}

inline onnx::ValueInfoProto* add_output(onnx::ModelProto& m, const std::string& name, const std::vector<std::string>& dims,
                                        int elem_type = onnx::TensorProto::FLOAT) {
  auto* v = m.mutable_graph()->add_output();
  v->set_name(name);
  set_type(v, elem_type, dims);
  return v;
}

inline onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

/// A float32 TensorProto with raw_data.
inline onnx::TensorProto float_tensor(const std::string& name, const Shape& dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

/// An empty model: IR version 8, the default domain at `opset`.
inline onnx::ModelProto empty_model(int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("modelc-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

/// y = Relu(x), x and y of `dims`.
inline onnx::ModelProto relu_model(const std::vector<std::string>& dims = {"2", "3"}, int opset = 13) {
  onnx::ModelProto m = empty_model(opset);
  add_input(m, "x", dims);
  add_output(m, "y", dims);
  add_node(m, "Relu", {"x"}, {"y"});
  return m;
}

/// x [1, C, S, S] -> Conv 'conv' (C -> C, 3x3, pad 1, fixed weights in [-0.5, 0.5)) -> Relu 'relu'
/// -> y: one convolution the compile commands can put on tensor cores (--fp16) or INT8.
inline onnx::ModelProto conv_relu_model(int channels, int size) {
  const std::string c = std::to_string(channels), s = std::to_string(size);
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"1", c, s, s});
  add_output(m, "y", {"1", c, s, s});
  std::vector<float> w(static_cast<std::size_t>(channels) * channels * 9);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37 % 101) / 101.0 - 0.5);
  *m.mutable_graph()->add_initializer() = float_tensor("W", {channels, channels, 3, 3}, w);
  onnx::NodeProto* conv = add_node(m, "Conv", {"x", "W"}, {"c"}, "conv");
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  add_node(m, "Relu", {"c"}, {"y"}, "relu");
  return m;
}

inline std::string serialize(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

}  // namespace modelc::test
