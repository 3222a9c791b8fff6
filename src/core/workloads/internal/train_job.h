// A Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1) has no pod template of its own:
// its pods are its runtime's, changed by what the TrainJob states. Read by FindPodTemplates.
#pragma once

#include "core/workloads/pod_templates.h"

namespace shmguard::workloads {

// The pod templates of the TrainJob `object` into `w` (whose names are filled in):
//   - with its runtime in `runtimes`: the runtime's replicated jobs, with the TrainJob's
//     spec.trainer (numNodes, numProcPerNode, resourcesPerNode, env, command) on the trainer
//     job and its pod-level patches (runtimePatches, podTemplateOverrides, podSpecOverrides)
//     merged in;
//   - without it: the trainer job as spec.trainer and the patches describe it, and every other
//     job a patch names, with the runtime's /dev/shm unknown (PodTemplate::shm_unknown).
// Fails with kInvalidInput naming the pointer when a field has the wrong type.
Result<Workload> ReadTrainJob(JsonNode object, const RuntimeCatalog* runtimes, Workload w);

}  // namespace shmguard::workloads
