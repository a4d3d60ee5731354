#!/usr/bin/env python3
"""Checks the README's layout table against the source folders.

Usage: check_layout.py SOURCE_ROOT

Every folder under storage/, partition/, train/ and tools/ that holds a
source file (.cc, .h, .cu, .cuh, .sh, .py) must be named, as `folder/`, in
the first cell of a row of the README's `## Layout` table, and every folder
the table names must exist: the map a newcomer reads first stays true.
"""
import os
import re
import sys

SOURCES = (".cc", ".h", ".cu", ".cuh", ".sh", ".py")
TOPS = ("storage", "partition", "train", "tools")


def source_folders(root):
    found = set()
    for top in TOPS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            if any(f.endswith(SOURCES) for f in files):
                found.add(os.path.relpath(dirpath, root).replace(os.sep, "/") + "/")
    return found


def table_folders(readme):
    named, inside = set(), False
    for line in open(readme, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip() == "## Layout"
            continue
        if inside and line.startswith("|"):
            first = line.split("|")[1]
            named.update(re.findall(r"`([A-Za-z0-9_./-]+/)`", first))
    return named


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    named = table_folders(os.path.join(root, "README.md"))
    if not named:
        sys.exit("check_layout: README.md has no `## Layout` table")
    errors = []
    for folder in sorted(source_folders(root) - named):
        errors.append("README.md: the layout table does not name %s" % folder)
    for folder in sorted(named):
        if not os.path.isdir(os.path.join(root, folder)):
            errors.append("README.md: the layout table names %s, which does not exist" % folder)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print("check_layout: the README's layout table names all %d source folders" % len(named))
    return 0


if __name__ == "__main__":
    sys.exit(main())
