#!/bin/sh
# Remakes the design templates' preview images, internal/design/previews/*.png,
# from internal/design/templates/*.html with headless Chromium: each template
# is filled with a sample contact (Ada Lovelace) and sender, shot 600 px wide
# and cut below its footer. Run from anywhere after changing a template (and
# go generate ./internal/design); commit the PNGs. See docs/templates.md.
#
#   scripts/design-previews.sh [-chromium /path/to/chromium]
set -eu
cd "$(dirname "$0")/.."
exec go run ./internal/design/screenshot -dir internal/design "$@"
