// tests/runtime_stub/hostile_files.h — files that are not what a reader expects, for the tests of
// every reader of a named file (runtime_stub/regular_file.h and its users: npy.h, runtime.h's
// weights file, the generated program, run-reference): a FIFO, a symlink to /dev/zero, a
// directory and a socket, and a deadline that ends the test run when a read blocks instead.
#pragma once

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/frontend/onnx_builder.h"

namespace modelc::test {

/// \brief A file that is not a regular file, and the words a reader's refusal of it must hold.
struct HostileFile {
  std::string path;
  std::string kind;  ///< "is a FIFO (named pipe), not a regular file", ...
};

/// \brief In `dir`, named NAME`ext` (".npy": readers that go by the extension reach the open): a
/// FIFO with no writer (an open or a read of it blocks forever), a symlink to /dev/zero (a read
/// never ends), a directory and a Unix socket.
inline std::vector<HostileFile> hostile_files(const TempDir& dir, const std::string& ext) {
  std::vector<HostileFile> r;
  const std::string fifo = dir / ("fifo" + ext);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  r.push_back({fifo, "is a FIFO (named pipe), not a regular file"});
  const std::string zero = dir / ("zero" + ext);
  REQUIRE(::symlink("/dev/zero", zero.c_str()) == 0);
  r.push_back({zero, "is a character device, not a regular file"});
  const std::string folder = dir / ("folder" + ext);
  std::filesystem::create_directory(folder);
  r.push_back({folder, "is a directory, not a regular file"});
  const std::string sock = dir / ("socket" + ext);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(sock.size() < sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  const int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  ::close(fd);  // the socket file stays
  REQUIRE(bound == 0);
  r.push_back({sock, "is a socket, not a regular file"});
  return r;
}

extern "C" inline void deadline_passed(int) {
  static const char kMessage[] = "\nFAILED: a test passed its deadline: a read blocked (a FIFO or a device read as a file?)\n";
  (void)!::write(2, kMessage, sizeof kMessage - 1);
  ::_exit(1);
}

/// \brief While alive, ends the whole test run with a message (exit 1) once `seconds` have passed:
/// a regression that blocks on a FIFO fails the run instead of hanging it.
class Deadline {
 public:
  explicit Deadline(unsigned seconds) {
    previous_ = ::signal(SIGALRM, deadline_passed);
    ::alarm(seconds);
  }
  ~Deadline() {
    ::alarm(0);
    ::signal(SIGALRM, previous_);
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  void (*previous_)(int);
};

}  // namespace modelc::test
