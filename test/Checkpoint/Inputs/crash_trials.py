"""SIGKILLs saving ds-train runs and checks that `latest` always verifies.

usage: crash_trials.py DS_TRAIN DS_CKPT WORKDIR POINTS RANDOM [SEED] -- ARGS...
  POINTS  comma-separated crash points of the commit protocol (see
          docs/checkpoints.md); each run dies there during its second save
          (DS_CKPT_CRASH_AT=POINT:2), so `latest` must still name
          global_step1.
  RANDOM  runs killed with SIGKILL at a random moment (0-250 ms) after
          their first committed save, while saving every step.
  SEED    seeds the random moments (default: drawn, and printed).
  ARGS    the ds-train model/config/data arguments.
Runs go in parallel. Every killed run's `latest` must pass `ds-ckpt verify`;
then the first random run is resumed from `latest`, saving into the same
directory over whatever the crash left, and verified again.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

ds_train, ds_ckpt, work, points, n_random = sys.argv[1:6]
rest = sys.argv[6:]
seed = int(rest[0]) if rest and rest[0] != "--" else random.randrange(1 << 30)
args = rest[rest.index("--") + 1:]
rng = random.Random(seed)
print(f"seed {seed}", file=sys.stderr)
points = [p for p in points.split(",") if p]
failures = 0


def start(directory, steps, env=None):
    return subprocess.Popen(
        [ds_train, *args, "--steps", str(steps), "--save", directory,
         "--save-interval", "1", "--quiet"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def latest(directory):
    try:
        return open(os.path.join(directory, "latest")).read().strip()
    except FileNotFoundError:
        return None


def verify(directory):
    r = subprocess.run([ds_ckpt, "verify", directory], capture_output=True,
                       text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def report(what, ok, detail=""):
    global failures
    failures += not ok
    print(f"{what}: {'ok' if ok else 'FAILED'}" + (f" ({detail})" if not ok
                                                    else ""))


runs = []
for p in points:
    d = os.path.join(work, f"point-{p}")
    env = dict(os.environ, DS_CKPT_CRASH_AT=f"{p}:2")
    runs.append(("point " + p, d, start(d, 50, env), None))
for i in range(int(n_random)):
    d = os.path.join(work, f"random-{i}")
    runs.append((f"random trial {i}", d, start(d, 1000000),
                 rng.uniform(0.0, 0.25)))

# Random trials: wait for the first commit, then kill after the delay.
deadline = time.time() + 300
pending = [r for r in runs if r[3] is not None]
armed = {}
while pending and time.time() < deadline:
    for r in list(pending):
        name, d, proc, delay = r
        if proc.poll() is not None:
            pending.remove(r)
        elif name not in armed and latest(d):
            armed[name] = time.time() + delay
        elif name in armed and time.time() >= armed[name]:
            proc.send_signal(signal.SIGKILL)
            pending.remove(r)
    time.sleep(0.005)

for name, d, proc, delay in runs:
    try:
        proc.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    err = proc.stderr.read().decode().strip()
    if proc.returncode != -signal.SIGKILL:
        report(f"{name}: killed by SIGKILL", False,
               f"exit {proc.returncode}: {err[-300:]}")
        continue
    tag = latest(d)
    if delay is None:
        report(f"{name}: killed, latest names global_step1",
               tag == "global_step1", f"latest {tag}")
    ok, out = verify(d)
    report(f"{name}: latest verifies", ok, out)

# The usual recovery: resume from `latest` into the same directory.
if n_random != "0":
    d = os.path.join(work, "random-0")
    step = int(latest(d).removeprefix("global_step"))
    metrics = os.path.join(work, "resumed.jsonl")
    r = subprocess.run([ds_train, *args, "--steps", str(step + 2), "--load", d,
                        "--save", d, "--save-interval", "1", "--quiet",
                        "--metrics", metrics], capture_output=True, text=True)
    steps = [json.loads(l)["step"] for l in open(metrics)] if r.returncode == 0 else []
    report("resumed from latest, saving into the same directory",
           steps == [step + 1, step + 2] and latest(d) ==
           f"global_step{step + 2}", r.stderr.strip()[-300:])
    ok, out = verify(d)
    report("after the resume, latest verifies", ok, out)
print(f"{len(runs)} crash trials, {failures} failures")
sys.exit(1 if failures else 0)
