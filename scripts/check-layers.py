#!/usr/bin/env python3
"""The runtime's floors: imports run down, never back up.

usage: scripts/check-layers.py [runtime/src]

Reads every `.rs` file under the crate's source folder, resolves each
`crate::…`, `super::…` and `self::…` path it names (in `use` items, with their
nested groups, and inline) to the deepest file that exists, and checks three
rules, printing each break and exiting 1 if there is one:

1. No file cycle: a module never imports one that imports it.
2. Floors: every file belongs to the unit of the longest prefix in FLOORS
   (a folder or a file), and a unit imports only units on lower floors —
   never one on its own floor, never one above. The exceptions are listed in
   ALLOWED, each with its reason.
3. Size: no file is over 500 lines unless one of its first ten lines says
   why (a comment with "over 500 lines").

Comments are ignored, and so is a `#[cfg(test)] mod tests { … }` block: a
test may reach anywhere.
"""
import os
import re
import sys

# From the ground floor up. A unit is a folder (`envelope/`) or a file
# (`category.rs`); units on one line share a floor and may not import each
# other.
FLOORS = [
    ["category.rs", "reasons.rs", "keys.rs", "json/", "panic.rs"],
    ["envelope/"],
    ["limits.rs", "catalog.rs"],
    ["wire/", "redact/", "classify/", "partial.rs", "found.rs"],
    ["schema.rs", "query/"],
    ["settle.rs"],
    ["guard/"],
    ["call/", "escalation/"],
    ["retry/"],
    ["coordinator.rs"],
    ["mcp/vocabulary/"],
    ["mcp/server/", "mcp/client/"],
    ["mcp/mod.rs"],
    ["private/"],
    ["lib.rs"],
]

# Imports that run back up on purpose: (from unit, to unit) -> why.
ALLOWED = {
    ("lib.rs", "private/"): "the crate root declares `__private`, the macros' way in",
}

MAX_LINES = 500


def read_files(root):
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8") as source:
                    files[rel] = source.read()
    return files


def strip(source):
    """The source without comments, string literals and test modules."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            i = n if j < 0 else j
        elif source.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if source.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif source.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == '"':
            i += 1
            while i < n and source[i] != '"':
                i += 2 if source[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "r" and re.match(r'r#*"', source[i:i + 10]) and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", source[i:]).group(1)
            end = source.find('"' + hashes, i + len(hashes) + 2)
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", source[i:i + 4]):
            # A char literal ('"' would open a string otherwise); a lifetime is left.
            i += len(re.match(r"'(\\.|[^\\'])'", source[i:]).group(0))
        else:
            out.append(c)
            i += 1
    text = "".join(out)
    # Drop `#[cfg(test)] mod name { … }`.
    while True:
        found = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
        if not found:
            return text
        depth, j = 1, found.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        text = text[: found.start()] + text[j:]


def module_of(rel):
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def file_of(files, segments):
    for n in range(len(segments), 0, -1):
        base = "/".join(segments[:n])
        for candidate in (base + ".rs", base + "/mod.rs"):
            if candidate in files:
                return candidate
    return None


def use_paths(text):
    """Every path a `use` item names, its groups expanded."""
    paths = []

    def expand(prefix, body):
        items, depth, current = [], 0, ""
        for c in body:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            if c == "," and depth == 0:
                items.append(current)
                current = ""
            else:
                current += c
        items.append(current)
        for item in items:
            item = item.strip()
            if not item:
                continue
            group = re.match(r"^([\w:]*?)::\{(.*)\}$", item, re.S)
            if group:
                expand(prefix + [s for s in group.group(1).split("::") if s], group.group(2))
            elif item.startswith("{") and item.endswith("}"):
                expand(prefix, item[1:-1])
            else:
                name = item.split(" as ")[0].strip()
                segments = [s for s in name.split("::") if s and s != "self"]
                paths.append(prefix + segments)

    for found in re.finditer(r"\buse\s+([^;]*);", text):
        expand([], found.group(1))
    return paths


def edges_of(files):
    edges = {rel: set() for rel in files}
    for rel, source in files.items():
        text = strip(source)
        me = module_of(rel)
        here = me if rel.endswith("mod.rs") or rel == "lib.rs" else me[:-1]
        named = use_paths(text)
        named += [[s for s in m.group(0).split("::") if s] for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", text)]
        for segments in named:
            if not segments:
                continue
            head, rest = segments[0], segments[1:]
            if head == "crate":
                full = rest
            elif head == "super":
                base = here[:]
                while rest and rest[0] == "super":
                    rest = rest[1:]
                    base = base[:-1]
                full = base[:-1] + rest
            elif head == "self":
                full = here + rest
            else:
                continue
            target = file_of(files, full) if full else None
            if target and target != rel:
                edges[rel].add(target)
    return edges


def cycles(edges):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def unit_of(rel):
    best, floor = None, None
    for level, units in enumerate(FLOORS):
        for unit in units:
            matches = rel == unit if unit.endswith(".rs") else rel.startswith(unit)
            if matches and (best is None or len(unit) > len(best)):
                best, floor = unit, level
    return best, floor


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "runtime/src"
    files = read_files(root)
    edges = edges_of(files)
    problems = []

    for component in cycles(edges):
        problems.append("file cycle: " + " <-> ".join(component))

    for rel in sorted(files):
        unit, floor = unit_of(rel)
        if unit is None:
            problems.append(f"{rel}: on no floor (add it to FLOORS in {sys.argv[0]})")
            continue
        for target in sorted(edges[rel]):
            to_unit, to_floor = unit_of(target)
            if to_unit is None or to_unit == unit:
                continue
            if (unit, to_unit) in ALLOWED:
                continue
            if to_floor >= floor:
                way = "across its floor" if to_floor == floor else "back up"
                problems.append(f"{rel} -> {target}: {unit} (floor {floor}) imports {to_unit} (floor {to_floor}), {way}")

    for rel, source in sorted(files.items()):
        lines = source.count("\n")
        head = "\n".join(source.splitlines()[:10]).lower()
        if lines > MAX_LINES and "over 500 lines" not in head:
            problems.append(f"{rel}: {lines} lines, over {MAX_LINES}, and its first lines do not say why")

    for problem in problems:
        print(problem)
    units = sum(len(floor) for floor in FLOORS)
    print(f"{len(files)} files, {units} units on {len(FLOORS)} floors: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
