"""Adapters: one per Jupyter backend, the only code that talks to it: contents (files), kernels
and rooms (jupyter-collaboration's live documents). They raise the typed errors of ``errors.py``.
"""
