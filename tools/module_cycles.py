#!/usr/bin/env python3
"""List module cycles inside each crate (docs/architecture.md: a crate's modules form a DAG).

Usage: python3 tools/module_cycles.py [crates/NAME ...]   (default: every crate)

A module's dependencies are the `crate::a::b`, `super::x` and `self::x` paths in its file,
resolved to the deepest module that exists. References between a module and its ancestors
are left out (a parent holds what its children share, and declares them), and so is a
file's `#[cfg(test)] mod` (tests may use any module). Prints each
strongly connected component of two or more modules and exits 1 if there is one.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^{}]*)\}")


def modules(src):
    mods = {}
    for d, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            mods[tuple(rel)] = os.path.join(d, f)
    return mods


def resolve(mods, here, kind, parts):
    if kind == "crate":
        base = []
    else:
        base = list(here)
        if kind == "super":
            base = base[:-1]
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
    full = base + parts
    for n in range(len(full), -1, -1):
        if tuple(full[:n]) in mods:
            return tuple(full[:n])
    return None


def deps(mods, m, path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"//[^\n]*", "", text)
    # A unit-test module may use any module of its crate: only the code above it counts.
    text = re.split(r"#\[cfg\(test\)\]\s*mod\s", text)[0]
    out = set()
    for kind, rest, inner in GROUP.findall(text):
        for item in inner.split(","):
            item = item.strip().split(" as ")[0]
            parts = [p for p in rest.split("::") if p] + [p for p in item.split("::") if p]
            t = resolve(mods, m, kind, parts)
            if t is not None:
                out.add(t)
    for kind, rest in PATH.findall(text):
        t = resolve(mods, m, kind, [p for p in rest.split("::") if p])
        if t is not None:
            out.add(t)
    return {t for t in out if t != m and t[: len(m)] != m and m[: len(t)] != t}


def sccs(graph):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
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

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    crates = sys.argv[1:] or sorted(
        os.path.join("crates", c) for c in os.listdir(os.path.join(ROOT, "crates"))
    )
    bad = 0
    for c in crates:
        src = os.path.join(ROOT, c, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        graph = {m: deps(mods, m, p) for m, p in mods.items()}
        for comp in sccs(graph):
            bad += 1
            print(f"{c}: " + " <-> ".join("::".join(m) or "(root)" for m in comp))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
