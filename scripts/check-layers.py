#!/usr/bin/env python3
"""The runtime's floors: imports run down, never back up.

usage: scripts/check-layers.py [--self-test] [FOLDER...]   (runtime/src macros/src src)

Reads every `.rs` file under each crate's source folder, resolves each
`crate::…`, `super::…` and `self::…` path it names (in `use` items, with their
nested groups, and inline) to the deepest file that exists, and checks three
rules, printing each break and exiting 1 if there is one:

1. No file cycle: a module never imports one that imports it.
2. Floors (runtime/src): every file belongs to the unit of the longest
   prefix in FLOORS (a folder or a file), and a unit imports only units on
   lower floors — never one on its own floor, never one above. The
   exceptions are listed in ALLOWED, each with its reason. (The macro crate
   names the facade, `::tool_envelope::__private`, in the code it
   generates: a path in a token stream, which no import here resolves.)
3. Size: no file is over 500 lines unless one of its first ten lines says
   why (a comment with "over 500 lines").

Comments are ignored, and so is a `#[cfg(test)] mod tests { … }` block: a
test may reach anywhere.
"""
import os
import re
import sys

# From the ground floor up. A unit is a folder and everything under it
# (`envelope/`), the files directly in a folder (`mcp/*.rs`, its `mod.rs`
# aside), or one file (`category.rs`); units on one line share a floor and
# may not import each other.
FLOORS = [
    ["category.rs", "reasons.rs", "keys.rs", "panic.rs", "caller.rs"],
    ["json/"],
    ["envelope/"],
    ["limits/", "catalog.rs", "classify/", "partial.rs", "found.rs"],
    ["redact/", "wire/"],
    ["schema.rs", "escalation/", "scope.rs", "store/"],
    ["query/"],
    ["settle.rs"],
    ["guard/"],
    ["body/"],
    ["retry/"],
    ["coordinator.rs"],
    ["mcp/violations/"],
    ["mcp/*.rs"],
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
        # The module the file is: `self`; its parent: `super`.
        here = module_of(rel)
        named = use_paths(text)
        named += [[s for s in m.group(0).split("::") if s] for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", text)]
        for segments in named:
            if not segments:
                continue
            head, rest = segments[0], segments[1:]
            if head == "crate":
                full = rest
            elif head == "super":
                base = here[:-1]
                while rest and rest[0] == "super":
                    rest = rest[1:]
                    base = base[:-1]
                full = base + rest
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


def matches(unit, rel):
    if unit.endswith("/*.rs"):
        folder = unit[: -len("*.rs")]
        rest = rel[len(folder):]
        return rel.startswith(folder) and "/" not in rest and rest != "mod.rs"
    if unit.endswith(".rs"):
        return rel == unit
    return rel.startswith(unit)


def unit_of(rel):
    best, floor = None, None
    for level, units in enumerate(FLOORS):
        for unit in units:
            if matches(unit, rel) and (best is None or len(unit) > len(best)):
                best, floor = unit, level
    return best, floor


def check(root, floors):
    """The problems of the crate under `root`; the floors rule with `floors`."""
    files = read_files(root)
    edges = edges_of(files)
    problems = []

    for component in cycles(edges):
        problems.append(f"{root}: file cycle: " + " <-> ".join(component))

    for rel in sorted(files) if floors else []:
        unit, floor = unit_of(rel)
        if unit is None:
            problems.append(f"{root}/{rel}: on no floor (add it to FLOORS in scripts/check-layers.py)")
            continue
        for target in sorted(edges[rel]):
            to_unit, to_floor = unit_of(target)
            if to_unit is None or to_unit == unit:
                continue
            if (unit, to_unit) in ALLOWED:
                continue
            if to_floor >= floor:
                way = "across its floor" if to_floor == floor else "back up"
                problems.append(
                    f"{root}/{rel} -> {target}: {unit} (floor {floor}) imports {to_unit} (floor {to_floor}), {way}"
                )

    for rel, source in sorted(files.items()):
        lines = source.count("\n")
        head = "\n".join(source.splitlines()[:10]).lower()
        if lines > MAX_LINES and "over 500 lines" not in head:
            problems.append(f"{root}/{rel}: {lines} lines, over {MAX_LINES}, and its first lines do not say why")
    return len(files), problems


def self_test():
    """The checker finds what it is for: a cycle, an import back up, one
    across a floor, and a long file — and passes a tree without them."""
    import tempfile

    def tree(sources):
        folder = tempfile.mkdtemp()
        for rel, text in sources.items():
            os.makedirs(os.path.dirname(os.path.join(folder, rel)), exist_ok=True)
            with open(os.path.join(folder, rel), "w", encoding="utf-8") as out:
                out.write(text)
        return folder

    global FLOORS
    kept = FLOORS
    FLOORS = [["low.rs"], ["mid/"], ["high.rs", "side.rs"], ["lib.rs"]]
    try:
        good = tree({
            "lib.rs": "mod low; mod mid; mod high; mod side;\nuse crate::high::H;\n",
            "low.rs": "// the ground floor\npub struct L;\n",
            "mid/mod.rs": "mod inner;\nuse crate::low::L;\nuse self::inner::I;\n",
            "mid/inner.rs": "use super::super::low::L; // up to the crate\npub struct I;\n",
            "high.rs": "use crate::{low::L, mid::{inner::I}};\n/* crate::side::S in a comment */\nconst T: &str = \"crate::side::S\";\n",
            "side.rs": "#[cfg(test)]\nmod tests { use crate::high::H; }\n",
        })
        _, problems = check(good, True)
        assert problems == [], problems
        bad = tree({
            "lib.rs": "mod low; mod mid; mod high; mod side;\n",
            "low.rs": "use crate::mid::M;\n",
            "mid/mod.rs": "use crate::low::L;\n",
            "high.rs": "use crate::side::S;\n" + "// line\n" * 600,
            "side.rs": "pub struct S;\n",
        })
        _, problems = check(bad, True)
        found = "\n".join(problems)
        assert "file cycle: low.rs <-> mid/mod.rs" in found, found
        assert "low.rs -> mid/mod.rs: low.rs (floor 0) imports mid/ (floor 1), back up" in found, found
        assert "high.rs -> side.rs: high.rs (floor 2) imports side.rs (floor 2), across its floor" in found, found
        assert "high.rs: 601 lines, over 500" in found, found
    finally:
        FLOORS = kept
    print("self-test: the checker finds cycles, imports back up and across a floor, and long files")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    roots = sys.argv[1:] or ["runtime/src", "macros/src", "src"]
    all_problems, counted = [], 0
    for root in roots:
        count, problems = check(root, root.rstrip("/").endswith("runtime/src"))
        counted += count
        all_problems += problems
    for problem in all_problems:
        print(problem)
    units = sum(len(floor) for floor in FLOORS)
    print(f"{counted} files in {', '.join(roots)}; {units} units on {len(FLOORS)} floors: {len(all_problems)} problem(s)")
    return 1 if all_problems else 0


if __name__ == "__main__":
    sys.exit(main())
