#!/usr/bin/env bash
# log-ingest's memory does not grow with the input's size or cardinality: 10 M lines whose paths
# are all distinct, piped from the generator, must run in at most 64 MiB peak RSS with the default
# settings, and every line must be counted.
#   log_ingest_memory_test.sh LOG_INGEST WORK_DIR
set -euo pipefail
app=$1 work=$2
lines=10000000
limit_kib=$((64 * 1024))
mkdir -p "$work"
"$app" generate --profile distinct --lines "$lines" --seed 7 |
  /usr/bin/time -f '%M' -o "$work/rss.txt" \
    "$app" run --input - --output /dev/null --dead-letter /dev/null \
    --summary "$work/summary.json" --quiet
rss_kib=$(tail -n 1 "$work/rss.txt")
echo "peak RSS: $((rss_kib / 1024)) MiB for $lines lines"
[ "$rss_kib" -le "$limit_kib" ] || { echo "FAIL: above $((limit_kib / 1024)) MiB" >&2; exit 1; }
summary=$(tr -d '\n' < "$work/summary.json")
field() { sed -E "s/.*\"$1\":([0-9]+).*/\\1/" <<< "$summary"; }
[ "$(field lines)" -eq "$lines" ] || { echo "FAIL: $(field lines) lines counted" >&2; exit 1; }
records=$(field records)
[ "$((records + $(field rejected)))" -eq "$lines" ] || { echo "FAIL: lines lost" >&2; exit 1; }
# Every record has its own path: the estimate must be within 4 standard errors (3.3 %).
paths=$(sed -E 's/.*"distinct":\{"paths":([0-9]+).*/\1/' <<< "$summary")
awk -v p="$paths" -v r="$records" 'BEGIN { d = p / r - 1; if (d < 0) d = -d; exit !(d < 0.033) }' ||
  { echo "FAIL: $paths distinct paths estimated for $records" >&2; exit 1; }
grep -q '"paths":{"exact":false,"method":"space-saving"' <<< "$summary" ||
  { echo "FAIL: the summary does not say the top paths are estimated" >&2; exit 1; }
echo "ok: $records records, ~$paths distinct paths"
