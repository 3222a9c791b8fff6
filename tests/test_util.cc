// Implementation of the shared test helpers.
#include "test_util.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/files/manifests.h"
#include "io/words/finding_text.h"
#include "test_documents.h"

namespace shmguard::test {

std::string TestdataPath(const std::string& relative) { return std::string(TESTDATA_DIR) + "/" + relative; }

std::string ReadTestdata(const std::string& relative) {
  auto text = io::ReadFileText(TestdataPath(relative));
  REQUIRE(text.has_value());
  return *text;
}

std::string CommandOutput(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

std::string ReadText(const std::string& path) {
  auto text = io::ReadFileText(path);
  return text ? *text : std::string();
}

void CheckGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(SOURCE_DIR) + "/tests/golden/" + name;
  if (std::getenv("UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path);
    return;
  }
  auto expected = io::ReadFileText(path);
  INFO("golden file " << path << " (UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE(expected.has_value());
  CHECK(actual == *expected);
}

std::string ProtoVarint(uint64_t v) {
  std::string out;
  do {
    unsigned char b = v & 0x7F;
    v >>= 7;
    out += static_cast<char>(v ? b | 0x80 : b);
  } while (v);
  return out;
}

std::string ProtoBytes(int field, const std::string& value) {
  return ProtoVarint(static_cast<uint64_t>(field) << 3 | 2) + ProtoVarint(value.size()) + value;
}

std::string ProtoNumber(int field, uint64_t v) {
  return ProtoVarint(static_cast<uint64_t>(field) << 3) + ProtoVarint(v);
}

std::string Base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += k[n >> 18 & 63];
    out += k[n >> 12 & 63];
    out += i + 1 < in.size() ? k[n >> 6 & 63] : '=';
    out += i + 2 < in.size() ? k[n & 63] : '=';
  }
  return out;
}

std::string DeviceCheckpoint(const std::vector<CheckpointEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : entries) {
    std::string response;
    for (const auto& [container_path, host_path] : e.mounts) {
      response += ProtoBytes(2, ProtoBytes(1, container_path) + ProtoBytes(2, host_path));
    }
    list.push_back({{"PodUID", e.pod_uid},
                    {"ContainerName", e.container},
                    {"ResourceName", e.resource},
                    {"DeviceIDs", {{"-1", {"dev-0"}}}},
                    {"AllocResp", Base64(response)}});
  }
  return nlohmann::json{{"Data", {{"PodDeviceEntries", list}, {"RegisteredDevices", nlohmann::json::object()}}},
                        {"Checksum", 0}}
      .dump();
}

void ReplaceFile(const std::string& path, const std::string& text) {
  const std::string next = path + ".next";
  std::ofstream(next) << text;
  std::filesystem::rename(next, path);
}

bool Eventually(const std::function<bool()>& check, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return check();
}

// The environment's SHMGUARD_CORPUS_DIR wins over the directory the build was configured with, so
// one build can also run as a clone without ../shared does.
static std::string CorpusDir() {
  const char* dir = std::getenv("SHMGUARD_CORPUS_DIR");
  return dir && *dir ? dir : CORPUS_DIR;
}

std::string CorpusPath(const std::string& relative) {
  return relative.empty() ? CorpusDir() : CorpusDir() + "/" + relative;
}

bool HaveCorpus() {
  std::error_code ec;
  if (!std::filesystem::is_empty(CorpusDir(), ec) && !ec) return true;
  // scripts/test.sh sets it when ../shared is beside the checkout: a corpus test that would skip
  // then fails, so that nothing the corpus should show passes unseen.
  if (const char* required = std::getenv("SHMGUARD_REQUIRE_SHARED"); required && std::string(required) == "1") {
    FAIL("SHMGUARD_REQUIRE_SHARED=1 but the corpus is not at " << CorpusDir());
  }
  WARN("shmguard corpus not found at "
       << CorpusDir() << ": skipped; set SHMGUARD_CORPUS_DIR or configure with -DSHMGUARD_CORPUS_DIR=DIR");
  return false;
}

std::string ReadCorpus(const std::string& relative) {
  auto text = io::ReadFileText(CorpusPath(relative));
  INFO(CorpusPath(relative));
  REQUIRE(text.has_value());
  return *text;
}

std::vector<io::Document> ReadDocuments(const std::vector<std::string>& paths) {
  std::vector<io::Document> out;
  for (const auto& input : io::ExpandPaths(paths)) {
    INFO(input.path);
    REQUIRE_FALSE(input.error);
    auto text = io::ReadFileText(input.path);
    REQUIRE(text.has_value());
    for (auto& doc : io::ParseManifests(*text, input.path)) out.push_back(std::move(doc));
  }
  return out;
}

nlohmann::json Yaml(const std::string& text) {
  auto docs = io::ParseManifests(text, "inline.yaml");
  REQUIRE(docs.size() == 1);
  INFO((docs[0].error ? docs[0].error->ToString() : ""));
  REQUIRE(docs[0].object.has_value());
  return docs[0].object->ToJson();
}

std::vector<nlohmann::json> YamlDocuments(const std::string& text) {
  std::vector<nlohmann::json> out;
  for (const auto& doc : io::ParseManifests(text, "stream")) {
    INFO(doc.text);
    REQUIRE_FALSE(doc.error);
    if (doc.object) out.push_back(doc.object->ToJson());
  }
  return out;
}

Workload OnlyTemplate(const nlohmann::json& object) {
  auto w = FindPodTemplates(object);
  INFO((w ? "" : w.error().ToString()));
  REQUIRE(w.has_value());
  REQUIRE(w->templates.size() == 1);
  return std::move(*w);
}

Result<PodFacts> ReadOnlyFacts(const std::string& yaml) {
  static nlohmann::json kept;  // the facts view it
  kept = Yaml(yaml);
  Workload w = OnlyTemplate(kept);
  return ReadPodFacts(w.templates[0], Policy{});
}

PodFacts OnlyFacts(const std::string& yaml) {
  auto f = ReadOnlyFacts(yaml);
  INFO((f ? "" : f.error().ToString()));
  REQUIRE(f.has_value());
  return std::move(*f);
}

std::vector<std::string> Said(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(std::string(f.id()) + ": " + io::FindingText(f));
  return out;
}

std::vector<std::string> Words(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(io::FindingText(f));
  return out;
}

const Finding* FindingOf(const std::vector<Finding>& findings, Check check) {
  for (const auto& f : findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

std::vector<std::string> Ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.emplace_back(f.id());
  return out;
}

}  // namespace shmguard::test
