// Collector: a part of the node agent that writes its own metrics in Prometheus's text format
// (node_exporter's shape), with http/prometheus_text.h's writers. The metrics port writes each
// part's in turn (ShmAgent::RenderMetrics); each part keeps its own numbers, and a new metric
// goes beside the state it reports.
#pragma once

#include <ostream>

#include "http/prometheus_text.h"

namespace shmguard::agent {

class Collector {
 public:
  virtual ~Collector() = default;
  // Every family of the part: its HELP and TYPE lines, then its samples.
  virtual void Collect(std::ostream& out) const = 0;
};

using http::WriteCounterBy;
using http::WriteSample;

}  // namespace shmguard::agent
