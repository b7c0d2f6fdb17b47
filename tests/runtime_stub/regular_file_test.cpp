// runtime_stub/regular_file.h and the readers over it (npy.h's read_file and read): only regular
// files are read, at once refused otherwise (a FIFO, /dev/zero through a symlink, a directory, a
// socket), never more than their size when opened.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "runtime_stub/npy.h"
#include "runtime_stub/regular_file.h"
#include "tests/runtime_stub/hostile_files.h"

using modelc::test::TempDir;

TEST_CASE("regular_file.h: a FIFO, /dev/zero, a directory and a socket are refused at once") {
  TempDir dir;
  const modelc::test::Deadline deadline(20);
  for (const std::string ext : {".npy", ".pb"}) {
    for (const modelc::test::HostileFile& h : modelc::test::hostile_files(dir, ext)) {
      CAPTURE(h.path);
      mc_io::File f;
      CHECK(mc_io::open_regular(h.path, f) == h.kind);
      const std::string refused = h.path + ": " + h.kind;  // mc_npy::Error's what()
      CHECK_THROWS_WITH_AS(mc_npy::read_file(h.path), refused.c_str(), mc_npy::Error);
      CHECK_THROWS_WITH_AS(mc_npy::read(h.path), refused.c_str(), mc_npy::Error);
      CHECK_THROWS_WITH_AS(mc_npy::read(h.path, mc_npy::kFloat32, {2, 3}), refused.c_str(), mc_npy::Error);
    }
  }
  mc_io::File f;
  CHECK(mc_io::open_regular(dir / "missing", f) == "cannot open: No such file or directory");
  CHECK(f.fd < 0);
}

TEST_CASE("regular_file.h: a regular file is read whole, and one that changes size while read is an error") {
  TempDir dir;
  const std::string path = dir / "data.bin";
  modelc::test::write_bytes(path, "0123456789");
  {
    mc_io::File f;
    REQUIRE(mc_io::open_regular(path, f).empty());
    CHECK(f.size == 10);
    std::string buf(10, '\0');
    CHECK(mc_io::read_exactly(f, &buf[0], buf.size()).empty());
    CHECK(buf == "0123456789");
  }
  {
    mc_io::File f;
    REQUIRE(mc_io::open_regular(path, f).empty());
    modelc::test::write_bytes(path, "0123456789ab");  // grows after the open
    std::string buf(static_cast<std::size_t>(f.size), '\0');
    CHECK(mc_io::read_exactly(f, &buf[0], buf.size()) == "changed size while it was read (more than 10 bytes)");
  }
  {
    mc_io::File f;
    REQUIRE(mc_io::open_regular(path, f).empty());
    REQUIRE(::truncate(path.c_str(), 4) == 0);  // shrinks after the open
    std::string buf(static_cast<std::size_t>(f.size), '\0');
    CHECK(mc_io::read_exactly(f, &buf[0], buf.size()) == "changed size while it was read (4 of 12 bytes read)");
  }
  // The descriptor is blocking again once known to be a regular file's, and closed on exec.
  mc_io::File f;
  REQUIRE(mc_io::open_regular(path, f).empty());
  CHECK((::fcntl(f.fd, F_GETFL) & O_NONBLOCK) == 0);
  CHECK((::fcntl(f.fd, F_GETFD) & FD_CLOEXEC) != 0);
}
