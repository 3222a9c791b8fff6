// FitWarnings, DecisionWarnings, DenialMessage.
#include "server/admission_words.h"

#include <set>
#include <string_view>

#include "io/words/finding_text.h"

namespace shmguard::server {
namespace {

constexpr size_t kMaxWarningBytes = 120;
constexpr size_t kMaxWarningsTotal = 4000;
constexpr std::string_view kPrefix = "shmguard: ";

// Cuts `s` to at most `n` bytes without splitting a UTF-8 sequence.
size_t Utf8Cut(std::string_view s, size_t n) {
  if (s.size() <= n) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

std::vector<std::string> FitWarnings(const std::vector<std::string>& warnings) {
  std::vector<std::string> pieces;
  for (const auto& w : warnings) {
    std::string_view rest = w;
    if (rest.substr(0, kPrefix.size()) == kPrefix) rest.remove_prefix(kPrefix.size());
    bool first = true;
    while (!rest.empty()) {
      std::string head = first ? std::string(kPrefix) : std::string(kPrefix) + "... ";
      size_t room = kMaxWarningBytes - head.size();
      size_t cut = Utf8Cut(rest, room);
      if (cut < rest.size()) {
        size_t space = rest.substr(0, cut).rfind(' ');
        if (space != std::string_view::npos && space > room / 2) cut = space;
      }
      pieces.push_back(head + std::string(rest.substr(0, cut)));
      rest.remove_prefix(cut);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      first = false;
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t total = 0, dropped = 0;
  const size_t reserve = 80;  // room for the closing note
  for (auto& p : pieces) {
    if (!seen.insert(p).second) continue;
    if (total + p.size() > kMaxWarningsTotal - reserve) {
      ++dropped;
      continue;
    }
    total += p.size();
    out.push_back(std::move(p));
  }
  if (dropped > 0) {
    out.push_back(std::string(kPrefix) + std::to_string(dropped) +
                  " more warnings left out; run `shmguard audit` on the manifest for all of them");
  }
  return out;
}

std::vector<std::string> DecisionWarnings(const Decision& d) {
  if (d.findings.empty()) return {};
  std::vector<std::string> lines;
  lines.reserve(d.findings.size());
  for (const Finding& f : d.findings) lines.push_back(io::FindingLine(f, d.prefix_pods));
  return FitWarnings(lines);
}

std::string DenialMessage(const Decision& d, const std::string& kind, const std::string& namespace_name,
                          const std::string& name) {
  std::string out = "shmguard denied " + kind + " " + namespace_name + "/" + name + ":";
  for (const Finding& f : d.findings) out += " " + io::FindingLine(f, d.prefix_pods) + ";";
  out.pop_back();
  return out;
}

}  // namespace shmguard::server
