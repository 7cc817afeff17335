"""The generic matmul of cumath.linalg: BLAS on the CPU, cuBLAS on the GPU, structured operands through
qualifiers. Modules: ``qualifiers`` (the qualifier dtype and classes), ``options``, ``traits`` (pure plan
arithmetic over the shared numpy.matmul shapes of ``linalg/_shapes.py``), ``executors`` (where operands live
versus where the engine runs), ``planner`` (the stateful Matmul), ``batch`` (explicit batches: MatmulBatch and
its executors) and ``functions`` (the stateless matmul behind the plan cache)."""
