#!/usr/bin/env bash
# Renders an audit report in headless Chromium: checks that every inline SVG plot is laid out
# with a non-zero size and drawn elements, and writes a full-page PNG screenshot.
#   scripts/render-report.sh reports/<run>/report.html [out.png] [width]
# Skips (exit 0, with a notice) when Chromium is not installed.
set -euo pipefail
usage="usage: $0 report.html [out.png] [width]"
case "${1:-}" in
  -h|--help) echo "$usage"; exit 0 ;;
  "") echo "$usage" >&2; exit 2 ;;
esac
html="$1"
if [ ! -f "$html" ]; then
  echo "error: report '$html' does not exist" >&2; exit 2
fi
png="${2:-${html%.html}.png}"
width="${3:-1200}"
chrome="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$chrome" ]; then
  echo "NOTICE: chromium not found; skipping the rendering check (apt-get install chromium)"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$work/profile")
# A copy with a probe that reports each SVG's laid-out size and drawn element count.
probe="$(dirname "$html")/.render-probe.html"
sed 's#</body>#<script>window.addEventListener("load",()=>{const r=[...document.querySelectorAll("svg")].map(s=>{const b=s.getBoundingClientRect();return [Math.round(b.width),Math.round(b.height),s.querySelectorAll("polyline,path,circle,line,rect,polygon").length].join(",")});const p=document.createElement("pre");p.textContent="SVG"+"CHECK "+r.join(";")+" E"+"ND";document.body.appendChild(p)});</script></body>#' "$html" > "$probe"
dom="$("$chrome" "${flags[@]}" --virtual-time-budget=5000 --dump-dom "file://$(realpath "$probe")" 2>/dev/null)"
rm -f "$probe"
rows="$(printf '%s' "$dom" | sed -n 's/.*SVGCHECK \(.*\) END.*/\1/p')"
expected="$(grep -o '<svg' "$html" | wc -l)"
n=0; bad=0
IFS=';' read -ra items <<< "$rows"
for it in "${items[@]}"; do
  IFS=',' read -r w h drawn <<< "$it"
  n=$((n + 1))
  if [ "${w:-0}" -lt 100 ] || [ "${h:-0}" -lt 100 ] || [ "${drawn:-0}" -lt 5 ]; then
    echo "plot $n renders badly: ${w}x${h} px, $drawn drawn elements"; bad=$((bad + 1))
  fi
done
# Full-page screenshot: height from the page's own layout.
height="$(printf '%s' "$dom" | grep -o '<svg' | wc -l)"
height=$(( 1400 + height * 440 ))
"$chrome" "${flags[@]}" --window-size="$width,$height" --screenshot="$png" "file://$(realpath "$html")" 2>/dev/null >/dev/null
echo "chromium: $n of $expected SVG plots rendered, $bad bad; screenshot $png"
[ "$n" -eq "$expected" ] && [ "$bad" -eq 0 ]
