#!/usr/bin/env bash
# tests/resume/mn_resume.sh - examples/mnist_mn under mpirun -np 2 resumes consistently (issue 33):
# rank 0 writes the snapshots, every rank loads the one rank 0 picks. On the tiny MNIST of
# tests/data (6 images a rank, batch 2: 3 iterations an epoch), the table rows (epoch, losses,
# accuracies; not the elapsed time) of
#   - a run stopped after epoch 1 and resumed to epoch 3, and
#   - a run resumed from the middle of epoch 3 (iteration 7, its newer snapshots removed)
# must be those of the uninterrupted run, digit for digit.
#
#   mn_resume.sh MPIEXEC MNIST_MN DATA_DIR WORK_DIR
set -euo pipefail
mpiexec=$1 exe=$2 data=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
cd "$work"
run() { timeout 120 "$mpiexec" -n 2 "$exe" --data "$data" --dataset mnist --batch-size 2 --quiet "$@"; }
rows() { grep -E '^[0-9]+ ' "$1" | awk '{print $1, $2, $3, $4, $5}'; }
fail() { echo "mn_resume: $*"; exit 1; }

run --epochs 3 --out full --snapshot-every 1 > full.log 2>&1 || { cat full.log; fail "the full run failed"; }
rows full.log > full.rows
[ "$(wc -l < full.rows)" = 3 ] || { cat full.log; fail "the full run printed no 3 epoch rows"; }

run --epochs 1 --out part > part1.log 2>&1 || { cat part1.log; fail "the first part failed"; }
run --epochs 3 --out part --resume > part2.log 2>&1 || { cat part2.log; fail "the resumed part failed"; }
grep -q "resumed from part/snapshot_iter_3.npz (iteration 3)" part2.log || { cat part2.log; fail "no resume message"; }
{ rows part1.log; rows part2.log; } > part.rows
diff full.rows part.rows || fail "resumed at an epoch's end: the rows differ"

cp -r full mid
rm -f mid/snapshot_iter_9.npz mid/snapshot_iter_8.npz
run --epochs 3 --out mid --resume > mid.log 2>&1 || { cat mid.log; fail "the run resumed mid-epoch failed"; }
grep -q "resumed from mid/snapshot_iter_7.npz (iteration 7)" mid.log || { cat mid.log; fail "no resume message"; }
diff <(tail -n 1 full.rows) <(rows mid.log) || fail "resumed in the middle of epoch 3: the row differs"

run --epochs 1 --out empty --resume > empty.log 2>&1 || { cat empty.log; fail "a resume without snapshots failed"; }
grep -q "no snapshot to resume from in empty; starting from the beginning" empty.log || { cat empty.log; fail "no message"; }
diff <(head -n 1 full.rows) <(rows empty.log) || fail "a run with nothing to resume differs"
echo "mn_resume: 2 ranks: resumed at an epoch's end and in the middle of an epoch, rows identical:"
cat full.rows
