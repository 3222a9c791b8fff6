// StreamAudit, CollectAudit and RunAudit: files -> documents -> objects (List items) -> records
// (audit_record.cc makes each record).
#include "cli/commands/audit_command.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <thread>

#include "cli/commands/ordered_pool.h"
#include "cli/outputs/audit_output.h"
#include "core/values/json_node.h"
#include "io/config/config_map.h"
#include "io/files/file_text.h"
#include "io/files/manifests.h"

namespace shmguard::cli {
namespace {

using nlohmann::json;

// "PodList" items often lack apiVersion/kind (the API omits them); kubectl's "List" has them.
bool IsList(JsonNode obj) {
  std::string_view kind = obj.StringMember("kind");
  return kind.size() >= 4 && kind.substr(kind.size() - 4) == "List" && obj.Find("items").IsArray();
}

// What a value that is not an object is, in JSON's words.
std::string TypeName(JsonNode value) {
  switch (value.type()) {
    case JsonNode::Type::kArray: return "a list";
    case JsonNode::Type::kBool: return "a boolean";
    case JsonNode::Type::kInteger:
    case JsonNode::Type::kFloat: return "a number";
    case JsonNode::Type::kString: return "a string";
    default: return "a null";
  }
}

// The record of a document or List item that is not a mapping (`where`: its file and line, and
// for an item its pointer, /items/3): an error, since it is no object at all, not a policy "no".
AuditRecord NotAnObject(JsonNode value, const Location& where, int line) {
  return UnreadableRecord(
      "", MakeError(Code::kInvalidInput, "a Kubernetes object must be a mapping, not " + TypeName(value), where), line);
}

// The records of an item of a List, as of any object. Items of an API list ("PodList") carry no
// kind: it is in the list's name.
std::vector<AuditRecord> EvaluateListItem(JsonNode item, int index, const std::string& list_kind,
                                          const std::string& list_api_version, const Policy& policy,
                                          const EvaluateOptions& eval) {
  std::string item_kind = list_kind.size() > 4 ? list_kind.substr(0, list_kind.size() - 4) : "";
  std::vector<AuditRecord> records;
  if (item.IsObject() && !item.Find("kind") && !item_kind.empty()) {
    json filled = item.Copy();
    filled["kind"] = item_kind;
    filled["apiVersion"] = list_api_version;
    records = RecordsOf(filled, policy, eval);
  } else {
    records = RecordsOf(item, policy, eval);
  }
  for (AuditRecord& r : records) r.item = index;
  return records;
}

// Standard input ("-"), read whole: at most `max_bytes`.
Result<io::FileText> ReadAll(std::istream& in, size_t max_bytes) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    auto n = static_cast<size_t>(in.gcount());
    if (n > max_bytes - text.size()) {
      return MakeError(Code::kIo, "larger than the limit of " + std::to_string(max_bytes) + " bytes",
                       Location::File("-"));
    }
    text.append(buf, n);
  }
  return io::FileText(std::move(text));
}

// Any file: stdin for "-", at most `max_bytes`.
Result<io::FileText> ReadInput(const std::string& file, std::istream& in, size_t max_bytes) {
  return file == "-" ? ReadAll(in, max_bytes) : io::FileText::Read(file, max_bytes);
}

// "~" or a bare "---": a document with nothing in it, neither counted nor shown.
// A document that holds nothing ("~", a bare "---"); a List's item is never empty: a null item is
// an error, as it is when the List is read whole.
bool IsEmptyDocument(const io::Document& doc) { return !doc.error && !doc.item && doc.object->Root().IsNull(); }

// Fills the line and column of every finding of `records` (the objects of `doc`): a List's items
// are found under /items/N of the document unless they were handed out alone.
void Locate(const io::Document& doc, std::vector<AuditRecord>& records) {
  for (auto& r : records) {
    const std::string base = !doc.item && r.item ? "/items/" + std::to_string(*r.item) : "";
    for (auto& f : r.findings) {
      const io::TextPosition at = doc.object->Locate(base + f.finding.pointer);
      f.line = at.line;
      f.column = at.column;
    }
  }
}

std::vector<AuditRecord> EvaluateDocument(const io::Document& doc, const Policy& policy, const EvaluateOptions& eval,
                                          bool locate) {
  std::vector<AuditRecord> records;
  if (IsEmptyDocument(doc)) return records;
  auto add = [&](std::vector<AuditRecord>&& of_object) {
    for (AuditRecord& r : of_object) {
      r.file = doc.file;
      r.document = doc.index;
      r.line = doc.line;
      records.push_back(std::move(r));
    }
  };
  if (doc.error) {
    add({UnreadableRecord(doc.file, *doc.error, doc.error->where.line)});
    return records;
  }
  auto item = [&](JsonNode object, int index, const std::string& kind, const std::string& api_version) {
    if (!object.IsObject()) {
      Location where = Location::Pointer("/items/" + std::to_string(index));
      where.file = doc.file;
      return add({NotAnObject(object, where, doc.line)});
    }
    add(EvaluateListItem(object, index, kind, api_version, policy, eval));
  };
  const JsonNode root = doc.object->Root();
  if (doc.item) {  // one item of a List, handed out alone
    item(root, *doc.item, doc.list_kind, doc.list_api_version);
  } else if (IsList(root)) {
    const std::string kind(root.StringMember("kind")), api_version(root.StringMember("apiVersion"));
    int i = 0;
    for (JsonNode each : root.Find("items").Items()) item(each, i++, kind, api_version);
  } else if (!root.IsObject()) {
    add({NotAnObject(root, Location::Line(doc.line, doc.file), doc.line)});
  } else {
    add(RecordsOf(root, policy, eval));
  }
  if (locate) Locate(doc, records);
  return records;
}

// What objects elsewhere in the input say about a workload, whatever the order of files: the
// Trainer and KServe runtimes the TrainJobs and InferenceServices use, the ResourceClaims and
// ResourceClaimTemplates whose GPUs pods use (DRA), and the ConfigMaps whose files and variables
// a server's launch reads. Only files that mention one are parsed; what cannot be read twice
// (stdin, a pipe), or why it could not be read, is kept in `kept` for the audit itself to use or
// report.
// The ShmProfiles in the input (`kubectl get pods,shmprofiles -A -o json`) are observations as
// --observations' are (`given`), the input's taking precedence for the same workload; a profile
// that cannot be read is left out here and reported by the audit as the object it is.
struct References {
  RuntimeCatalog runtimes;
  ClaimIndex claims;
  ObservationIndex observations;
  ConfigMapIndex config_maps;
};
References CollectReferences(const std::vector<io::InputFile>& expanded, std::istream& in, size_t max_bytes,
                             const ObservationIndex* given, std::map<std::string, Result<io::FileText>>& kept) {
  References refs;
  if (given) refs.observations = *given;
  auto add = [&](JsonNode object) {
    refs.runtimes.Add(object);
    refs.claims.Add(object);
    if (auto cm = io::ReadConfigMap(object)) refs.config_maps.Put(cm->namespace_name, cm->name, std::move(cm->data));
    if (object.StringMember("kind") == kShmProfileKind) {
      if (auto observed = ReadShmProfile(object)) refs.observations.Put(std::move(*observed));
    }
  };
  for (const auto& input : expanded) {
    if (input.error) continue;
    {
      const std::string& file = input.path;
      if (kept.count(file)) continue;
      Result<io::FileText> text = ReadInput(file, in, max_bytes);
      if (!text) {
        kept.emplace(file, std::move(text));
        continue;
      }
      if (text->view().find("TrainingRuntime") != std::string_view::npos ||
          text->view().find("ServingRuntime") != std::string_view::npos ||
          text->view().find("ResourceClaim") != std::string_view::npos ||
          text->view().find("ConfigMap") != std::string_view::npos ||
          text->view().find(kShmProfileKind) != std::string_view::npos) {
        for (const auto& doc : io::ParseManifests(text->view(), file)) {
          if (!doc.object) continue;
          const JsonNode root = doc.object->Root();
          add(root);
          if (IsList(root)) {
            for (JsonNode item : root.Find("items").Items()) add(item);
          }
        }
      }
      if (!text->mapped()) kept.emplace(file, std::move(text));
    }
  }
  return refs;
}

}  // namespace

std::optional<AuditFormat> ParseAuditFormat(std::string_view name) {
  static constexpr std::pair<std::string_view, AuditFormat> kFormats[] = {
      {"table", AuditFormat::kTable},   {"json", AuditFormat::kJson},
      {"yaml", AuditFormat::kYaml},     {"patched", AuditFormat::kPatched},
      {"sarif", AuditFormat::kSarif},   {"junit", AuditFormat::kJunit},
      {"github", AuditFormat::kGithub}, {"policyreport", AuditFormat::kPolicyReport}};
  for (const auto& [n, f] : kFormats) {
    if (n == name) return f;
  }
  return std::nullopt;
}

bool LocatesFindings(AuditFormat f) {
  return f == AuditFormat::kJson || f == AuditFormat::kYaml || f == AuditFormat::kSarif || f == AuditFormat::kJunit ||
         f == AuditFormat::kGithub;
}

std::optional<Severity> ParseFailOn(std::string_view name) {
  if (name == "deny") return Severity::kError;
  if (name == "warn") return Severity::kWarning;
  return ParseSeverity(name);
}

AuditSummary StreamAudit(const AuditOptions& o, const Policy& policy, std::istream& in, io::JsonLists lists,
                         bool locate,
                         const std::function<void(const io::Document&, std::vector<AuditRecord>&&)>& each) {
  const std::vector<std::string>& paths = o.paths;
  const unsigned jobs = o.jobs > 0 ? static_cast<unsigned>(o.jobs) : std::max(1u, std::thread::hardware_concurrency());
  AuditSummary summary;
  struct Evaluated {
    io::Document doc;
    bool empty = false;  // IsEmptyDocument, decided before the document is freed
    std::vector<AuditRecord> records;
  };
  // Documents are parsed and evaluated on `jobs` threads, then counted and handed to `each` here,
  // in input order. A few per thread in flight keep them busy; memory stays bounded.
  OrderedPool<Evaluated> pool(jobs, 8 * static_cast<size_t>(jobs), [&](Evaluated&& e) {
    if (e.empty) return;
    if (!e.doc.item || *e.doc.item == 0) ++summary.documents;
    for (const auto& r : e.records) summary.Add(r);
    each(e.doc, std::move(e.records));
  });
  auto fail = [&](const std::string& file, const Error& e) {
    io::Document doc;
    doc.file = file;
    AuditRecord r = UnreadableRecord(file, e, 0);
    summary.Add(r);
    each(doc, {std::move(r)});
  };
  // The paths are expanded once: the references' pass and the audit walk the same files.
  const std::vector<io::InputFile> expanded = io::ExpandPaths(paths);
  std::map<std::string, Result<io::FileText>> kept;
  const References refs = CollectReferences(expanded, in, o.max_file_bytes, o.observations, kept);
  const EvaluateOptions eval{.runtimes = &refs.runtimes,
                             .exemptions = o.ignore,
                             .observations = refs.observations.size() ? &refs.observations : nullptr,
                             .claims = &refs.claims,
                             .config_maps = &refs.config_maps,
                             .policy_mode = o.policy_mode};
  for (const auto& input : expanded) {
    if (input.error) {
      fail(input.path, *input.error);
      continue;
    }
    {
      const std::string& file = input.path;
      ++summary.files;
      // What the runtimes' pass read and cannot be read twice (stdin, a pipe) is taken from it.
      auto cached = kept.find(file);
      Result<io::FileText> text =
          cached != kept.end() ? std::move(cached->second) : ReadInput(file, in, o.max_file_bytes);
      if (cached != kept.end()) kept.erase(cached);
      if (!text) {
        fail(file, text.error());
        continue;
      }
      io::ForEachManifest(text->view(), file, lists, [&](io::Document&& doc) {
        pool.Submit([doc = std::move(doc), &policy, &eval, lists, locate]() mutable {
          io::ParseDocument(doc, locate);
          bool empty = IsEmptyDocument(doc);
          auto records = EvaluateDocument(doc, policy, eval, locate);
          doc.object_text = {};                       // it points into the file's text, which goes away after the file
          if (lists == io::JsonLists::kItemByItem) {  // nothing prints it: free it here, not on the printing thread
            doc.object.reset();
            std::string().swap(doc.text);
          }
          return Evaluated{std::move(doc), empty, std::move(records)};
        });
      });
      pool.Finish();  // before the file's text goes away: JSON documents point into it
    }
  }
  return summary;
}

AuditResult CollectAudit(const std::vector<std::string>& paths, const Policy& policy, std::istream& in,
                         const Exemptions& exemptions) {
  AuditResult result;
  AuditOptions o;
  o.paths = paths;
  o.jobs = 1;
  o.ignore = exemptions;
  result.summary = StreamAudit(o, policy, in, io::JsonLists::kWhole, true,
                               [&](const io::Document& doc, std::vector<AuditRecord>&& records) {
                                 if (doc.object || doc.error) result.documents.push_back(doc);
                                 for (auto& r : records) result.records.push_back(std::move(r));
                               });
  return result;
}

ExitCode RunAudit(const AuditOptions& o, const Policy& policy, std::istream& in, std::ostream& out, std::ostream& err) {
  if (o.paths.empty()) {
    err << "shmguard audit: give at least one file, directory or - for stdin\n";
    return ExitCode::kUsage;
  }
  auto printer = MakeAuditPrinter(o, out);
  bool findings = false;
  // Only -o patched prints objects back, so only it needs a JSON List whole.
  const io::JsonLists lists = o.output == AuditFormat::kPatched ? io::JsonLists::kWhole : io::JsonLists::kItemByItem;
  AuditSummary summary = StreamAudit(o, policy, in, lists, LocatesFindings(o.output),
                                     [&](const io::Document& doc, std::vector<AuditRecord>&& records) {
                                       for (const auto& r : records) {
                                         if (r.verdict == AuditVerdict::kError) {
                                           err << "shmguard audit: " << r.findings.front().finding.Value("error")
                                               << "\n";
                                         }
                                         if (auto worst = WorstSeverity(r); worst && *worst >= o.fail_on)
                                           findings = true;
                                       }
                                       printer->Document(doc, records);
                                     });
  printer->Finish(summary);
  if (summary.Count(AuditVerdict::kError)) return ExitCode::kUsage;
  return findings ? ExitCode::kFindings : ExitCode::kOk;
}

}  // namespace shmguard::cli
