// The Catch2 test runner: every test file in tests/ builds into this one binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
