// ResizeVariables: verdict/resize.cc EvaluateResize as CEL, over the pod before (oldObject) and
// after (object) the resize.
#include <string>

#include "core/cel/internal/cel_text.h"
#include "core/cel/internal/pod_variables.h"
#include "core/workloads/pod_templates.h"

namespace shmguard::cel {
namespace {

// The name of the volume pod `root`'s containers mount at /dev/shm, '' when none does.
std::string ShmNameOf(const std::string& root) {
  return "((" + root + ".spec.containers + " + root +
         ".spec.?initContainers.orValue([])).map(c, c.?volumeMounts.orValue([]).filter(m, " + ShmPath() +
         ").map(m, m.name)).filter(l, size(l) > 0).map(l, l[0]) + [''])[0]";
}

// The size the shmguard.io/plan annotation of pod `root` carries (patch/plan_annotation.cc
// PlannedShmBytes): its "required" quantity, 0 when there is none.
std::string PlanRequiredOf(const std::string& root) {
  const std::string member = root + ".metadata.?annotations[?'" + std::string(kPlanAnnotation) +
                             "'].orValue('').find('\"required\":\"[^\"]+\"')";
  const std::string value = member + ".substring(12, size(" + member + ") - 1)";
  return "(" + member + " != '' && isQuantity(" + value + ") ? " + Bytes(value) + " : 0)";
}

// Pod `root`'s /dev/shm in bytes (resize.cc Read): the memory emptyDir named `name`'s sizeLimit,
// else the plan's size; 0 when it mounts no memory emptyDir there.
std::string ShmBytesOf(const std::string& root, const std::string& name) {
  return "(" + root + ".spec.?volumes.orValue([]).filter(v, v.name == " + name +
         " && v.?emptyDir.?medium.orValue('') == 'Memory').map(v, v.emptyDir.?sizeLimit.hasValue() ? " +
         Bytes("v.emptyDir.sizeLimit") + " : " + PlanRequiredOf(root) + ") + [0])[0]";
}

}  // namespace

CelVariables ResizeVariables() {
  CelVariables out = NamespaceVariables();
  const CelVariables resize = {
      {"newLimit", MemoryLimitOf("object")},
      {"oldLimit", MemoryLimitOf("oldObject")},
      {"shmName", ShmNameOf("object")},
      {"newShm", ShmBytesOf("object", "variables.shmName")},
      {"oldShm", ShmBytesOf("oldObject", ShmNameOf("oldObject"))},
      // Worse: a lower limit (or one where there was none), or a larger /dev/shm.
      {"resizeWorse",
       "(variables.newLimit > 0 && (variables.oldLimit <= 0 || variables.newLimit < variables.oldLimit)) || "
       "variables.oldShm <= 0 || variables.newShm > variables.oldShm"},
      // /dev/shm within maxFractionOfMemoryLimit of the limit (memory_limit.cc MemoryLimitDenial).
      {"resizeFits", "variables.newShm <= 0 || variables.newLimit <= 0 || variables.newShm <= " +
                         Share("variables.newLimit", "variables.maxFractionPpm")},
      // The least limit that holds /dev/shm, rounded up to a whole MiB.
      {"resizeMinimum",
       "(variables.newShm / variables.maxFractionPpm * 1000000 + (variables.newShm % "
       "variables.maxFractionPpm * 1000000 + variables.maxFractionPpm - 1) / "
       "variables.maxFractionPpm + 1048575) / 1048576 * 1048576"},
  };
  out.insert(out.end(), resize.begin(), resize.end());
  return out;
}

}  // namespace shmguard::cel
