// compiler/support/data_dir.h — where modelc finds its data (templates/, runtime_stub/,
// Makefile.gen, scripts/) and onnxruntime.
#pragma once

#include <string>

namespace modelc {

/// \brief modelc's data folder: $MODELC_DATA_DIR when set; else, for an installed modelc
/// (`cmake --install`, the .deb), PREFIX/share/modelc beside PREFIX/bin/modelc when it holds
/// Makefile.gen; else the source tree modelc was built from (build_source_dir()). Not checked: the
/// callers say what they miss.
std::string modelc_data_dir();

/// \brief The onnxruntime-node package folder `verify --ort` and the e2e tests use:
/// $MODELC_ORT_DIR (the package folder, or a folder holding node_modules/onnxruntime-node), else
/// BUILD/ort/node_modules/onnxruntime-node (scripts/setup.sh --tests installs it there). "" when
/// neither exists.
std::string onnxruntime_node_dir();

}  // namespace modelc
