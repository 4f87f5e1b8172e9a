"""The BullMQ + Redis baseline of bench/cluster_failover.py --bullmq: the same deliveries as a
BullMQ queue on a Redis of its own, delivered by BullMQ workers (bench/bullmq/worker.js, Node.js)
to the same simulator receivers; delivered/s from the first add to the sink's count reaching
them all. bench/bullmq/package.json pins BullMQ; `npm ci` installs it into bench/bullmq/
node_modules (git-ignored) the first time."""

import json
import os
import subprocess
import time

import proc_cpu

DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bullmq")


def install(log):
    """npm ci into bench/bullmq/node_modules when it is missing or older than the lock file."""
    marker = os.path.join(DIR, "node_modules", ".package-lock.json")
    lock = os.path.join(DIR, "package-lock.json")
    if os.path.exists(marker) and os.path.getmtime(marker) >= os.path.getmtime(lock):
        return
    log("npm ci in %s" % DIR)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=DIR,
                   check=True, stdout=subprocess.DEVNULL)


def version():
    with open(os.path.join(DIR, "node_modules", "bullmq", "package.json")) as f:
        return json.load(f)["version"]


def parse_shapes(text):
    """"1x64,2x256" -> [(1, 64), (2, 256)]: worker processes x concurrency per process."""
    shapes = []
    for part in text.split(","):
        workers, concurrency = part.strip().split("x")
        shapes.append((int(workers), int(concurrency)))
    return shapes


def _redis(port, *command):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(command), check=True,
                          capture_output=True, text=True).stdout.strip()


def _wait_line(child, expected, what):
    line = child.stdout.readline().decode().strip()
    if line != expected:
        raise RuntimeError("%s: expected %r, got %r" % (what, expected, line))


def _start_producer(jobs, name, batch, redis_port, tmp, env, out):
    """A producer.js with `jobs` to add, once it printed "ready"."""
    jobs_file = os.path.join(tmp, "bullmq-%s.jsonl" % name)
    with open(jobs_file, "w") as f:
        for job in jobs:
            f.write(json.dumps(job) + "\n")
    producer = subprocess.Popen(
        ["/usr/bin/setpriv", "--pdeathsig=KILL", "node", os.path.join(DIR, "producer.js"),
         str(redis_port), str(batch), jobs_file],
        cwd=DIR, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out)
    _wait_line(producer, "ready", "bullmq producer")
    return producer


def _finish_producer(producer):
    """Its "added <seconds>" figure, once it exited."""
    added = producer.stdout.readline().decode().split()
    producer.stdin.close()
    producer.wait(30)
    return float(added[1]) if len(added) == 2 else None


def run(jobs, shape, batch, redis, sim, tmp, stall_timeout, other_cpu, log, warmup=1000):
    """Delivers `jobs` ([{"url", "payload"}]) through BullMQ with `shape` (worker processes,
    concurrency each) on the Redis `redis` (redis-server child, port), flushed first, to the
    SimSink `sim`. First `warmup` other jobs (payload msg_id "warmup-<i>", no seq) go through the
    same workers unmeasured: Node's compiler and the workers' connections warm, as a worker that
    has been running a while is; then the simulator is reset. `other_cpu`: {name: callable} of
    the other processes to account. Returns the figures."""
    workers_n, concurrency = shape
    redis_child, redis_port = redis
    _redis(redis_port, "FLUSHALL")
    sim.reset()
    env = dict(os.environ, NODE_ENV="production")
    out = open(os.path.join(tmp, "bullmq.log"), "ab")
    workers = []
    producer = None
    try:
        for _ in range(workers_n):
            w = subprocess.Popen(
                ["/usr/bin/setpriv", "--pdeathsig=KILL", "node", os.path.join(DIR, "worker.js"),
                 str(redis_port), str(concurrency)],
                cwd=DIR, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=out)
            workers.append(w)
        for w in workers:
            _wait_line(w, "ready", "bullmq worker")
        if warmup:
            warm = [{"url": jobs[i % len(jobs)]["url"], "payload": {"msg_id": "warmup-%d" % i}}
                    for i in range(warmup)]
            producer = _start_producer(warm, "warmup", batch, redis_port, tmp, env, out)
            producer.stdin.write(b"go\n")
            producer.stdin.flush()
            if sim.wait_accepted(warmup, stall_timeout) is None:
                raise RuntimeError("bullmq: the warm-up jobs were not delivered")
            _finish_producer(producer)
            sim.reset()
        producer = _start_producer(jobs, "jobs", batch, redis_port, tmp, env, out)
        groups = dict(other_cpu)
        groups["redis (bullmq)"] = lambda: proc_cpu.seconds(redis_child.pid)
        for i, w in enumerate(workers):
            groups["bullmq worker %d" % (i + 1)] = (lambda pid: lambda: proc_cpu.seconds(pid))(
                w.pid)
        groups["bullmq producer"] = lambda: proc_cpu.seconds(producer.pid)
        before = proc_cpu.snapshot(groups)
        t0 = time.monotonic()
        producer.stdin.write(b"go\n")
        producer.stdin.flush()
        done = sim.wait_accepted(len(jobs), stall_timeout)
        after = proc_cpu.snapshot(groups)  # the producer lives until its stdin closes
        added = _finish_producer(producer)
        verdict = sim.verdict(len(jobs))
    finally:
        for child in workers + ([producer] if producer else []):
            if child.poll() is None:
                child.terminate()
        for child in workers + ([producer] if producer else []):
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        out.close()
    result = {
        "workers": workers_n, "concurrency": concurrency, "deliveries": len(jobs),
        "complete": done is not None,
        "warmup_jobs": warmup, "added_in_s": added,
        "delivered_in_s": round(done - t0, 2) if done else None,
        "delivered_per_s": round(len(jobs) / (done - t0), 1) if done else None,
        "cpu_s": proc_cpu.difference(before, after),
    }
    result.update(verdict)
    log("bullmq %dx%d: %s" % (workers_n, concurrency, json.dumps(result)))
    return result
