#!/usr/bin/python3
"""Checks the layering of server/ (server/README.md has the layers and why).

server/ holds one folder per layer; a module is LAYER/NAME.c with LAYER/NAME.h (either may be
missing: ops/main.c, respond/service.h). RANKS below is the rank table: a module may include
modules of its own folder and of folders of a lower rank, never of a higher one ("up") nor of
another folder of the same rank ("sideways": media, db and wire know nothing of each other).
The checks:
  1. every .c and .h sits in a folder of the rank table;
  2. every include of a server header names its folder ("http/range.h", not "range.h"), so the
     direction of each include can be read off the include line itself;
  3. no include goes up or sideways across folders;
  4. the include graph is acyclic (within a folder too): each strongly connected group is
     printed with one cycle through it and the include lines that make it;
  5. only PRIVATE_OWNER includes <event2/http_struct.h> (evhttp's private structures);
  6. only MONOTONIC_OWNER reads the monotonic clock (clock_gettime(CLOCK_MONOTONIC...)).
Prints one line per problem, then "layers: N passed, N failed" (N checks) as its last line, and
exits 1 if a check failed, 2 if the directory holds no module.
    tests/check_layers.py [DIR]     (default: server/ next to tests/)
"""

import collections
import pathlib
import re
import sys

# Lower ranks are the layers below. Folders of one rank are siblings: none includes another.
RANKS = {
    "base": 0,     # log, clock, lru, flags, metrics counters: no HTTP, no database
    "http": 1,     # pure HTTP decisions: targets, ranges, conditionals, heads, dates
    "config": 2,   # options, their sources and checks, the settings snapshots
    "media": 3,    # files below the media roots, and their cache
    "db": 3,       # MongoDB: the thread pool, findById, GridFS, the lookup cache
    "wire": 3,     # connections and requests on the wire (evhttp), listeners
    "respond": 4,  # handlers, body sources and the one answer path
    "ops": 5,      # start-up, workers, reload, signals, privileges, systemd
}
PRIVATE_OWNER = "wire/exchange.c"
MONOTONIC_OWNER = "base/clock.c"

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
PRIVATE = re.compile(r'^\s*#\s*include\s*[<"]event2/http_struct\.h[>"]')
MONOTONIC = re.compile(r"\bclock_gettime\s*\(\s*CLOCK_MONOTONIC")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h") and p.is_file())
        self.modules = {self.module_of(p) for p in self.files}
        self.by_name = collections.defaultdict(set)  # NAME -> {LAYER/NAME}
        for module in self.modules:
            self.by_name[module.rsplit("/", 1)[-1]].add(module)

    def relative(self, path):
        return path.relative_to(self.root).as_posix()

    def module_of(self, path):
        return self.relative(path.with_suffix(""))


def folder_of(module):
    return module.split("/", 1)[0] if "/" in module else ""


def read_includes(tree):
    """{module: [(file, line number, included module)]}, and the problems of checks 1, 2, 5, 6."""
    edges = collections.defaultdict(list)
    misplaced, unqualified, private, monotonic = [], [], [], []
    for path in tree.files:
        module = tree.module_of(path)
        name = tree.relative(path)
        edges[module]  # every module is a node, even one that includes nothing
        if folder_of(module) not in RANKS or module.count("/") != 1:
            misplaced.append(name)
        text = path.read_text(errors="replace")
        if name != MONOTONIC_OWNER and MONOTONIC.search(COMMENT.sub("", text)):
            monotonic.append(name)
        for number, line in enumerate(text.splitlines(), 1):
            if PRIVATE.match(line) and name != PRIVATE_OWNER:
                private.append((name, number))
            match = INCLUDE.match(line)
            if not match:
                continue
            target = pathlib.PurePosixPath(match[1])
            if target.suffix != ".h":
                continue
            included = target.with_suffix("").as_posix()
            if included not in tree.modules:
                # Not a server module written with its folder: a bare name of one is an error.
                if "/" not in included and included in tree.by_name:
                    unqualified.append((name, number, included, sorted(tree.by_name[included])))
                continue
            if included != module:  # a module including its own header is no dependency
                edges[module].append((name, number, included))
    return edges, misplaced, unqualified, private, monotonic


def wrong_direction(edges):
    """[(file, line, included module, 'up' or 'sideways')] across folders."""
    wrong = []
    for module, includes in sorted(edges.items()):
        here = folder_of(module)
        for name, number, included in includes:
            there = folder_of(included)
            if here == there or here not in RANKS or there not in RANKS:
                continue
            if RANKS[there] > RANKS[here]:
                wrong.append((name, number, included, "up"))
            elif RANKS[there] == RANKS[here]:
                wrong.append((name, number, included, "sideways"))
    return wrong


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
    tree = Tree(root)
    if not tree.files:
        print(f"layers: no .c or .h files in {root}")
        return 2
    edges, misplaced, unqualified, private, monotonic = read_includes(tree)
    top = root.name
    passed = failed = 0

    def result(ok, good, bad_lines, hint):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"ok   {good}")
            return
        failed += 1
        for line in bad_lines:
            print(line)
        print(f"  {hint}")

    folders = ", ".join(f"{f} ({r})" for f, r in sorted(RANKS.items(), key=lambda i: (i[1], i[0])))
    result(not misplaced, f"every file of {top}/ is in a layer folder ({len(tree.modules)} modules)",
           [f"FAIL {top}/{name} is not in a layer folder" for name in misplaced],
           f"Put each module in one of: {folders}.")

    result(not unqualified, "every include of a server header names its folder",
           [f"FAIL {top}/{name}:{number}: #include \"{bare}.h\" names no folder "
            f"(it is {' or '.join(m + '.h' for m in where)})"
            for name, number, bare, where in unqualified],
           "Write the folder: #include \"http/range.h\".")

    wrong = wrong_direction(edges)
    result(not wrong, "no include goes up or sideways across layer folders",
           [f"FAIL {top}/{name}:{number}: #include \"{included}.h\" goes {way} "
            f"({folder_of(name)} {RANKS[folder_of(name)]} -> {folder_of(included)} "
            f"{RANKS[folder_of(included)]})"
            for name, number, included, way in wrong],
           f"A module may include only its own folder and folders of a lower rank: {folders}. "
           "Pass what is needed down (a callback, a plain struct) or move the module.")

    cycles = [g for g in strongly_connected(edges) if len(g) > 1]
    lines = []
    for group in cycles:
        lines.append(f"FAIL include cycle: {len(group)} modules reach each other through "
                     f"#include \"...\": {', '.join(group)}")
        cycle = shortest_cycle(edges, group)
        lines.append("  one cycle: " + " -> ".join([cycle[0][0].rsplit(".", 1)[0]] +
                                                   [t for _, _, t in cycle]))
        for name, number, target in cycle:
            lines.append(f"    {top}/{name}:{number}: #include \"{target}.h\"")
    result(not cycles, f"include graph of {top}/ is acyclic ({len(edges)} modules)", lines,
           "Each module may include only modules below it; break each cycle by passing what "
           "is needed down (a callback, a settings struct) instead.")

    result(not private, f"only {PRIVATE_OWNER} includes event2/http_struct.h",
           ["FAIL event2/http_struct.h (evhttp's private structures) included outside "
            f"{PRIVATE_OWNER}:"] + [f"    {top}/{name}:{number}" for name, number in private],
           f"Only {PRIVATE_OWNER} may mirror evhttp's internals; give it a function for what "
           "the others need.")

    result(not monotonic, f"only {MONOTONIC_OWNER} reads the monotonic clock",
           [f"FAIL {top}/{name} reads CLOCK_MONOTONIC itself" for name in monotonic],
           f"Ask {MONOTONIC_OWNER.rsplit('.', 1)[0]}.h (clock_now, clock_now_ms, "
           "clock_coarse_seconds ...).")

    print(f"layers: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
