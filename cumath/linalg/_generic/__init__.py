"""The generic matmul of cumath.linalg: BLAS on the CPU, cuBLAS on the GPU, structured operands through
qualifiers. Modules: ``qualifiers`` (the qualifier dtype and classes), ``options``, ``traits`` (pure plan
arithmetic), ``executors`` (where operands live versus where the engine runs), ``planner`` (the stateful
Matmul) and ``functions`` (the stateless matmul behind the plan cache)."""
