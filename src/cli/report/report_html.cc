// ReportHtml: the report as one HTML page that needs nothing else (style, bars and script inline).
#include <algorithm>
#include <sstream>

#include "cli/report/report_model.h"
#include "core/values/human_units.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

// Text for HTML content and quoted attribute values.
std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Str(const json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

// A byte count for the page: "12Gi", "147.1Mi"; "-" for null.
std::string Human(const json& bytes) { return bytes.is_number_integer() ? HumanBytes(bytes.get<int64_t>()) : "-"; }

// data-bytes="N" for a number, nothing for null: the browser test reads it back.
std::string DataBytes(const json& bytes) {
  return bytes.is_number_integer() ? " data-bytes=\"" + std::to_string(bytes.get<int64_t>()) + "\"" : "";
}

int64_t Int(const json& j) { return j.is_number_integer() ? j.get<int64_t>() : 0; }

constexpr char kStyle[] = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#f6f7f9}
header{background:#1f2d3d;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#c9d3de}
.controls{padding:12px 24px;display:flex;gap:16px;align-items:center;background:#fff;border-bottom:1px solid #dde}
.legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
main{padding:8px 24px 32px}
section.ns h2{font-size:17px;margin:20px 0 8px;border-bottom:2px solid #1f2d3d}
article{background:#fff;border:1px solid #dde;border-radius:6px;margin:10px 0;padding:10px 14px}
article h3{margin:0 0 6px;font-size:15px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef;vertical-align:top}
th{font-weight:600;color:#555;font-size:12px}
.verdict{font-weight:600;border-radius:4px;padding:1px 6px;font-size:12px}
.v-ok{background:#e3f4e1;color:#236b1e}.v-patch{background:#fff1d6;color:#8a5a00}
.v-deny{background:#fde2e1;color:#a1201a}.v-skip{background:#eee;color:#555}
.terms{color:#666;font-size:12px}
.warning{color:#8a5a00}.error{color:#a1201a}.info{color:#555}
pre{background:#f3f4f6;padding:8px;overflow:auto;white-space:pre-wrap;word-break:break-all}
details{margin-top:6px}
)";

// Sorting and the namespace filter; nothing else runs.
constexpr char kScript[] = R"(
(function(){
  var ns=document.getElementById('namespace'),sort=document.getElementById('sort');
  function apply(){
    var want=ns.value;
    document.querySelectorAll('section.ns').forEach(function(s){
      s.hidden=!(want===''||s.dataset.namespace===want);
    });
    var key=sort.value;
    document.querySelectorAll('section.ns').forEach(function(s){
      var items=Array.prototype.slice.call(s.querySelectorAll('article.workload'));
      items.sort(function(a,b){
        if(key==='name')return a.dataset.name<b.dataset.name?-1:a.dataset.name>b.dataset.name?1:0;
        return Number(b.dataset[key])-Number(a.dataset[key]);
      });
      items.forEach(function(i){s.appendChild(i);});
    });
  }
  ns.addEventListener('change',apply);sort.addEventListener('change',apply);
  document.querySelectorAll('button.copy').forEach(function(b){
    b.addEventListener('click',function(){
      var text=document.getElementById(b.dataset.target).textContent;
      if(navigator.clipboard)navigator.clipboard.writeText(text).catch(function(){});
    });
  });
  apply();
})();
)";

// The bar of a row: configured (light), the learned peak (dark), the plan (orange mark) and the
// memory limit (black mark), on one scale: the largest of the first three, or the limit when it
// is at most four times that (a limit further out is a mark at the right end, so that the sizes
// stay readable).
std::string Bar(const json& row) {
  const json& learned = row["learned"];
  const json peak = learned.is_object() ? learned["peakBytes"] : json();
  const int64_t sizes = std::max({Int(row["currentBytes"]), Int(row["requiredBytes"]), Int(peak)});
  const int64_t limit = Int(row["memoryLimitBytes"]);
  const bool limit_inside = limit > 0 && limit / 4 <= sizes;
  const int64_t scale = limit_inside ? std::max(sizes, limit) : sizes + sizes / 10;
  if (scale <= 0) return "";
  constexpr int kWidth = 220, kHeight = 16;
  auto x = [&](int64_t bytes) {
    return std::min(kWidth, static_cast<int>(static_cast<double>(bytes) / static_cast<double>(scale) * kWidth));
  };
  std::ostringstream svg;
  svg << "<svg class=\"bar\" width=\"" << kWidth + 2 << "\" height=\"" << kHeight << "\" role=\"img\"><title>"
      << Escape("used " + Human(peak) + ", planned " + Human(row["requiredBytes"]) + ", configured " +
                Human(row["currentBytes"]) + ", memory limit " + Human(row["memoryLimitBytes"]) +
                (limit > 0 && !limit_inside ? " (beyond the right end)" : ""))
      << "</title><rect width=\"" << kWidth << "\" height=\"" << kHeight << "\" fill=\"#eef0f3\"/>";
  if (Int(row["currentBytes"]) > 0) {
    svg << "<rect class=\"configured\" width=\"" << x(Int(row["currentBytes"])) << "\" height=\"" << kHeight
        << "\" fill=\"#9ecae1\"/>";
  }
  if (Int(peak) > 0) {
    svg << "<rect class=\"used\" y=\"4\" width=\"" << x(Int(peak)) << "\" height=\"" << kHeight - 8
        << "\" fill=\"#08519c\"/>";
  }
  if (Int(row["requiredBytes"]) > 0) {
    svg << "<rect class=\"planned\" x=\"" << x(Int(row["requiredBytes"])) - 1 << "\" width=\"3\" height=\"" << kHeight
        << "\" fill=\"#e6550d\"/>";
  }
  if (limit_inside) {
    svg << "<rect class=\"limit\" x=\"" << x(limit) - 1 << "\" width=\"3\" height=\"" << kHeight
        << "\" fill=\"#000\"/>";
  } else if (limit > 0) {
    svg << "<path class=\"limit\" d=\"M" << kWidth - 6 << " 0 L" << kWidth + 2 << " " << kHeight / 2 << " L"
        << kWidth - 6 << " " << kHeight << " Z\" fill=\"#000\"/>";
  }
  svg << "</svg>";
  return svg.str();
}

// The plan's terms in words: "DataLoader 1.5Gi + NCCL 48Mi + base 64Mi, × 1.2".
std::string Terms(const json& plan) {
  if (!plan.is_object()) return "";
  std::string out;
  auto term = [&](const char* name, const char* key) {
    if (Int(plan[key]) > 0) out += (out.empty() ? "" : " + ") + std::string(name) + " " + HumanBytes(Int(plan[key]));
  };
  term("DataLoader", "dataloader_bytes");
  term("NCCL", "nccl_bytes");
  term("server", "server_bytes");
  term("base", "base_bytes");
  if (Int(plan["safety_ppm"]) > 0) out += ", × " + FormatPpm(Int(plan["safety_ppm"]));
  if (Int(plan["floor_applied"])) out += " (the multi-GPU floor)";
  return out;
}

void Row(std::ostringstream& out, const json& row) {
  const json& learned = row["learned"];
  const json peak = learned.is_object() ? learned["peakBytes"] : json();
  std::string containers;
  for (const auto& c : row["containers"]) containers += (containers.empty() ? "" : ", ") + Str(c);
  out << "<tr class=\"pod\"><td>" << Escape(Str(row["label"]));
  if (!containers.empty()) out << "<div class=\"terms\">" << Escape(containers) << "</div>";
  if (Int(row["objects"]) > 1) out << "<div class=\"terms\">" << Int(row["objects"]) << " objects</div>";
  out << "</td><td class=\"current\"" << DataBytes(row["currentBytes"]) << ">" << Escape(Str(row["current"]))
      << "</td><td class=\"required\"" << DataBytes(row["requiredBytes"]) << ">"
      << (Int(row["requiredBytes"]) > 0 ? HumanBytes(Int(row["requiredBytes"])) : "-")
      << (row["estimated"].get<bool>() ? " <span class=\"terms\">(estimate)</span>" : "") << "<div class=\"terms\">"
      << Escape(Terms(row["plan"])) << "</div></td><td class=\"peak\"" << DataBytes(peak) << ">" << Human(peak);
  if (learned.is_object()) out << "<div class=\"terms\">" << Int(learned["runs"]) << " run(s)</div>";
  out << "</td><td class=\"limit\"" << DataBytes(row["memoryLimitBytes"]) << ">" << Human(row["memoryLimitBytes"])
      << "</td><td><span class=\"verdict v-" << Escape(Str(row["verdict"])) << "\">" << Escape(Str(row["verdict"]))
      << "</span></td><td>" << Bar(row) << "</td></tr>\n";
  std::string notes;
  for (const auto& f : row["findings"]) {
    if (f["suppressed"].get<bool>()) continue;
    notes += "<li class=\"" + Escape(Str(f["severity"])) + "\"><b>" + Escape(Str(f["id"])) + "</b> " +
             Escape(Str(f["message"])) + "</li>";
  }
  if (!notes.empty()) {
    out << "<tr class=\"findings\"><td colspan=\"7\"><details><summary>findings</summary><ul>" << notes
        << "</ul></details></td></tr>\n";
  }
}

void Workload(std::ostringstream& out, const json& w, int index) {
  int64_t required = 0, current = 0, peak_ppm = 0;
  for (const auto& row : w["pods"]) {
    required = std::max(required, Int(row["requiredBytes"]));
    current = std::max(current, Int(row["currentBytes"]));
    const json& learned = row["learned"];
    if (learned.is_object() && Int(row["currentBytes"]) > 0) {
      peak_ppm = std::max(peak_ppm, Int(learned["peakBytes"]) * 1'000'000 / Int(row["currentBytes"]));
    }
  }
  const std::string verdict = Str(w["verdict"]);
  const int weight = VerdictRank(verdict);
  out << "<article class=\"workload\" data-name=\"" << Escape(Str(w["workload"])) << "\" data-required=\"" << required
      << "\" data-current=\"" << current << "\" data-peak=\"" << peak_ppm << "\" data-verdict=\"" << weight << "\"><h3>"
      << Escape(Str(w["kind"])) << " " << Escape(Str(w["name"])) << " <span class=\"verdict v-" << Escape(verdict)
      << "\">" << Escape(verdict) << "</span></h3>\n"
      << "<table><thead><tr><th>pod template</th><th>/dev/shm now</th><th>plan</th><th>learned peak</th>"
         "<th>memory limit</th><th>verdict</th><th>used / planned / configured / limit</th></tr></thead><tbody>\n";
  for (const auto& row : w["pods"]) Row(out, row);
  out << "</tbody></table>\n";
  if (!w["patch"].is_null()) {
    const std::string id = "patch-" + std::to_string(index);
    const std::string text = Str(w["command"]).empty() ? w["patch"].dump(2) : Str(w["command"]);
    out << "<details><summary>patch</summary><pre id=\"" << id << "\">" << Escape(text)
        << "</pre><button class=\"copy\" data-target=\"" << id << "\">copy</button></details>\n";
  }
  out << "</article>\n";
}

}  // namespace

std::string ReportHtml(const json& report) {
  std::ostringstream out;
  const json& s = report["summary"];
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width\">\n<title>shmguard report</title>\n<style>" << kStyle
      << "</style></head><body>\n<header><h1>shmguard: /dev/shm by workload</h1><p>" << Int(s["workloads"])
      << " workloads, " << Int(s["podTemplates"]) << " pod templates: " << Int(s["verdicts"]["patch"]) << " to patch, "
      << Int(s["verdicts"]["deny"]) << " denied, " << Int(s["verdicts"]["ok"]) << " ok";
  if (Int(s["errors"]) > 0) out << "; " << Int(s["errors"]) << " unreadable";
  out << "</p></header>\n<div class=\"controls\"><label>namespace <select id=\"namespace\"><option value=\"\">all"
         "</option>";
  for (const auto& ns : report["namespaces"]) {
    out << "<option value=\"" << Escape(Str(ns["name"])) << "\">" << Escape(Str(ns["name"])) << "</option>";
  }
  out << "</select></label><label>sort by <select id=\"sort\"><option value=\"name\">name</option>"
         "<option value=\"verdict\">verdict</option><option value=\"required\">plan</option>"
         "<option value=\"current\">/dev/shm now</option><option value=\"peak\">peak / size</option></select></label>"
         "<span class=\"legend\"><span><i style=\"background:#08519c\"></i>used (learned peak)</span>"
         "<span><i style=\"background:#9ecae1\"></i>configured</span><span><i style=\"background:#e6550d\"></i>"
         "planned</span><span><i style=\"background:#000\"></i>memory limit (&#9654;: further "
         "out)</span></span></div>\n<main>\n";
  int index = 0;
  for (const auto& ns : report["namespaces"]) {
    out << "<section class=\"ns\" data-namespace=\"" << Escape(Str(ns["name"])) << "\"><h2>" << Escape(Str(ns["name"]))
        << "</h2>\n";
    for (const auto& w : ns["workloads"]) Workload(out, w, index++);
    out << "</section>\n";
  }
  if (report["namespaces"].empty()) out << "<p>No workloads in the input.</p>\n";
  out << "</main>\n<script>" << kScript << "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace shmguard::cli
