"""CPU, memory and network figures of a job's process tree, in the HF Jobs metrics event shape.

HF sends one event a second: ``{"cpu_usage_pct", "cpu_millicores", "memory_used_bytes",
"memory_total_bytes", "rx_bps", "tx_bps", "gpus", "replica"}``. Here the CPU and memory are those
of the job's process and all its descendants (psutil); jobs run on the host's CPU, so `gpus` is
empty, and processes have no network accounting of their own, so rx/tx are the host's rates.
"""

from __future__ import annotations

import time
from typing import Any

import psutil


class TreeSampler:
    """Successive samples of one process tree (cpu_percent needs the previous sample)."""

    def __init__(self, pid: int, replica: str) -> None:
        self.pid = pid
        self.replica = replica
        self._procs: dict[int, psutil.Process] = {}
        self._ncpu = psutil.cpu_count() or 1
        self._net_last: tuple[float, int, int] | None = None
        self.sample()  # prime cpu_percent

    def _tree(self) -> list[psutil.Process]:
        try:
            root = self._procs.get(self.pid) or psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        live: dict[int, psutil.Process] = {}
        for proc in procs:
            live[proc.pid] = self._procs.get(proc.pid, proc)
        self._procs = live
        return list(live.values())

    def _net(self) -> tuple[int, int]:
        try:
            counters = psutil.net_io_counters()
        except (OSError, RuntimeError):
            return 0, 0
        now = time.monotonic()
        last = self._net_last
        self._net_last = (now, counters.bytes_recv, counters.bytes_sent)
        if last is None or now <= last[0]:
            return 0, 0
        dt = now - last[0]
        return int((counters.bytes_recv - last[1]) / dt), int((counters.bytes_sent - last[2]) / dt)

    def sample(self) -> dict[str, Any]:
        cpu = 0.0
        rss = 0
        for proc in self._tree():
            try:
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
            except psutil.Error:
                continue
        rx, tx = self._net()
        return {
            "cpu_usage_pct": round(cpu / self._ncpu, 1),
            "cpu_millicores": self._ncpu * 1000,
            "memory_used_bytes": rss,
            "memory_total_bytes": psutil.virtual_memory().total,
            "rx_bps": max(0, rx),
            "tx_bps": max(0, tx),
            "gpus": {},
            "replica": self.replica,
        }
