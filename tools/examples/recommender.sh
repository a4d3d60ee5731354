#!/usr/bin/env bash
# Recommender walk-through: a typed user–item "likes" graph with known taste
# groups -> import with a schema -> train -> recommender metrics beside a
# popularity baseline -> every user's top-10 items (`ember recommend`) ->
# append new users -> train only their edges -> their recommendations ->
# item embeddings for a serving system.
#
# Usage (from the repo root, on a built tree):
#   tools/examples/recommender.sh [WORKDIR]
# Environment:
#   EMBER=path/to/ember   the binary (default: build/ember)
#   THREADS=N             worker threads (default: all cores)
#   KEEP=1                keep WORKDIR when the script made it (default: removed)
#
# Users in taste group g mostly like items of group g (user u and item i are
# in groups u % 10 and i % 10). The script fails (exit 1) if the model does
# not beat the popularity baseline's Recall@10, or if fewer than 70% of the
# top-10 items recommended to a demo user are in the user's group, so it
# doubles as a smoke test.
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

# Reads `ember recommend` output (user<TAB>item<TAB>score<TAB>rank) on
# stdin; prints, for each of the USERS, its top items with their groups and
# the share in the user's group. Exits 1 if a share is below min_share.
report() {  # USERS...
  awk -v groups="$groups" -v min_share="$min_share" -v users="$*" '
    BEGIN { n = split(users, list, " "); for (i = 1; i <= n; ++i) wanted[list[i]] = 1 }
    ($1 in wanted) {
      ig = substr($2, 5) % groups
      line[$1] = line[$1] sprintf(" %s(g%d)", $2, ig)
      ++shown[$1]
      same[$1] += (ig == substr($1, 5) % groups)
    }
    END {
      for (i = 1; i <= n; ++i) {
        u = list[i]
        share = shown[u] ? same[u] / shown[u] : 0
        printf "%s (group %d): top-%d items:%s\n", u, substr(u, 5) % groups, shown[u], line[u]
        printf "%s: in-group share %.2f\n", u, share
        if (shown[u] == 0 || share < min_share) bad = 1
      }
      if (bad) { print "FAIL: in-group share below " min_share " (or no items)"; exit 1 }
    }'
}

echo "== generate $users users x $likes likes over $items items in $groups taste groups"
gen_likes 0 "$users" 1 >"$work/likes.tsv"
gen_likes "$users" $((users + new_users)) 2 >"$work/new_users.tsv"
wc -l "$work/likes.tsv" "$work/new_users.tsv"

# The schema says a `likes` edge goes from a user to an item: users and
# items get their own partitions, negatives of a `likes` edge are items,
# and rankings are among items only.
echo "== ember import --schema likes:user:item (10% of the likes held out for evaluation)"
"$ember" import --out "$graph" --overwrite --schema likes:user:item --type-partitions user=2 \
  --split 0.9,0,0.1 --threads "$threads" --quiet "$work/likes.tsv"
"$ember" inspect "$graph" | grep -A1 "node types"

echo "== ember train"
"$ember" train "$graph" --dim 32 --epochs 10 --batch-size 500 --operator translation \
  --comparator dot --threads "$threads" --seed 1 --quiet

echo "== ember eval --protocol recommend: Recall@10, NDCG@10 and hit rate beside popularity"
"$ember" eval "$graph" --protocol recommend --relation likes --k 10 --threads "$threads" \
  --quiet | tee "$work/eval.txt"
awk '$1 == "model" { m = $2 } $1 == "popularity" { p = $2 }
     END { if (!(m > p)) { print "FAIL: Recall@10 " m " does not beat popularity " p; exit 1 } }' \
  "$work/eval.txt"

echo "== ember recommend: every user's top-10 new items"
"$ember" recommend "$graph" --relation likes --k 10 --out "$work/recommendations.tsv" \
  --overwrite --threads "$threads" --quiet
report $demo_users <"$work/recommendations.tsv"

echo "== ember import --append: $new_users new users"
"$ember" import --append "$graph" --threads "$threads" --quiet "$work/new_users.tsv"

echo "== ember train --only-new-edges (old users and items stay frozen)"
"$ember" train "$graph" --only-new-edges --epochs 3 --threads "$threads" --seed 1 --quiet

echo "== ember recommend --users: top-10 items for the new users $demo_new_users"
printf '%s\n' $demo_new_users >"$work/new_queries.txt"
"$ember" recommend "$graph" --relation likes --k 10 --users "$work/new_queries.txt" \
  --out "$work/new_recommendations.tsv" --overwrite --threads "$threads" --quiet
report $demo_new_users <"$work/new_recommendations.tsv"

echo "== ember export --type item: the item embeddings for a serving system"
"$ember" export "$graph" --type item --format npy --out "$work/items.npy" --overwrite --quiet
echo "$(wc -l <"$work/items.npy.names.tsv") item rows in $work/items.npy"

echo "== done"
