"""Host operands contracted on the GPU: the inputs (and the addend) are copied into device buffers the plan owns,
cuTENSOR runs on those, and the result comes back into host memory. Every copy is logged with its size."""

from __future__ import annotations

from types import SimpleNamespace

from .._core.allocators import default_allocator
from .._core.executors import DeviceMirror
from .._core.frameworks.numpy import view
from .._core.layout import natural_perm

__all__ = ["StagedContraction", "mirror_perm"]


def mirror_perm(op) -> tuple:
    """The order a host operand crosses the bus in: its own memory order (so that its copy is one block)."""
    return natural_perm(op.strides) if op.ndim else ()


class StagedContraction:
    """Mirrors of the inputs and of the result around a GPU engine built for the mirrors' strides."""

    space = "host_to_device"
    simple = False  # (run_binary: the GPU engine's one-call path)

    def __init__(self, make_engine, inputs, names, out_shape, dtype, out_perm, options, device_id, stream):
        allocator = options.allocator or default_allocator("numpy", device_id)
        self.inputs = [DeviceMirror(o.shape, o.dtype, mirror_perm(o), allocator, stream, n)
                       for o, n in zip(inputs, names)]
        self.out = DeviceMirror(out_shape, dtype, out_perm, allocator, stream, "result")
        try:
            self.engine = make_engine([m.strides for m in self.inputs], self.out.strides,
                                      [m.ptr for m in self.inputs] + [self.out.ptr])
        except BaseException:
            self._free_mirrors()
            raise
        self.nbytes = sum(m.nbytes for m in self.inputs) + self.out.nbytes + self.engine.nbytes

    def run(self, ops, addend, result, result_op, fresh: bool, alpha, beta, stream, release_workspace) -> None:
        for m, op in zip(self.inputs, ops):
            m.upload(op, stream)
        add = None
        if addend is not None and beta:
            self.out.upload(addend, stream)  # the addend lands where cuTENSOR reads C: the result's buffer
            add = SimpleNamespace(ptr=self.out.ptr, strides=self.out.strides, obj=None)
        self.engine.run([m.ptr for m in self.inputs], add, self.out.ptr, None, alpha, beta, stream,
                        release_workspace)
        if fresh:  # a new host result laid out as the mirror: one block copy
            self.out.download_into(result_op.ptr, stream)
        else:
            self.out.download(view(result_op), stream)

    def release_workspace(self) -> None:
        self.engine.release_workspace()

    def _free_mirrors(self) -> None:
        for m in self.inputs + [self.out]:
            m.free()

    def free(self) -> None:
        self.engine.free()
        self._free_mirrors()
