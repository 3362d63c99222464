#!/usr/bin/env python3
"""fault.py: launches a job, injects one fault mid-run, times every rank's exit.

  fault.py --fault kill:RANK|cut --after-step S --dir DIR --limit SECONDS \
           -- LAUNCHER... -- PROGRAM ARGS...

Runs `LAUNCHER... -- sh -c 'echo $$ > DIR/pid.$RANK; exec PROGRAM ARGS'`
(so each rank's pid is known from outside), waits until rank 0's metrics
(DIR/m.jsonl, which ARGS must name with --metrics) show step S, then either
SIGKILLs RANK or takes host A's end of the link down (`ip link set $DS_MH_IF
down`, run on host A by two-hosts.sh). Prints, per rank, the seconds from
the fault to its exit, and the launcher's output. Exits 1 if a rank or the
launcher outlives LIMIT seconds (then kills them: never a hang).
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def alive(pid):
    """A zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", required=True)
    p.add_argument("--after-step", type=int, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--limit", type=float, default=30)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    a = p.parse_args()
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    cut = rest.index("--")
    launcher, program = rest[:cut], rest[cut + 1:]
    # Each rank's stderr also goes to DIR/err.RANK: what a rank behind a cut
    # link says never reaches the launcher. tee runs in its own session, so
    # mpirun ending the job's process groups once a rank fails cannot kill it
    # before it has written what the rank said.
    wrapped = launcher + ["--", "bash", "-c",
                          f'echo $$ > {a.dir}/pid.$RANK; '
                          f'exec "$0" "$@" 2> >(setsid tee {a.dir}/err.$RANK'
                          f' >&2)'] + program
    log = open(os.path.join(a.dir, "launcher.out"), "w")
    job = subprocess.Popen(wrapped, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)

    metrics = os.path.join(a.dir, "m.jsonl")
    deadline = time.time() + 120
    while True:
        steps = 0
        if os.path.exists(metrics):
            with open(metrics) as f:
                steps = sum(1 for line in f if line.endswith("\n"))
        if steps >= a.after_step:
            break
        if job.poll() is not None or time.time() > deadline:
            print(f"the job ended or stalled before step {a.after_step}")
            sys.stdout.write(open(log.name).read())
            return 1
        time.sleep(0.02)
    pids = {}
    for r in range(a.ranks):
        with open(os.path.join(a.dir, f"pid.{r}")) as f:
            pids[r] = int(f.read())

    victim = None
    t0 = time.time()
    if a.fault.startswith("kill:"):
        victim = int(a.fault.split(":")[1])
        if not alive(pids[victim]):
            print(f"rank {victim} ended before the fault")
            sys.stdout.write(open(log.name).read())
            return 1
        os.kill(pids[victim], signal.SIGKILL)
        print(f"fault: SIGKILL rank {victim} after step {a.after_step}")
    elif a.fault == "cut":
        subprocess.run(["ip", "link", "set", os.environ["DS_MH_IF"], "down"],
                       check=True)
        print(f"fault: link cut after step {a.after_step}")
    else:
        print(f"unknown fault {a.fault}; use kill:RANK or cut")
        return 2

    exited = {}
    launcher_exit = None
    while time.time() - t0 < a.limit + 30:
        now = time.time() - t0
        for r, pid in pids.items():
            if r != victim and r not in exited and not alive(pid):
                exited[r] = now
        if launcher_exit is None and job.poll() is not None:
            launcher_exit = now
        if len(exited) == len(pids) - (victim is not None) and \
                launcher_exit is not None:
            break
        time.sleep(0.02)

    ok = True
    for r in sorted(pids):
        if r == victim:
            continue
        if r in exited:
            within = "within" if exited[r] <= a.limit else "NOT within"
            ok &= exited[r] <= a.limit
            print(f"rank {r}: exited {exited[r]:.1f} s after the fault "
                  f"({within} {a.limit:g} s)")
        else:
            ok = False
            print(f"rank {r}: still running {a.limit + 30:g} s after the "
                  f"fault (a hang)")
            os.kill(pids[r], signal.SIGKILL)
    if launcher_exit is None:
        ok = False
        print("launcher: still running (a hang)")
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    else:
        print(f"launcher: exit status {job.returncode} after "
              f"{launcher_exit:.1f} s")
    log.close()
    print("--- launcher output")
    sys.stdout.write(open(log.name).read())
    print("--- end")
    print("every rank exited in time" if ok else "FAILED: a rank hung")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
