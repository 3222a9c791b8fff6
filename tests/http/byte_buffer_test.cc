// ByteBuffer: bytes written into its prepared room are kept in order across growth and partial
// consumption, the JSON read-ahead is always there past the end, and an idle buffer is bounded.
#include "http/byte_buffer.h"

#include <catch2/catch.hpp>
#include <string>

namespace shmguard::http {
namespace {

void Append(ByteBuffer& b, std::string_view bytes) {
  char* room = b.Prepare(bytes.size());
  bytes.copy(room, bytes.size());
  b.Commit(bytes.size());
}

TEST_CASE("ByteBuffer keeps what is written, in order, with read-ahead past the end", "[byte_buffer]") {
  ByteBuffer b;
  CHECK(b.empty());
  std::string expected;
  for (int i = 0; i < 200; ++i) {  // grows many times
    std::string piece = std::to_string(i) + std::string(static_cast<size_t>(i), 'x') + ";";
    Append(b, piece);
    expected += piece;
    REQUIRE(b.view() == expected);
    CHECK(b.ReadableAfter(0, b.size()) >= io::kJsonReadAhead);
  }
  b.Consume(10, 1 << 20);  // a request answered, the next one partly received
  expected.erase(0, 10);
  CHECK(b.view() == expected);
  Append(b, "tail");
  CHECK(b.view() == expected + "tail");
}

TEST_CASE("ByteBuffer frees an emptied buffer larger than it may keep", "[byte_buffer]") {
  ByteBuffer b;
  Append(b, std::string(300000, 'b'));
  size_t big = b.ReadableAfter(0, 0);
  CHECK(big >= 300000 + io::kJsonReadAhead);
  b.Consume(b.size(), 1 << 20);  // allowed to keep 1 MiB: kept
  CHECK(b.ReadableAfter(0, 0) == big);
  Append(b, "x");
  b.Consume(1, 64 << 10);  // only 64 KiB may stay idle: freed
  CHECK(b.empty());
  CHECK(b.ReadableAfter(0, 0) == 0);
  Append(b, "again");
  CHECK(b.view() == "again");
  b.Clear();  // a connection that will read no more: nothing kept
  CHECK(b.empty());
  CHECK(b.ReadableAfter(0, 0) == 0);
}

TEST_CASE("A body parsed where it lies in the buffer gives what a copy gives", "[byte_buffer]") {
  std::string review = R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u",)"
                       R"( "object": {"kind": "Pod", "spec": {"containers": [{"name": "c"}]}}}})";
  ByteBuffer b;
  Append(b, "POST /mutate HTTP/1.1\r\n\r\n");
  size_t at = b.size();
  Append(b, review);
  auto in_place = io::ParseJsonView(b.view().substr(at), /*padded=*/true);
  REQUIRE(in_place);
  nlohmann::json viewed = in_place->Copy();  // before the next parse, which the view would not outlive
  auto copied = io::ParseJsonView(review);
  REQUIRE(copied);
  CHECK(viewed == copied->Copy());
  CHECK(viewed == nlohmann::json::parse(review));
  auto broken = io::ParseJsonView(b.view().substr(at, review.size() - 1), /*padded=*/true);
  CHECK_FALSE(broken);  // the byte after the text is not read as part of it
}

}  // namespace
}  // namespace shmguard::http
