#!/usr/bin/env bash
# Screenshot an optlang HTML report in headless Chromium, to look at it as a browser renders it.
#   scripts/screenshot_report.sh report.html [out.png] [WIDTHxHEIGHT]
# Needs Debian's chromium (apt-get install -y chromium); the report is self-contained, so the
# browser runs with networking off. Prints the PNG path.
set -euo pipefail
report="${1:?usage: $0 report.html [out.png] [WIDTHxHEIGHT]}"
out="${2:-${report%.*}.png}"
size="${3:-1200x3000}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$browser" ]]; then
  echo "no chromium found: apt-get install -y chromium" >&2
  exit 2
fi
abs="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
out_abs="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-extensions --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${size/x/,}" --screenshot="$out_abs" "file://$abs" >/dev/null 2>&1
test -s "$out_abs"
echo "$out_abs"
