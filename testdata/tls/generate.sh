#!/usr/bin/env bash
# Regenerates the TEST-ONLY TLS material used by the TLS transport tests: a CA and a server
# certificate for localhost, 127.0.0.1 and ::1 signed by it, valid from 2000 to 2100 (so a
# wrong clock does not break the tests). The server key is public: never trust this CA for
# anything else. The CA key is thrown away.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj "/CN=conduit test CA" -keyout "$work/ca.key" -out "$work/ca0.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=localhost" -keyout server.key -out "$work/server.csr" 2>/dev/null
touch "$work/index.txt"
cat >"$work/ca.cnf" <<CNF
[ca]
default_ca = test_ca
[test_ca]
dir = $work
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1,IP:::1
authorityKeyIdentifier = keyid
CNF
echo 01 >"$work/serial"
dates=(-startdate 20000101000000Z -enddate 21000101000000Z)
# Re-sign the CA itself so its validity matches.
openssl ca -batch -config "$work/ca.cnf" -selfsign -keyfile "$work/ca.key" -cert "$work/ca0.pem" \
  -in <(openssl x509 -x509toreq -in "$work/ca0.pem" -signkey "$work/ca.key" 2>/dev/null) \
  -extensions ca_ext "${dates[@]}" -notext -out ca.pem 2>/dev/null
openssl ca -batch -config "$work/ca.cnf" -keyfile "$work/ca.key" -cert ca.pem \
  -in "$work/server.csr" -extensions server_ext "${dates[@]}" -notext -out server.pem 2>/dev/null
openssl verify -CAfile ca.pem server.pem
