#!/usr/bin/env bash
# Issues a per-node certificate for the sync port's mutual TLS, signed by the
# cluster CA, naming the node's id (subjectAltName URI latentd-node:ID) and
# the host of its --cluster-listen (docs/operations.md, "Per-node
# certificates"). With it a member speaks only as itself: a peer whose hello
# claims another node id than its certificate's is refused.
#
# Usage: ops/issue-node-cert.sh [--days N] CA_PEM CA_KEY NODE_ID HOST OUT_PREFIX
#   CA_PEM, CA_KEY  the cluster CA (make one once:
#                   openssl req -x509 -newkey rsa:2048 -nodes -days 3650 \
#                     -subj /CN=latentd-cluster-ca -keyout ca.key -out ca.pem)
#   NODE_ID         the node's id: its --listen address (HOST:PORT), as
#                   `latentctl cluster status` lists it
#   HOST            the host or IP address of its --cluster-listen
#   OUT_PREFIX      writes OUT_PREFIX.pem and OUT_PREFIX.key (mode 0600)
# Then: latentd ... --cluster-tls-cert OUT_PREFIX.pem --cluster-tls-key
#   OUT_PREFIX.key --cluster-tls-ca CA_PEM [--cluster-tls-require-node-id on]
set -euo pipefail
days=365
if [[ ${1:-} == --days ]]; then
  days=$2
  shift 2
fi
if [[ $# -ne 5 ]]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
ca_pem=$1 ca_key=$2 node_id=$3 host=$4 out=$5
id_pattern='^[][A-Za-z0-9._:@-]+$'
if [[ ! $node_id =~ $id_pattern ]]; then
  echo "issue-node-cert: node id '$node_id' has characters a URI cannot" \
    "carry as is (letters, digits and . _ : @ [ ] - only)" >&2
  exit 2
fi
if [[ $host =~ ^[0-9.]+$ || $host == *:* ]]; then
  host_san="IP:$host"
else
  host_san="DNS:$host"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 077
cat >"$tmp/ext" <<EXT
subjectAltName=URI:latentd-node:$node_id,$host_san
extendedKeyUsage=serverAuth,clientAuth
keyUsage=digitalSignature,keyEncipherment
EXT
openssl req -newkey rsa:2048 -nodes -subj "/CN=$node_id" \
  -keyout "$out.key" -out "$tmp/csr" 2>/dev/null
openssl x509 -req -in "$tmp/csr" -CA "$ca_pem" -CAkey "$ca_key" \
  -CAcreateserial -CAserial "$tmp/serial" -days "$days" -extfile "$tmp/ext" \
  -out "$out.pem" 2>/dev/null
chmod 600 "$out.key"
chmod 644 "$out.pem"
echo "issued $out.pem for node $node_id ($host_san), valid $days days"
