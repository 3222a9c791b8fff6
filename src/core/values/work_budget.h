// WorkBudget: how much work one evaluation may take, asked by the core between its steps (each
// pod template, each container). The core reads no clock: the caller says what exhausts it (the
// webhook: the CPU time its thread spent on the review, server/review_budget.h).
#pragma once

namespace shmguard {

class WorkBudget {
 public:
  virtual ~WorkBudget() = default;
  // True once the work allowed is spent: the evaluation stops at its next step.
  virtual bool Exhausted() const = 0;
};

}  // namespace shmguard
