#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md resolves.

Usage: check_links.py REPO_ROOT

A link [text](target) or ![alt](target) whose target has no scheme must name
a file or folder inside the repository (nothing may point outside it, such as
../shared/), and a #anchor on a Markdown target (or alone, for the same page)
must match one of that page's headings as GitHub spells them. Links inside
code blocks and `code spans` are not links and are skipped.
"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code, code spans removed."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.lstrip()
            m = re.match(r"(```+|~~~+)", stripped)
            if m:
                if fence is None:
                    fence = m.group(1)[0] * 3
                elif stripped.startswith(fence):
                    fence = None
                continue
            if fence is None:
                yield number, re.sub(r"(`+)(?:(?!\1).)*?\1", "", line)


_anchors = {}


def heading_lines(path):
    """Headings with code spans kept (prose_lines drops them)."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.lstrip()
            m = re.match(r"(```+|~~~+)", stripped)
            if m:
                fence = None if fence else m.group(1)[0] * 3
                continue
            if fence is None and re.match(r"^#{1,6}\s", line):
                yield line


def page_anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for line in heading_lines(path):
            text = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line).group(1)
            base = slug(text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else "%s-%d" % (base, n))
        _anchors[path] = found
    return _anchors[path]


def check(root):
    root = os.path.realpath(root)
    pages = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    pages += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    errors, count = [], 0
    for page in pages:
        rel_page = os.path.relpath(page, root)
        for number, line in prose_lines(page):
            for target in LINK.findall(line):
                if SCHEME.match(target):
                    continue
                count += 1
                where = "%s:%d: %s" % (rel_page, number, target)
                path, _, anchor = target.partition("#")
                dest = os.path.realpath(os.path.join(os.path.dirname(page), path)) if path else page
                if os.path.commonpath([root, dest]) != root:
                    errors.append("%s: points outside the repository" % where)
                    continue
                if not os.path.exists(dest):
                    errors.append("%s: no such file" % where)
                    continue
                if anchor and dest.endswith(".md") and anchor not in page_anchors(dest):
                    errors.append("%s: no heading #%s in %s"
                                  % (where, anchor, os.path.relpath(dest, root)))
    return count, errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    count, errors = check(sys.argv[1])
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print("check_links: %d relative links resolve" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
