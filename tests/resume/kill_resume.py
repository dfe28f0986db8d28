#!/usr/bin/env python3
"""tests/resume/kill_resume.py - kill -9 a training run at random moments and resume it (issue 33).

For each dtype: one run to the end is the reference. Then --points times: start the run in a fresh
folder, SIGKILL it after a random delay (drawn over the reference's duration, so kills land in
start-up, training steps and snapshot writes alike), and start it again until it finishes, which
resumes from the newest snapshot each time. Then --write-points more kills per dtype, each as soon as a snapshot's temporary file
appears in the folder (during its write). Every loss any run printed must be the reference's
loss of that iteration, bit for bit (the losses are printed in hex), and the final weights and
optimizer state (final.npz) must be the reference's bytes. A kill that leaves a temporary file
in the folder landed during a snapshot write.

  kill_resume.py --exe build/tests/resume_run [--points 12] [--write-points 3] [--iterations 60] [--seed 1]
"""
import argparse
import glob
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time


def parse(stdout, losses):
    """Adds the "iter i loss x" lines to losses; returns the ones that disagree with earlier ones."""
    clashes = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "iter" and parts[2] == "loss":
            i, v = int(parts[1]), parts[3]
            if i in losses and losses[i] != v:
                clashes.append((i, losses[i], v))
            losses.setdefault(i, v)
    return clashes


def command(args, out, dtype, every):
    return [args.exe, "--out", out, "--dtype", dtype, "--iterations", str(args.iterations),
            "--snapshot-every", str(every)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--points", type=int, default=12, help="kills at random moments per dtype")
    ap.add_argument("--write-points", type=int, default=3,
                    help="kills per dtype as soon as a snapshot's temporary file appears (during its write)")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="dezero_kill_resume_")
    failures = 0
    tally = []
    try:
        for dtype, every in (("float32", 1), ("float64", 3)):
            ref_dir = os.path.join(work, dtype + "_ref")
            t0 = time.monotonic()
            ref = subprocess.run(command(args, ref_dir, dtype, every), capture_output=True, text=True, timeout=300)
            duration = time.monotonic() - t0
            if ref.returncode != 0 or "done" not in ref.stdout:
                print(f"kill_resume: the reference run failed ({ref.returncode}): {ref.stderr}")
                return 1
            ref_losses = {}
            parse(ref.stdout, ref_losses)
            ref_final = open(os.path.join(ref_dir, "final.npz"), "rb").read()
            kills = during_write = passed = 0
            points = args.points + args.write_points
            for point in range(points):
                out = os.path.join(work, f"{dtype}_{point}")
                losses, clashes = {}, []
                at_write = point >= args.points  # the last points: killed as soon as a snapshot's temp file appears
                delay = rng.uniform(0.0, duration)
                killed = False
                for attempt in range(50):
                    proc = subprocess.Popen(command(args, out, dtype, every), stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True)
                    if not killed and at_write:
                        while proc.poll() is None:
                            if glob.glob(os.path.join(out, "*.tmp")):
                                proc.kill()  # SIGKILL, while the snapshot is being written
                                break
                    elif not killed:
                        time.sleep(delay)
                        proc.kill()  # SIGKILL
                    stdout, stderr = proc.communicate(timeout=300)
                    clashes += parse(stdout, losses)
                    if not killed and proc.returncode == -9:
                        killed = True
                        kills += 1
                        if glob.glob(os.path.join(out, "*.tmp")):
                            during_write += 1
                        continue
                    if not killed:  # finished before the kill: try again, earlier
                        shutil.rmtree(out, ignore_errors=True)
                        losses.clear()
                        delay *= 0.5
                        continue
                    if proc.returncode != 0:
                        print(f"kill_resume: {dtype} point {point}: the resumed run failed ({proc.returncode}): {stderr}")
                        clashes.append(("exit", proc.returncode, stderr))
                    break
                final = open(os.path.join(out, "final.npz"), "rb").read() if os.path.exists(
                    os.path.join(out, "final.npz")) else b""
                wrong = [i for i, v in losses.items() if ref_losses.get(i) != v]
                ok = killed and not clashes and not wrong and final == ref_final and \
                    len(losses) == len(ref_losses)
                if ok:
                    passed += 1
                else:
                    failures += 1
                    print(f"kill_resume: {dtype} point {point} (kill after {delay:.3f} s, at_write={at_write}) differs: killed={killed} "
                          f"clashes={clashes[:3]} wrong iterations={wrong[:5]} final same={final == ref_final} "
                          f"iterations printed={len(losses)}/{len(ref_losses)}")
            if during_write == 0:
                failures += 1
                print(f"kill_resume: {dtype}: no kill landed during a snapshot write")
            tally.append(f"{dtype}: {passed}/{points} points identical ({kills} kills, {during_write} during a "
                         f"snapshot write; {args.iterations} iterations, a snapshot every {every}, reference "
                         f"{duration:.2f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in tally:
        print("kill_resume: " + line)
    print("kill_resume: " + ("all points identical" if failures == 0 else f"{failures} points differ"))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
