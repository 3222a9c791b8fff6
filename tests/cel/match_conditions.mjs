// Evaluates admission webhook matchConditions as the API server does, with a real CEL
// implementation (@bufbuild/cel): a request reaches the webhook only when every expression is
// true. Reads {"expressions": [...], "requests": [{"request": ..., "object": ...}]} on stdin and
// prints one entry per request: true, false, or {"error": "..."} when an expression fails (the
// API server then applies the webhook's failurePolicy).
import { run } from "@bufbuild/cel";

// JSON objects as CEL maps, lists as lists, numbers as CEL ints when whole (as Kubernetes
// objects decode them).
function toCel(value) {
  if (Array.isArray(value)) return value.map(toCel);
  if (value !== null && typeof value === "object") {
    return new Map(Object.entries(value).map(([k, v]) => [k, toCel(v)]));
  }
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  return value;
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { expressions, requests } = JSON.parse(input);
const results = requests.map(({ request, object }) => {
  const vars = { request: toCel(request), object: toCel(object), oldObject: null };
  try {
    return expressions.every((expression) => {
      const result = run(expression, vars);
      if (typeof result !== "boolean") throw new Error(`${expression} gave ${String(result)}, not a bool`);
      return result;
    });
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(results));
