#!/usr/bin/env bash
# tls_cert.sh DIR: a throw-away self-signed certificate for the TLS tests:
# DIR/cert.pem and DIR/key.pem (EC P-256, for localhost and 127.0.0.1), and
# DIR/other.pem, a second certificate the first does not sign.
set -euo pipefail
dir=$1
mkdir -p "$dir"
gen() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=$3" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/$2" -out "$dir/$1" >/dev/null 2>&1
}
gen cert.pem key.pem parley-test
gen other.pem other-key.pem parley-other
chmod 644 "$dir"/cert.pem "$dir"/other.pem
# The keys are secrets: parleyd refuses a key others can read.
chmod 600 "$dir"/key.pem "$dir"/other-key.pem
