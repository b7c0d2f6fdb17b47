// tests/fuzz/fuzz_model_mutator.cpp — fuzz_model's libFuzzer hook for the structure-aware mutator
// (model_mutator.h); linked into the libFuzzer binary only (the replay driver mutates nothing).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/model_mutator.h"

extern "C" std::size_t LLVMFuzzerMutate(uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  static const modelc::fuzz::ByteMutator bytes = LLVMFuzzerMutate;
  return modelc::fuzz::mutate_model(data, size, max_size, seed, bytes);
}
