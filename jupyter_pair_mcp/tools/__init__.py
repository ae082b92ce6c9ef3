"""Tool groups. Each module builds its tools as closures over the adapters they need."""
