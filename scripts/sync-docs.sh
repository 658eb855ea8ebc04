#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Copies examples/dsh-sandbox.yaml, the configuration with every key at its default, into the
# yaml block that follows its marker in docs/operations.md: the outline a reader copies from the
# guide is the example, which loads. tests/e2e/t-policy.sh fails while the two differ.
set -euo pipefail
cd "$(dirname "$0")/.."

doc=docs/operations.md
example=examples/dsh-sandbox.yaml
marker='<!-- examples/dsh-sandbox.yaml, copied by scripts/sync-docs.sh -->'
grep -qxF "$marker" "$doc" || {
	echo "sync-docs: no line '$marker' in $doc" >&2
	exit 1
}
# The marker, then the block (its old lines dropped up to the closing fence) made anew.
awk -v marker="$marker" -v example="$example" '
	skip && /^```$/ { skip = 0; next }
	skip { next }
	{ print }
	$0 == marker {
		print "```yaml"
		while ((getline line < example) > 0)
			print line
		print "```"
		getline fence
		if (fence != "```yaml") {
			print "sync-docs: no yaml block after the marker" > "/dev/stderr"
			exit 1
		}
		skip = 1
	}' "$doc" >"$doc.new"
mv "$doc.new" "$doc"
