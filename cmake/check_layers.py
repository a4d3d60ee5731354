#!/usr/bin/env python3
"""Fails when a source file includes a header of a module it may not use.

usage: check_layers.py LAYERS_FILE SOURCE_DIR

LAYERS_FILE (written by CMakeLists.txt) has one line per module:
  NAME FOLDER DEP1,DEP2,...
A module is the files directly in FOLDER and in FOLDER/internal. A file may
include headers of its own module and of every module reachable through the
DEPs; an include of any other module's header is a wrong-way include, and
so is an include of FOLDER/internal/ from outside the module: the build
stops naming the file, the line and the modules. Folders outside
every module (tests/, tools/bench/) are not checked.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = ('.h', '.cc', '.cu', '.cuh')


def ModuleFiles(root, folder):
    """The sources of the module at `folder`, relative to `root`."""
    for sub in (folder, folder + '/internal'):
        path = os.path.join(root, sub)
        if os.path.isdir(path):
            for entry in sorted(os.listdir(path)):
                if entry.endswith(SOURCES):
                    yield os.path.join(sub, entry)


def main():
    layers_file, root = sys.argv[1], sys.argv[2]
    folder_of, deps_of = {}, {}
    with open(layers_file) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            name, folder = parts[0], parts[1]
            folder_of[name] = folder
            deps_of[name] = [d for d in (parts[2].split(',') if len(parts) > 2 else []) if d]
    module_of = {folder: name for name, folder in folder_of.items()}
    module_of.update({f + '/internal': name for name, f in folder_of.items()})

    def closure(name):
        seen, todo = set(), [name]
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            todo.extend(d for d in deps_of.get(m, []) if d in deps_of)
        return seen

    errors = []
    for name, folder in sorted(folder_of.items()):
        allowed = closure(name)
        for file in ModuleFiles(root, folder):
            with open(os.path.join(root, file), encoding='utf-8') as src:
                for number, text in enumerate(src, 1):
                    m = INCLUDE.match(text)
                    if not m:
                        continue
                    included = os.path.dirname(m.group(1))
                    target = module_of.get(included)
                    if target is None:
                        continue
                    if included.endswith('/internal') and target != name:
                        errors.append(f'{file}:{number}: includes "{m.group(1)}", internal to '
                                      f'{target}; use its public headers')
                    elif target not in allowed:
                        errors.append(f'{file}:{number}: includes "{m.group(1)}" of {target}, '
                                      f'which {name} may not use (it may use: '
                                      f'{", ".join(sorted(allowed - {name})) or "nothing"})')
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f'check_layers: {len(errors)} wrong-way include(s); the layering is in '
              'CMakeLists.txt (ember_module DEPS)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
