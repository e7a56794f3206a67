# Median and spread of the per-partition times in the engine runs' timelines (G: prove() on
# the GPU worker, S: synthesis); job 0's partition 0 is cold and left out.
#   python3 summary.py > summary.txt
import glob, re, statistics

print("per-partition times from the G (prove() on the GPU worker) and S (synthesis) lines; partition 0 of job 0 is cold (first upload of parameters/circuit) and left out of the medians")
for f in sorted(glob.glob("*/engine-32gib*.txt")):
    g, s = [], []
    for line in open(f):
        m = re.match(r"\s*([GS]) job (\d+) partition\s+(\d+)\s+[\d.]+ \.\.\s+[\d.]+\s+\(([\d.]+) s\)", line)
        if m and not (m.group(2) == "0" and m.group(3) == "0"):
            (g if m.group(1) == "G" else s).append(float(m.group(4)))

    def st(v):
        v = sorted(v)
        q = lambda p: v[int(p * (len(v) - 1))]
        return f"median {statistics.median(v):.2f} s (min {v[0]:.2f}, p10 {q(.1):.2f}, p90 {q(.9):.2f}, max {v[-1]:.2f}; n={len(v)})"

    print(f"{f}:\n  prove() per partition: {st(g)}\n  synthesis per partition: {st(s)}")
