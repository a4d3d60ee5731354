#!/usr/bin/env python3
"""Runs the ```python blocks of docs/recommenders.md against ember's output.

Usage: check_snippets.py EMBER_BINARY DOCS_RECOMMENDERS_MD

For each of four models (translation/dot, the walk-through's; none/dot,
ember's default; then complex_diagonal/cos and diagonal/l2) it trains a small typed user-item
graph, writes in a fresh folder what the page says the snippets find there
(`export --type user|item --format npy` as users.npy and items.npy with
their sidecars, `export --format h5 --out pbg`, and users.txt), and runs
`ember recommend --users users.txt --noexclude-known --k 10`. Then every
python block of the page runs in that folder with Debian's python3
(/usr/bin/python3 where present), and:
- a block that handles every operator (it names complex_diagonal) must
  print, for every model, exactly recommend's lines: the same items in the
  same order, scores within 1e-4;
- any other block must do so for translation/dot and none/dot, and refuse the other
  models (exit non-zero saying it scores a translation/dot model) rather
  than print wrong scores.
The page must keep a NumPy, a FAISS and an h5py block. A missing python
module (numpy, faiss, h5py) fails the check, naming the Debian package.
The ```sh block of the page's "Ratings and counts as edge weights" section
runs too, command by command as written, in a folder holding a ratings.tsv
of the shape it names (user, item, rating, timestamp): each must succeed.
"""
import shlex
import os
import re
import subprocess
import sys
import tempfile

MODELS = [("translation", "dot"), ("none", "dot"), ("complex_diagonal", "cos"),
          ("diagonal", "l2")]
# The models every block must score: the walk-through's and ember's default.
SIMPLE = [("translation", "dot"), ("none", "dot")]
MODULES = {"numpy": "python3-numpy", "faiss": "python3-faiss", "h5py": "python3-h5py"}
K = 10
TOLERANCE = 1e-4


def python():
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def blocks(page):
    """The ```python blocks of the page, in order."""
    out, current = [], None
    for line in open(page, encoding="utf-8"):
        if current is None:
            if line.strip() == "```python":
                current = []
        elif line.strip() == "```":
            out.append("".join(current))
            current = None
        else:
            current.append(line)
    if current is not None:
        sys.exit("check_snippets: %s: a ```python block is not closed" % page)
    return out


def likes_tsv(path):
    """300 users, 80 items in 8 taste groups; user u likes 12 items, most of
    its group u % 8. A few names are not ASCII (the JSON and TSV sidecars
    must carry them)."""
    state = 12345

    def rand():
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return state >> 33

    def item(i):
        return "ítem%d" % i if i % 17 == 3 else "item%d" % i

    with open(path, "w", encoding="utf-8") as f:
        for u in range(300):
            chosen = set()
            while len(chosen) < 12:
                i = (u % 8 + 8 * (rand() % 10)) if rand() % 10 < 8 else rand() % 80
                chosen.add(i)
            for i in sorted(chosen):
                f.write("user%d\tlikes\t%s\n" % (u, item(i)))


def sh_block(page, section):
    """The first ```sh block of the `## section` of the page, as lines."""
    inside, block = False, None
    for line in open(page, encoding="utf-8"):
        if line.startswith("## "):
            inside = line[3:].strip() == section
            continue
        if not inside:
            continue
        if block is None:
            if line.strip() == "```sh":
                block = []
        elif line.strip() == "```":
            return block
        else:
            block.append(line.rstrip("\n"))
    sys.exit("check_snippets: %s has no ```sh block under `## %s`" % (page, section))


def ratings_tsv(path):
    """user<TAB>item<TAB>rating<TAB>timestamp: 200 users rate 10 of 60 items."""
    with open(path, "w", encoding="utf-8") as f:
        for u in range(200):
            for k in range(10):
                i = (u * 7 + k * 13) % 60
                f.write("user%d\titem%d\t%d\t%d\n" % (u, i, 1 + (u + i) % 5, 1700000000 + k))


def check_ratings(ember, page, tmp):
    """Runs the ratings example as written; its failures."""
    work = os.path.join(tmp, "ratings")
    os.makedirs(work)
    ratings_tsv(os.path.join(work, "ratings.tsv"))
    failures = []
    for line in sh_block(page, "Ratings and counts as edge weights"):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "ember":
            failures.append("ratings example: %r is not an ember command" % line)
            continue
        r = subprocess.run([ember] + words[1:] + ["--quiet"], cwd=work, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        if r.returncode != 0:
            failures.append("ratings example: `%s` exited %d:\n%s" % (line, r.returncode, r.stderr))
            break
    return failures


def run(args, cwd):
    r = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    if r.returncode != 0:
        sys.exit("check_snippets: %s failed (exit %d):\n%s%s"
                 % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r.stdout


def parse(text, what):
    """user -> [(item, score, rank)] from user<TAB>item<TAB>score<TAB>rank lines."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 4:
            raise ValueError("%s line %d is not user<TAB>item<TAB>score<TAB>rank: %r"
                             % (what, n, line))
        out.setdefault(fields[0], []).append((fields[1], float(fields[2]), int(fields[3])))
    return out


def compare(got, want):
    """The differences between two parsed outputs, as lines ([] when equal)."""
    problems = []
    if sorted(got) != sorted(want):
        problems.append("users %s, expected %s" % (sorted(got), sorted(want)))
    for user in sorted(set(got) & set(want)):
        g, w = got[user], want[user]
        if [(i, r) for i, _, r in g] != [(i, r) for i, _, r in w]:
            problems.append("%s: items %s, ember recommend %s"
                            % (user, [i for i, _, _ in g], [i for i, _, _ in w]))
            continue
        for (item, gs, rank), (_, ws, _) in zip(g, w):
            if abs(gs - ws) > TOLERANCE:
                problems.append("%s rank %d (%s): score %r, ember recommend %r"
                                % (user, rank, item, gs, ws))
    return problems


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ember, page = os.path.abspath(sys.argv[1]), sys.argv[2]
    py = python()
    missing = []
    for module, package in MODULES.items():
        if subprocess.run([py, "-c", "import " + module], capture_output=True).returncode:
            missing.append("%s (Debian's %s)" % (module, package))
    if missing:
        sys.exit("check_snippets: %s cannot import %s: tools/install-deps.sh installs them"
                 % (py, ", ".join(missing)))
    snippets = blocks(page)
    for module in MODULES:
        if not any(re.search(r"^import %s\b" % module, s, re.M) for s in snippets):
            sys.exit("check_snippets: %s has no python block importing %s" % (page, module))

    failures, checked = [], 0
    with tempfile.TemporaryDirectory(prefix="ember-snippets-") as tmp:
        failures += check_ratings(ember, page, tmp)
        likes = os.path.join(tmp, "likes.tsv")
        likes_tsv(likes)
        for op, cmp in MODELS:
            model = "%s/%s" % (op, cmp)
            work = os.path.join(tmp, "%s_%s" % (op, cmp))
            graph = os.path.join(work, "graph")
            os.makedirs(work)
            run([ember, "import", "--quiet", "--out", graph, "--schema", "likes:user:item",
                 "--type-partitions", "user=2", "--split", "0.9,0,0.1", "--seed", "3",
                 "--threads", "2", likes], work)
            run([ember, "train", graph, "--quiet", "--dim", "16", "--epochs", "3",
                 "--operator", op, "--comparator", cmp, "--seed", "1", "--threads", "2"], work)
            for t in ("user", "item"):
                run([ember, "export", graph, "--quiet", "--type", t, "--format", "npy",
                     "--out", os.path.join(work, t + "s.npy")], work)
            run([ember, "export", graph, "--quiet", "--format", "h5", "--out",
                 os.path.join(work, "pbg")], work)
            # Users of both user partitions, in no particular order.
            with open(os.path.join(work, "users.txt"), "w", encoding="utf-8") as f:
                for u in (17, 3, 250, 42, 199, 0, 123, 299):
                    f.write("user%d\n" % u)
            recs = os.path.join(work, "recs.tsv")
            run([ember, "recommend", graph, "--quiet", "--relation", "likes", "--users",
                 "users.txt", "--noexclude-known", "--k", str(K), "--out", recs,
                 "--threads", "2"], work)
            want = parse(open(recs, encoding="utf-8").read(), "ember recommend")
            if len(want) != 8 or any(len(v) != K for v in want.values()):
                sys.exit("check_snippets: ember recommend wrote %d users" % len(want))

            for n, code in enumerate(snippets, 1):
                general = "complex_diagonal" in code
                where = "%s block %d (%s)" % (os.path.basename(page), n, model)
                r = subprocess.run([py, "-c", code], cwd=work, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, timeout=300)
                checked += 1
                if general or (op, cmp) in SIMPLE:
                    if r.returncode != 0:
                        failures.append("%s exited %d:\n%s" % (where, r.returncode, r.stderr))
                        continue
                    try:
                        got = parse(r.stdout, where)
                    except ValueError as e:
                        failures.append(str(e))
                        continue
                    failures += ["%s: %s" % (where, p) for p in compare(got, want)]
                elif r.returncode == 0 or "translation/dot" not in r.stderr:
                    failures.append("%s should refuse a %s model, saying it scores "
                                    "translation/dot; it exited %d:\n%s%s"
                                    % (where, model, r.returncode, r.stdout[:500], r.stderr))
    if failures:
        print("\n".join(failures))
        print("check_snippets: %d problems in %d snippet runs" % (len(failures), checked))
        sys.exit(1)
    print("check_snippets: %d python blocks x %d models match ember recommend"
          % (len(snippets), len(MODELS)))


if __name__ == "__main__":
    main()
