#!/usr/bin/env bash
# Installs shmguard from deploy/ without cert-manager: makes a CA and a serving certificate with
# openssl, writes the Secret shmguard-tls, fills caBundle in both webhook configurations, and
# applies everything except deploy/50-certificate.yaml.
#
#   scripts/install-without-cert-manager.sh            # kubectl apply to the current context
#   scripts/install-without-cert-manager.sh --output DIR   # only write the manifests to DIR
#
# Re-run it before the certificate expires (--days, default 365) to rotate: shmguard picks the
# new Secret up without a restart.
set -euo pipefail
cd "$(dirname "$0")/.."
output="" days=365 namespace=shmguard-system service=shmguard
while (($#)); do
  case "$1" in
    --output) output=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    *) echo "usage: $0 [--output DIR] [--days N]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -keyout "$work/ca.key" -out "$work/ca.crt" -subj "/CN=shmguard-webhook-ca" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$work/tls.key" -out "$work/tls.csr" -subj "/CN=$service.$namespace.svc" 2>/dev/null
printf 'subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\n' \
  "$service" "$namespace" "$service" "$namespace" > "$work/san.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days "$days" -out "$work/tls.crt" -extfile "$work/san.ext" 2>/dev/null

b64() { base64 -w0 < "$1"; }
out=${output:-$work/manifests}
mkdir -p "$out"
cat > "$out/45-secret-tls.yaml" <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: shmguard-tls
  namespace: $namespace
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "$work/tls.crt")
  tls.key: $(b64 "$work/tls.key")
  ca.crt: $(b64 "$work/ca.crt")
YAML
for f in deploy/*.yaml; do
  name=$(basename "$f")
  [[ $name == 50-certificate.yaml ]] && continue
  if [[ $name == 6*webhookconfiguration.yaml ]]; then
    # No CA injector: drop its annotation and put the CA into every clientConfig.
    python3 - "$f" "$(b64 "$work/ca.crt")" > "$out/$name" <<'PY'
import sys
path, ca = sys.argv[1], sys.argv[2]
for line in open(path):
    if "cert-manager.io/inject-ca-from" in line or line.strip() == "annotations:":
        continue
    sys.stdout.write(line)
    if line.strip() == "clientConfig:":
        indent = line[: len(line) - len(line.lstrip())] + "  "
        sys.stdout.write(f"{indent}caBundle: {ca}\n")
PY
  else
    cp "$f" "$out/$name"
  fi
done
if [[ -n $output ]]; then
  echo "wrote the manifests to $output"
else
  kubectl apply -f "$out"
fi
