// tests/fuzz/model_mutator.h — fuzz_model's structure-aware mutator: a serialized onnx.ModelProto
// is parsed and changed at the protobuf level (through reflection, so every field of the schema is
// reachable), then serialized again. Byte flips mostly break the protobuf framing and end in the
// parser; these mutations keep a model that parses and change what modelc must validate: a dim, a
// data_type, raw_data's length, a node dropped or duplicated, an input renamed to another value,
// an attribute's int/ints/type, a shape's dim_value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace modelc::fuzz {

/// \brief A byte-level mutator with libFuzzer's LLVMFuzzerMutate contract: mutates data[0, size)
/// in place, returns the new size (at most max_size).
using ByteMutator = std::function<std::size_t(uint8_t* data, std::size_t size, std::size_t max_size)>;

/// \brief Mutates the model in data[0, size) in place and returns its new size (at most max_size).
/// Bytes that do not parse as an onnx.ModelProto, one call in eight, and a result that would not
/// fit max_size go to `bytes` instead. The same input, seed and byte mutator give the same result.
std::size_t mutate_model(uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed,
                         const ByteMutator& bytes);

}  // namespace modelc::fuzz
