"""Integrations of the Universal Sparse Tensor with frameworks (``torch_interface``: a torch.Tensor subclass)."""
