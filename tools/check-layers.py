#!/usr/bin/env python3
"""Check that llmlaunch's folders form layers: a file may include headers of its own
folder and of the folders below it, never of one above (docs/architecture.md).

    tools/check-layers.py          check; exit 1 and name every upward edge
    tools/check-layers.py --dot    print the folder graph for Graphviz (dot -Tsvg)
    tools/check-layers.py --edges  print the folder graph as "FROM -> TO (N includes)"
    tools/check-layers.py --objects build/CMakeFiles/llmlaunch_core.dir
                                   also check the compiled objects (nm): no object
                                   calls a function defined in a layer above its own

A public header include/llmlaunch/X.h belongs to the folder named X (probe.h to
probe/), else to the folder holding X.c or X-*.c (nccl-scan.h to launcher/logs/). A
header that belongs to no folder, a quoted include that is not a header of the
including file's own folder, and any "../" include are errors too: types cross folder
lines only through include/llmlaunch/.
"""
import glob
import os
import re
import subprocess
import sys

# Bottom to top. A folder may use the folders before it in this list.
LAYERS = [
    "common",
    "probe",
    "launcher/plan",
    "launcher/profile",
    "launcher/slurm",
    "launcher/agree",
    "launcher/logs",
    "launcher/check",
    "launcher/launch",
    "launcher/cli",
    "launcher/modules",
]
# Files outside the folders above that belong to a layer.
EXTRA_FILES = {"launcher/main.c": "launcher/cli"}
# Generated headers (CMake configure_file) and the folder that owns them.
GENERATED = {"version.h": "common"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def sources_of(root, folder):
    d = os.path.join(root, folder)
    return sorted(
        os.path.join(folder, n)
        for n in os.listdir(d)
        if n.endswith((".c", ".h")) and os.path.isfile(os.path.join(d, n))
    )


def header_owner(root, name):
    base = name[: -len(".h")]
    if name in GENERATED:
        return GENERATED[name]
    for folder in LAYERS:
        if os.path.basename(folder) == base:
            return folder
    for folder in LAYERS:
        for f in os.listdir(os.path.join(root, folder)):
            if f == base + ".c" or (f.startswith(base + "-") and f.endswith(".c")):
                return folder
    return None


def check_objects(objdir, rank):
    """Symbols: an object's undefined symbols defined by an object of a higher layer."""
    defined, needed, errors = {}, {}, []
    objs = glob.glob(os.path.join(objdir, "**", "*.o"), recursive=True)
    if not objs:
        return [f"no object files under '{objdir}': build first"]
    for obj in objs:
        src = os.path.relpath(obj, objdir)[: -len(".o")]
        layer = EXTRA_FILES.get(src, os.path.dirname(src))
        if layer not in rank:
            continue
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                defined[f[2]] = layer
            elif len(f) == 2 and f[0] == "U":
                needed.setdefault(src, set()).add(f[1])
    for src, syms in sorted(needed.items()):
        layer = EXTRA_FILES.get(src, os.path.dirname(src))
        for sym in sorted(syms):
            owner = defined.get(sym)
            if owner and rank[owner] > rank[layer]:
                errors.append(f"{src}: calls '{sym}' of {owner}/, a layer above it")
    return errors


def main(argv):
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    if "--root" in argv:  # another checkout (the test of this script uses one)
        root = os.path.abspath(argv[argv.index("--root") + 1])
    rank = {folder: i for i, folder in enumerate(LAYERS)}
    errors = []
    edges = {}

    files = []  # (path, folder)
    for folder in LAYERS:
        files += [(p, folder) for p in sources_of(root, folder)]
    files += list(EXTRA_FILES.items())

    owners = {}
    inc_dir = os.path.join(root, "include", "llmlaunch")
    for name in sorted(os.listdir(inc_dir)):
        if name.endswith(".h.in"):
            name = name[: -len(".in")]
        if not name.endswith(".h"):
            continue
        owner = header_owner(root, name)
        if owner is None:
            errors.append(f"include/llmlaunch/{name}: no folder owns it (no folder, X.c or X-*.c named after it)")
            continue
        owners["llmlaunch/" + name] = owner
        path = os.path.join(inc_dir, name)
        if os.path.exists(path):
            files.append((f"include/llmlaunch/{name}", owner))

    for path, folder in files:
        text = read(os.path.join(root, path))
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{path}:{line}"
            if inc.startswith("../") or "/../" in inc:
                errors.append(f"{where}: '{inc}' reaches into another folder; use a header in include/llmlaunch/")
                continue
            if inc.startswith("llmlaunch/"):
                target = owners.get(inc)
                if target is None:
                    errors.append(f"{where}: '{inc}' is no header of include/llmlaunch/")
                    continue
            else:
                own_dir = os.path.dirname(path)
                if path.startswith("include/") or not os.path.exists(os.path.join(root, own_dir, inc)):
                    errors.append(f"{where}: '{inc}' is not a header of {own_dir}/")
                    continue
                target = folder
            if target != folder:
                edges[(folder, target)] = edges.get((folder, target), 0) + 1
            if rank[target] > rank[folder]:
                errors.append(f"{where}: {folder}/ includes '{inc}' of {target}/, a layer above it")

    if "--objects" in argv:
        i = argv.index("--objects")
        if i + 1 >= len(argv):
            errors.append("--objects needs the object directory (build/CMakeFiles/llmlaunch_core.dir)")
        else:
            errors += check_objects(argv[i + 1], rank)

    if "--dot" in argv:
        print("digraph llmlaunch {\n  rankdir=BT;\n  node [shape=box];")
        for (a, b), n in sorted(edges.items()):
            print(f'  "{a}" -> "{b}" [label="{n}"];')
        print("}")
    elif "--edges" in argv:
        for (a, b), n in sorted(edges.items(), key=lambda e: (rank[e[0][0]], rank[e[0][1]])):
            print(f"{a} -> {b} ({n} include{'s' if n != 1 else ''})")
    for e in errors:
        print(f"check-layers: {e}", file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} problem{'s' if len(errors) != 1 else ''}", file=sys.stderr)
        return 1
    if not ("--dot" in argv or "--edges" in argv):
        print(f"check-layers: {len(files)} files, {len(edges)} folder edges, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
