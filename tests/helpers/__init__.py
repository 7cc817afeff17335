"""Test helpers: the support matrix (packages, dtypes, CPU engines), random data, and NumPy references."""
