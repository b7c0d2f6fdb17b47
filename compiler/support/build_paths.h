// compiler/support/build_paths.h — where modelc was built from and into.
//
// The paths live in one generated file (build_paths.cpp, configured by CMake into the build
// folder), not in a compile definition of every object: the objects stay the same wherever the
// tree is checked out, so a compiler cache serves every checkout, and moving the build folder
// recompiles one file.
#pragma once

namespace modelc {

/// \brief The source tree modelc was built from (templates/, runtime_stub/, Makefile.gen, models/).
const char* build_source_dir();
/// \brief The build folder (the built `modelc`, exported test models under models/).
const char* build_binary_dir();

}  // namespace modelc
