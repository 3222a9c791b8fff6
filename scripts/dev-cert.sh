#!/usr/bin/env bash
# Makes a throwaway CA and a serving certificate for localhost/127.0.0.1 (and the in-cluster
# service name) in DIR: ca.crt, tls.crt, tls.key. For development only.
set -euo pipefail
dir=${1:?usage: dev-cert.sh DIR}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -keyout ca.key -out ca.crt -subj "/CN=shmguard-dev-ca" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout tls.key -out tls.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:shmguard.shmguard-system.svc\n' > san.ext
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
  -out tls.crt -extfile san.ext 2>/dev/null
rm -f tls.csr san.ext ca.srl
