// ParseQuantity / FormatQuantity / QuantityValue against apimachinery's behaviour (docs/sources.md §7).
#include "core/values/quantity.h"

#include <catch2/catch.hpp>
#include <limits>

namespace shmguard {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kNoValue = std::numeric_limits<int64_t>::min();  // Value() must fail

struct QuantityCase {
  const char* input;
  const char* canonical;  // nullptr: ParseQuantity must fail
  int64_t value;          // Value(), or kNoValue when it must fail (beyond int64)
};

const QuantityCase kCases[] = {
    // apimachinery's own results for these inputs
    {"1.5Gi", "1536Mi", 1610612736},
    {"1024Mi", "1Gi", 1073741824},
    {"0.5Ki", "512", 512},
    {"1.1Ki", "1126400m", 1127},
    {"1000000", "1M", 1000000},
    {"1.5", "1500m", 2},
    {"100m", "100m", 1},
    {"0.1m", "100u", 1},
    {"3.3e9", "3300e6", 3300000000},
    {"1e19", "10e18", kNoValue},
    {"1E", "1E", 1000000000000000000},
    {"8Ei", "9223372036854775807", kMax},
    // traps
    {"Gi", "0", 0},
    {"+1Gi", "+1Gi", 1073741824},
    {"5.", "5.", 5},
    {"9223372036854775807", "9223372036854775807", kMax},
    {"9223372036854775808", "9223372036854775808", kNoValue},
    // binary suffixes
    {"1Ki", "1Ki", 1024},
    {"8Ki", "8Ki", 8192},
    {"1.5Ki", "1536", 1536},
    {"2.5Gi", "2560Mi", 2684354560},
    {"100Mi", "100Mi", 104857600},
    {"64Mi", "64Mi", 67108864},
    {"1Ti", "1Ti", 1099511627776},
    {"1Pi", "1Pi", 1125899906842624},
    {"1Ei", "1Ei", 1152921504606846976},
    {"0Mi", "0", 0},
    {"-1Gi", "-1Gi", -1073741824},
    // decimal suffixes and plain numbers
    {"0", "0", 0},
    {"1000", "1k", 1000},
    {"1024", "1024", 1024},
    {"1k", "1k", 1000},
    {"1M", "1M", 1000000},
    {"16G", "16G", 16000000000},
    {"500m", "500m", 1},
    {"0.5", "500m", 1},
    {".5", "500m", 1},
    {"1.0", "1", 1},
    {"1n", "1n", 1},
    {"0.9n", "1n", 1},
    {"1e-400", "1e-9", 1},  // rounded up to 1n, printed in its own (exponent) family
    {"e119", "0", 0},       // fuzz/quantity_fuzz: zero with a huge exponent overflowed 10^119
    {"0e999", "0", 0},
    {"3372292233929332902024000479815720.3", nullptr, 0},            // fuzz: canonical form did not re-parse
    {"1000000000000000000000000000000000000000", "1e39", kNoValue},  // zeros are not significant
    {".00000000000000000000000000Gi", "0", 0},                       // fuzz: comparing a tiny value overflowed
    {"0.000000000000000000000000001Ki", "1n", 1},                    // rounded up to 1n, then below 1: DecimalSI
    {"123456789012345678901234567890", "123456789012345678901234567890", kNoValue},
    // exponents
    {"1e3", "1e3", 1000},
    {"1E3", "1E3", 1000},
    {"12e6", "12e6", 12000000},
    {"1e-3", "1e-3", 1},
    {"1.5e3", "1500", 1500},
    {"5e7", "50e6", 50000000},  // exponents are printed as multiples of 3
    // errors, as apimachinery gives them
    {"1K", nullptr, 0},
    {"1ki", nullptr, 0},
    {"1mi", nullptr, 0},
    {"1KiB", nullptr, 0},
    {"64MB", nullptr, 0},
    {" 1Gi", nullptr, 0},
    {"1Gi ", nullptr, 0},
    {"1 Gi", nullptr, 0},
    {"", nullptr, 0},
    {"1Gi1", nullptr, 0},
    {"1.2.3", nullptr, 0},
    {"1e", nullptr, 0},
    {"Ei", nullptr, 0},
    {"abc", nullptr, 0},
    {"1gi", nullptr, 0},
};

TEST_CASE("ParseQuantity and FormatQuantity follow apimachinery", "[quantity]") {
  STATIC_REQUIRE(sizeof(kCases) / sizeof(kCases[0]) >= 40);
  for (const auto& c : kCases) {
    CAPTURE(c.input);
    auto q = ParseQuantity(c.input);
    if (c.canonical == nullptr) {
      REQUIRE_FALSE(q.has_value());
      CHECK(q.error().code == Code::kInvalidInput);
      CHECK_THAT(q.error().message, Catch::Contains(std::string("\"") + c.input + "\""));
      continue;
    }
    REQUIRE(q.has_value());
    CHECK(FormatQuantity(*q) == c.canonical);
    auto v = QuantityValue(*q);
    if (c.value == kNoValue) {
      CHECK_FALSE(v.has_value());
    } else {
      REQUIRE(v.has_value());
      CHECK(*v == c.value);
    }
  }
}

// Exponents at the int32 edge are refused or round as apimachinery's do, with no signed overflow
// on the way (the sanitized build checks that: "1e-2147483648" minus a fraction's digit, and a
// sum with the digits' own exponent, overflowed an int).
TEST_CASE("ParseQuantity keeps exponents at the int32 edge in range", "[quantity]") {
  struct Case {
    const char* input;
    bool parses;
    int64_t value;  // when it parses and counts; kNoValue: larger than 2^63-1
  };
  const Case cases[] = {
      {"1e2147483647", true, kNoValue},
      {"1.5e2147483647", true, kNoValue},
      {"1e-2147483648", true, 1},  // rounds up to 1n, counted as 1
      {"1.5e-2147483648", true, 1},
      {"0.1e-2147483648", true, 1},
      {"123456789012345678901e2147483647", true, kNoValue},
      {"1e9223372036854775807", false, 0},  // not an int32 exponent: unknown suffix
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    auto q = ParseQuantity(c.input);
    REQUIRE(q.has_value() == c.parses);
    if (!c.parses) continue;
    auto v = QuantityValue(*q);
    if (c.value == kNoValue) {
      CHECK_FALSE(v.has_value());
    } else {
      REQUIRE(v.has_value());
      CHECK(*v == c.value);
    }
  }
}

TEST_CASE("FormatQuantity round-trips its own output", "[quantity]") {
  for (const auto& c : kCases) {
    if (c.canonical == nullptr) continue;
    CAPTURE(c.input);
    auto again = ParseQuantity(c.canonical);
    REQUIRE(again.has_value());
    CHECK(FormatQuantity(*again) == c.canonical);
  }
}

// A BinarySI quantity of whole bytes that are not whole KiB prints as plain bytes, and plain
// bytes read back as DecimalSI: a second canonical form, which is then stable. apimachinery does
// the same (CanonicalizeBytes, k8s.io/apimachinery v0.37.2 pkg/api/resource/quantity.go:425-462;
// resource.MustParse("90131562.5Ki").String() is "92294720000", and of that "92294720k"). The
// value never changes. Found by fuzzing ("00000090131562.5Ki").
TEST_CASE("A binary quantity of whole bytes canonicalizes twice as apimachinery does", "[quantity]") {
  struct Case {
    const char* input;
    const char* first;
    const char* second;
  };
  for (const auto& c : {Case{"90131562.5Ki", "92294720000", "92294720k"}, Case{"1.953125Ki", "2000", "2k"},
                        Case{"0.9765625Mi", "1000Ki", "1000Ki"}, Case{"1.5Ki", "1536", "1536"}}) {
    CAPTURE(c.input);
    auto q = ParseQuantity(c.input);
    REQUIRE(q.has_value());
    CHECK(FormatQuantity(*q) == c.first);
    auto again = ParseQuantity(c.first);
    REQUIRE(again.has_value());
    CHECK(FormatQuantity(*again) == c.second);
    auto third = ParseQuantity(c.second);
    REQUIRE(third.has_value());
    CHECK(FormatQuantity(*third) == c.second);
    CHECK(QuantityValue(*q).value() == QuantityValue(*third).value());
  }
}

TEST_CASE("FormatBytes prints BinarySI like Kubernetes", "[quantity]") {
  CHECK(FormatBytes(0) == "0");
  CHECK(FormatBytes(1000) == "1k");  // below 1Ki a BinarySI quantity prints as DecimalSI
  CHECK(FormatBytes(1023) == "1023");
  CHECK(FormatBytes(1024) == "1Ki");
  CHECK(FormatBytes(1073741824) == "1Gi");
  CHECK(FormatBytes(1610612736) == "1536Mi");
  CHECK(FormatBytes(12884901888) == "12Gi");
  CHECK(FormatBytes(1536) == "1536");
  CHECK(FormatBytes(kMax) == "9223372036854775807");
  CHECK(FormatBytes(int64_t{1023} << 10) == "1023Ki");
  CHECK(FormatBytes((int64_t{1} << 40) + 1) == "1099511627777");
  CHECK(FormatBytes(int64_t{3} << 60) == "3Ei");
}

TEST_CASE("ParseBytes names the field and refuses negatives and overflow", "[quantity]") {
  auto ok = ParseBytes("48Mi", "annotation x");
  REQUIRE(ok.has_value());
  CHECK(*ok == 48 << 20);
  auto neg = ParseBytes("-1Gi", "annotation x");
  REQUIRE_FALSE(neg.has_value());
  CHECK(neg.error().where.field == "annotation x");
  CHECK(neg.error().ToString() == "annotation x: \"-1Gi\" must not be negative");
  auto big = ParseBytes("1e19", "annotation x");
  REQUIRE_FALSE(big.has_value());
  CHECK_THAT(big.error().message, Catch::Contains("2^63-1"));
  CHECK(big.error().where.field == "annotation x");
  auto bad = ParseBytes("64MB", "annotation x");
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains("64MB"));
}

// A large exponent takes the fast path or the exact one by its digits' count, and both keep it
// within the same bound: the canonical form of "0033709223370968477E00000101279" (17 digits,
// the fast path) had kept e101277, which the exact path read back as e999; "3000e1000" was
// clamped with its zeros still in the mantissa, so that its canonical form "30e1002" read back as
// "300e999" (both found by fuzzing).
TEST_CASE("ParseQuantity's canonical form of a huge exponent parses back to itself", "[quantity]") {
  for (const char* input : {"0033709223370968477E00000101279", "1e101279", "12345678901234567890e5000", "5e1001",
                            "3000e1000", "3000e998", "-70e999"}) {
    CAPTURE(input);
    auto q = ParseQuantity(input);
    REQUIRE(q.has_value());
    const std::string canonical = FormatQuantity(*q);
    auto again = ParseQuantity(canonical);
    REQUIRE(again.has_value());
    CHECK(FormatQuantity(*again) == canonical);
    CHECK_FALSE(QuantityValue(*q).has_value());
  }
}

}  // namespace
}  // namespace shmguard
