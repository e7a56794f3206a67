#!/bin/bash
# Issue #37's kinds at 32 GiB on the lent GPU machine: their synthesis on its 16 cores, then
# their proofs through the engine on the GPU, from the release binary built here and carried
# gzipped in device-carry/:
#
#   device run: bash bench/device/kinds32.sh        carry: ["device-carry"]
#
# 1. `gen-fixture --shape-only --sector-size 32GiB` writes, beside the PoRep C1, the
#    shape-only WinningPoSt, full WindowPoSt partition (2349 sectors) and SnapDeals update
#    (16 partitions) in /tmp/k32/kinds (random contents, the exact structure; cannot verify),
#    unless an earlier call on the same warm machine left them there.
# 2. `synth-bench --input` for each kind in DEVICE_KINDS ("winning window snap"; set and
#    empty: none, as DEVICE_ENGINE; a 1-thread WindowPoSt round takes 290 s): partition
#    0's compiled synthesis on 16 threads against one thread running the same code,
#    DEVICE_ROUNDS (3) rounds alternating, witnesses compared; the reference path once
#    (DEVICE_SKIP_REFERENCE=1 leaves it out); peak RSS of each process (/usr/bin/time).
#    DEVICE_DEFERRED=1 times the assignment-only path (what cuzkd runs on the GPU backend).
# 3. The engine (`engine-bench --input`, deferred evaluation as cuzkd runs on GPUs, random
#    parameters of each kind's exact shape made on the GPU; shape-only: nothing verifies),
#    the parts in DEVICE_ENGINE ("window snap urgent"; empty: none; also "window-urgent" and
#    "mixed"):
#      window  DEVICE_PROOFS (5) WindowPoSt partitions submitted at once: request to proof
#              of each (goal <= 4 s, parameters resident: 60.8 GB, more than an 80 GB card
#              keeps);
#      snap    DEVICE_PROOFS (5) SnapDeals proofs (16 partitions each) at once on
#              DEVICE_SYNTH_WORKERS (4) synthesis threads: steady state per proof (goal <= 20 s);
#      urgent  SnapDeals proofs with the 32 GiB WinningPoSt as CRITICAL jobs submitted while
#              they run (DEVICE_URGENT, 4; half with the urgent lane, half without): request to
#              proof against its time alone (goal <= 1 s).
#      window-urgent  2 WindowPoSt partitions with 2 WinningPoSt CRITICAL jobs beside them,
#              the urgent lane on: a WinningPoSt once waited 38 s there for the lane's thread
#              and the GPU (bench/runs/2026-12-06-h100-window-lane/).
#      mixed   DEVICE_PROOFS PoRep proofs, DEVICE_BESIDE (2) SnapDeals proofs beside them
#              (`--beside`) and the WinningPoSt as CRITICAL jobs during both: each kind's
#              request to proof, the GPU's share over all. WindowPoSt cannot join them here:
#              the bench holds every input's parameters on the host at once, and PoRep's and
#              WindowPoSt's (100.7 GiB) exceed a 125 GiB host's 94.4 GiB budget.
# The 32 GiB WindowPoSt recording peaks above 24 GB (killed at 24.3 GB on the 23 GB build
# machine): this is where its 2-core row cannot be taken. Logs go to $OUT: gen.txt,
# synth-32gib-KIND.txt, engine-32gib-PART.txt.
# shellcheck source=bench/device/lib.sh
. "$(dirname "$0")/lib.sh"
unpack cuzk-lab || exit 2
machine_info
status=0
mkdir -p /tmp/k32
# A warm machine keeps /tmp between calls: an earlier call's fixtures (about 130 s to make)
# are used again when every file is there.
if [ -f /tmp/k32/c1.shape-only.json ] && [ -f /tmp/k32/kinds/window.shape-only.json ] &&
  [ -f /tmp/k32/kinds/winning.shape-only.json ] && [ -f /tmp/k32/kinds/snap.shape-only.json ]; then
  echo "fixtures: /tmp/k32 from an earlier call on this machine, used again" | tee "$OUT/gen.txt"
else
  "$BIN/cuzk-lab" gen-fixture --sector-size 32GiB --shape-only --out /tmp/k32 > "$OUT/gen.txt" 2>&1 || status=1
  grep -A1 -E "^  (winning|window|snap) " "$OUT/gen.txt"
fi
args=(--rounds "${DEVICE_ROUNDS:-3}")
[ -z "${DEVICE_SKIP_REFERENCE:-}" ] && args+=(--reference)
[ -n "${DEVICE_DEFERRED:-}" ] && args+=(--deferred)
for kind in ${DEVICE_KINDS-winning window snap}; do
  f=/tmp/k32/kinds/$kind.shape-only.json
  /usr/bin/time -v "$BIN/cuzk-lab" synth-bench --input "$f" "${args[@]}" > "$OUT/synth-32gib-$kind.txt" 2>&1 || status=1
  grep -E "^synth-bench|recording|witness:|reference|median|peak RSS|Maximum resident|Elapsed|error" "$OUT/synth-32gib-$kind.txt"
  echo "[$(elapsed) s] $kind done"
done
export CUZK_REQUIRE_GPU=1 RUST_LOG=${RUST_LOG:-warn,cuzk_gpu::eval=info}
K=/tmp/k32/kinds
n=${DEVICE_PROOFS:-5}
for part in ${DEVICE_ENGINE-window snap urgent}; do
  case $part in
    window) eargs=(--input "$K/window.shape-only.json" --proofs "$n") ;;
    snap) eargs=(--input "$K/snap.shape-only.json" --proofs "$n" --synthesis-workers "${DEVICE_SYNTH_WORKERS:-4}") ;;
    urgent) eargs=(--input "$K/snap.shape-only.json" --proofs "$n" --synthesis-workers "${DEVICE_SYNTH_WORKERS:-4}"
      --urgent-input "$K/winning.shape-only.json" --urgent "${DEVICE_URGENT:-4}" --urgent-every 10) ;;
    window-urgent) eargs=(--input "$K/window.shape-only.json" --proofs 2 --urgent-input "$K/winning.shape-only.json"
      --urgent 2 --urgent-every 8 --urgent-lanes 1) ;;
    mixed) eargs=(--c1 /tmp/k32/c1.shape-only.json --proofs "$n" --beside "${DEVICE_BESIDE:-2}:$K/snap.shape-only.json"
      --synthesis-workers "${DEVICE_SYNTH_WORKERS:-4}" --urgent-input "$K/winning.shape-only.json" --urgent "${DEVICE_URGENT:-4}"
      --urgent-every 10) ;;
    *) echo "kinds32.sh: unknown engine part $part (window snap urgent window-urgent mixed)" >&2; status=1; continue ;;
  esac
  /usr/bin/time -v "$BIN/cuzk-lab" engine-bench "${eargs[@]}" --deferred > "$OUT/engine-32gib-$part.txt" 2>&1 || status=1
  grep -E "compiled circuit recorded|host memory budget|proof [0-9]+ |steady state|GPU busy|urgent|alone|=== beside|every job|peak host RSS|peak VRAM|Maximum resident|error" \
    "$OUT/engine-32gib-$part.txt" | head -40
  echo "[$(elapsed) s] engine $part done"
done
exit $status
