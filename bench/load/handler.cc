// In-process timing of one admission decision, without TLS or sockets: for each body file, the
// median and p99 microseconds of HandleAdmission and of its stages (parse, ParseReview + Decide,
// response). Prints one line per body. Built with the project (shmguard_handler_bench).
//   build-bench/shmguard_handler_bench build-bench/bench-data/pod-10k.json ... [--iterations N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/verdict/admission.h"
#include "io/formats/fast_json.h"
#include "server/admission_handler.h"

namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Stats {
  std::vector<double> samples;
  void Add(double us) { samples.push_back(us); }
  double At(double q) {
    std::sort(samples.begin(), samples.end());
    return samples[static_cast<size_t>(q * static_cast<double>(samples.size() - 1))];
  }
};

}  // namespace

int main(int argc, char** argv) {
  int iterations = 20000;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s BODY.json... [--iterations N]\n", argv[0]);
    return 2;
  }
  const shmguard::Policy policy;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    if (!in) {
      std::fprintf(stderr, "%s: cannot open the file\n", file.c_str());
      return 2;
    }
    ss << in.rdbuf();  // an empty file inserts nothing: the review cannot be decoded, a 400
    // As the server holds a body: followed by the JSON parser's read-ahead, so parsed in place.
    std::string padded = ss.str() + std::string(shmguard::io::kJsonReadAhead, ' ');
    const std::string_view body(padded.data(), padded.size() - shmguard::io::kJsonReadAhead);
    Stats total, parse, decide;
    size_t response_bytes = 0;
    for (int i = 0; i < iterations; ++i) {
      auto t0 = Clock::now();
      auto x = shmguard::server::HandleAdmission({body, /*padded=*/true}, shmguard::server::AdmissionRoute{}, {policy});
      auto t1 = Clock::now();
      if (x.status != 200) {  // then the stages below have nothing to parse or decide
        std::fprintf(stderr, "%s: status %d: %s\n", file.c_str(), x.status, x.error.c_str());
        return 1;
      }
      auto review = shmguard::io::ParseJsonView(body, /*padded=*/true);
      auto t2 = Clock::now();
      auto request = shmguard::ParseReview(*review);
      auto d = shmguard::Decide(*request, {policy, shmguard::Face::kMutate});
      auto t3 = Clock::now();
      response_bytes = x.body.size();
      total.Add(Micros(t1 - t0));
      parse.Add(Micros(t2 - t1));
      decide.Add(Micros(t3 - t2));
    }
    std::printf(
        "%s: %zu B in, %zu B out; HandleAdmission p50 %.1f us p99 %.1f us; "
        "parse p50 %.1f us; ParseReview+Decide p50 %.1f us; rest p50 %.1f us\n",
        file.c_str(), body.size(), response_bytes, total.At(0.5), total.At(0.99), parse.At(0.5), decide.At(0.5),
        total.At(0.5) - parse.At(0.5) - decide.At(0.5));
  }
  return 0;
}
