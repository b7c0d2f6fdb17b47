// compiler/frontend/bind_inputs.cpp — --bind NAME=FILE: a graph input fixed to a tensor file's
// data (LoadOptions::bind). The import then makes it a constant, exactly as it does with
// LoadOptions::input_values (which is what the conformance runners fill from a case's data): a
// shape tensor fed as an input (Reshape's shape, Slice's starts, Resize's scales, TopK's k, ...)
// becomes known at compile time, and the ops reading it fold.
#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include "frontend/import_detail.h"
#include "io/tensor_io.h"
#include "onnx/onnx_pb.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc::detail {

namespace {

Error bind_error(const std::string& file, const std::string& message, const std::string& hint = {}) {
  Error::Where w;
  w.file = file;
  return Error(w, message, hint);
}

std::string input_list(const std::vector<const onnx::ValueInfoProto*>& inputs) {
  std::string s;
  for (const auto* in : inputs) s += (s.empty() ? "'" : ", '") + in->name() + "'";
  return s.empty() ? "none" : s;
}

// "1x3x?x?" for the declared dims (? for a symbolic one); "" for a scalar; "?" for no shape.
std::string declared_str(const onnx::TypeProto_Tensor& tt) {
  if (!tt.has_shape()) return "?";
  std::string s;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    s += std::string(i ? "x" : "") + (d.has_dim_value() && d.dim_value() >= 0 ? std::to_string(d.dim_value()) : "?");
  }
  return s;
}

}  // namespace

std::map<std::string, Tensor> bound_inputs(const onnx::GraphProto& g, const std::vector<std::string>& bind,
                                           const std::map<std::string, Tensor>& input_values,
                                           const std::map<std::string, Shape>& input_shapes,
                                           const std::string& model_file) {
  std::map<std::string, Tensor> r;
  if (bind.empty()) return r;
  std::unordered_set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : g.input()) {
    if (!inits.count(in.name())) inputs.push_back(&in);
  }
  auto find_input = [&](const std::string& name) -> const onnx::ValueInfoProto* {
    for (const auto* in : inputs) {
      if (in->name() == name) return in;
    }
    return nullptr;
  };

  for (const std::string& arg : bind) {
    // Split at the '=' whose left part names an input; else explain the first split.
    const onnx::ValueInfoProto* in = nullptr;
    std::string path;
    for (std::size_t eq = arg.find('='); eq != std::string::npos && !in; eq = arg.find('=', eq + 1)) {
      in = find_input(arg.substr(0, eq));
      if (in) path = arg.substr(eq + 1);
    }
    if (!in) {
      const std::size_t eq = arg.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
        throw bind_error(model_file, "--bind '" + arg + "' is not NAME=FILE", "e.g. --bind shape=shape.npy");
      }
      const std::string name = arg.substr(0, eq);
      throw bind_error(model_file, "--bind names '" + name + "', which is " +
                                       (inits.count(name) ? "a constant (initializer), not an input"
                                                          : "not an input of the model") +
                                       " (inputs: " + input_list(inputs) + ")");
    }
    const std::string& name = in->name();
    const std::string what = "--bind " + name + "=" + path;
    if (path.empty()) throw bind_error(model_file, what + ": no file is given", "e.g. --bind " + name + "=FILE.npy");
    if (r.count(name)) throw bind_error(model_file, "--bind gives input '" + name + "' twice");
    if (input_values.count(name)) {
      throw bind_error(model_file, "--bind gives input '" + name + "', which already has a value");
    }
    if (!in->type().has_tensor_type() || in->type().tensor_type().elem_type() == 0) {
      throw bind_error(model_file, what + ": input '" + name + "' is not a tensor of a known element type");
    }
    const auto& tt = in->type().tensor_type();
    const DType declared = checked_dtype(tt.elem_type(), "graph input '" + name + "'");
    Tensor t;
    try {
      t = read_tensor_file(path);
    } catch (const Error& e) {
      // The reader names the file; say which --bind it was for.
      throw bind_error(path, "--bind input '" + name + "': " + e.message(), e.hint());
    }
    // What --input takes, --bind takes: numpy has no bfloat16, so a bfloat16 input's .npy holds
    // float32, rounded to nearest even here as the program and run-reference round it.
    if (declared == DType::bfloat16 && t.dtype() == DType::float32 && fs::path(path).extension() == ".npy") {
      t = t.cast(DType::bfloat16);
    }
    const std::string holds = std::string(dtype_name(t.dtype())) + "[" + shape_str(t.shape()) + "]";
    const std::string declares = std::string(dtype_name(declared)) + "[" + declared_str(tt) + "]";
    if (t.dtype() != declared) {
      throw bind_error(path, "--bind input '" + name + "': the file holds " + holds + ", the model declares " + declares,
                       "convert the data to " + std::string(dtype_name(declared)));
    }
    bool shape_ok = true;
    if (tt.has_shape()) {
      shape_ok = tt.shape().dim_size() == static_cast<int>(t.shape().size());
      for (int i = 0; shape_ok && i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() != t.shape()[static_cast<std::size_t>(i)]) {
          shape_ok = false;
        }
      }
    }
    if (!shape_ok) {
      throw bind_error(path, "--bind input '" + name + "': the file holds " + holds + ", the model declares " + declares,
                       "pass a file of the declared shape");
    }
    auto given = input_shapes.find(name);
    if (given != input_shapes.end() && given->second != t.shape()) {
      throw bind_error(path, "--bind input '" + name + "': the file holds " + holds + ", --shape gives " +
                                 shape_str(given->second),
                       "leave out --shape for a bound input: its file gives the shape");
    }
    r.emplace(name, std::move(t));
  }
  return r;
}

}  // namespace modelc::detail
