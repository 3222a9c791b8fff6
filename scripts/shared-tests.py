#!/usr/bin/env python3
"""The end-to-end tests that read ../shared (the corpus, the upstream CRDs), as a `go test -run`
pattern, for scripts/test-without-shared.sh: a Test function reads it when it, or a function it
calls in its package, calls corpusDir, haveCorpus, requireCRDs or requireKServeCRDs, or reads
cp.CRDDir. Every other Test function is checked not to name a custom resource's API group (a
kind only the CRDs serve): one that did would need them without saying so, and exits 1 naming it.

With --catch DIR (tests): checks instead that every Catch2 TEST_CASE that reads the corpus
(SHMGUARD_REQUIRE_CORPUS, HaveCorpus, CorpusPath, ReadCorpus) is tagged [corpus], the label
`ctest -L corpus` selects; exits 1 naming each that is not.

Usage: scripts/shared-tests.py DIR (e2e) | --catch DIR (tests)."""
import pathlib
import re
import sys

READS = re.compile(r"\b(corpusDir|haveCorpus|requireCRDs|requireKServeCRDs)\(|\bcp\.CRDDir\b")
# The API groups of the CRDs the control plane installs from ../shared/crds.
CRD_GROUP = re.compile(
    r'"[^"]*\b(kubeflow\.org|ray\.io|jobset\.x-k8s\.io|leaderworkerset\.x-k8s\.io|batch\.volcano\.sh|'
    r'argoproj\.io|serving\.kserve\.io|wgpolicyk8s\.io|openreports\.io)\b[^"]*"'
)
FUNC = re.compile(r"^func (?:\([^)]*\) )?(\w+)\(", re.M)


def functions(text):
    """name -> body of every top-level function, by brace matching from its line."""
    out = {}
    for m in FUNC.finditer(text):
        start = text.index("{", m.end())
        depth, i = 0, start
        while i < len(text):
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            elif text.startswith("//", i):  # comments and literals: braces inside them do not count
                i = text.index("\n", i)
                continue
            elif text.startswith("/*", i):
                i = text.index("*/", i) + 2
                continue
            elif c in "\"'`":
                end = text.index(c, i + 1) if c == "`" else i + 1
                if c != "`":
                    while text[end] != c:
                        end += 2 if text[end] == "\\" else 1
                i = end
            i += 1
        out[m.group(1)] = text[start : i + 1]
    return out


CORPUS_USE = re.compile(r"SHMGUARD_REQUIRE_CORPUS|HaveCorpus\(\)|CorpusPath\(|ReadCorpus\(")
CASE = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*(?:,\s*"([^"]*)")?', re.S)


def check_catch(root):
    status = 0
    for f in sorted(root.rglob("*.cc")):
        text = f.read_text()
        if not CORPUS_USE.search(text):
            continue
        for part in re.split(r"(?m)^TEST_CASE\(", text)[1:]:
            m = CASE.match(part)
            if CORPUS_USE.search(part) and (not m or "[corpus]" not in (m.group(2) or "")):
                print(f"shared-tests: {f}: {m.group(1) if m else part[:60]!r} reads the corpus but is not tagged [corpus]",
                      file=sys.stderr)
                status = 1
    return status


def main():
    if sys.argv[1] == "--catch":
        return check_catch(pathlib.Path(sys.argv[2]))
    root = pathlib.Path(sys.argv[1])
    bodies = {}
    for f in sorted(root.glob("*_test.go")):
        bodies.update(functions(f.read_text()))
    reading = {n for n, b in bodies.items() if READS.search(b)}
    while True:  # whatever calls a reader reads too
        more = {n for n, b in bodies.items() if n not in reading and any(re.search(r"\b%s\(" % r, b) for r in reading)}
        if not more:
            break
        reading |= more
    tests = sorted(n for n in bodies if n.startswith("Test") and n in reading)
    status = 0
    for n, b in bodies.items():
        if n.startswith("Test") and n not in reading and CRD_GROUP.search(b):
            print(f"shared-tests: {n} names a custom resource's group ({CRD_GROUP.search(b).group(0)}) "
                  "without requireCRDs: it needs ../shared/crds without saying so", file=sys.stderr)
            status = 1
    print("^(" + "|".join(tests) + ")$")
    return status


if __name__ == "__main__":
    sys.exit(main())
