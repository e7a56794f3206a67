#!/usr/bin/env python3
"""flake.lock parses and pins every input of flake.nix by revision and narHash.

Without Nix (CI has no store), from the files alone: the lock is JSON of lock format 7 with
a root node; every `inputs.NAME.url` of flake.nix is an input of the root; each locked node
of type github has a 40-digit rev, an SRI sha256 narHash and a lastModified, and its
`original` is the url flake.nix names (owner, repo, ref), so that editing flake.nix without
`nix flake lock` fails here instead of on an operator's host. CI's `pins` step.

Usage: tools/check-flake-lock.py [DIR]   (default: the repository root)
"""
import base64
import json
import pathlib
import re
import sys


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = []
    try:
        lock = json.loads((root / "flake.lock").read_text())
    except FileNotFoundError:
        print(f"flake-lock: {root / 'flake.lock'} is missing: run `nix flake lock`")
        return 1
    except json.JSONDecodeError as e:
        print(f"flake-lock: flake.lock is not JSON: {e}")
        return 1
    if lock.get("version") != 7:
        problems.append(f"lock format {lock.get('version')!r}, expected 7")
    nodes = lock.get("nodes", {})
    root_inputs = nodes.get(lock.get("root", ""), {}).get("inputs", {})
    if not root_inputs:
        problems.append("the root node has no inputs")
    wanted = dict(re.findall(r'^\s*inputs\.([A-Za-z0-9_-]+)\.url\s*=\s*"([^"]+)"\s*;', (root / "flake.nix").read_text(), re.M))
    if not wanted:
        problems.append("flake.nix names no `inputs.NAME.url`")
    for name, url in sorted(wanted.items()):
        node_name = root_inputs.get(name)
        node = nodes.get(node_name) if isinstance(node_name, str) else None
        if node is None:
            problems.append(f"input {name} ({url}) is not locked: run `nix flake lock`")
            continue
        locked, original = node.get("locked", {}), node.get("original", {})
        m = re.fullmatch(r"github:([^/]+)/([^/]+)(?:/(.+))?", url)
        if not m:
            problems.append(f"input {name}: only github: urls are checked here, not {url}")
            continue
        owner, repo, ref = m.groups()
        want_original = {"type": "github", "owner": owner, "repo": repo, **({"ref": ref} if ref else {})}
        if original != want_original:
            problems.append(f"input {name}: the lock was made for {original}, flake.nix asks for {url}: run `nix flake lock`")
        if locked.get("type") != "github" or locked.get("owner") != owner or locked.get("repo") != repo:
            problems.append(f"input {name}: locked {locked.get('type')}:{locked.get('owner')}/{locked.get('repo')}, not {owner}/{repo}")
        if not re.fullmatch(r"[0-9a-f]{40}", str(locked.get("rev", ""))):
            problems.append(f"input {name}: no 40-digit rev: {locked.get('rev')!r}")
        nar = str(locked.get("narHash", ""))
        try:
            ok = nar.startswith("sha256-") and len(base64.b64decode(nar[7:], validate=True)) == 32
        except ValueError:
            ok = False
        if not ok:
            problems.append(f"input {name}: narHash is not an SRI sha256: {nar!r}")
        if not isinstance(locked.get("lastModified"), int):
            problems.append(f"input {name}: no lastModified")
    if problems:
        for p in problems:
            print(f"flake-lock: {p}")
        return 1
    for name in sorted(wanted):
        locked = nodes[root_inputs[name]]["locked"]
        print(f"flake-lock: {name} pinned at {locked['owner']}/{locked['repo']} {locked['rev'][:12]} ({locked['narHash']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
