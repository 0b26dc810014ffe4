"""What goes over the wire to the runner model: its declared inputs (app.triton.declared_inputs)."""

from app.triton.declared_inputs import build_inputs, tensor

__all__ = ["build_inputs", "tensor"]
