"""Process groups: the ranks of a distributed run and the few collectives cumath's operations use.

``MPIProcessGroup`` wraps a mpi4py communicator, ``TorchProcessGroup`` a ``torch.distributed`` group. Both give
``rank``, ``nranks``, ``allgather(obj)``, ``alltoallv(send, send_counts, recv, recv_counts)`` on byte buffers and
``barrier()``. Every operation first *agrees* (``agree``): the ranks exchange a fingerprint of the call they are
making (its name, a sequence number and the parameters all ranks must share) with a non-blocking all-gather that
is waited for at most ``timeout`` seconds. Ranks that called something else, or that called with other global
shapes or distributions, raise :class:`~cumath.errors.CollectiveError` naming the ranks and what each called;
a rank that never arrives makes the others raise after the timeout instead of hanging in a collective.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import hashlib
import logging
import os
import pickle
import time

import numpy as np

from ..errors import CollectiveError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from .._core.typing import AnyTensor

__all__ = ["ProcessGroup", "MPIProcessGroup", "TorchProcessGroup", "DEFAULT_TIMEOUT"]

logger = logging.getLogger(__name__)

#: seconds a rank waits for the others to reach the same collective call (CUMATH_DISTRIBUTED_TIMEOUT)
DEFAULT_TIMEOUT = float(os.environ.get("CUMATH_DISTRIBUTED_TIMEOUT", "60"))


class ProcessGroup:
    """The ranks of a distributed run. Subclasses implement the collectives below."""

    rank: int = 0
    nranks: int = 1
    timeout: float = DEFAULT_TIMEOUT

    def __init__(self) -> None:
        self._sequence = 0

    def allgather(self, obj: Any) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def alltoallv(self, send: np.ndarray, send_counts: Sequence[int], recv: np.ndarray, recv_counts: Sequence[int],
                  uniform: bool = False) -> None:  # pragma: no cover
        raise NotImplementedError

    def barrier(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _iallgather_fixed(self, data: bytes):  # pragma: no cover - abstract
        """Start an all-gather of ``len(data)`` bytes per rank; return (test() -> bool, result() -> list[bytes])."""
        raise NotImplementedError

    def agree(self, what: str, **shared: Any) -> None:
        """All ranks must be making the same call ``what`` with the same ``shared`` parameters, now."""
        self._sequence += 1
        if self.nranks == 1:
            return
        token = pickle.dumps((what, self._sequence, sorted(shared.items())), protocol=4)
        digest = hashlib.sha256(token).digest() + self._sequence.to_bytes(8, "little")
        test, result = self._iallgather_fixed(digest)
        deadline = time.monotonic() + self.timeout
        delay = 1e-5
        while not test():
            if time.monotonic() > deadline:
                raise CollectiveError(
                    f"rank {self.rank} waited {self.timeout:g} s for the other ranks to call {what} (collective call "
                    f"#{self._sequence}); at least one rank is not taking part, or is in another call. Every rank "
                    "must make the same distributed calls in the same order (set CUMATH_DISTRIBUTED_TIMEOUT to wait "
                    "longer). The process group cannot be used any more: end the run")
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
        digests = result()
        if all(d == digests[0] for d in digests):
            return
        calls = self.allgather((what, self._sequence, shared))
        differing = [r for r, d in enumerate(digests) if d != digests[self.rank]]
        lines = "; ".join(f"rank {r}: {c[0]} #{c[1]} {c[2]}" for r, c in enumerate(calls))
        raise CollectiveError(f"ranks disagree on collective call #{self._sequence} ({what} on rank {self.rank}; "
                              f"ranks {differing} differ): {lines}. Every rank must make the same call with the "
                              "same global shapes, dtypes and distributions")


class MPIProcessGroup(ProcessGroup):
    """The ranks of a mpi4py communicator (``MPI.COMM_WORLD`` or any intra-communicator)."""

    def __init__(self, communicator: Any) -> None:
        super().__init__()
        if not hasattr(communicator, "Get_rank") or not hasattr(communicator, "Alltoallv"):
            raise TypeError(f"MPIProcessGroup needs a mpi4py communicator, got {type(communicator).__name__}")
        self.communicator = communicator
        self.rank = communicator.Get_rank()
        self.nranks = communicator.Get_size()

    def allgather(self, obj: Any) -> list:
        return self.communicator.allgather(obj)

    def alltoallv(self, send: AnyTensor, send_counts: Sequence[int], recv: AnyTensor, recv_counts: Sequence[int],
                  uniform: bool = False) -> None:
        from mpi4py import MPI

        sc = np.asarray(send_counts, dtype=np.int64)
        rc = np.asarray(recv_counts, dtype=np.int64)
        sd = np.concatenate(([0], np.cumsum(sc)[:-1]))
        rd = np.concatenate(([0], np.cumsum(rc)[:-1]))
        if max(sc.sum(), rc.sum()) >= 2**31:
            raise ValueError("alltoallv: more than 2 GiB to or from one rank; use more ranks")
        if uniform:  # equal pieces between every pair of ranks (decided from every rank's plan): all-to-all
            self.communicator.Alltoall([send, int(sc[0]), MPI.BYTE], [recv, int(rc[0]), MPI.BYTE])
        else:
            self.communicator.Alltoallv([send, (sc, sd), MPI.BYTE], [recv, (rc, rd), MPI.BYTE])

    def barrier(self) -> None:
        self.communicator.Barrier()

    def _iallgather_fixed(self, data: bytes):
        from mpi4py import MPI

        send = np.frombuffer(data, dtype=np.uint8).copy()
        recv = np.empty(len(data) * self.nranks, dtype=np.uint8)
        request = self.communicator.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE])
        n = len(data)
        return request.Test, lambda: [recv[i * n:(i + 1) * n].tobytes() for i in range(self.nranks)]


class TorchProcessGroup(ProcessGroup):
    """The ranks of a ``torch.distributed`` group (None: the default group). CPU collectives need the gloo backend."""

    def __init__(self, group: Any = None) -> None:
        super().__init__()
        import torch.distributed as dist

        if not dist.is_initialized():
            raise ValueError("TorchProcessGroup: call torch.distributed.init_process_group() first")
        self._dist = dist
        self.group = group
        self.rank = dist.get_rank(group)
        self.nranks = dist.get_world_size(group)

    def allgather(self, obj: Any) -> list:
        out = [None] * self.nranks
        self._dist.all_gather_object(out, obj, group=self.group)
        return out

    def alltoallv(self, send: AnyTensor, send_counts: Sequence[int], recv: AnyTensor, recv_counts: Sequence[int],
                  uniform: bool = False) -> None:
        import torch

        s = torch.from_numpy(send.view(np.uint8))
        r = torch.from_numpy(recv.view(np.uint8))
        outs = list(torch.split(r, [int(c) for c in recv_counts]))
        ins = list(torch.split(s, [int(c) for c in send_counts]))
        self._dist.all_to_all(outs, ins, group=self.group)

    def barrier(self) -> None:
        self._dist.barrier(group=self.group)

    def _iallgather_fixed(self, data: bytes):
        import torch

        send = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        outs = [torch.empty_like(send) for _ in range(self.nranks)]
        work = self._dist.all_gather(outs, send, group=self.group, async_op=True)
        return work.is_completed, lambda: [bytes(o.numpy().tobytes()) for o in outs]
