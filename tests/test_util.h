// Helpers shared by the tests: testdata and corpus paths, YAML/JSON fixtures.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/checks/checks.h"
#include "core/facts/pod_facts.h"
#include "core/values/result.h"
#include "core/workloads/pod_templates.h"

namespace shmguard::test {

// The sanitizer this test binary was built with, however its compiler says so: GCC defines
// __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__, clang answers __has_feature.
#if defined(__SANITIZE_THREAD__)
#define SHMGUARD_TEST_TSAN 1
#elif defined(__SANITIZE_ADDRESS__)
#define SHMGUARD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMGUARD_TEST_TSAN 1
#elif __has_feature(address_sanitizer)
#define SHMGUARD_TEST_ASAN 1
#endif
#endif

// How much slower the code runs under that sanitizer: the latency bounds of the tests, which
// guard against starvation rather than measure speed, are scaled by it.
#if defined(SHMGUARD_TEST_TSAN)
inline constexpr int kSlowdown = 10;
#elif defined(SHMGUARD_TEST_ASAN)
inline constexpr int kSlowdown = 5;
#else
inline constexpr int kSlowdown = 1;
#endif
// Whether memory bounds hold: a sanitizer keeps shadow memory and what the process frees.
inline constexpr bool kMemoryBounds = kSlowdown == 1;

// TESTDATA_DIR + "/" + relative: data the project made (measurements, fuzz regressions).
std::string TestdataPath(const std::string& relative);

// Reads a file under tests/testdata; fails the test when it cannot be read.
std::string ReadTestdata(const std::string& relative);

// What a shell command writes to its standard output; fails the test when it cannot be started.
std::string CommandOutput(const std::string& command);

// The text of the file at `path`, or "" when it cannot be read (a log not written yet).
std::string ReadText(const std::string& path);

// The corpus: real third-party manifests (the environment's SHMGUARD_CORPUS_DIR, else CMake's
// SHMGUARD_CORPUS_DIR, ../shared/testdata beside the checkout), never committed. CorpusPath("world") names a file or
// directory in it.
std::string CorpusPath(const std::string& relative = "");

// Protobuf's wire format, written by hand: a varint, a length-delimited field, a varint field.
std::string ProtoVarint(uint64_t v);
std::string ProtoBytes(int field, const std::string& value);
std::string ProtoNumber(int field, uint64_t v);
// Standard base64 with padding, as Go's JSON writes []byte.
std::string Base64(const std::string& bytes);

// A device plugin's allocation as the kubelet's device manager checkpoints it.
struct CheckpointEntry {
  std::string pod_uid, container, resource;
  std::vector<std::pair<std::string, std::string>> mounts;  // container path, host path
};
// The kubelet's device manager checkpoint (kubelet_internal_checkpoint) holding `entries`.
std::string DeviceCheckpoint(const std::vector<CheckpointEntry>& entries);

// Replaces the file at `path` with `text` at once (written beside it, then renamed), as the
// kubelet swaps a ConfigMap's files: a reader never sees it half written.
void ReplaceFile(const std::string& path, const std::string& text);

// Polls `check` every 20 ms until it is true or `seconds` pass; returns its last answer. For
// effects that land asynchronously (a file reloaded, a counter moved).
bool Eventually(const std::function<bool()>& check, double seconds = 5);

// True when the corpus is there: a directory with something in it. Otherwise warns "shmguard corpus not found at DIR",
// which CTest reports as a skipped test (SKIP_REGULAR_EXPRESSION in CMakeLists.txt).
bool HaveCorpus();

// Reads a corpus file; fails the test when it cannot be read. REQUIRES: HaveCorpus().
std::string ReadCorpus(const std::string& relative);

// Compares `actual` with tests/golden/NAME, which a person read once; with UPDATE_GOLDEN=1 in
// the environment, rewrites the file instead (then read its diff).
void CheckGolden(const std::string& name, const std::string& actual);

// Parses one YAML document (go-yaml typing, as the audit reads it); fails the test on error.
nlohmann::json Yaml(const std::string& text);

// Every document of a YAML stream, as the audit reads them; fails the test on a document that
// does not parse.
std::vector<nlohmann::json> YamlDocuments(const std::string& text);

// The workload `object` is, REQUIREd to be read and to have exactly one pod template
// (templates[0]). Its templates point into `object`, which must outlive it.
Workload OnlyTemplate(const nlohmann::json& object);

// ReadPodFacts (built-in policy) over the only pod template of the YAML object `yaml`. The facts
// view the object, which is kept until the next call.
Result<PodFacts> ReadOnlyFacts(const std::string& yaml);

// ReadOnlyFacts, REQUIREd to succeed.
PodFacts OnlyFacts(const std::string& yaml);

// Findings as "check-id: words" lines (io::FindingText), for asserting what a person reads
// together with which check said it.
std::vector<std::string> Said(const std::vector<Finding>& findings);

// Findings in words (io::FindingText), without their IDs.
std::vector<std::string> Words(const std::vector<Finding>& findings);

// The first finding of `check`, or nullptr.
const Finding* FindingOf(const std::vector<Finding>& findings, Check check);

// The IDs of `findings`, in order.
std::vector<std::string> Ids(const std::vector<Finding>& findings);

}  // namespace shmguard::test

// Starts a [corpus] test: returns from it, reported as skipped, when the corpus is absent.
#define SHMGUARD_REQUIRE_CORPUS() \
  if (!::shmguard::test::HaveCorpus()) return
