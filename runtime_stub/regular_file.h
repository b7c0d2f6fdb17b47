// runtime_stub/regular_file.h — reading a file named by a user or a model without being hung or
// flooded by it: the one way runtime_stub reads files (npy.h's tensor files, runtime.h's weights
// file). Header-only, standalone (C++17 and POSIX), throws nothing: each step returns "" or what
// went wrong, as a phrase the caller puts after the file's name ("x.npy: is a FIFO ...").
//
//   mc_io::File f;
//   std::string why = mc_io::open_regular(path, f);       // f.size: the size at open
//   if (why.empty() && f.size > limit) ...                 // refuse before reading a byte
//   if (why.empty()) why = mc_io::read_exactly(f, buf, f.size);
//
// Only regular files are read (symlinks followed): a FIFO would block the open or the read
// forever, a character device such as /dev/zero never ends, a socket or a folder holds no file.
// The open is non-blocking (a FIFO without a writer opens at once, and is then refused by its
// fstat, which decides: the stat before the open only keeps devices from being opened at all),
// and a file that changes size while it is read is an error, not an endless or short read.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace mc_io {

/// \brief An open regular file: the descriptor (closed with the File) and its size at open.
struct File {
  int fd = -1;
  uint64_t size = 0;
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

/// \brief What a file of mode `mode` is, for a message: "a FIFO (named pipe)", "a directory", ...
inline const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

/// \brief "is a FIFO (named pipe), not a regular file" for a mode that is not a regular file's.
inline std::string not_regular(mode_t mode) { return std::string("is ") + kind_of(mode) + ", not a regular file"; }

/// \brief Opens `path` for reading when it is a regular file: "" and `f` set (its size the size
/// at fstat), or what is wrong ("cannot open: No such file or directory", "is a character
/// device, not a regular file"). Never blocks: O_NONBLOCK for the open, cleared once the
/// descriptor is known to be a regular file's.
inline std::string open_regular(const std::string& path, File& f) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::string("cannot open: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  f.fd = fd;
  // The path may name something else by now: the descriptor's fstat decides.
  if (::fstat(fd, &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return std::string("cannot read: ") + std::strerror(errno);
  }
  f.size = static_cast<uint64_t>(st.st_size);
  return "";
}

/// \brief Reads exactly `n` bytes of `f` (opened by open_regular, n its size) into `buf`, and
/// checks that nothing follows: "" or what went wrong ("read error: ...", "changed size while it
/// was read").
inline std::string read_exactly(File& f, void* buf, std::size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  std::size_t done = 0;
  for (;;) {
    unsigned char probe;
    // Past `n`, one more byte only: a file that grew is refused, not read on.
    const bool past = done == n;
    const ssize_t r = past ? ::read(f.fd, &probe, 1) : ::read(f.fd, p + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return std::string("read error: ") + std::strerror(errno);
    }
    if (r == 0) {
      if (past) return "";
      return "changed size while it was read (" + std::to_string(done) + " of " + std::to_string(n) + " bytes read)";
    }
    if (past) return "changed size while it was read (more than " + std::to_string(n) + " bytes)";
    done += static_cast<std::size_t>(r);
  }
}

}  // namespace mc_io
