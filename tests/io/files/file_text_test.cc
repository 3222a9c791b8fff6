// FileText: a regular file is mapped, anything else is read; either way the bytes are the file's,
// they survive a move, and a file that cannot be read is an error naming it.
#include "io/files/file_text.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "io/files/manifests.h"
#include "tls_fixture.h"

namespace shmguard::io {
namespace {

void Write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST_CASE("FileText holds a file's bytes, mapped or read", "[file_text]") {
  test::TempDir dir;
  std::string big(300000, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>('\0' + i % 256);
  for (const std::string& bytes : {std::string("kind: Pod\n"), std::string(4096, 'a'), big}) {
    CAPTURE(bytes.size());
    Write(dir.File("f"), bytes);
    auto f = FileText::Read(dir.File("f"));
    REQUIRE(f);
    CHECK(f->view() == bytes);
    FileText moved = std::move(*f);  // the view follows the bytes
    CHECK(moved.view() == bytes);
    CHECK(*ReadFileText(dir.File("f")) == bytes);
  }
  Write(dir.File("empty"), "");
  CHECK(FileText::Read(dir.File("empty"))->view().empty());
}

TEST_CASE("FileText reads what cannot be mapped: a FIFO, an owned string", "[file_text]") {
  test::TempDir dir;
  std::string fifo = dir.File("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string bytes(200000, 'y');
  std::thread writer([&] { Write(fifo, bytes); });
  auto f = FileText::Read(fifo);
  writer.join();
  REQUIRE(f);
  CHECK(f->view() == bytes);

  FileText small(std::string("short"));  // small-string storage moves with the object
  FileText moved = std::move(small);
  CHECK(moved.view() == "short");
  moved = FileText(std::string(100, 'z'));
  CHECK(moved.view() == std::string(100, 'z'));
}

TEST_CASE("FileText names the file and the reason when it cannot read it", "[file_text]") {
  test::TempDir dir;
  auto missing = FileText::Read(dir.File("absent.yaml"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::kIo);
  CHECK(missing.error().where.file == dir.File("absent.yaml"));
  CHECK(missing.error().message == "cannot open: No such file or directory");
  auto directory = FileText::Read(dir.path());
  REQUIRE_FALSE(directory);
  CHECK(directory.error().message == "cannot read: Is a directory");
}

TEST_CASE("FileText::Read stops at its limit: a regular file by its size, a pipe once read past it", "[file_text]") {
  test::TempDir dir;
  Write(dir.File("f"), std::string(1000, 'x'));
  CHECK(FileText::Read(dir.File("f"), 1000)->view().size() == 1000);
  auto big = FileText::Read(dir.File("f"), 999);
  REQUIRE_FALSE(big);
  CHECK(big.error().code == Code::kIo);
  CHECK(big.error().where.file == dir.File("f"));
  CHECK(big.error().message == "larger than the limit of 999 bytes");

  // A character device with no end: read only up to the limit.
  auto zero = FileText::Read("/dev/zero", 1 << 20);
  REQUIRE_FALSE(zero);
  CHECK(zero.error().message == "larger than the limit of 1048576 bytes");

  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer([&] {
    std::string bytes(300000, 'y');
    (void)!::write(fds[1], bytes.data(), bytes.size());
    ::close(fds[1]);
  });
  auto piped = FileText::ReadFd(fds[0], "stdin", 200000);
  writer.join();
  ::close(fds[0]);
  REQUIRE_FALSE(piped);
  CHECK(piped.error().where.file == "stdin");
}

TEST_CASE("FileText::Read takes what its caller reads: files, pipes, or regular files only", "[file_text]") {
  test::TempDir dir;
  Write(dir.File("f"), "x: 1\n");
  const std::string fifo = dir.File("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  struct Case {
    std::string path;
    Readable readable;
    const char* error;  // nullptr: read
  };
  const Case cases[] = {
      {dir.File("f"), Readable::kRegularFiles, nullptr},
      {"/dev/zero", Readable::kRegularFiles, "not a regular file (a character device)"},
      {"/dev/zero", Readable::kFilesAndPipes, "not a regular file (a character device)"},
      // No writer: refused at once, where a blocking open() would wait for ever.
      {fifo, Readable::kRegularFiles, "not a regular file (a FIFO)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.path, static_cast<int>(c.readable));
    auto r = FileText::Read(c.path, 1 << 20, c.readable);
    if (!c.error) {
      CHECK(r.has_value());
    } else {
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == Code::kIo);
      CHECK(r.error().where.file == c.path);
      CHECK(r.error().message == c.error);
    }
  }
  // A FIFO named in the file system may never get a writer: refused even where pipes are taken
  // (`audit --config FIFO` would wait for ever in open()).
  auto named = FileText::Read(fifo, 1 << 20, Readable::kFilesAndPipes);
  REQUIRE_FALSE(named.has_value());
  CHECK(named.error().message == "not a regular file (a FIFO)");
  // A pipe reached through /dev/fd, as a shell's <(...) gives it, where pipes are taken: read
  // until the writer closes it.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ssize_t written = 0;  // Catch2's assertions are for one thread: checked after the join
  std::thread writer([&] {
    written = ::write(fds[1], "piped", 5);
    ::close(fds[1]);
  });
  auto piped = FileText::Read("/dev/fd/" + std::to_string(fds[0]), 1 << 20, Readable::kFilesAndPipes);
  writer.join();
  CHECK(written == 5);
  ::close(fds[0]);
  REQUIRE(piped.has_value());
  CHECK(piped->view() == "piped");
}

}  // namespace
}  // namespace shmguard::io
