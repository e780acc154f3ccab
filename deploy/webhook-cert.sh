#!/usr/bin/env bash
# The webhook's certificate without cert-manager: makes a CA and a certificate for the
# Service's DNS name with openssl, stores them in the Secret the web pods mount, and writes the
# CA into the ValidatingWebhookConfiguration. Run again before the certificate expires
# (DAYS, 365 by default); lbdesk reads the renewed files without a restart (the kubelet
# refreshes the mounted Secret within about a minute).
set -euo pipefail
NAMESPACE=lbdesk-system
SERVICE=lbdesk
DAYS=${DAYS:-365}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
openssl req -x509 -newkey rsa:3072 -nodes -days "$DAYS" -subj "/CN=lbdesk webhook CA" \
  -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey rsa:3072 -nodes -subj "/CN=$SERVICE.$NAMESPACE.svc" \
  -keyout tls.key -out tls.csr 2>/dev/null
printf 'subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
  "$SERVICE" "$NAMESPACE" "$SERVICE" "$NAMESPACE" > ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$DAYS" \
  -extfile ext.cnf -out tls.crt 2>/dev/null
kubectl -n "$NAMESPACE" create secret tls lbdesk-webhook-tls --cert=tls.crt --key=tls.key \
  --dry-run=client -o yaml | kubectl apply -f -
kubectl patch validatingwebhookconfiguration lbdesk --type=json \
  -p "[{\"op\": \"add\", \"path\": \"/webhooks/0/clientConfig/caBundle\", \"value\": \"$(base64 -w0 < ca.crt)\"}]"
echo "webhook certificate for $SERVICE.$NAMESPACE.svc valid for $DAYS days"
