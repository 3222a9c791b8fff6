// A SPIKE, not the product: what a decision costs when it reads the facts straight off
// simdjson's document, with no nlohmann tree built, walked or freed, and writes the patch as
// text: the bound the core's own decision (now over a view of the same document) is held to.
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
std::string SpikeDomDecision(std::string_view body, bool padded, int& status);

}  // namespace shmguard::bench
