#!/usr/bin/env bash
# Prepares a public benchmark for ember: downloads it (resumable; its sha256
# recorded on first use and checked after), converts only what `ember import`
# cannot read as it comes, imports it into DIR/graph, and prints the training
# and evaluation commands of the standard configuration from the literature,
# with the published figure to compare against and where it comes from.
#
# Usage (from the repo root, on a built tree):
#   tools/datasets/prepare.sh [--offline] NAME DIR [IMPORT_FLAG...]
#   tools/datasets/prepare.sh --list
# NAME: fb15k-237 wn18rr ogbl-wikikg2 ogbl-citation2 livejournal twitter-2010
#       freebase86m
# DIR:  where the download, its extracted files, any converted files
#       (DIR/ember-input/) and the graph (DIR/graph) go.
# IMPORT_FLAG...: passed on to `ember import` after the recipe's own flags
#       (e.g. --threads 8).
#
# --offline (or EMBER_DATASETS_OFFLINE=1) downloads nothing: DIR must hold
# the downloaded file or the files extracted from it, laid out as published.
#
# Checksums: none of these hosts publishes one, and none is pinned here. The
# first complete download is trusted and its sha256 recorded in
# DIR/SHA256SUMS; every later run, and any download made once that record
# exists (resumed or not), is verified against it, and a mismatch is refused.
# EMBER_DATASETS_SUMS=FILE names a sums file (sha256sum format) consulted
# first, for sums you have checked yourself.
#
# Environment:
#   EMBER=path/to/ember    the binary (default: build/ember, else ember on PATH)
#   MEMORY_BUDGET=8G       --memory-budget of import and of the printed train
#                          commands of the large graphs (partitions auto)
#   EMBER_DATASETS_MIRROR=URL  fetch every file as URL/<file name> instead of
#                          from its host (a local mirror; file:// works)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=prepare.sh
die() { echo "$prog: $*" >&2; exit 1; }

names="fb15k-237 wn18rr ogbl-wikikg2 ogbl-citation2 livejournal twitter-2010 freebase86m"
offline=${EMBER_DATASETS_OFFLINE:-0}
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --offline) offline=1; shift ;;
    --list) echo "$names" | tr ' ' '\n'; exit 0 ;;
    --help | -h) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ $# -ge 2 ]] || die "usage: $prog [--offline] NAME DIR [IMPORT_FLAG...] (NAME: $names)"
name=$1 dir=$2
shift 2
extra=("$@")

if [[ -n ${EMBER:-} ]]; then
  ember=$EMBER
elif [[ -x $here/../../build/ember ]]; then
  ember=$here/../../build/ember
else
  ember=ember
fi
command -v "$ember" >/dev/null || die "no ember binary at '$ember' (build first, or set EMBER=...)"
budget=${MEMORY_BUDGET:-8G}
pinned=${EMBER_DATASETS_SUMS:-}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
recorded=$dir/SHA256SUMS

# The sha256 a sums file records for file name $2 ("" if none).
sum_in() {
  [[ -f $1 ]] || return 0
  awk -v f="$2" '!/^#/ && NF == 2 && ($2 == f || $2 == "*" f) { print $1; exit }' "$1"
}

# Verifies $dir/$1 against EMBER_DATASETS_SUMS's sha256, else the recorded one;
# records it when neither knows the file.
verify() {
  local file=$1 path=$dir/$1 want source got
  want=$(sum_in "$pinned" "$file") source=$pinned
  if [[ -z $want ]]; then want=$(sum_in "$recorded" "$file") source=$recorded; fi
  echo "== sha256 $file" >&2
  got=$(sha256sum "$path" | cut -d' ' -f1)
  if [[ -z $want ]]; then
    echo "$got  $file" >>"$recorded"
    echo "   no published checksum: recorded $got in $recorded (first use);" \
      "later runs verify against it" >&2
  elif [[ $got != "$want" ]]; then
    die "checksum mismatch for $path: its sha256 is $got, but $source records $want." \
      "The file is corrupt, truncated or changed upstream: delete it and run again to" \
      "download it afresh (or correct $source if upstream replaced it on purpose)."
  else
    echo "   ok (matches $source)" >&2
  fi
}

# Downloads $1 to $dir/$2 unless it is there, resuming a partial download
# ($2.part), then verifies it. Offline, verifies it only if present.
fetch() {
  local url=$1 file=$2
  [[ -n ${EMBER_DATASETS_MIRROR:-} ]] && url=${EMBER_DATASETS_MIRROR%/}/$file
  if [[ ! -f $dir/$file ]]; then
    [[ $offline == 1 ]] && return 0
    echo "== download $url" >&2
    if command -v curl >/dev/null; then
      curl -fL --retry 5 -C - -o "$dir/$file.part" "$url" || die "download of $url failed (run again to resume)"
    else
      wget -c -O "$dir/$file.part" "$url" || die "download of $url failed (run again to resume)"
    fi
    mv "$dir/$file.part" "$dir/$file"
  fi
  verify "$file"
}

# Extracts zip $1 into $dir unless $dir/$2 (a file it holds) is there.
unpack() {
  local archive=$1 marker=$2
  [[ -e $dir/$marker ]] && return 0
  [[ -f $dir/$archive ]] || die "$dir has neither $marker nor $archive$([[ $offline == 1 ]] &&
    echo " (offline: put the downloaded $archive, or the files extracted from it, in $dir)")"
  echo "== unzip $archive" >&2
  python3 -m zipfile -e "$dir/$archive" "$dir" || die "cannot extract $dir/$archive"
  [[ -e $dir/$marker ]] || die "$dir/$archive did not hold $marker"
}

need() {
  local f
  for f in "$@"; do [[ -e $dir/$f ]] || die "missing $dir/$f$([[ $offline == 1 ]] &&
    echo " (offline: DIR must hold the dataset's files as published)")"; done
}

# OGB split file $1 (.pt) -> $2, one line per edge with tensors $3 (comma list).
pt_rows() {
  echo "== convert $1 -> $2 (${3//,/ })" >&2
  python3 "$here/ogb_pt.py" rows "$dir/$1" "$3" >"$dir/$2.tmp" || die "cannot convert $dir/$1" \
    "(see tools/datasets/ogb_pt.py for the conversion with torch)"
  mv "$dir/$2.tmp" "$dir/$2"
}

# Dies unless OGB's raw edge list $1 holds as many edges as split file $2's
# tensor $3: the recipe imports raw/ as the train split.
same_count() {
  local raw pt
  raw=$(gzip -dc "$dir/$1" | wc -l)
  pt=$(python3 "$here/ogb_pt.py" count "$dir/$2" "$3") || die "cannot read $dir/$2"
  [[ $raw -eq $pt ]] || die "$dir/$1 has $raw edges but $dir/$2 has $pt: not the published layout"
}

run_import() {
  echo "== ember import $*" >&2
  "$ember" import --out "$dir/graph" --overwrite "$@" "${extra[@]}"
}

big=(--partitions auto --memory-budget "$budget")

# Each recipe sets: train (the ember train flags), eval (ember eval flags),
# and reference (lines printed beside them).
case $name in
  fb15k-237 | wn18rr)
    # data.dgl.ai's zips: <sub>/{train,valid,test}.txt of h<TAB>r<TAB>t names,
    # read as they come. --inductive keeps the published splits whole (a test
    # triple whose entity is in no train triple stays in test).
    if [[ $name == fb15k-237 ]]; then sub=FB15k-237; else sub=wn18rr; fi
    fetch https://data.dgl.ai/dataset/$sub.zip $sub.zip
    unpack $sub.zip $sub/train.txt
    need $sub/valid.txt $sub/test.txt
    d=$dir/$sub
    run_import --inductive --valid "$d/valid.txt" --test "$d/test.txt" "$d/train.txt"
    train="--operator complex_diagonal --comparator dot --loss softmax --dim 400 --lr 0.1 --epochs 50 --batch-size 1000 --chunk-size 50 --num-uniform-negs 1000"
    eval="--split test --max-edges 0"
    reference=("config: PBG's FB15k example (torchbiggraph/examples/configs/fb15k_config_cpu.py: ComplEx, dot, softmax, dim 400, lr 0.1, 50 epochs, 1000 uniform negatives), applied to $sub; PBG's regularization_coef 1e-3 has no ember counterpart")
    if [[ $name == fb15k-237 ]]; then
      reference+=("compare: filtered test MRR against all entities; ComplEx about 0.25 (Dettmers et al., AAAI 2018, the ConvE paper: ComplEx 0.247, DistMult 0.241) to about 0.35 with 1vsAll training and tuning (Ruffinelli et al., ICLR 2020, LibKGE: ComplEx 0.348); both approximate, quoted from memory")
    else
      reference+=("compare: filtered test MRR against all entities; ComplEx about 0.44 (Dettmers et al., AAAI 2018, the ConvE paper: ComplEx 0.44, DistMult 0.43) to about 0.475 tuned (Ruffinelli et al., ICLR 2020, LibKGE); both approximate, quoted from memory")
    fi
    ;;
  ogbl-wikikg2)
    fetch http://snap.stanford.edu/ogb/data/linkproppred/wikikg-v2.zip wikikg-v2.zip
    unpack wikikg-v2.zip wikikg-v2/raw/edge.csv.gz
    r=wikikg-v2/raw s=wikikg-v2/split/time
    need $r/edge_reltype.csv.gz $s/train.pt $s/valid.pt $s/test.pt
    # raw/ is the train split (OGB's graph holds only training edges), with
    # the relation in a file of its own: joined into h,t,r lines. valid/test
    # exist only as torch files: read without torch by ogb_pt.py.
    same_count $r/edge.csv.gz $s/train.pt head
    mkdir -p "$dir/ember-input"
    echo "== join $r/edge.csv.gz and edge_reltype.csv.gz -> ember-input/train.csv" >&2
    paste -d, <(gzip -dc "$dir/$r/edge.csv.gz") <(gzip -dc "$dir/$r/edge_reltype.csv.gz") \
      >"$dir/ember-input/train.csv.tmp"
    mv "$dir/ember-input/train.csv.tmp" "$dir/ember-input/train.csv"
    pt_rows $s/valid.pt ember-input/valid.tsv head,tail,relation
    pt_rows $s/test.pt ember-input/test.tsv head,tail,relation
    i=$dir/ember-input
    run_import --integer-ids --inductive --columns 0,2,1 "${big[@]}" --dim 500 \
      --valid "$i/valid.tsv" --test "$i/test.tsv" "$i/train.csv"
    train="--operator complex_diagonal --comparator dot --loss softmax --dim 500 --lr 0.1 --epochs 6 --batch-size 1000 --chunk-size 50 --num-uniform-negs 500 --memory-budget $budget"
    eval="--split test --negatives 500"
    reference=(
      "config: OGB's ComplEx example (examples/linkproppred/wikikg2/examples.sh: dim 250 complex = 500 here; 200k steps of 512 = about 6 epochs); OGB trains with 128 self-adversarial negatives, ember with softmax over shared ones"
      "compare: OGB leaderboard test MRR, ComplEx (250 dim) about 0.40, TransE (500 dim) about 0.43 (approximate, quoted from memory)"
      "protocol: OGB ranks each test edge against its own 500 head and 500 tail negatives (split/time/test.pt head_neg/tail_neg), unfiltered; ember eval --negatives 500 samples 500 uniform candidates per batch, which is close but not the same set")
    ;;
  ogbl-citation2)
    fetch http://snap.stanford.edu/ogb/data/linkproppred/citation-v2.zip citation-v2.zip
    unpack citation-v2.zip citation-v2/raw/edge.csv.gz
    r=citation-v2/raw s=citation-v2/split/time
    need $s/train.pt $s/valid.pt $s/test.pt
    # raw/edge.csv.gz (src,dst, no header) is the train split and imports as
    # it comes; valid/test exist only as torch files.
    same_count $r/edge.csv.gz $s/train.pt source_node
    mkdir -p "$dir/ember-input"
    pt_rows $s/valid.pt ember-input/valid.tsv source_node,target_node
    pt_rows $s/test.pt ember-input/test.tsv source_node,target_node
    i=$dir/ember-input
    run_import --integer-ids --inductive "${big[@]}" --dim 128 \
      --valid "$i/valid.tsv" --test "$i/test.tsv" "$dir/$r/edge.csv.gz"
    train="--operator none --comparator dot --loss softmax --dim 128 --lr 0.1 --epochs 10 --batch-size 10000 --chunk-size 500 --num-uniform-negs 500 --memory-budget $budget"
    eval="--split test --negatives 1000"
    reference=(
      "config: ember's own (a dot-product factorisation without node features, like OGB's Matrix Factorization baseline); no literature config for this system"
      "compare: OGB leaderboard test MRR, Matrix Factorization about 0.52, Node2vec about 0.61 (approximate, quoted from memory)"
      "protocol: OGB ranks each test edge's target against its own 1000 negative targets (target_node_neg), tail side only, unfiltered; ember eval --negatives 1000 ranks both sides against 1000 uniform candidates, close but not the same")
    ;;
  livejournal)
    fetch https://snap.stanford.edu/data/soc-LiveJournal1.txt.gz soc-LiveJournal1.txt.gz
    # '#' comments, src<TAB>dst, gzip: read as it comes. No published split:
    # Marius' 90/5/5.
    run_import --integer-ids --split 0.9,0.05,0.05 --seed 0 "${big[@]}" --dim 100 \
      "$dir/soc-LiveJournal1.txt.gz"
    train="--operator none --comparator dot --loss softmax --dim 100 --lr 0.1 --epochs 25 --batch-size 50000 --chunk-size 500 --num-uniform-negs 500 --memory-budget $budget"
    eval="--split test --negatives 10000"
    reference=(
      "config: Marius (OSDI 2021) Table 1 and osdi2021/system_comparisons/livejournal/marius/dot.ini: dot, dim 100, lr 0.1, batch 50000, 1000 negatives half by degree (here: 500 chunk endpoints + 500 uniform), 25 epochs"
      "compare: Marius (OSDI 2021) Table 3, test MRR 0.749 (Hits@1 0.671, Hits@10 0.871); PBG 0.751, DGL-KE 0.750: unfiltered, 10000 uniform negatives, as ember eval --negatives 10000")
    ;;
  twitter-2010)
    fetch https://snap.stanford.edu/data/twitter-2010.txt.gz twitter-2010.txt.gz
    # src<SPACE>dst, gzip (the WebGraph twitter-2010 as an edge list, as
    # Marius and PBG's scripts use it): read as it comes. Marius' 90/5/5.
    run_import --integer-ids --split 0.9,0.05,0.05 --seed 0 "${big[@]}" --dim 100 \
      "$dir/twitter-2010.txt.gz"
    train="--operator none --comparator dot --loss softmax --dim 100 --lr 0.1 --epochs 10 --batch-size 50000 --chunk-size 500 --num-uniform-negs 500 --memory-budget $budget"
    eval="--split test --negatives 1000"
    reference=(
      "config: Marius (OSDI 2021) Table 1 and osdi2021/system_comparisons/twitter/marius/dot.ini: dot, dim 100, lr 0.1, batch 50000, 1000 negatives half by degree, 10 epochs, 8 partitions (here: partitions auto)"
      "compare: Marius (OSDI 2021) Table 4, test MRR 0.383 (Hits@1 0.316, Hits@10 0.508); PBG 0.313, DGL-KE 0.220: unfiltered, 1000 negatives of which half are drawn by degree. ember eval --negatives 1000 draws all uniformly, an easier test: expect a higher figure")
    ;;
  freebase86m)
    fetch https://data.dgl.ai/dataset/Freebase.zip Freebase.zip
    unpack Freebase.zip Freebase/train.txt
    need Freebase/valid.txt Freebase/test.txt
    # DGL-KE's Freebase, as Marius downloads it: integer h<TAB>t<TAB>r lines
    # (relation last), read as they come with --columns 0,2,1.
    d=$dir/Freebase
    run_import --integer-ids --inductive --columns 0,2,1 "${big[@]}" --dim 100 \
      --valid "$d/valid.txt" --test "$d/test.txt" "$d/train.txt"
    train="--operator complex_diagonal --comparator dot --loss softmax --dim 100 --lr 0.1 --epochs 10 --batch-size 50000 --chunk-size 500 --num-uniform-negs 500 --memory-budget $budget"
    eval="--split test --negatives 1000"
    reference=(
      "config: Marius (OSDI 2021) Table 1 and osdi2021/system_comparisons/freebase86m/marius/d100.ini: ComplEx, dim 100, lr 0.1, batch 50000, 1000 negatives half by degree, 10 epochs, 16 partitions (here: partitions auto)"
      "compare: Marius (OSDI 2021) Table 5, test MRR 0.685-0.687 (Marius, 16 partitions), PBG 0.730; Table 6: 0.691 at dim 100 with 32 partitions: unfiltered, 1000 negatives of which half are drawn by degree. ember eval --negatives 1000 draws all uniformly, an easier test: expect a higher figure")
    ;;
  *) die "unknown dataset '$name' (one of: $names)" ;;
esac

echo
echo "prepared $name in $dir/graph"
echo "train: ember train $dir/graph $train"
echo "eval:  ember eval $dir/graph $eval --memory-budget $budget"
for line in "${reference[@]}"; do echo "$line"; done
