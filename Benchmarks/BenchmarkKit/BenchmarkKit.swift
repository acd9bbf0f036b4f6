// BenchmarkKit: see Benchmarks/README.
