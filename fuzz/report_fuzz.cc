// libFuzzer target: bytes as `shmguard report`'s input (manifests, or `kubectl get
// pods,shmprofiles -o json`). Whatever the input, the page holds no markup but its own: one
// <script>, no tag or attribute opened by a text of the input (every '<' it writes is one of its
// own tags), and the JSON it is rendered from dumps and parses back to itself.
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "cli/commands/report_command.h"
#include "cli/report/report_model.h"

namespace {

// The tags the page writes itself; any other "<" is a text of the input left unescaped.
bool OwnTag(std::string_view at) {
  static constexpr std::string_view kTags[] = {
      "<!DOCTYPE", "<html",    "<head",  "<meta",   "<title",  "<style",  "<body",  "<header",  "<h1",   "<h2",
      "<h3",       "<p>",      "<div",   "<label",  "<select", "<option", "<span",  "<i ",      "<main", "<section",
      "<article",  "<table",   "<thead", "<tr",     "<th>",    "<td",     "<tbody", "<svg",     "<rect", "<path",
      "<details",  "<summary", "<pre",   "<button", "<ul>",    "<li",     "<b>",    "<script>", "</"};
  for (std::string_view tag : kTags) {
    if (at.substr(0, tag.size()) == tag) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  shmguard::cli::AuditOptions o;
  o.paths = {"-"};
  o.jobs = 1;
  std::vector<shmguard::cli::AuditRecord> records;
  const auto summary = shmguard::cli::StreamAudit(
      o, shmguard::Policy{}, in, shmguard::io::JsonLists::kItemByItem, false,
      [&](const shmguard::io::Document&, std::vector<shmguard::cli::AuditRecord>&& of_document) {
        for (auto& r : of_document) records.push_back(std::move(r));
      });
  const nlohmann::json report = shmguard::cli::ReportJson(records, summary);
  const std::string dumped = report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (nlohmann::json::parse(dumped).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) != dumped) {
    std::abort();
  }
  const std::string html = shmguard::cli::ReportHtml(report);
  if (html.find("<script>") != html.rfind("<script>")) std::abort();
  // The script and the style are the page's own text: the check starts after the style and
  // stops at the script.
  const size_t from = html.find("</style>"), to = html.rfind("<script>");
  for (size_t at = html.find('<', from + 1); at < to; at = html.find('<', at + 1)) {
    if (!OwnTag(std::string_view(html).substr(at))) std::abort();
  }
  return 0;
}
