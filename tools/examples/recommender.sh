#!/usr/bin/env bash
# Recommender walk-through: a user–item "likes" graph with known taste
# groups -> import -> train -> export -> top-k items for a user -> append
# new users -> train only their edges -> their recommendations.
#
# Usage (from the repo root, on a built tree):
#   tools/examples/recommender.sh [WORKDIR]
# Environment:
#   EMBER=path/to/ember   the binary (default: build/ember)
#   THREADS=N             worker threads (default: all cores)
#   KEEP=1                keep WORKDIR when the script made it (default: removed)
#
# Users in taste group g mostly like items of group g (user u and item i are
# in groups u % 10 and i % 10). The script fails (exit 1) if fewer than 70%
# of the top-10 items recommended to a demo user are in the user's group,
# so it doubles as a smoke test.
set -euo pipefail

ember=${EMBER:-build/ember}
threads=${THREADS:-0}
users=2000 items=500 groups=10 likes=20 in_group=0.9 new_users=100
min_share=0.7
demo_users="user17 user42 user1234"
demo_new_users="user2017 user2042"

if [[ ! -x $ember ]]; then
  echo "recommender.sh: no ember binary at '$ember' (build first, or set EMBER=...)" >&2
  exit 2
fi
if [[ $# -ge 1 ]]; then
  work=$1
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/ember-recommender.XXXXXX)
  [[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
fi
graph=$work/graph
echo "== recommender walk-through in $work"

# user<TAB>likes<TAB>item lines for users first .. last-1: each user likes
# `likes` distinct items, a share `in_group` of them from its own group.
gen_likes() {  # first last seed
  awk -v first="$1" -v last="$2" -v seed="$3" -v items="$items" -v groups="$groups" \
      -v likes="$likes" -v in_group="$in_group" '
    BEGIN {
      srand(seed)
      per_group = int(items / groups)
      for (u = first; u < last; ++u) {
        g = u % groups
        split("", chosen)
        n = 0
        while (n < likes) {
          if (rand() < in_group) {
            i = g + groups * int(rand() * per_group)
          } else {
            do { i = int(rand() * items) } while (i % groups == g)
          }
          if (i in chosen) continue
          chosen[i] = 1
          ++n
          printf "user%d\tlikes\titem%d\n", u, i
        }
      }
    }'
}

# Reads `ember neighbors --json` lines on stdin; prints, per query, the top
# `k` items the user has not liked yet (users, and items in the LIKES files,
# are skipped) with their groups, and the share in the user's group. Exits 1
# if a share is below min_share.
report() {  # k LIKES...
  local k=$1
  shift
  awk -v k="$k" -v groups="$groups" -v min_share="$min_share" '
    FILENAME != "-" { seen[$1 SUBSEP $3] = 1; next }
    {
      n = split($0, parts, "\"node\":\"")
      user = parts[2]; sub(/".*/, "", user)
      ug = substr(user, 5) % groups
      shown = 0; same = 0; line = ""
      for (j = 3; j <= n && shown < k; ++j) {
        name = parts[j]; sub(/".*/, "", name)
        if (name !~ /^item/ || (user SUBSEP name) in seen) continue
        ig = substr(name, 5) % groups
        line = line sprintf(" %s(g%d)", name, ig)
        ++shown
        same += (ig == ug)
      }
      share = shown ? same / shown : 0
      printf "%s (group %d): top-%d new items:%s\n", user, ug, shown, line
      printf "%s: in-group share %.2f\n", user, share
      if (shown < k || share < min_share) bad = 1
    }
    END {
      if (bad) { print "FAIL: in-group share below " min_share " (or too few items)"; exit 1 }
    }' "$@" -
}

echo "== generate $users users x $likes likes over $items items in $groups taste groups"
gen_likes 0 "$users" 1 >"$work/likes.tsv"
gen_likes "$users" $((users + new_users)) 2 >"$work/new_users.tsv"
wc -l "$work/likes.tsv" "$work/new_users.tsv"

echo "== ember import"
"$ember" import --out "$graph" --overwrite --threads "$threads" --quiet "$work/likes.tsv"

echo "== ember train"
"$ember" train "$graph" --dim 32 --epochs 10 --batch-size 500 --operator translation \
  --comparator dot --threads "$threads" --seed 1 --quiet

echo "== ember export --format tsv"
"$ember" export "$graph" --format tsv --out "$work/embeddings.tsv" --overwrite \
  --threads "$threads" --quiet
echo "$(wc -l <"$work/embeddings.tsv") rows in $work/embeddings.tsv"

# `neighbors` ranks every node (users too) and has no filter; ask for 100
# and keep the first 10 items the user has not liked yet.
echo "== ember neighbors --relation likes: top-10 items for $demo_users"
printf '%s\n' $demo_users >"$work/queries.txt"
"$ember" neighbors "$graph" --queries "$work/queries.txt" --relation likes --k 100 --json \
  --threads "$threads" --quiet | report 10 "$work/likes.tsv"

echo "== ember import --append: $new_users new users"
"$ember" import --append "$graph" --threads "$threads" --quiet "$work/new_users.tsv"

echo "== ember train --only-new-edges (old users and items stay frozen)"
"$ember" train "$graph" --only-new-edges --epochs 3 --dim 32 --batch-size 500 \
  --operator translation --comparator dot --threads "$threads" --seed 1 --quiet

echo "== ember neighbors --relation likes: top-10 items for new users $demo_new_users"
printf '%s\n' $demo_new_users >"$work/new_queries.txt"
"$ember" neighbors "$graph" --queries "$work/new_queries.txt" --relation likes --k 100 --json \
  --threads "$threads" --quiet | report 10 "$work/new_users.tsv"

echo "== done"
