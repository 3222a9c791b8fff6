// A SPIKE, not the product: what a decision costs when it reads the facts straight off
// simdjson's document, with no nlohmann tree built, walked or freed — and writes the patch as
// text, or builds it as the core does (nlohmann operations, then printed), to weigh the two.
// It covers one shape only — a Pod with sizing annotations, GPUs in its containers' limits and
// PET_NPROC_PER_NODE, as bench/make_bodies.py's pod-10k — and answers anything else with 501.
// bench/floor.sh checks that its patch equals HandleAdmission's before it measures it; the
// numbers are in bench/README.md ("Where the time goes").
#pragma once

#include <string>
#include <string_view>

namespace shmguard::bench {

// The AdmissionReview response for `body`, and its HTTP status: 200, or 501 with a one-line
// reason when the body is not the shape this spike covers. `padded`: io::kJsonReadAhead
// readable bytes follow the body, so it is parsed where it lies (else it is copied).
enum class SpikePatch { kText, kNlohmann };
std::string SpikeDomDecision(std::string_view body, bool padded, SpikePatch form, int& status);

}  // namespace shmguard::bench
