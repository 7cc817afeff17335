"""ctypes bindings, one module per native library, 1:1 with its C API (ints for pointers and handles)."""
