"""A PyTorch DataLoader that hands batches of a chosen size from its workers to the training
process through /dev/shm, as real training jobs do, and reports how much of /dev/shm it used.

    dataloader.py --workers W --prefetch P --batch-bytes BYTES [--batches N] [--step-seconds S]

Each batch is one uint8 tensor of BYTES bytes, built in a worker and passed to this process
through shared memory (torch.multiprocessing's file_descriptor strategy: a file in /dev/shm per
tensor). A training step that takes S seconds lets the prefetch queue fill, so W x P batches sit
in /dev/shm at once, plus the one being consumed. Each step lets go of its batch before the next
is asked for, so /dev/shm holds W x P + 1 batches at its peak, never more: a loop that still
holds the previous batch while the next arrives also holds part of the batch a worker builds
meanwhile, from none to most of it, as the scheduler has it (W=4, P=2, 12 MiB batches on a busy
2-core machine: 9.2 to 9.5 batches over 12 runs, where this loop peaks at 9 batches and 16 KiB
every time). A thread samples /dev/shm with statvfs every 2 ms. When all N batches are consumed
the last line printed is one JSON object: peak_shm_bytes, shm_size_bytes, and the settings. When
/dev/shm is too small a worker writing a batch takes a SIGBUS: PyTorch's handler prints "ERROR:
Unexpected bus error encountered in worker" and the worker dies. The training process raises the
first failure it meets, most often "DataLoader worker (pid N) is killed by signal: Bus error",
sometimes another worker's "No space left on device" or a connection reset by the dead worker.
That error is let through, and the exit status is not 0.
"""

import argparse
import json
import os
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

SHM = "/dev/shm"


class Batches(Dataset):
    """N batches of BYTES bytes each, filled so every page is written (a page never written
    takes no room in a tmpfs, and a real batch is written whole)."""

    def __init__(self, batches, batch_bytes):
        self.batches = batches
        self.batch_bytes = batch_bytes

    def __len__(self):
        return self.batches

    def __getitem__(self, i):
        return torch.full((self.batch_bytes,), i % 251, dtype=torch.uint8)


def shm_used():
    st = os.statvfs(SHM)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def shm_size():
    st = os.statvfs(SHM)
    return st.f_blocks * st.f_frsize


class PeakSampler(threading.Thread):
    def __init__(self, interval):
        super().__init__(daemon=True)
        self.interval = interval
        self.peak = shm_used()
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            self.peak = max(self.peak, shm_used())
            time.sleep(self.interval)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, required=True, help="DataLoader num_workers")
    parser.add_argument("--prefetch", type=int, default=2, help="DataLoader prefetch_factor")
    parser.add_argument("--batch-bytes", type=int, required=True, help="bytes of one collated batch")
    parser.add_argument("--batches", type=int, default=32, help="batches to consume")
    parser.add_argument("--step-seconds", type=float, default=0.05, help="time one training step takes")
    args = parser.parse_args()

    sampler = PeakSampler(0.002)
    sampler.start()
    loader = DataLoader(
        Batches(args.batches, args.batch_bytes),
        batch_size=None,  # each item is already a whole batch
        num_workers=args.workers,
        prefetch_factor=args.prefetch if args.workers > 0 else None,
    )
    consumed = 0
    for batch in loader:
        assert batch.numel() == args.batch_bytes
        consumed += 1
        time.sleep(args.step_seconds)
        del batch  # the step is done with it
    sampler.stopped.set()
    sampler.join()
    print(json.dumps({
        "peak_shm_bytes": sampler.peak,
        "shm_size_bytes": shm_size(),
        "batches": consumed,
        "workers": args.workers,
        "prefetch": args.prefetch,
        "batch_bytes": args.batch_bytes,
        "torch": torch.__version__,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
