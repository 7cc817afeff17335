"""Rank 1 skips a collective call (or makes another one): the others must fail fast with CollectiveError."""
import sys
import time

import numpy as np
from mpi4py import MPI

import cumath.distributed as d
from cumath.distributed.distribution import Slab
from cumath.errors import CollectiveError

mode = sys.argv[1]
d.initialize(None, MPI.COMM_WORLD, timeout=3)
rank = MPI.COMM_WORLD.rank
x = np.ones((2, 4), complex)
start = time.monotonic()
try:
    if rank == 1 and mode == "skip":
        time.sleep(8)  # never calls
        print("rank 1 done", flush=True)
        sys.exit(0)
    if rank == 1 and mode == "other":
        d.redistribute(x, Slab.X, Slab.Y)
    else:
        d.fft.fft(x, distribution=Slab.X)
except CollectiveError as exc:
    print(f"rank {rank} CollectiveError after {time.monotonic() - start:.1f} s: {exc}", flush=True)
    sys.exit(3)
print(f"rank {rank} no error", flush=True)
