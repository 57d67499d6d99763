"""pbc benchmarks: `python -m benchmarks NAME` runs benchmarks/NAME.py's main()."""
