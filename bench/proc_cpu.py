"""CPU seconds (user + system) of processes, from /proc/<pid>/stat, to say where the cores went
during a benchmark's phase: take a snapshot() before and after and subtract."""

import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, utime + stime, cutime + cstime) in seconds, or None when the process is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # from field 3 (state) on
    return (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK,
            (int(fields[13]) + int(fields[14])) / TICK)


def seconds(pid):
    """The process's own CPU seconds (0 when it is gone)."""
    s = _stat(pid)
    return s[1] if s else 0.0


def tree_seconds(pid):
    """A server that forks a process per connection (PostgreSQL's postmaster): its own CPU
    seconds, those of the children it reaped and those of its children alive now."""
    s = _stat(pid)
    if s is None:
        return 0.0
    total = s[1] + s[2]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            child = _stat(int(entry))
            if child is not None and child[0] == pid:
                total += child[1]
    return total


def self_seconds():
    """This process's CPU seconds (every thread)."""
    t = os.times()
    return t.user + t.system


def snapshot(groups):
    """{name: CPU seconds} for {name: callable returning CPU seconds}."""
    return {name: f() for name, f in groups.items()}


def difference(before, after):
    """{name: seconds spent between the snapshots}, rounded, with "total"."""
    out = {name: round(after[name] - before.get(name, 0.0), 2) for name in after}
    out["total"] = round(sum(out.values()), 2)
    return out
