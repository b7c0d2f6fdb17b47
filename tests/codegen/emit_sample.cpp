// tests/codegen/emit_sample.cpp — writes the sample model's folder (sample_graph.h) for the
// ctest builds of tests/codegen/CMakeLists.txt, with its input and the reference outputs:
//   codegen_emit_sample DIR [--parts N] [--weights-file] [--arch sm_75,sm_90]
// DIR/test_data/input_0.bin and output_K.bin are raw little-endian bytes (sample_driver.cpp).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "codegen/emitter.h"
#include "reference/interpreter.h"
#include "tests/codegen/sample_graph.h"

using namespace modelc;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: codegen_emit_sample DIR [--parts N] [--weights-file] [--arch LIST] [--relus N]\n";
    return 2;
  }
  try {
    EmitOptions o;
    o.source = "sample.onnx";
    std::vector<std::string> archs = {"sm_75"};
    int relus = 1;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--parts" && i + 1 < argc) {
        o.max_kernels_per_file = std::atoi(argv[++i]);
      } else if (a == "--weights-file") {
        o.weights_file = true;
      } else if (a == "--relus" && i + 1 < argc) {
        relus = std::atoi(argv[++i]);
      } else if (a == "--arch" && i + 1 < argc) {
        archs.clear();
        std::string list = argv[++i];
        for (std::size_t p = 0; p <= list.size();) {
          const std::size_t q = std::min(list.find(',', p), list.size());
          archs.push_back(list.substr(p, q - p));
          p = q + 1;
        }
      } else {
        std::cerr << "unknown argument " << a << "\n";
        return 2;
      }
    }
    auto g = test::sample_graph(relus);
    TensorMap feeds;
    std::vector<float> x(24);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f + 0.125f * static_cast<float>(i);
    feeds["x"] = Tensor::from_f32({2, 3, 4}, x);
    const TensorMap expected = run_reference(*g, feeds);
    std::vector<std::string> output_names;
    for (const Value* v : g->outputs()) output_names.push_back(v->name());

    const Schedule s = lower(*g, test::sample_options("sample", archs));
    const EmitResult r = emit_model(s, argv[1], o);
    const std::filesystem::path data = std::filesystem::path(r.dir) / "test_data";
    std::filesystem::create_directories(data);
    auto write = [&](const std::string& name, const Tensor& t) {
      std::ofstream f(data / name, std::ios::binary);
      f.write(reinterpret_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    };
    write("input_0.bin", feeds["x"]);
    for (std::size_t i = 0; i < output_names.size(); ++i) write("output_" + std::to_string(i) + ".bin", expected.at(output_names[i]));
    std::cout << "wrote " << r.dir << " (" << s.kernels.size() << " kernels, " << r.parts << " parts)\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
