#!/usr/bin/python3
"""Checks the include graph of server/ (docs: ../README.md, issue 8's layers).

A module is x.c with x.h (either may be missing: main.c, service.h). Module A depends on module B
when x.c or x.h of A has `#include "B.h"`. Two checks:
  1. the graph is acyclic: every cycle breaks the layering, where each module depends only on
     those below it; each strongly connected group is printed with one cycle through it and the
     include lines that make it;
  2. only exchange.c includes <event2/http_struct.h> (evhttp's private structures).
Prints one line per problem, then "layers: N passed, N failed" (N checks) as its last line, and
exits 1 if a check failed, 2 if the directory holds no module.
    tests/check_layers.py [DIR]     (default: server/ next to tests/)
"""

import collections
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
PRIVATE = re.compile(r'^\s*#\s*include\s*[<"]event2/http_struct\.h[>"]')
PRIVATE_OWNER = "exchange.c"


def read_tree(root):
    """{module: [(file name, line number, included module)]} and [(file, line)] of each
    include of event2/http_struct.h."""
    edges = collections.defaultdict(list)
    private = []
    files = sorted(p for p in root.iterdir() if p.suffix in (".c", ".h") and p.is_file())
    modules = {p.stem for p in files}
    for path in files:
        edges[path.stem]  # every module is a node, even one that includes nothing
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if PRIVATE.match(line) and path.name != PRIVATE_OWNER:
                private.append((path.name, number))
            match = INCLUDE.match(line)
            if not match:
                continue
            target = pathlib.PurePath(match[1])
            # Only server/'s own headers; a module including its own header is no dependency.
            if target.suffix == ".h" and target.stem in modules and target.stem != path.stem:
                edges[path.stem].append((path.name, number, target.stem))
    return edges, private


def strongly_connected(edges):
    """Tarjan's algorithm, iterative: the groups of modules that reach each other."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = sorted({t for _, _, t in edges[node]})
            for i in range(child, len(targets)):
                target = targets[i]
                if target not in index:
                    work.append((node, i + 1))
                    work.append((target, 0))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    groups.append(sorted(group))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return groups


def shortest_cycle(edges, group):
    """One shortest cycle through the group's first module, as the include lines on it."""
    members = set(group)
    start = group[0]
    came_from = {}
    queue = collections.deque([start])
    while queue:
        node = queue.popleft()
        for include in edges[node]:
            target = include[2]
            if target not in members:
                continue
            if target == start:
                path = [include]
                while node != start:
                    path.append(came_from[node])
                    node = came_from[node][0].rsplit(".", 1)[0]
                return list(reversed(path))
            if target not in came_from:
                came_from[target] = include
                queue.append(target)
    return []


def main(argv):
    root = pathlib.Path(argv[1]) if len(argv) > 1 else (
        pathlib.Path(__file__).resolve().parent.parent / "server")
    if not root.is_dir():
        print(f"layers: {root} is not a directory")
        return 2
    edges, private = read_tree(root)
    if not edges:
        print(f"layers: no .c or .h files in {root}")
        return 2
    passed = failed = 0

    cycles = [g for g in strongly_connected(edges) if len(g) > 1]
    if cycles:
        failed += 1
        for group in cycles:
            print(f"FAIL include cycle: {len(group)} modules reach each other through "
                  f"#include \"...\": {', '.join(group)}")
            cycle = shortest_cycle(edges, group)
            print("  one cycle: " + " -> ".join([cycle[0][0].rsplit(".", 1)[0]] +
                                                 [t for _, _, t in cycle]))
            for name, number, target in cycle:
                print(f"    {root.name}/{name}:{number}: #include \"{target}.h\"")
        print("  Each module may include only modules of the layers below it; break each cycle "
              "by passing what is needed down (a callback, a settings struct) instead.")
    else:
        passed += 1
        print(f"ok   include graph of {root.name}/ is acyclic ({len(edges)} modules)")

    if private:
        failed += 1
        print(f"FAIL event2/http_struct.h (evhttp's private structures) included outside "
              f"{PRIVATE_OWNER}:")
        for name, number in private:
            print(f"    {root.name}/{name}:{number}")
        print(f"  Only {PRIVATE_OWNER} may mirror evhttp's internals; give it a function for "
              "what the others need.")
    else:
        passed += 1
        print(f"ok   only {PRIVATE_OWNER} includes event2/http_struct.h")

    print(f"layers: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
