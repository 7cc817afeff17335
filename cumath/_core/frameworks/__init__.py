"""Adapters, one per array package, imported only when an array of that package is seen.

Each adapter offers: ``wrap(x) -> Operand``, ``empty(shape, dtype, device_id, perm) -> array``
(dense, with axes ``perm`` from outermost to innermost), ``copy_into(dst, src)``, ``pointer(x)``, and for GPU packages
``current_stream(device_id) -> int`` and ``stream_context(device_id, stream)``.
"""
