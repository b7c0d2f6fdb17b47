// codegen/format.h — formatting of the emitted C++/CUDA with clang's libFormat.
#pragma once

#include <string>

namespace modelc {

/// True when modelc was built with clang's libFormat (CMake: MODELC_HAVE_CLANG_FORMAT).
bool have_formatter();

/// \brief `code` formatted in modelc's style for emitted code (Google-based, column 110; includes
/// keep their order), or unchanged when modelc has no libFormat or it fails. Deterministic.
/// `file_name` only picks the language (.h / .cu / .cpp: C++).
std::string format_source(const std::string& code, const std::string& file_name);

}  // namespace modelc
