-- wrk script: POST the AdmissionReview in BODY_FILE (env) to the URL path, keep-alive.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

-- p50/p99 in microseconds on one line, for run.sh to read.
function done(summary, latency, requests)
  io.write(string.format("RESULT rps=%.1f p50_us=%d p99_us=%d errors=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write +
      summary.errors.timeout, summary.requests))
end
