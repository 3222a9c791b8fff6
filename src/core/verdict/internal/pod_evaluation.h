// One pod template's verdict under a namespace's rule: the step of Evaluate between a
// workload's discovery and its verdict, in four stages, each handed the last one's values: read
// (pod_facts.cc ReadPod), size (pod_sizing.cc SizePod), judge (here), remedy (shm_remedy.cc
// RemedyFor). Internal to the evaluation (evaluation.cc).
#pragma once

#include "core/sizing/pod_stage.h"
#include "core/verdict/evaluation.h"

namespace shmguard::verdict {

// The verdict of `s.t`, one pod template of workload `s.w`, under `s.rule` and `s.policy`:
//   - kSkip when annotated shmguard.io/mode: skip (kDeny for any other mode);
//   - sized from shmguard.io/num-workers and batch-bytes when either is set (the plan, the
//     memory limit, then the patch or, for a kind shmguard does not patch, what it has);
//   - else, for a pod that requests a GPU, per the rule's requireAnnotations and the policy's
//     `unannotated` rule (the floor and estimate of EstimateShm);
//   - else kOk: no GPUs and no sizing annotations.
// Malformed fields are an error finding naming the field; never fails otherwise. Findings of
// checks `s.ctx` exempts are kept, suppressed, and do not count toward the verdict.
PodEvaluation EvaluatePod(const PodStage& s);

}  // namespace shmguard::verdict
