// Docker's byte values: what go-units RAMInBytes reads, the Compose field forms, and the
// shortest text that reads back to the same bytes.
#include "core/values/docker_bytes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace shmguard {
namespace {

using nlohmann::json;

constexpr int64_t kKi = 1024, kMi = kKi * 1024, kGi = kMi * 1024, kTi = kGi * 1024, kPi = kTi * 1024;

// docker/go-units size.go RAMInBytes, case by case: what its regexp and strconv.ParseFloat accept,
// binary multiples, truncation.
TEST_CASE("ParseDockerBytes reads sizes as Docker's RAMInBytes does", "[docker_bytes]") {
  const std::pair<const char*, int64_t> valid[] = {
      {"0", 0},
      {"10", 10},
      {"2b", 2},
      {"2B", 2},
      {"2i", 2},
      {"2ib", 2},
      {"2 ", 2},
      {"2k", 2 * kKi},
      {"2kb", 2 * kKi},
      {"2KiB", 2 * kKi},
      {"512m", 512 * kMi},
      {"64M", 64 * kMi},
      {"2g", 2 * kGi},
      {"2gb", 2 * kGi},
      {"2GiB", 2 * kGi},
      {"2 g", 2 * kGi},
      {"2 GB", 2 * kGi},
      {"16G", 16 * kGi},
      {"8gb", 8 * kGi},
      {"1.5g", kGi + kGi / 2},
      {"0.5k", 512},
      {"1.9", 1},         // truncated
      {"1.0001k", 1024},  // 1024.1024 truncated
      {"10t", 10 * kTi},
      {"1p", kPi},
      {"8191p", 8191 * kPi},  // just below 2^63
      {"007m", 7 * kMi},
  };
  for (const auto& [text, bytes] : valid) {
    CAPTURE(text);
    auto got = ParseDockerBytes(text, "shm_size");
    REQUIRE(got.has_value());
    CHECK(*got == bytes);
  }
  const char* invalid[] = {"",     "2 gigs", "-1g",  "1.2.3g", " 2g",    "2  g", "2x",  "g",     ".5g",
                           "2e3",  "1e",     "2gbb", "2bi",    "2 ki b", "1.",   "1.g", "8192p", "9223372036854775808",
                           "0x10", "+1g",    "2g\n", "１g"};
  for (const char* text : invalid) {
    CAPTURE(text);
    auto got = ParseDockerBytes(text, "/services/a/shm_size");
    REQUIRE_FALSE(got.has_value());
    CHECK(got.error().where.pointer == "/services/a/shm_size");
    CHECK_THAT(got.error().message, Catch::Contains("is not a size Docker reads"));
  }
  // Digits past a double's range: strconv.ParseFloat fails with ErrRange.
  CHECK_FALSE(ParseDockerBytes(std::string(400, '9'), "x").has_value());
  CHECK_THAT(ParseDockerBytes("1.2.3g", "x").error().message, Catch::Contains("more than one decimal point"));
  CHECK_THAT(ParseDockerBytes("8192p", "x").error().message, Catch::Contains("more than 2^63-1 bytes"));
}

TEST_CASE("ReadComposeBytes takes integers and sizes, nothing else", "[docker_bytes]") {
  CHECK(*ReadComposeBytes(json(1073741824), "/s") == kGi);
  CHECK(*ReadComposeBytes(json("1gb"), "/s") == kGi);
  for (const json& bad : {json(-1), json(1.5), json(true), json::array(), json::object()}) {
    CAPTURE(bad.dump());
    auto got = ReadComposeBytes(bad, "/services/a/mem_limit");
    REQUIRE_FALSE(got.has_value());
    CHECK(got.error().where.pointer == "/services/a/mem_limit");
  }
}

TEST_CASE("FormatDockerBytes writes what Docker reads back to the same bytes", "[docker_bytes]") {
  CHECK(FormatDockerBytes(0) == "0");
  CHECK(FormatDockerBytes(1000) == "1000");
  CHECK(FormatDockerBytes(kGi) == "1g");
  CHECK(FormatDockerBytes(1536 * kMi) == "1536m");
  CHECK(FormatDockerBytes(4401 * kMi) == "4401m");
  CHECK(FormatDockerBytes(3 * kKi) == "3k");
  CHECK(FormatDockerBytes(2 * kPi) == "2p");
  // Docker reads the amount as a double: plain byte counts are exact up to 2^53.
  const int64_t samples[] = {1, 1023, 1025, 64 * kMi, 88080384, 7 * kTi, 8191 * kPi, (int64_t{1} << 53) - 1};
  for (int64_t bytes : samples) {
    CAPTURE(bytes);
    CHECK(*ParseDockerBytes(FormatDockerBytes(bytes), "x") == bytes);
  }
}

}  // namespace
}  // namespace shmguard
