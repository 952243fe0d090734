#!/usr/bin/env bash
# Regenerates the CMS fixtures with the OpenSSL command-line tool: one root CA, an
# intermediate CA, and per algorithm a signer certificate and a detached signature over
# content.txt. Certificates are valid for 100 years; the private keys are discarded.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'metadata:\n  vnf_product_name: fixture\n\nSource: Files/app.sh\nAlgorithm: SHA-256\n' > content.txt

cat > "$work/ca.ext" <<'X'
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
X
cat > "$work/leaf.ext" <<'X'
basicConstraints = CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
X

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/root.key" \
  -out root.pem -days 36500 -subj "/CN=vnfm cms-fixture root" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-384 -nodes -keyout "$work/inter.key" \
  -out "$work/inter.csr" -subj "/CN=vnfm cms-fixture intermediate" 2>/dev/null
openssl x509 -req -in "$work/inter.csr" -CA root.pem -CAkey "$work/root.key" -CAcreateserial \
  -CAserial "$work/serial" -out intermediate.pem -days 36500 -extfile "$work/ca.ext" -sha384 2>/dev/null

# name | key generation | cms -sign options
while IFS='|' read -r name keygen signopts; do
  openssl req -newkey $keygen -nodes -keyout "$work/$name.key" -out "$work/$name.csr" \
    -subj "/CN=vnfm cms-fixture $name" 2>/dev/null
  openssl x509 -req -in "$work/$name.csr" -CA intermediate.pem -CAkey "$work/inter.key" \
    -CAserial "$work/serial" -CAcreateserial -out "$name.cert" -days 36500 -extfile "$work/leaf.ext" 2>/dev/null
  openssl cms -sign -binary -in content.txt -signer "$name.cert" -inkey "$work/$name.key" \
    -certfile intermediate.pem $signopts -outform PEM -out "$name.cms"
done <<'LIST'
rsa-pkcs1-sha256|rsa:2048|-md sha256
rsa-pkcs1-sha512|rsa:3072|-md sha512
rsa-pss-sha256|rsa:2048|-md sha256 -keyopt rsa_padding_mode:pss -keyopt rsa_pss_saltlen:digest
ecdsa-p384-sha384|ec -pkeyopt ec_paramgen_curve:P-384|-md sha384
ecdsa-p256-keyid-noattr|ec -pkeyopt ec_paramgen_curve:P-256|-md sha256 -keyid -noattr
LIST

# Text mode: the signed bytes are content.txt with CRLF line ends.
openssl cms -sign -in content.txt -signer ecdsa-p384-sha384.cert \
  -inkey "$work/ecdsa-p384-sha384.key" -md sha384 -outform PEM -out text-mode.cms
# RSASSA-PSS with OpenSSL's default (maximum) salt length, which is refused.
openssl cms -sign -binary -in content.txt -signer rsa-pss-sha256.cert \
  -inkey "$work/rsa-pss-sha256.key" -md sha256 -keyopt rsa_padding_mode:pss -outform PEM \
  -out rsa-pss-max-salt.cms
# SHA-1, which is refused.
openssl cms -sign -binary -in content.txt -signer rsa-pkcs1-sha256.cert \
  -inkey "$work/rsa-pkcs1-sha256.key" -md sha1 -outform PEM -out sha1.cms
# Version 1 signer certificates (no extension file): one issued by the root, one by the
# intermediate.
for issuer in root intermediate; do
  if [ $issuer = root ]; then ca=root.pem; key="$work/root.key"; else ca=intermediate.pem; key="$work/inter.key"; fi
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/v1.key" \
    -out "$work/v1.csr" -subj "/CN=vnfm cms-fixture v1 by $issuer" 2>/dev/null
  openssl x509 -req -in "$work/v1.csr" -CA $ca -CAkey "$key" -CAserial "$work/serial" \
    -CAcreateserial -out "v1-by-$issuer.cert" -days 36500 2>/dev/null
  openssl cms -sign -binary -in content.txt -signer "v1-by-$issuer.cert" -inkey "$work/v1.key" \
    -md sha256 -outform PEM -out "v1-by-$issuer.cms"
done
