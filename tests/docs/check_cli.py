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
--suggest prints a table row, from the help text, for every missing flag.
"""
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


def doc_flags(path):
    """{command: set of flags} from the `## ember <command>` sections."""
    sections, current = {}, None
    for line in open(path, encoding="utf-8"):
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
                    sections[current].update(norm(t) for t in TOKEN.findall(cell))
    return sections


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    suggest = "--suggest" in sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    binary, doc = args
    documented = doc_flags(doc)
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
        for flag in extra:
            errors.append("%s: documents --%s for `ember %s`, which `ember %s --help` does not list"
                          % (doc, flag, command, command))
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        return 1
    print("check_cli: every flag of every command is documented in %s" % doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
