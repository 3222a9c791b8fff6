// A KServe InferenceService (serving.kserve.io/v1beta1) has no pod template of its own: its
// predictor's pods are its ServingRuntime's, changed by what the predictor states. Read by
// FindPodTemplates.
#pragma once

#include "core/workloads/pod_templates.h"

namespace shmguard::workloads {

// The predictor's pod templates of the InferenceService `object` into `w`, as KServe builds
// them (pkg/controller/v1beta1/inferenceservice/components/predictor.go, buildPodSpec and
// multiNodeProcess):
//   - a predictor with a model (spec.predictor.model, or a framework field such as
//     `huggingface`, which KServe turns into one) and its runtime in `runtimes` (the one
//     model.runtime names, else the first that auto-selects the model format): the runtime's
//     kserve-container with the model's container merged over it and its args appended, the
//     runtime's volumes, and the predictor's pod fields over them; its workerSpec likewise;
//   - without the runtime: the model's container as the kserve-container, with the runtime's
//     /dev/shm unknown (PodTemplate::shm_unknown);
//   - a custom predictor (containers, no model): its own pod spec.
// Its pods are KServe's: the Pod webhook patches them when they are created.
// Fails with kInvalidInput naming the pointer when a field has the wrong type.
Result<Workload> ReadInferenceService(JsonNode object, const RuntimeCatalog* runtimes, Workload w);

}  // namespace shmguard::workloads
