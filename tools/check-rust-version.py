#!/usr/bin/env python3
"""The workspace's rust-version is true: no locked dependency needs a newer rustc.

Reads `[workspace.package] rust-version` from Cargo.toml and every package's `rust_version`
from `cargo metadata --locked` (the lock as it is, the platforms cuzk builds for), and fails,
naming the packages, when one needs a newer rustc than the workspace declares; it also fails
when a member does not inherit the workspace's rust-version, so that cargo itself refuses an
older rustc with a clear message. CI's `pins` step.

Usage: tools/check-rust-version.py [WORKSPACE_DIR]   (default: the repository root)
"""
import json
import pathlib
import subprocess
import sys
import tomllib

PLATFORMS = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]


def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def show(v):
    return ".".join(str(p) for p in v)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    manifest = tomllib.loads((root / "Cargo.toml").read_text())
    declared_text = manifest.get("workspace", {}).get("package", {}).get("rust-version")
    if not declared_text:
        print(f"rust-version: {root / 'Cargo.toml'} has no [workspace.package] rust-version")
        return 1
    declared = version(declared_text)
    needs = {}
    members = []
    for platform in PLATFORMS:
        out = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", platform],
            cwd=root, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"rust-version: cargo metadata failed:\n{out.stderr}")
            return 1
        meta = json.loads(out.stdout)
        workspace = set(meta["workspace_members"])
        for p in meta["packages"]:
            if p["id"] in workspace:
                members.append(p)
            elif p.get("rust_version"):
                needs[(p["name"], p["version"])] = version(p["rust_version"])
    fail = 0
    newer = sorted(((v, n) for n, v in needs.items() if v > declared), reverse=True)
    if newer:
        print(f"rust-version: the workspace declares {show(declared)}, but locked dependencies need more:")
        for v, (name, ver) in newer:
            print(f"  {name} {ver} needs rustc {show(v)}")
        print(f"  raise [workspace.package] rust-version to {show(newer[0][0])} (and flake.nix's note), "
              "or keep the older dependency versions in Cargo.lock")
        fail = 1
    for p in {m["id"]: m for m in members}.values():
        if p.get("rust_version") is None or version(p["rust_version"]) != declared:
            print(f"rust-version: {p['name']} does not inherit it (add `rust-version.workspace = true` "
                  f"to {p['manifest_path']})")
            fail = 1
    if not fail:
        top = max(needs.values(), default=declared)
        print(f"rust-version: {show(declared)} declared; the most any of {len(needs)} locked packages "
              f"needs is {show(top)}")
    return fail


if __name__ == "__main__":
    sys.exit(main())
