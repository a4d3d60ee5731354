#!/usr/bin/env python3
"""Checks that every source path the code's comments and the docs name exists.

Usage: check_paths.py SOURCE_ROOT

A path is a word of the form `dir/.../name.ext` (ext: h, cc, cu, cuh, sh,
py, md, cmake, txt, json, supp) whose first folder is a top-level folder
of the tree (storage, partition, train, tools, tests, docs, cmake, .ci).
It is looked up from the tree's root, and in a doc also from the doc's own
folder (a relative link). Comments are lines of C++/CUDA/CMake/shell/
Python files that hold `//` or `#`; docs are README.md and docs/*.md, every
line. A path that does not exist is reported with its file and line: a
comment that names a file moved or removed sends a reader nowhere.
"""
import os
import re
import sys

TOPS = ("storage", "partition", "train", "tools", "tests", "docs", "cmake", ".ci")
PATH = re.compile(
    r"(?<![A-Za-z0-9_./-])((?:\.\./)?(?:%s)/[A-Za-z0-9_./<>*-]*?[A-Za-z0-9_-]+"
    r"\.(?:h|cc|cu|cuh|sh|py|md|cmake|txt|json|supp))(?![A-Za-z0-9_])"
    % "|".join(re.escape(t) for t in TOPS))
CODE = (".h", ".cc", ".cu", ".cuh", ".sh", ".py", ".cmake")
SKIP_DIRS = {".git", "fixtures", "corpus"}


def files(root):
    for top in TOPS + ("",):
        base = os.path.join(root, top)
        if top == "":
            for name in ("README.md", "CMakeLists.txt"):
                yield os.path.join(root, name)
            continue
        for dirpath, dirnames, names in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith("build")]
            for n in names:
                if n.endswith(CODE + (".md",)) or n == "CMakeLists.txt":
                    yield os.path.join(dirpath, n)


def named_paths(path):
    doc = path.endswith(".md")
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not doc and "//" not in line and "#" not in line:
                continue
            for m in PATH.finditer(line):
                yield number, m.group(1)


def exists(root, doc_dir, p):
    if any(c in p for c in "<>*") or re.search(r"(^|/)[A-Z]+\.", p):
        return True  # a pattern (tests/<module>/*_test.cc, tools/bench/NAME.sh)
    candidates = [os.path.join(root, p)]
    if doc_dir is not None:
        candidates.append(os.path.join(doc_dir, p))
    return any(os.path.exists(c) for c in candidates)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    missing = []
    for path in files(root):
        if not os.path.isfile(path):
            continue
        doc_dir = os.path.dirname(path) if path.endswith(".md") else None
        for number, p in named_paths(path):
            if not exists(root, doc_dir, p):
                missing.append("%s:%d: names %s, which does not exist" %
                               (os.path.relpath(path, root), number, p))
    for m in missing:
        print(m)
    if missing:
        print("check_paths: %d path(s) named in comments or docs do not exist" % len(missing))
        return 1
    print("check_paths: every path named in comments and docs exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
