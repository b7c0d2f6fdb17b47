// fuzz_model's structure-aware mutator (tests/fuzz/model_mutator.h): deterministic per seed,
// within max_size, mostly models that still parse, and the protobuf-level changes it exists for.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "support/build_paths.h"
#include "tests/frontend/onnx_builder.h"
#include "tests/fuzz/model_mutator.h"

using namespace modelc;

namespace {

// A byte mutator that leaves a mark: the first byte inverted.
std::size_t invert_first(uint8_t* data, std::size_t size, std::size_t) {
  if (size) data[0] = static_cast<uint8_t>(~data[0]);
  return size;
}

std::string mutated(const std::string& in, std::size_t max_size, unsigned seed, int* byte_calls) {
  std::string buf = in;
  buf.resize(max_size);
  const fuzz::ByteMutator bytes = [&](uint8_t* d, std::size_t s, std::size_t m) {
    ++*byte_calls;
    return invert_first(d, s, m);
  };
  const std::size_t n = fuzz::mutate_model(reinterpret_cast<uint8_t*>(buf.data()), in.size(), max_size, seed, bytes);
  REQUIRE(n <= max_size);
  buf.resize(n);
  return buf;
}

}  // namespace

TEST_CASE("model mutator: deterministic, within max_size, protobuf-level changes") {
  const std::string path = std::string(build_source_dir()) + "/tests/fuzz/seeds/model/conv_relu.onnx";
  const std::string seed_model = test::read_bytes(path);
  onnx::ModelProto original;
  REQUIRE_MESSAGE(original.ParseFromString(seed_model), path);
  REQUIRE(original.graph().node_size() == 2);
  REQUIRE(original.graph().initializer(0).raw_data().size() == 54 * 4);

  const std::size_t max_size = seed_model.size() * 2 + 64;
  int parsed_changed = 0, byte_calls = 0;
  bool node_count = false, raw_data_length = false, dims = false, input_name = false, attribute = false;
  for (unsigned seed = 0; seed < 2000; ++seed) {
    int calls = 0, calls_again = 0;
    const std::string out = mutated(seed_model, max_size, seed, &calls);
    CHECK(out == mutated(seed_model, max_size, seed, &calls_again));
    byte_calls += calls;
    onnx::ModelProto m;
    if (out == seed_model || !m.ParseFromString(out)) continue;
    ++parsed_changed;
    if (!m.has_graph()) continue;
    const onnx::GraphProto& g = m.graph();
    node_count |= g.node_size() != original.graph().node_size();
    for (const onnx::TensorProto& t : g.initializer()) {
      for (const onnx::TensorProto& o : original.graph().initializer()) {
        if (t.name() != o.name()) continue;
        raw_data_length |= t.raw_data().size() != o.raw_data().size();
        dims |= t.dims_size() == o.dims_size() && t.dims().size() && t.dims(0) != o.dims(0);
      }
    }
    if (g.node_size() == 2) {
      input_name |= g.node(0).input_size() == 3 && g.node(0).input(1) != "W";
      const onnx::NodeProto& conv = original.graph().node(0);
      if (g.node(0).attribute_size() == conv.attribute_size()) {
        for (int k = 0; k < conv.attribute_size(); ++k) {
          const onnx::AttributeProto& a = g.node(0).attribute(k);
          attribute |= a.name() == conv.attribute(k).name() &&
                       (a.type() != conv.attribute(k).type() ||
                        (a.ints().size() == conv.attribute(k).ints().size() &&
                         a.SerializeAsString() != conv.attribute(k).SerializeAsString()));
        }
      }
    }
  }
  CHECK(parsed_changed > 1400);  // one call in eight goes to the byte mutator
  CHECK(byte_calls > 100);
  CHECK(node_count);
  CHECK(raw_data_length);
  CHECK(dims);
  CHECK(input_name);
  CHECK(attribute);
}

TEST_CASE("model mutator: bytes that are no model go to the byte mutator") {
  const std::string junk = "\xff\xff\xff\xff";
  int calls = 0;
  for (unsigned seed = 0; seed < 20; ++seed) CHECK(mutated(junk, 16, seed, &calls) == std::string("\x00\xff\xff\xff", 4));
  CHECK(calls == 20);
}
