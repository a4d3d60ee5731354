#!/usr/bin/env python3
"""Checks docs/cli.md against the flags the ember binary lists.

Usage: check_cli.py EMBER_BINARY DOCS_CLI_MD [--suggest]

`ember help` names the commands; `ember <command> --help` lists each flag the
command reads as a line `  --name=default` (the help strings in
tools/command_help.cc and the absl flag definitions are their one home).
docs/cli.md has one `## ember <command>` section per command, whose flag
tables start each row with the flag(s) in backticks: | `--name ...` | ...
Every command needs a section, and each section's set of flags must equal the
binary's, so a flag added without docs (or documented after it is gone) fails.
A row's second cell is the flag's default and must say what `--help` says
(`""` for an empty string; `off`/`on` may stand for false/true; a row of
several flags gives theirs as `a / b`), so a default changed in the code
fails until the page follows. A row's third cell is the flag's description
and must say what `--help` says, word for word once Markdown is read
(backticks, `\|`, &lt;/&gt;/&amp; and [text](link) stand for the plain
text; whitespace runs count as one space), so the two cannot drift apart.
--suggest prints a table row, from the help text, for every missing flag.
--fix rewrites every differing description cell with the help text.
"""
import html
import re
import subprocess
import sys

FLAG_LINE = re.compile(r"^  --([A-Za-z0-9_-]+)=(.*)$")
ROW = re.compile(r"^\|\s*([^|]*(?:\\\|[^|]*)*)\|")
TOKEN = re.compile(r"--([a-z][a-z0-9_-]*)")


def norm(name):
    return name.replace("_", "-")


def run(binary, *args):
    out = subprocess.run([binary, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60)
    return out.stdout


def commands(binary):
    text = run(binary, "help")
    names, inside = [], False
    for line in text.splitlines():
        if line.strip() == "commands:":
            inside = True
            continue
        if inside:
            m = re.match(r"^  ([a-z]+)\s", line)
            if not m:
                if line.strip() == "":
                    break
                continue
            names.append(m.group(1))
    if not names:
        sys.exit("check_cli: `%s help` listed no commands:\n%s" % (binary, text))
    return names


def binary_flags(binary, command):
    """{flag: (default, help text)} from `ember <command> --help`."""
    flags, last = {}, None
    for line in run(binary, command, "--help").splitlines():
        m = FLAG_LINE.match(line)
        if m:
            last = norm(m.group(1))
            flags.setdefault(last, [m.group(2), ""])
        elif last and line.startswith("      "):
            flags[last][1] = (flags[last][1] + " " + line.strip()).strip()
        else:
            last = None
    return flags


def norm_default(text):
    t = text.strip().replace("`", "").replace("\\|", "|").strip()
    if t in ('""', "''", ""):
        return ""
    return {"off": "false", "on": "true"}.get(t, t)


LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def norm_text(text):
    """A description as plain text: Markdown read, whitespace runs as one."""
    t = LINK.sub(r"\1", text.replace("\\|", "|"))
    t = html.unescape(t).replace("`", "")
    return " ".join(t.split())


def md_cell(text):
    """Help text as a table cell."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        "|", "\\|")


def doc_flags(path, defaults=None, texts=None):
    """{command: set of flags} from the `## ember <command>` sections; with
    `defaults` (a dict), also {(command, flag): default cell} into it; with
    `texts`, {(command, flag): (line number, description cell)} of the rows
    of one flag."""
    sections, current = {}, None
    for number, line in enumerate(open(path, encoding="utf-8")):
        if line.startswith("## "):
            m = re.search(r"`ember ([a-z]+)", line)
            current = m.group(1) if m else None
            if current:
                sections.setdefault(current, set())
            continue
        if line.startswith("# "):
            current = None
            continue
        if current and line.startswith("|"):
            m = ROW.match(line)
            if m:
                cell = m.group(1)
                if cell.strip().startswith("`--"):
                    names = [norm(t) for t in TOKEN.findall(cell)]
                    sections[current].update(names)
                    cells = [c for c in re.split(r"(?<!\\)\|", line)[1:-1]]
                    if defaults is not None and len(cells) >= 2 and names:
                        # `--a` / `--b` | 1 / 2: one default per flag.
                        parts = cells[1].split(" / ")
                        if len(parts) != len(names):
                            parts = [cells[1]] * len(names)
                        for name, part in zip(names, parts):
                            defaults[(current, name)] = part
                    if texts is not None and len(cells) >= 3 and len(names) == 1:
                        texts[(current, names[0])] = (number, cells[2])
    return sections


def fix_descriptions(path, fixes):
    """Rewrites the description cells {line number: help text} of `path`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for number, text in fixes.items():
        cells = re.split(r"(?<!\\)\|", lines[number])
        cells[3] = " %s " % md_cell(text)
        lines[number] = "|".join(cells)
    open(path, "w", encoding="utf-8").write("\n".join(lines))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    suggest = "--suggest" in sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    binary, doc = args
    fix = "--fix" in sys.argv[1:]
    doc_defaults, doc_texts, fixes = {}, {}, {}
    documented = doc_flags(doc, doc_defaults, doc_texts)
    errors = []
    for command in commands(binary):
        listed = binary_flags(binary, command)
        if not listed:
            errors.append("`ember %s --help` lists no flags" % command)
            continue
        if command not in documented:
            errors.append("%s: no `## ember %s` section" % (doc, command))
            continue
        missing = sorted(set(listed) - documented[command])
        extra = sorted(documented[command] - set(listed))
        for flag in missing:
            errors.append("%s: `ember %s` reads --%s, which the page does not document"
                          % (doc, command, flag))
            if suggest:
                default, text = listed[flag]
                print("%s: | `--%s` | %s | %s |" % (command, flag, default, text))
        for flag in sorted(set(listed) & documented[command]):
            if (command, flag) not in doc_defaults:
                continue
            want = norm_default(listed[flag][0])
            got = norm_default(doc_defaults[(command, flag)])
            if want != got:
                errors.append("%s: `ember %s` --%s defaults to %s, the page says %s"
                              % (doc, command, flag, listed[flag][0] or '""',
                                 doc_defaults[(command, flag)].strip() or "(empty)"))
        for flag in sorted(set(listed) & documented[command]):
            if (command, flag) not in doc_texts:
                continue
            number, cell = doc_texts[(command, flag)]
            want = " ".join(listed[flag][1].split())
            if norm_text(cell) != norm_text(want):
                errors.append("%s:%d: `ember %s` --%s: the page says %r, --help says %r"
                              % (doc, number + 1, command, flag, norm_text(cell), want))
                fixes[number] = want
        for flag in extra:
            errors.append("%s: documents --%s for `ember %s`, which `ember %s --help` does not list"
                          % (doc, flag, command, command))
    if fix and fixes:
        fix_descriptions(doc, fixes)
        print("check_cli: rewrote %d descriptions in %s from --help" % (len(fixes), doc))
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        return 1
    print("check_cli: every flag of every command is documented in %s" % doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
