// How a plain (unquoted) YAML scalar is typed, as sigs.k8s.io/yaml (go-yaml v2, YAML 1.1)
// types it, both ways: reading ("8" is an int, "yes" a bool, "~" null) and writing (which
// strings must be quoted to read back as strings).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shmguard::io {

// The JSON value a plain scalar resolves to: null ("", "~", "null"), a bool ("true", "yes",
// "on", "y"...), an int (decimal, 0x, 0o/0 octal, 0b, with '_'), a float ("1.5", ".inf",
// ".nan"), else the text itself.
nlohmann::json ResolvePlainScalar(std::string_view text);

// Whether `s` must be quoted to read back as this string: empty, would resolve to another type
// ("true", "8"), or starts with or contains YAML syntax ("- x", "a: b", "x #c").
bool NeedsQuotes(const std::string& s);

}  // namespace shmguard::io
