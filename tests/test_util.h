// Helpers shared by the tests: testdata paths, YAML/JSON fixtures, patch application.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace shmguard::test {

// TESTDATA_DIR + "/" + relative.
std::string TestdataPath(const std::string& relative);

// Reads a file under tests/testdata; fails the test when it cannot be read.
std::string ReadTestdata(const std::string& relative);

// Parses one YAML document (go-yaml typing, as the audit reads it); fails the test on error.
nlohmann::json Yaml(const std::string& text);

}  // namespace shmguard::test
