#!/usr/bin/env bash
# Times `search_text` against ripgrep on the same tree, side by side, and prints the ratios.
#
#   envelope-mcp/examples/workspace_server/bench/search.sh [TREE] [QUERY]
#
# TREE defaults to cargo's registry sources (some 450 MB of crates), QUERY to `fn main`. Each
# command runs RUNS times (default 5) after one warm-up run, alternating, and the best time of
# each counts: the page cache is warm for all of them, so the numbers compare CPU work, not
# disks. Needs `rg` (Debian: `apt-get install ripgrep`).
#
# What is compared: `search_text` counts every occurrence (`completeness.total`) and returns one
# page; `rg --count-matches` counts every occurrence too. Both honour `.gitignore` files and
# skip hidden files; ripgrep's defaults skip binary files as `search_text` skips non-UTF-8 ones.
set -euo pipefail
cd "$(dirname "$0")/../../../.."

tree=${1:-$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/index.crates.io-*/ | head -1)}
query=${2:-fn main}
runs=${RUNS:-5}
cores=$(nproc)

cargo build --quiet --release -p envelope-mcp --example workspace_server
server=target/release/examples/workspace_server

# The best of `runs` wall-clock times of a command, in seconds.
best() {
    local best=""
    for _ in $(seq "$runs"); do
        local start end took
        start=$(date +%s.%N)
        "$@" > /dev/null
        end=$(date +%s.%N)
        took=$(echo "$end - $start" | bc)
        if [ -z "$best" ] || [ "$(echo "$took < $best" | bc)" = 1 ]; then best=$took; fi
    done
    echo "$best"
}

arguments=$(printf '{"query":%s,"limit":1}' "$(printf '%s' "$query" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")
search() { "$server" --root "$tree" call search_text "$arguments"; }
rg_all() { rg --count-matches --fixed-strings --no-messages -e "$query" "$tree" || true; }
rg_one() { rg --threads 1 --count-matches --fixed-strings --no-messages -e "$query" "$tree" || true; }

# Warm the page cache and check both count the same.
total=$(search | python3 -c 'import json,sys; print(json.load(sys.stdin)["completeness"]["total"])')
rg_total=$(rg_all | awk -F: '{ sum += $NF } END { print sum + 0 }')
echo "tree: $tree ($(du -sh "$tree" | cut -f1)), query: \"$query\", $cores cores"
echo "occurrences: search_text $total, rg $rg_total"

ours=$(best search)
theirs=$(best rg_all)
single=$(best rg_one)
printf 'search_text            %6.3f s\n' "$ours"
printf 'rg (%d threads)         %6.3f s   search_text / rg = %.2fx\n' "$cores" "$theirs" "$(echo "$ours / $theirs" | bc -l)"
printf 'rg (1 thread)          %6.3f s   search_text / rg = %.2fx\n' "$single" "$(echo "$ours / $single" | bc -l)"
