"""The kernels adapter: kernels, kernelspecs and runs through Jupyter's kernel and session
managers."""
