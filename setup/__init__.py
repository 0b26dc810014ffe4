"""Deployment knowledge: model preparation, Triton repositories, launcher. No UI code here."""
