#!/usr/bin/env python3
"""The best any fixed pace can do against a token bucket when arrivals jitter (issue 31).

    python3 bench/bucket_jitter.py                 # the cases in bench/README.md section 8
    python3 bench/bucket_jitter.py 37 1 200        # rate/s, burst, sends to deliver

Sends go out evenly at a pace P; each reaches the bucket 2.5-15 ms later, uniformly (the
pacing harness's 5-30 ms per request, half each way: 12.5 ms of spread). A refused send is
counted and its delivery goes in a later slot. For each P from 5/s up to the rate in steps of
0.5/s, the time the last of N deliveries was sent; prints the fastest P, its time against the
plain bound (N - burst) / rate, and its 429s. Seeded, so each run prints the same.
"""
import random
import sys


def run(rate, burst, pace, deliveries, seed=1):
    rnd = random.Random(seed)
    # Enough sends for every delivery even if most are refused; arrival order decides.
    sends = [(k / pace, k / pace + (2.5 + rnd.random() * 12.5) / 1000) for k in range(1, 20 * deliveries)]
    tokens, last, ok, refused = float(burst), 0.0, 0, 0
    done = 0.0
    for sent, arrived in sorted(sends, key=lambda s: s[1]):
        tokens = min(float(burst), tokens + (arrived - last) * rate)
        last = arrived
        if tokens >= 1:
            tokens -= 1
            ok += 1
            done = max(done, sent)
            if ok == deliveries:
                return done, refused
        else:
            refused += 1
    return float("inf"), refused


def best(rate, burst, deliveries):
    bound = (deliveries - burst) / rate
    paces = [p / 2 for p in range(10, int(2 * rate) + 1)]
    seconds, pace = min((run(rate, burst, p, deliveries)[0], p) for p in paces)
    refused = run(rate, burst, pace, deliveries)[1]
    print(f"rate={rate}/s burst={burst} sends={deliveries} bound={bound:.2f}s best pace={pace}/s "
          f"time={seconds:.2f}s x{seconds / bound:.2f} 429s={refused}")


if __name__ == "__main__":
    if len(sys.argv) == 4:
        best(float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    else:
        for rate, burst in [(37, 1), (50, 1), (24, 1), (19, 1), (14, 1), (37, 2), (50, 3)]:
            best(rate, burst, 200)
