#!/usr/bin/env python3
"""Import circles between the modules of each crate (issue #34): exits 1 naming each circle.

A module is a file under crates/<crate>/src (a folder's mod.rs and the files under it are
one module each, named by path). File A imports B when A's code names `crate::B` (a `use`
or a path), or `super::B` from a file under a folder. Unit-test modules (from the first
`#[cfg(test)]` line on) are not counted: tests may reach anywhere. Also checks the named
seams of ARCHITECTURE.md ("Invariants of the module graph").
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# (crate, module): ("only", the modules of its crate it may import) or ("not", those it
# must not import). ARCHITECTURE.md, "Invariants of the module graph".
SEAMS = {
    ("cuzk-engine", "runner"): ("only", {"job", "error"}),
    ("cuzk-groth16", "backend"): ("not", {"prover", "hstep"}),
}


def modules(src):
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                continue
            mods["::".join(rel)] = path
    return mods


def code(path):
    text = open(path).read()
    cut = re.search(r"^#\[cfg\(test\)\]", text, re.M)
    text = text[: cut.start()] if cut else text
    # Comments (doc links name modules without importing them).
    return "\n".join(l.split("//")[0] for l in text.splitlines())


def imports(name, path, mods):
    text = code(path)
    found = set()
    parent = name.split("::")[:-1]
    # `use crate::{a, b::c}` and `crate::a::...` paths.
    for m in re.finditer(r"crate::\{([^}]*)\}", text):
        for part in m.group(1).split(","):
            found.add(part.strip().split("::")[0])
    for m in re.finditer(r"crate::(\w+)", text):
        found.add(m.group(1))
    for m in re.finditer(r"super::(\w+)", text):
        found.add("::".join(parent[:-1] + [m.group(1)]) if parent else m.group(1))
        if parent:
            found.add("::".join(parent + [m.group(1)]))
    # Nested module names (engine::queue) from crate::engine::queue paths.
    for m in re.finditer(r"crate::(\w+)::(\w+)", text):
        found.add(m.group(1) + "::" + m.group(2))
    return {f for f in found if f in mods and f != name and not name.startswith(f + "::")}


def cycles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    bad = 0
    crates = os.path.join(ROOT, "crates")
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        graph = {n: imports(n, p, mods) for n, p in mods.items()}
        for comp in cycles(graph):
            bad += 1
            print(f"{crate}: import circle among {', '.join(comp)}")
        for (c, m), (kind, names) in SEAMS.items():
            if c != crate:
                continue
            if m not in graph:
                bad += 1
                print(f"{crate}: no module {m} (update SEAMS and ARCHITECTURE.md)")
                continue
            extra = graph[m] - names if kind == "only" else graph[m] & names
            if extra:
                bad += 1
                rule = f"it may import only {', '.join(sorted(names))}" if kind == "only" else "it must not"
                print(f"{crate}: {m} imports {', '.join(sorted(extra))}; {rule}")
    if bad:
        sys.exit(1)
    print("module graph: no import circles; seams hold")


main()
