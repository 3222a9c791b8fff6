// LoadCertPair and CertReloader: a pair that loads, the errors of one that does not, and a
// reload that keeps the previous pair when the files are half written.
#include "server/cert_reloader.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "tls_fixture.h"

namespace shmguard::server {
namespace {

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST_CASE("LoadCertPair reads the subject and expiry of a matching pair", "[cert_reloader][net]") {
  test::TempDir dir;
  test::IssueCert(dir.path(), "webhook-a", dir.File("tls.crt"), dir.File("tls.key"), 3);
  auto pair = LoadCertPair(dir.File("tls.crt"), dir.File("tls.key"));
  REQUIRE(pair.has_value());
  CHECK_THAT((*pair)->subject, Catch::Contains("CN=webhook-a"));
  CHECK((*pair)->not_after > Now() + 2 * 86400);
  CHECK((*pair)->not_after <= Now() + 3 * 86400 + 60);
}

TEST_CASE("LoadCertPair names the file and the problem of a pair that does not load", "[cert_reloader][net]") {
  test::TempDir dir;
  test::IssueCert(dir.path(), "a", dir.File("a.crt"), dir.File("a.key"));
  test::IssueCert(dir.path(), "b", dir.File("b.crt"), dir.File("b.key"));
  std::ofstream(dir.File("empty.crt")) << "";
  std::ofstream(dir.File("garbage.key")) << "-----BEGIN PRIVATE KEY-----\nnot base64\n";

  auto missing = LoadCertPair(dir.File("none.crt"), dir.File("a.key"));
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == Code::kIo);
  CHECK(missing.error().where.file == dir.File("none.crt"));

  auto empty = LoadCertPair(dir.File("empty.crt"), dir.File("a.key"));
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().code == Code::kInvalidInput);
  CHECK(empty.error().where.file == dir.File("empty.crt"));

  auto garbage = LoadCertPair(dir.File("a.crt"), dir.File("garbage.key"));
  REQUIRE_FALSE(garbage.has_value());
  CHECK_THAT(garbage.error().message, Catch::Contains("no PEM private key"));

  auto mismatched = LoadCertPair(dir.File("a.crt"), dir.File("b.key"));
  REQUIRE_FALSE(mismatched.has_value());
  CHECK_THAT(mismatched.error().message, Catch::Contains("does not match the certificate"));
  CHECK(mismatched.error().where.file == dir.File("b.key"));
}

TEST_CASE("CertReloader keeps the previous pair until a new one loads", "[cert_reloader][net]") {
  test::TempDir dir;
  test::IssueCert(dir.path(), "first", dir.File("tls.crt"), dir.File("tls.key"));
  auto first = LoadCertPair(dir.File("tls.crt"), dir.File("tls.key"));
  REQUIRE(first.has_value());
  CertReloader reloader(dir.File("tls.crt"), dir.File("tls.key"), *first);
  CHECK(reloader.Current() == *first);

  // A rotation half written: the new certificate, the old key.
  test::IssueCert(dir.path(), "second", dir.File("new.crt"), dir.File("new.key"));
  std::filesystem::copy_file(dir.File("new.crt"), dir.File("tls.crt"),
                             std::filesystem::copy_options::overwrite_existing);
  auto half = reloader.Reload();
  REQUIRE_FALSE(half.has_value());
  CHECK_THAT(half.error().message, Catch::Contains("does not match"));
  CHECK(reloader.Current() == *first);

  // The key arrives: the new pair serves from now on.
  std::filesystem::copy_file(dir.File("new.key"), dir.File("tls.key"),
                             std::filesystem::copy_options::overwrite_existing);
  auto whole = reloader.Reload();
  REQUIRE(whole.has_value());
  CHECK(reloader.Current() == *whole);
  CHECK_THAT(reloader.Current()->subject, Catch::Contains("CN=second"));
}

}  // namespace
}  // namespace shmguard::server
