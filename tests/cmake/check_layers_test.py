#!/usr/bin/env python3
"""cmake/check_layers.py refuses what it is named for, on a scratch tree:
a wrong-way include, an include of another module's internal/ header; and
passes a tree that keeps the layering (so the refusals are not vacuous).
usage: check_layers_test.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(sys.argv[1], 'cmake', 'check_layers.py')


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as f:
                f.write(text)
        layers = os.path.join(root, 'layers.txt')
        with open(layers, 'w') as f:
            f.write('low low \nhigh high low\n')
        r = subprocess.run([sys.executable, CHECK, layers, root], capture_output=True, text=True)
        return r.returncode, r.stderr


good = {'low/a.h': '', 'low/internal/k.h': '', 'low/a.cc': '#include "low/internal/k.h"\n',
        'high/b.cc': '#include "low/a.h"\n#include "high/b.h"\n', 'high/b.h': ''}
failures = 0
rc, err = run(good)
if rc != 0:
    print('NOT OK: a layered tree was refused:', err); failures += 1
wrong_way = dict(good, **{'low/a.cc': '#include "high/b.h"\n'})
rc, err = run(wrong_way)
if rc == 0 or 'low/a.cc:1' not in err or 'high' not in err:
    print('NOT OK: a wrong-way include passed:', rc, err); failures += 1
internal = dict(good, **{'high/b.cc': '#include "low/internal/k.h"\n'})
rc, err = run(internal)
if rc == 0 or 'internal to low' not in err:
    print('NOT OK: an include of another module\'s internal/ passed:', rc, err); failures += 1
print('check_layers_test: %d passed, %d failed' % (3 - failures, failures))
sys.exit(1 if failures else 0)
