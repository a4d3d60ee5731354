#!/usr/bin/env bash
# Sets up everything and runs the whole test suite: the format check, the
# release build, then
# the same suite under AddressSanitizer + UndefinedBehaviorSanitizer, then
# the tests whose threads hand data to each other under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
# Layout: every C++ line changed since .clang-format landed is as
# clang-format writes it (seconds).
tools/format-check.sh
jobs=$(nproc)
tools/build.sh release
(cd build && ctest --output-on-failure -j "$jobs")
# libFuzzer targets (line parser, manifest reader, edge-block decoder), a
# bounded 5 s each from their seed corpora (clang builds them in build-fuzz/).
tools/fuzz.sh 5
tools/build.sh sanitize
# Leak reports from third-party libraries' static state are not ours.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# RSS bounds do not hold under ASan's shadow memory; the readers-beside-a-
# writer test (a training run beside 30 reader processes) takes minutes
# under ASan and runs in the release pass; so does `mpirun ... ember train`
# end to end (MpiTrainTest: a dozen training runs), whose loop the
# in-process DistributedTrainTest exercises here (the MPI transport's own
# tests, MpiTransportTest, run here too). The `--lr auto` guard
# (LrAutoGuardTest: 8 twelve-epoch training runs and 72 probes, a quality check)
# runs in the release pass only, as its code runs here in ProbeTest; so
# does the sweep of checkpoint pauses over every round (two minutes under
# ASan; the other DistributedTrainTest cases run its loop here). So do the
# tests that judge quality (KgQualityTest, TrainQualityTest,
# CommunitiesExampleTest: MRR after real training runs, whose code the
# functional tests run here) and the benchmark scripts' JSON (ReportTest),
# five minutes of the pass's CPU.
(cd build-sanitize && ctest --output-on-failure -j "$jobs" \
  -E 'BoundedMemoryTest|ReadBesideTrainTest|MpiTrainTest|LrAutoGuardTest|CheckpointPausesBeforeAnyRound|KgQualityTest|TrainQualityTest|CommunitiesExampleTest|ReportTest')
# ThreadSanitizer: the tests whose threads hand data to each other, built
# alone (train_test): the batch pipeline and its trainer slots (Hogwild
# rows), the partition buffer, its pins and its prefetches on the I/O
# executor (training loops with a buffer smaller than the graph, stops and
# resumes),
# edge-window readers, and parameter sync and partition transport across
# in-process ranks. Every suppression is justified in tools/tsan.supp; the
# first report fails the pass.
tools/build.sh tsan train_test
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp"
(cd build-tsan && ctest --output-on-failure -j "$jobs" -R \
  'BatchPipelineTest|PinTest|TrainLoopTest|EdgeWindowTest|ClusterSyncTest|PartitionTransportTest|DistributedTrainTest')
