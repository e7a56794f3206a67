#!/usr/bin/env bash
# Issue #34's CPU check: the binary from before the redesign (e366c23) and after it, in the
# same run, rounds alternating: the shape bench at 2^20 on the CPU backend (shape-only
# inputs: the proofs cannot verify) and the 2 KiB PoRep prove on the CPU backend (verified).
# Usage: run.sh BEFORE_BIN AFTER_BIN FIXTURE_DIR OUT_DIR [ROUNDS]
set -euo pipefail
before=$1 after=$2 fx=$3 out=$4 rounds=${5:-5}
mkdir -p "$out"
{
  echo "date: $(date -u)"; echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "before: $before ($(sha256sum "$before" | cut -c1-16)); after: $after ($(sha256sum "$after" | cut -c1-16))"
} | tee "$out/machine.txt"
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    "$bin" shape-bench --shape '2^20' --backend cpu --rounds 1 --budgets full --host-h-round false \
      > "$out/shape-$side-$r.txt" 2>&1
    /usr/bin/time -f 'max RSS %M KiB' "$bin" prove --c1 "$fx/2KiB/c1.json" --param-cache "$fx/2KiB/params" \
      --backend cpu --out "$out/proof-$side-$r.bin" > "$out/prove-$side-$r.txt" 2>&1
    echo "round $r $side: shape wall $(grep -m1 'cpu backend: wall' "$out/shape-$side-$r.txt" | awk '{print $4}') ms," \
      "prove total $(grep -m1 '^  total' "$out/prove-$side-$r.txt" | awk '{print $2}') s, load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/rounds.txt"
  done
done
python3 - "$out" "$rounds" <<'PY' | tee "$out/summary.txt"
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(f"{out}/rounds.txt"):
    m = re.match(r"round (\d+) (\w+): shape wall ([\d.]+) ms, prove total ([\d.]+) s", line)
    if m:
        rows.setdefault(m.group(2), []).append((float(m.group(3)), float(m.group(4))))
print("| binary | shape 2^20 cpu wall, median (min-max) ms | 2 KiB prove cpu total, median (min-max) s |")
print("|---|---|---|")
med = {}
for side in ("before", "after"):
    s = [r[0] for r in rows[side]]; p = [r[1] for r in rows[side]]
    med[side] = (statistics.median(s), statistics.median(p))
    print(f"| {side} | {med[side][0]:.1f} ({min(s):.1f}-{max(s):.1f}) | {med[side][1]:.3f} ({min(p):.3f}-{max(p):.3f}) |")
print(f"| after / before | {med['after'][0] / med['before'][0]:.3f} | {med['after'][1] / med['before'][1]:.3f} |")
PY
