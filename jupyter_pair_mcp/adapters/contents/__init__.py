"""The contents adapter: files and folders through Jupyter's contents manager."""
